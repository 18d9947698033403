package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/startstop"
)

// RecheckInterval is how often a Watcher re-verifies every watched
// connection although no change was announced: tokens expire without a
// notification, and a notification can be lost.
const RecheckInterval = 2 * time.Second

// VerifyTimeout bounds the re-verification of one watched connection (a
// slow look-up delays no other connection by more).
const VerifyTimeout = 5 * time.Second

// ErrEnded is what a watched connection gets once the credential or the
// membership it was opened with is gone.
var ErrEnded = errs.New(errs.Unauthenticated, "the token or membership this connection was opened with is no longer valid")

// WatcherConfig configures a Watcher. Guard and Logger are required.
type WatcherConfig struct {
	Guard  *Guard
	Logger *slog.Logger
	// Interval is the periodic re-check (default RecheckInterval).
	Interval time.Duration
}

// Watcher keeps long-lived connections (event streams, MCP sessions and
// SSE transports) tied to the credential that opened them. On every
// authorization change the Guard is told of (InvalidateChange: a token,
// user, membership, project or organization changed, in any process), each
// connection the change concerns (its user's, its project's, or every one
// for a change of everything) is verified again, and every Interval each
// one is; one that no longer passes is ended.
type Watcher struct {
	cfg WatcherConfig

	mu      sync.Mutex
	watches map[*Watch]struct{}

	wake chan struct{}
	life startstop.Base
}

// NewWatcher returns a watcher; Start runs its re-checks.
func NewWatcher(cfg WatcherConfig) *Watcher {
	if cfg.Interval <= 0 {
		cfg.Interval = RecheckInterval
	}
	w := &Watcher{cfg: cfg, watches: map[*Watch]struct{}{}, wake: make(chan struct{}, 1)}
	cfg.Guard.OnInvalidate(w.poke)
	return w
}

func (w *Watcher) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Start runs the re-checks until Stop.
func (w *Watcher) Start(ctx context.Context) error {
	if err := w.life.Begin(ctx); err != nil {
		return fmt.Errorf("auth watcher: %w", err)
	}
	w.life.Go(w.loop)
	return nil
}

func (w *Watcher) loop(ctx context.Context) {
	tick := time.NewTicker(w.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			w.sweep(ctx, true)
		case <-tick.C:
			w.sweep(ctx, false)
		}
	}
}

// Stop ends the re-checks and waits for them until ctx ends; open
// connections stay as they are.
func (w *Watcher) Stop(ctx context.Context) error { return w.life.Stop(ctx) }

// Watched is the number of watched connections.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

// sweep verifies the watched connections again: only those a change
// concerns, if onlyChanged.
func (w *Watcher) sweep(ctx context.Context, onlyChanged bool) {
	w.mu.Lock()
	list := make([]*Watch, 0, len(w.watches))
	for x := range w.watches {
		list = append(list, x)
	}
	w.mu.Unlock()
	failed := 0
	var last error
	for _, x := range list {
		if ctx.Err() != nil {
			return
		}
		vctx, cancel := context.WithTimeout(ctx, VerifyTimeout)
		_, err := x.verify(vctx, onlyChanged)
		cancel()
		if err != nil && !errors.Is(err, ErrEnded) {
			failed++
			last = err
		}
	}
	if failed > 0 {
		// Kept open: a database outage must not cut every stream. The
		// next change or tick tries again.
		w.cfg.Logger.Warn("re-verifying open streams failed; retrying", "streams", failed, "err", last)
	}
}

func (w *Watcher) remove(x *Watch) {
	w.mu.Lock()
	delete(w.watches, x)
	w.mu.Unlock()
}

// Watch starts watching a connection opened with the Authorization header
// value header, verifying it again first. end is called once, from
// another goroutine, when the credential no longer authenticates (revoked,
// expired, its user deleted), when its caller lost a project membership,
// an organization role or the superadmin grant it had, or, for a
// connection of one project (project not uuid.Nil), when the caller can no
// longer see that project. Errors: ErrEnded when that is already so, or
// the look-up's error. Close the Watch when the connection ends.
func (w *Watcher) Watch(ctx context.Context, header string, project uuid.UUID, end func()) (*Watch, error) {
	x := &Watch{w: w, header: header, project: project, end: end}
	g := w.cfg.Guard
	v := g.Version()
	p, org, reason, err := x.check(ctx, nil)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return nil, ErrEnded
	}
	x.state.Store(&watchState{p: p, version: v, org: org})
	w.mu.Lock()
	w.watches[x] = struct{}{}
	w.mu.Unlock()
	if g.ChangedSince(v, p.UserID, project, org) {
		w.poke() // a change raced with the check: look again
	}
	return x, nil
}

// Watch is one watched connection.
type Watch struct {
	w       *Watcher
	header  string
	project uuid.UUID
	end     func()

	mu    sync.Mutex // serialises verification
	state atomic.Pointer[watchState]
	ended atomic.Bool
}

// watchState is a watched connection's caller as last verified.
type watchState struct {
	p *Principal
	// version is the Guard's version before p was verified.
	version uint64
	// org is the organization of the watch's project (if any).
	org uuid.UUID
}

// Principal returns the connection's caller as of now: verified again
// first when an authorization change concerning it was announced since the
// last check, or when its token has expired. ErrEnded: the connection was
// ended (end has been called); another error: it could not be verified
// now.
func (x *Watch) Principal(ctx context.Context) (*Principal, error) {
	return x.verify(ctx, true)
}

// Current returns the connection's caller without any look-up when no
// change concerning it was announced since it was last verified and its
// token has not expired; ok is false when it must be verified again
// (Principal) or has ended. It never blocks.
func (x *Watch) Current() (p *Principal, ok bool) {
	if x.ended.Load() {
		return nil, false
	}
	st := x.state.Load()
	if x.stale(st) {
		return nil, false
	}
	return st.p, true
}

// stale reports whether st must be verified again.
func (x *Watch) stale(st *watchState) bool {
	g := x.w.cfg.Guard
	if !st.p.ExpiresAt.IsZero() && !g.now().Before(st.p.ExpiresAt) {
		return true
	}
	return g.ChangedSince(st.version, st.p.UserID, x.project, st.org)
}

// Close stops watching (the connection ended by itself).
func (x *Watch) Close() {
	x.ended.Store(true)
	x.w.remove(x)
}

// verify checks the connection again (only when stale, if onlyIfStale)
// and ends it when it no longer passes.
func (x *Watch) verify(ctx context.Context, onlyIfStale bool) (*Principal, error) {
	p, ended, err := x.reverify(ctx, onlyIfStale)
	if ended != "" {
		// Outside the lock: end may take its time (closing a session).
		old := x.state.Load().p
		x.w.remove(x)
		x.w.cfg.Logger.Info("closing a stream", "reason", ended, "user", old.UserID, "tokenId", old.TokenID)
		x.end()
	}
	return p, err
}

// reverify is verify under the lock; ended is the reason the connection
// ends when this call ended it.
func (x *Watch) reverify(ctx context.Context, onlyIfStale bool) (p *Principal, ended string, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ended.Load() {
		return nil, "", ErrEnded
	}
	st := x.state.Load()
	if onlyIfStale && !x.stale(st) {
		return st.p, "", nil
	}
	v := x.w.cfg.Guard.Version()
	p, org, reason, err := x.check(ctx, st.p)
	if err != nil {
		return nil, "", err
	}
	if reason != "" {
		if x.ended.CompareAndSwap(false, true) {
			return nil, reason, ErrEnded
		}
		return nil, "", ErrEnded
	}
	x.state.Store(&watchState{p: p, version: v, org: org})
	return p, "", nil
}

// check verifies the credential and memberships again (old: the caller as
// last verified, nil at first); reason says why the connection must end
// ("" when it may go on). org is the organization of the watch's project.
func (x *Watch) check(ctx context.Context, old *Principal) (p *Principal, org uuid.UUID, reason string, err error) {
	g := x.w.cfg.Guard
	p, err = g.Authenticate(ctx, x.header)
	if errs.CodeOf(err) == errs.Unauthenticated {
		return nil, uuid.Nil, "token revoked or expired, or its user deleted", nil
	}
	if err != nil {
		return nil, uuid.Nil, "", err
	}
	if old != nil && narrowed(old, p) {
		return nil, uuid.Nil, "a membership was removed", nil
	}
	if x.project != uuid.Nil {
		org, err = g.projectOrg(ctx, x.project)
		if errs.CodeOf(err) == errs.NotFound {
			return nil, uuid.Nil, "the project was deleted", nil
		}
		if err != nil {
			return nil, uuid.Nil, "", err
		}
		if !p.Sees(x.project, org) {
			return nil, uuid.Nil, "no longer a member of the project", nil
		}
	}
	return p, org, "", nil
}

// narrowed reports whether cur lost access old had: a project membership,
// an organization membership or role, or the superadmin grant.
func narrowed(old, cur *Principal) bool {
	if old.Superadmin && !cur.Superadmin {
		return true
	}
	for id := range old.ProjectRoles {
		if _, ok := cur.ProjectRoles[id]; !ok {
			return true
		}
	}
	for id, role := range old.OrgRoles {
		if cur.OrgRoles[id].rank() < role.rank() {
			return true
		}
	}
	return false
}
