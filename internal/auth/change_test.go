package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
)

func TestChangePayload(t *testing.T) {
	t.Parallel()
	u1, u2, p, o := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	c := auth.Change{Users: []uuid.UUID{u1, u2}, Projects: []uuid.UUID{p}, Orgs: []uuid.UUID{o}}
	payload := c.Payload()
	require.Equal(t, "u:"+u1.String()+",u:"+u2.String()+",p:"+p.String()+",o:"+o.String(), payload)
	require.Equal(t, c, auth.ParseChange(payload))
	require.Equal(t, "u:"+u1.String(), auth.ChangeUsers(u1).Payload())

	all := auth.Change{All: true}
	require.Equal(t, "*", all.Payload())
	require.Equal(t, "*", auth.Change{}.Payload(), "a change naming nothing is announced as everything")
	many := make([]uuid.UUID, 200)
	for i := range many {
		many[i] = uuid.New()
	}
	require.Equal(t, "*", auth.ChangeUsers(many...).Payload(), "over the NOTIFY limit")
	require.Less(t, len(auth.ChangeUsers(many[:150]...).Payload()), 8000)

	// When in doubt, everything: the payload of earlier versions (empty)
	// and anything unreadable.
	for _, bad := range []string{"", "*", "u:nope", "x:" + u1.String(), u1.String(), "u:" + u1.String() + ",", strings.Repeat("u", 10)} {
		require.Equal(t, all, auth.ParseChange(bad), "%q", bad)
	}
}

// A change drops only the cached credentials of its users and the cached
// projects it names (directly or by organization); a change of
// everything drops all. ChangedSince says whom a change concerns.
func TestInvalidateChangeTargets(t *testing.T) {
	t.Parallel()
	b := setupGuard(t, nil)
	ctx := context.Background()
	alice, bob := account(), account()
	aliceTok, bobTok := b.dir.addToken(alice), b.dir.addToken(bob)
	p1, p2, o1, o2 := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	b.dir.projects[p1], b.dir.projects[p2] = o1, o2
	warm := func() {
		t.Helper()
		for _, tok := range []string{aliceTok, bobTok} {
			_, err := b.guard.Authenticate(ctx, "Bearer "+tok)
			require.NoError(t, err)
		}
		for _, p := range []uuid.UUID{p1, p2} {
			_, err := b.guard.ProjectOrg(ctx, p)
			require.NoError(t, err)
		}
	}
	calls := func() [2]int64 { return [2]int64{b.dir.tokenCalls.Load(), b.dir.projectCalls.Load()} }
	warm()
	require.Equal(t, [2]int64{2, 2}, calls())
	v := b.guard.Version()

	b.guard.InvalidateChange(auth.ChangeUsers(alice.UserID))
	warm()
	require.Equal(t, [2]int64{3, 2}, calls(), "alice's token only")
	require.True(t, b.guard.ChangedSince(v, alice.UserID, uuid.Nil, uuid.Nil))
	require.False(t, b.guard.ChangedSince(v, bob.UserID, p1, o1))
	v = b.guard.Version()

	b.guard.InvalidateChange(auth.Change{Projects: []uuid.UUID{p1}})
	warm()
	require.Equal(t, [2]int64{3, 3}, calls(), "p1 only")
	require.True(t, b.guard.ChangedSince(v, bob.UserID, p1, o1))
	require.False(t, b.guard.ChangedSince(v, alice.UserID, p2, o2))
	require.False(t, b.guard.ChangedSince(v, alice.UserID, uuid.Nil, uuid.Nil), "a stream of no project")
	v = b.guard.Version()

	b.guard.InvalidateChange(auth.Change{Orgs: []uuid.UUID{o2}})
	warm()
	require.Equal(t, [2]int64{3, 4}, calls(), "o2's project only")
	require.True(t, b.guard.ChangedSince(v, uuid.Nil, p2, o2))
	require.False(t, b.guard.ChangedSince(v, bob.UserID, p1, o1))
	v = b.guard.Version()

	b.guard.Invalidate()
	warm()
	require.Equal(t, [2]int64{5, 6}, calls(), "everything")
	require.True(t, b.guard.ChangedSince(v, uuid.Nil, uuid.Nil, uuid.Nil))
	require.False(t, b.guard.ChangedSince(b.guard.Version(), alice.UserID, p1, o1))
}

// A look-up in flight when a change of its user is announced is not
// cached; one of another user's change is.
func TestAuthenticateTargetedChangeInFlight(t *testing.T) {
	t.Parallel()
	b := setupGuard(t, nil)
	ctx := context.Background()
	alice, bob := account(), account()
	aliceTok := b.dir.addToken(alice)
	var announce auth.Change
	b.dir.duringTokenLookup = func(int64) { b.guard.InvalidateChange(announce) }

	announce = auth.ChangeUsers(bob.UserID)
	_, err := b.guard.Authenticate(ctx, "Bearer "+aliceTok)
	require.NoError(t, err)
	announce = auth.ChangeUsers(alice.UserID)
	_, err = b.guard.Authenticate(ctx, "Bearer "+aliceTok)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.dir.tokenCalls.Load(), "bob's change left alice's look-up cached")

	b.guard.InvalidateChange(auth.ChangeUsers(alice.UserID))
	_, err = b.guard.Authenticate(ctx, "Bearer "+aliceTok) // alice's change in flight
	require.NoError(t, err)
	b.dir.duringTokenLookup = nil
	_, err = b.guard.Authenticate(ctx, "Bearer "+aliceTok)
	require.NoError(t, err)
	require.EqualValues(t, 3, b.dir.tokenCalls.Load(), "the look-up alice's change overtook was not cached")
}

// A watched connection is verified again only after a change of its user,
// of its project (or that project's organization), or of everything, or
// once its token expired; until then Current answers without a look-up.
func TestWatchFollowsOnlyItsChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWatcher(t, time.Hour)
	p := b.member(auth.ProjectViewer)
	tok := b.dir.addToken(p)
	stream, _ := b.watch(t, tok, uuid.Nil)
	session, _ := b.watch(t, tok, b.project)
	other := b.dir.addToken(b.member(auth.ProjectViewer))
	otherStream, _ := b.watch(t, other, uuid.Nil)
	lookups := b.guard.Lookups()

	fresh := func(w *auth.Watch) bool {
		_, ok := w.Current()
		return ok
	}
	require.True(t, fresh(stream))
	require.True(t, fresh(session))

	// Another user's change, another project's deletion, another
	// organization's: nothing to verify.
	b.guard.InvalidateChange(auth.ChangeUsers(uuid.New()))
	b.guard.InvalidateChange(auth.Change{Projects: []uuid.UUID{uuid.New()}, Orgs: []uuid.UUID{uuid.New()}})
	for _, w := range []*auth.Watch{stream, session, otherStream} {
		require.True(t, fresh(w))
		_, err := w.Principal(ctx)
		require.NoError(t, err)
	}
	require.Equal(t, lookups, b.guard.Lookups())

	// The project's deletion concerns the session, not the stream.
	b.guard.InvalidateChange(auth.Change{Projects: []uuid.UUID{b.project}})
	require.True(t, fresh(stream))
	require.False(t, fresh(session))
	b.guard.InvalidateChange(auth.Change{Orgs: []uuid.UUID{b.org}})
	require.True(t, fresh(stream))
	_, err := session.Principal(ctx)
	require.NoError(t, err)
	require.True(t, fresh(session))
	require.Equal(t, lookups+1, b.guard.Lookups(), "the project looked up again; the token still cached")

	// The user's change concerns both, not the other user's stream.
	b.guard.InvalidateChange(auth.ChangeUsers(p.UserID))
	require.False(t, fresh(stream))
	require.False(t, fresh(session))
	require.True(t, fresh(otherStream))

	// A change of everything concerns every connection.
	b.guard.Invalidate()
	require.False(t, fresh(otherStream))
}
