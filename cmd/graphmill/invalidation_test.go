package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
)

// invStreams are the open event streams of a targeted-invalidation test,
// on two processes sharing one database.
type invStreams struct {
	s, other *testServer
	project  uuid.UUID
	frames   map[string]<-chan sseFrame
}

// requireAllGet publishes a project event and requires every stream of
// names to receive it.
func (st *invStreams) requireAllGet(t *testing.T, names ...string) {
	t.Helper()
	id := st.s.publish("test.invalidation", &st.project, nil, map[string]any{})
	for _, n := range names {
		require.Equal(t, id, nextEvent(t, st.frames[n]).ID, "stream %s", n)
	}
}

// lookups is the directory look-ups of both processes so far.
func (st *invStreams) lookups() [2]uint64 {
	return [2]uint64{st.s.m.guard.Lookups(), st.other.m.guard.Lookups()}
}

// openInvStreams starts two processes on one database and opens, on both,
// event streams of two members of the default project (alice with two
// tokens) and of the admin. aliceToken1 is the id of alice's first token;
// tokens["aliceAdmin"] is alice's token for managing her tokens (no stream).
func openInvStreams(t *testing.T) (st *invStreams, aliceToken1 string, tokens map[string]string) {
	t.Helper()
	s := newServer(t)
	project, _ := s.defaultProject()
	other := startServer(t, s.dbURL)
	mint := func(user string, scopes ...string) (id, token string) {
		var tok struct {
			ID    string `json:"id"`
			Token string `json:"token"`
		}
		s.must(201, "POST", "/api/superadmin/users/"+user+"/tokens", s.admin, map[string]any{"name": "t", "scopes": scopes}).Decode(t, &tok)
		return tok.ID, tok.Token
	}
	alice, aliceAdmin := s.newMember("alice@example.com", []string{"admin:read", "admin:write"}, project, "viewer")
	aliceToken1, alice1 := mint(alice, "notifications:read")
	_, alice2 := mint(alice, "notifications:read")
	_, bob := s.newMember("bob@example.com", []string{"notifications:read"}, project, "viewer")
	tokens = map[string]string{"alice1": alice1, "alice2": alice2, "bob": bob, "admin": s.admin, "aliceAdmin": aliceAdmin}
	st = &invStreams{s: s, other: other, project: uuid.MustParse(project), frames: map[string]<-chan sseFrame{}}
	for name, tok := range tokens {
		if name == "aliceAdmin" {
			continue
		}
		st.frames[name], _ = s.openStream(tok, 0)
		st.frames["other-"+name], _ = other.openStream(tok, 0)
	}
	require.Eventually(t, func() bool { return s.m.hub.Clients() == 4 && other.m.hub.Clients() == 4 }, 5*time.Second, 10*time.Millisecond)
	// Warm both processes' caches (the project's organization is looked
	// up by the first event).
	st.requireAllGet(t, "alice1", "alice2", "bob", "admin", "other-alice1", "other-alice2", "other-bob", "other-admin")
	return st, aliceToken1, tokens
}

// TestInvalidationIsTargeted: an authorization change re-verifies only
// the streams of the users it concerns. Another user creating an
// organization (any signed-in user may) costs the open streams no look-up
// and no disconnection, in this process or another; a revoked token ends
// its own streams only; a change of everything ("*") still re-verifies
// every stream.
func TestInvalidationIsTargeted(t *testing.T) {
	t.Parallel()
	all := []string{"alice1", "alice2", "bob", "admin", "other-alice1", "other-alice2", "other-bob", "other-admin"}

	t.Run("CreateOrgByAnotherUser", func(t *testing.T) {
		t.Parallel()
		st, _, _ := openInvStreams(t)
		s := st.s
		_, carol := s.newUser("carol@example.com", []string{"admin:read", "admin:write"}, "")
		s.must(200, "GET", "/api/orgs", carol, nil) // carol's token is verified and cached
		project := st.project.String()
		mcpToken := mcpSrvProjectToken(s, project, []string{"mcp:use", "graph:read"})
		endpoint := openSSEEndpoint(t, s, project, mcpToken)
		st.requireAllGet(t, all...)
		before := st.lookups()

		s.must(201, "POST", "/api/orgs", carol, map[string]any{"name": "carol's org"})
		// Two events: the other process has seen the notification by the
		// time the second arrives (one connection, commit order).
		st.requireAllGet(t, all...)
		st.requireAllGet(t, all...)
		require.Equal(t, before, st.lookups(), "streams of other users were verified again")
		require.Equal(t, 4, s.m.hub.Clients())
		require.Equal(t, 4, st.other.m.hub.Clients())
		// The MCP SSE session is still open: it takes messages.
		r := s.do("POST", endpoint, mcpToken, mcpSrvInit)
		require.Equal(t, 202, r.Status, "%s", r.Body)
	})

	t.Run("RevocationEndsOnlyItsStreams", func(t *testing.T) {
		t.Parallel()
		st, first, tokens := openInvStreams(t)
		s := st.s
		s.must(200, "GET", "/api/tokens", tokens["aliceAdmin"], nil) // verified and cached
		// bob's token is revoked behind the guards' backs (nothing
		// announced): were bob's streams verified again, they would end.
		_, err := s.m.db.pool.Exec(context.Background(),
			`UPDATE api_tokens SET revoked_at = now() WHERE token_hash = $1`, hashOf(tokens["bob"]))
		require.NoError(t, err)
		before := st.lookups()
		// Any user may revoke their own tokens.
		s.must(204, "DELETE", "/api/tokens/"+first, tokens["aliceAdmin"], nil)

		for _, n := range []string{"alice1", "other-alice1"} {
			requireStreamEnds(t, st.frames[n], n)
		}
		kept := []string{"alice2", "bob", "admin", "other-alice2", "other-bob", "other-admin"}
		st.requireAllGet(t, kept...)
		st.requireAllGet(t, kept...)
		require.Equal(t, 3, s.m.hub.Clients())
		require.Equal(t, 3, st.other.m.hub.Clients())
		// alice's two tokens are looked up again, no one else's: once
		// each in the other process, and up to twice in this one, which
		// applies the change at once and again when its own notification
		// arrives (kept: it orders the change before later events).
		after := st.lookups()
		require.LessOrEqual(t, after[0]-before[0], uint64(4), "this process verified other users' streams again")
		require.LessOrEqual(t, after[1]-before[1], uint64(2), "the other process verified other users' streams again")
		s.must(401, "GET", "/api/events/stream", tokens["alice1"], nil)
	})

	t.Run("DeletionsEndTheirProjectsSessions", func(t *testing.T) {
		t.Parallel()
		st, _, _ := openInvStreams(t)
		s, other := st.s, st.other
		_, defaultOrg := s.defaultProject()
		var org, doomed, inDoomedOrg struct {
			ID string `json:"id"`
		}
		s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": "doomed org"}).Decode(t, &org)
		s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": "doomed", "orgId": defaultOrg}).Decode(t, &doomed)
		s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": "in doomed org", "orgId": org.ID}).Decode(t, &inDoomedOrg)
		sessions := map[string]*revStream{}
		open := func(name string, srv *testServer, project string) {
			sessions[name], _ = openRevStream(t, srv, "/api/mcp/sse/"+project, mcpSrvProjectToken(s, project, []string{"mcp:use"}))
		}
		open("doomed", s, doomed.ID)
		open("other-doomed", other, doomed.ID)
		open("other-in-doomed-org", other, inDoomedOrg.ID)
		open("kept", s, st.project.String())
		open("other-kept", other, st.project.String())

		s.must(204, "DELETE", "/api/projects/"+doomed.ID, s.admin, nil)
		sessions["doomed"].requireEnds(t, "MCP SSE stream of a deleted project")
		sessions["other-doomed"].requireEnds(t, "MCP SSE stream of a deleted project, other process")
		s.must(200, "DELETE", "/api/superadmin/organizations/"+org.ID, s.admin, nil)
		sessions["other-in-doomed-org"].requireEnds(t, "MCP SSE stream of a deleted organization's project, other process")
		for _, n := range []string{"kept", "other-kept"} {
			select {
			case <-sessions[n].ended:
				t.Fatalf("%s ended", n)
			default:
			}
		}
		st.requireAllGet(t, all...)
		require.Equal(t, 4, s.m.hub.Clients())
		require.Equal(t, 4, other.m.hub.Clients())
	})

	t.Run("ChangeOfEverything", func(t *testing.T) {
		t.Parallel()
		st, _, tokens := openInvStreams(t)
		s := st.s
		// Behind the API's back, then announced as a change of everything.
		_, err := s.m.db.pool.Exec(context.Background(),
			`UPDATE api_tokens SET revoked_at = now() WHERE token_hash = $1`, hashOf(tokens["bob"]))
		require.NoError(t, err)
		_, err = s.m.db.pool.Exec(context.Background(), `SELECT pg_notify($1, '*')`, auth.InvalidateChannel)
		require.NoError(t, err)
		for _, n := range []string{"bob", "other-bob"} {
			requireStreamEnds(t, st.frames[n], n)
		}
		st.requireAllGet(t, "alice1", "alice2", "admin", "other-alice1", "other-alice2", "other-admin")
	})
}

func hashOf(token string) []byte {
	h := auth.HashToken(token)
	return h[:]
}

// requireStreamEnds requires the stream to end within revocationBound,
// with no event.
func requireStreamEnds(t *testing.T, frames <-chan sseFrame, what string) {
	t.Helper()
	deadline := time.After(revocationBound)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return
			}
			require.Zero(t, f.ID, "%s got an event after its token was revoked", what)
		case <-deadline:
			t.Fatalf("%s still open %s after the change", what, revocationBound)
		}
	}
}
