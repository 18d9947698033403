package auth_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/startstop"
)

type watchBundle struct {
	*guardBundle
	watcher *auth.Watcher
	project uuid.UUID
	org     uuid.UUID
}

func setupWatcher(t *testing.T, interval time.Duration) *watchBundle {
	t.Helper()
	b := &watchBundle{guardBundle: setupGuard(t, nil), project: uuid.New(), org: uuid.New()}
	b.dir.projects[b.project] = b.org
	b.dir.orgs[b.org] = true
	b.watcher = auth.NewWatcher(auth.WatcherConfig{Guard: b.guard, Logger: slog.New(slog.DiscardHandler), Interval: interval})
	return b
}

// member is an account token's caller holding role in the bundle's
// project (and membership of its organization).
func (b *watchBundle) member(role auth.ProjectRole) *auth.Principal {
	p := account()
	p.ProjectRoles = map[uuid.UUID]auth.ProjectRole{b.project: role}
	p.OrgRoles = map[uuid.UUID]auth.OrgRole{b.org: auth.OrgMember}
	return p
}

// replace swaps the directory's answer for tok (a change in the database).
func (b *watchBundle) replace(tok string, p *auth.Principal) {
	b.dir.mu.Lock()
	defer b.dir.mu.Unlock()
	if p == nil {
		delete(b.dir.principals, auth.HashToken(tok))
		return
	}
	b.dir.principals[auth.HashToken(tok)] = p
}

// watch watches tok; ends counts the calls of end.
func (b *watchBundle) watch(t *testing.T, tok string, project uuid.UUID) (*auth.Watch, *atomic.Int32) {
	t.Helper()
	ends := &atomic.Int32{}
	w, err := b.watcher.Watch(context.Background(), "Bearer "+tok, project, func() { ends.Add(1) })
	require.NoError(t, err)
	return w, ends
}

// The caller seen through a watch follows announced changes; the
// connection ends once, when its token or a membership is gone.
func TestWatchFollowsChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWatcher(t, time.Hour)
	p := b.member(auth.ProjectViewer)
	tok := b.dir.addToken(p)
	w, ends := b.watch(t, tok, uuid.Nil)
	require.Equal(t, 1, b.watcher.Watched())

	got, err := w.Principal(ctx)
	require.NoError(t, err)
	require.Same(t, p, got)

	// A promotion and a new membership keep the connection, and are seen
	// once announced.
	promoted := *p
	promoted.ProjectRoles = map[uuid.UUID]auth.ProjectRole{b.project: auth.ProjectAdmin, uuid.New(): auth.ProjectViewer}
	b.replace(tok, &promoted)
	got, err = w.Principal(ctx)
	require.NoError(t, err)
	require.Same(t, p, got, "nothing announced yet: the cached caller")
	b.guard.Invalidate()
	got, err = w.Principal(ctx)
	require.NoError(t, err)
	require.Same(t, &promoted, got)
	require.Zero(t, ends.Load())

	// Losing the project's membership ends it at the first look after the
	// announcement.
	left := promoted
	left.ProjectRoles = map[uuid.UUID]auth.ProjectRole{}
	b.replace(tok, &left)
	b.guard.Invalidate()
	_, err = w.Principal(ctx)
	require.ErrorIs(t, err, auth.ErrEnded)
	require.EqualValues(t, 1, ends.Load())
	require.Zero(t, b.watcher.Watched())
	_, err = w.Principal(ctx)
	require.ErrorIs(t, err, auth.ErrEnded)
	require.EqualValues(t, 1, ends.Load(), "end is called once")
}

func TestWatchEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := map[string]func(b *watchBundle, tok string, p *auth.Principal){
		"TokenRevokedOrUserDeleted": func(b *watchBundle, tok string, _ *auth.Principal) {
			b.replace(tok, nil)
			b.guard.Invalidate()
		},
		"TokenExpired": func(b *watchBundle, _ string, _ *auth.Principal) {
			// Not announced: expiry is seen by the clock alone.
			b.clock.Advance(2 * time.Minute)
		},
		"OrgRoleLowered": func(b *watchBundle, tok string, p *auth.Principal) {
			q := *p
			q.OrgRoles = map[uuid.UUID]auth.OrgRole{b.org: auth.OrgMember}
			b.replace(tok, &q)
			b.guard.Invalidate()
		},
		"SuperadminRevoked": func(b *watchBundle, tok string, p *auth.Principal) {
			q := *p
			q.Superadmin = false
			b.replace(tok, &q)
			b.guard.Invalidate()
		},
		"ProjectDeleted": func(b *watchBundle, _ string, _ *auth.Principal) {
			b.dir.mu.Lock()
			delete(b.dir.projects, b.project)
			b.dir.mu.Unlock()
			b.guard.Invalidate()
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupWatcher(t, time.Hour)
			p := b.member(auth.ProjectViewer)
			p.OrgRoles[b.org] = auth.OrgAdmin
			p.Superadmin = true
			p.ExpiresAt = b.clock.Now().Add(time.Minute)
			tok := b.dir.addToken(p)
			w, ends := b.watch(t, tok, b.project)
			_, err := w.Principal(ctx)
			require.NoError(t, err)

			change(b, tok, p)
			_, err = w.Principal(ctx)
			require.ErrorIs(t, err, auth.ErrEnded)
			require.EqualValues(t, 1, ends.Load())
		})
	}
}

// A failed look-up (the database away) neither ends the connection nor
// hands out the stale caller.
func TestWatchKeepsOnLookupFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWatcher(t, time.Hour)
	p := b.member(auth.ProjectViewer)
	tok := b.dir.addToken(p)
	w, ends := b.watch(t, tok, b.project)

	b.dir.mu.Lock()
	b.dir.err = errors.New("connection refused")
	b.dir.mu.Unlock()
	b.guard.Invalidate()
	_, err := w.Principal(ctx)
	require.Error(t, err)
	require.NotErrorIs(t, err, auth.ErrEnded)
	require.Equal(t, errs.Internal, errs.CodeOf(err))
	require.Zero(t, ends.Load())

	b.dir.mu.Lock()
	b.dir.err = nil
	b.dir.mu.Unlock()
	got, err := w.Principal(ctx)
	require.NoError(t, err)
	require.Same(t, p, got)
	w.Close()
	require.Zero(t, b.watcher.Watched())
	require.Zero(t, ends.Load(), "a closed watch is not ended")
}

// Watch refuses a connection whose credential or project is already gone.
func TestWatchRefusesInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWatcher(t, time.Hour)
	_, err := b.watcher.Watch(ctx, "Bearer "+auth.NewToken(), uuid.Nil, func() {})
	require.ErrorIs(t, err, auth.ErrEnded)
	tok := b.dir.addToken(b.member(auth.ProjectViewer))
	_, err = b.watcher.Watch(ctx, "Bearer "+tok, uuid.New(), func() {})
	require.ErrorIs(t, err, auth.ErrEnded)
	require.Zero(t, b.watcher.Watched())
}

// Started, the watcher ends connections without being asked: at once on
// an announced change, and by its periodic re-check on expiry.
func TestWatcherEndsConnectionsByItself(t *testing.T) {
	t.Parallel()
	b := setupWatcher(t, 20*time.Millisecond)
	require.NoError(t, b.watcher.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, b.watcher.Stop(context.Background())) })

	revoked := b.dir.addToken(b.member(auth.ProjectViewer))
	expiring := b.member(auth.ProjectViewer)
	expiring.ExpiresAt = b.clock.Now().Add(time.Minute)
	expiringTok := b.dir.addToken(expiring)
	kept := b.dir.addToken(b.member(auth.ProjectViewer))
	ended := map[string]chan struct{}{"revoked": make(chan struct{}), "expiring": make(chan struct{})}
	for name, tok := range map[string]string{"revoked": revoked, "expiring": expiringTok} {
		_, err := b.watcher.Watch(context.Background(), "Bearer "+tok, uuid.Nil, func() { close(ended[name]) })
		require.NoError(t, err)
	}
	_, keptEnds := b.watch(t, kept, b.project)

	b.replace(revoked, nil)
	b.guard.Invalidate()
	b.clock.Advance(2 * time.Minute)
	for name, ch := range ended {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s connection not ended", name)
		}
	}
	require.Zero(t, keptEnds.Load())
	require.Equal(t, 1, b.watcher.Watched())
}

// The watcher has the start/stop shape of every long-running part: Stop
// before Start does nothing, a second Start is refused, and Stop waits for
// a re-check in progress (until its context ends), however often it is
// called.
func TestWatcherStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWatcher(t, time.Hour)
	require.NoError(t, b.watcher.Stop(ctx), "Stop before Start")
	_, ends := b.watch(t, b.dir.addToken(b.member(auth.ProjectViewer)), b.project)

	inLookup := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	b.dir.duringTokenLookup = func(int64) {
		once.Do(func() { close(inLookup) })
		<-release // a look-up that ignores its context
	}
	require.NoError(t, b.watcher.Start(ctx))
	require.ErrorIs(t, b.watcher.Start(ctx), startstop.ErrStarted)
	b.guard.Invalidate() // the re-check looks the token up again
	<-inLookup

	ended, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, b.watcher.Stop(ended), context.Canceled, "the re-check is still running")
	close(release)
	require.NoError(t, b.watcher.Stop(ctx))
	require.NoError(t, b.watcher.Stop(ended), "a second Stop after the re-checks ended")
	require.Zero(t, ends.Load(), "Stop leaves open connections as they are")
	require.Equal(t, 1, b.watcher.Watched())
}
