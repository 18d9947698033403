package auth

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// RecheckInterval is how often a Watcher re-verifies every watched
// connection although no change was announced: tokens expire without a
// notification, and a notification can be lost.
const RecheckInterval = 2 * time.Second

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
// authorization change the Guard is told of (Invalidate: a token, user,
// membership, project or organization changed, in any process) and every
// Interval, each is verified again, and one that no longer passes is ended.
type Watcher struct {
	cfg WatcherConfig

	mu      sync.Mutex
	watches map[*Watch]struct{}

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
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
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		tick := time.NewTicker(w.cfg.Interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			case <-tick.C:
			}
			w.sweep(ctx)
		}
	}()
	return nil
}

// Stop ends the re-checks; open connections stay as they are.
func (w *Watcher) Stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	<-w.done
}

// Watched is the number of watched connections.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

func (w *Watcher) sweep(ctx context.Context) {
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
		if _, err := x.verify(ctx, false); err != nil && !errors.Is(err, ErrEnded) {
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
	gen := w.cfg.Guard.Generation()
	p, reason, err := x.check(ctx)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return nil, ErrEnded
	}
	x.p, x.gen = p, gen
	w.mu.Lock()
	w.watches[x] = struct{}{}
	w.mu.Unlock()
	if w.cfg.Guard.Generation() != gen {
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
	p     *Principal
	gen   uint64 // the Guard's generation before p was verified
	ended bool
}

// Principal returns the connection's caller as of now: verified again
// first when an authorization change was announced since the last check,
// or when its token has expired. ErrEnded: the connection was ended (end
// has been called); another error: it could not be verified now.
func (x *Watch) Principal(ctx context.Context) (*Principal, error) {
	return x.verify(ctx, true)
}

// Close stops watching (the connection ended by itself).
func (x *Watch) Close() {
	x.mu.Lock()
	x.ended = true
	x.mu.Unlock()
	x.w.remove(x)
}

// verify checks the connection again (only when stale, if onlyIfStale)
// and ends it when it no longer passes.
func (x *Watch) verify(ctx context.Context, onlyIfStale bool) (*Principal, error) {
	g := x.w.cfg.Guard
	x.mu.Lock()
	if x.ended {
		x.mu.Unlock()
		return nil, ErrEnded
	}
	gen := g.Generation()
	if onlyIfStale && gen == x.gen && (x.p.ExpiresAt.IsZero() || g.now().Before(x.p.ExpiresAt)) {
		p := x.p
		x.mu.Unlock()
		return p, nil
	}
	p, reason, err := x.check(ctx)
	if err != nil {
		x.mu.Unlock()
		return nil, err
	}
	if reason != "" {
		x.ended = true
		old := x.p
		x.mu.Unlock()
		x.w.remove(x)
		x.w.cfg.Logger.Info("closing a stream", "reason", reason, "user", old.UserID, "tokenId", old.TokenID)
		x.end()
		return nil, ErrEnded
	}
	x.p, x.gen = p, gen
	x.mu.Unlock()
	return p, nil
}

// check verifies the credential and memberships again; reason says why
// the connection must end ("" when it may go on).
func (x *Watch) check(ctx context.Context) (*Principal, string, error) {
	g := x.w.cfg.Guard
	p, err := g.Authenticate(ctx, x.header)
	if errs.CodeOf(err) == errs.Unauthenticated {
		return nil, "token revoked or expired, or its user deleted", nil
	}
	if err != nil {
		return nil, "", err
	}
	if x.p != nil && narrowed(x.p, p) {
		return nil, "a membership was removed", nil
	}
	if x.project != uuid.Nil {
		org, err := g.projectOrg(ctx, x.project)
		if errs.CodeOf(err) == errs.NotFound {
			return nil, "the project was deleted", nil
		}
		if err != nil {
			return nil, "", err
		}
		if p.ProjectRole(x.project, org) == "" || (p.BoundProject != uuid.Nil && p.BoundProject != x.project) {
			return nil, "no longer a member of the project", nil
		}
	}
	return p, "", nil
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
