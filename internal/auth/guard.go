package auth

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// InvalidateChannel is the notification channel on which any change to
// tokens, users, memberships, projects or organizations is announced, so
// every process drops what it cached of what changed. The payload names
// it (Change.Payload).
const InvalidateChannel = "graphmill_authz"

// CacheMax bounds the number of cached credentials and projects; the cache
// is emptied when it is reached.
const CacheMax = 10000

// Errors returned by authentication and authorization.
var (
	ErrNoToken      = errs.New(errs.Unauthenticated, "missing bearer token: send Authorization: Bearer <token>")
	ErrBadToken     = errs.New(errs.Unauthenticated, "invalid, revoked or expired token")
	ErrNoProject    = errs.New(errs.NotFound, "project not found")
	ErrNoOrg        = errs.New(errs.NotFound, "organization not found")
	ErrNeedProject  = errs.New(errs.Invalid, "no project given: pass the project in the path, the projectId query parameter or the X-Project-ID header, or use a project-scoped token")
	ErrBound        = errs.New(errs.PermissionDenied, "this token is bound to another project")
	ErrBoundScope   = errs.New(errs.PermissionDenied, "a project-scoped token cannot be used outside its project")
	ErrNotSuperuser = errs.New(errs.PermissionDenied, "superadmin role required")
)

// OIDCClaims are the identity claims taken from a verified OIDC token.
type OIDCClaims struct {
	Issuer     string
	Subject    string
	Email      string
	Name       string
	GivenName  string
	FamilyName string
}

// Directory is what the guard needs from the identity store.
type Directory interface {
	// PrincipalByTokenHash returns the caller of a live API token; an
	// unknown, revoked token or a deleted user is errs.Unauthenticated.
	PrincipalByTokenHash(ctx context.Context, hash [32]byte) (*Principal, error)
	// PrincipalByOIDC finds or creates the user of a verified identity.
	PrincipalByOIDC(ctx context.Context, c OIDCClaims) (*Principal, error)
	// ProjectOrg returns the organization of a live project
	// (errs.NotFound otherwise).
	ProjectOrg(ctx context.Context, project uuid.UUID) (uuid.UUID, error)
	// OrgLive reports whether an organization exists and is not deleted.
	OrgLive(ctx context.Context, org uuid.UUID) (bool, error)
}

// Verifier checks OIDC access tokens.
type Verifier interface {
	Verify(ctx context.Context, raw string) (OIDCClaims, time.Time, error)
}

type tokenEntry struct {
	p  *Principal
	at time.Time
	// until bounds an OIDC entry by its token's own expiry.
	until time.Time
}

type projectEntry struct {
	org uuid.UUID
	at  time.Time
}

// Guard authenticates requests and applies route rules. Verified tokens and
// project lookups are cached for TTL; InvalidateChange (called locally after
// a change, and by every process on an InvalidateChannel notification)
// drops those of the users, projects and organizations that changed at
// once, so revocation is prompt, and marks them changed for the
// connections verified earlier (ChangedSince).
type Guard struct {
	dir      Directory
	verifier Verifier // nil: OIDC off
	ttl      time.Duration
	now      func() time.Time

	// lookups counts the directory's look-ups (Lookups).
	lookups atomic.Uint64

	mu sync.RWMutex
	// version counts changes; allAt is the version of the last change of
	// everything, changed that of the last change of each user, project
	// and organization since.
	version  uint64
	allAt    uint64
	changed  map[changeKey]uint64
	tokens   map[[32]byte]tokenEntry
	projects map[uuid.UUID]projectEntry
	// onInvalidate are called after every change (Watcher).
	onInvalidate []func()
}

// changeKey is a user, project or organization in Guard.changed.
type changeKey struct {
	kind byte // 'u', 'p' or 'o'
	id   uuid.UUID
}

// GuardConfig configures a Guard.
type GuardConfig struct {
	Directory Directory
	Verifier  Verifier
	TTL       time.Duration
	Now       func() time.Time
}

// NewGuard returns a guard.
func NewGuard(c GuardConfig) *Guard {
	if c.Now == nil {
		c.Now = time.Now
	}
	g := &Guard{
		verifier: c.Verifier, ttl: c.TTL, now: c.Now,
		tokens: map[[32]byte]tokenEntry{}, projects: map[uuid.UUID]projectEntry{}, changed: map[changeKey]uint64{},
	}
	g.dir = countingDirectory{dir: c.Directory, n: &g.lookups}
	return g
}

// Lookups is the number of look-ups the guard has made in its Directory
// (cache misses and organization checks), for metrics and tests.
func (g *Guard) Lookups() uint64 { return g.lookups.Load() }

// countingDirectory counts the look-ups of a Directory.
type countingDirectory struct {
	dir Directory
	n   *atomic.Uint64
}

func (d countingDirectory) PrincipalByTokenHash(ctx context.Context, hash [32]byte) (*Principal, error) {
	d.n.Add(1)
	return d.dir.PrincipalByTokenHash(ctx, hash)
}

func (d countingDirectory) PrincipalByOIDC(ctx context.Context, c OIDCClaims) (*Principal, error) {
	d.n.Add(1)
	return d.dir.PrincipalByOIDC(ctx, c)
}

func (d countingDirectory) ProjectOrg(ctx context.Context, project uuid.UUID) (uuid.UUID, error) {
	d.n.Add(1)
	return d.dir.ProjectOrg(ctx, project)
}

func (d countingDirectory) OrgLive(ctx context.Context, org uuid.UUID) (bool, error) {
	d.n.Add(1)
	return d.dir.OrgLive(ctx, org)
}

// Invalidate drops every cached credential and project: a change of
// everything.
func (g *Guard) Invalidate() { g.InvalidateChange(Change{All: true}) }

// InvalidateChange drops what c concerns: the cached credentials of its
// users, its projects and the projects of its organizations (everything
// for c.All), and records the change for ChangedSince.
func (g *Guard) InvalidateChange(c Change) {
	g.mu.Lock()
	g.version++
	v := g.version
	if c.All || len(g.changed)+len(c.Users)+len(c.Projects)+len(c.Orgs) > CacheMax {
		// Bounded like the caches: past CacheMax, a change of
		// everything replaces the record of single ones.
		g.allAt = v
		g.changed = map[changeKey]uint64{}
		g.tokens = map[[32]byte]tokenEntry{}
		g.projects = map[uuid.UUID]projectEntry{}
	} else {
		users := make(map[uuid.UUID]bool, len(c.Users))
		for _, u := range c.Users {
			users[u] = true
			g.changed[changeKey{'u', u}] = v
		}
		if len(users) > 0 {
			for k, e := range g.tokens {
				if users[e.p.UserID] {
					delete(g.tokens, k)
				}
			}
		}
		for _, p := range c.Projects {
			g.changed[changeKey{'p', p}] = v
			delete(g.projects, p)
		}
		for _, o := range c.Orgs {
			g.changed[changeKey{'o', o}] = v
			for p, e := range g.projects {
				if e.org == o {
					delete(g.projects, p)
				}
			}
		}
	}
	hooks := g.onInvalidate
	g.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// Version counts the changes the guard was told of; pass it to
// ChangedSince later.
func (g *Guard) Version() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.version
}

// ChangedSince reports whether a change announced after version v may
// concern a caller of user (its credentials, memberships or account), or
// a connection to project of org: a change of everything, or one naming
// one of them (uuid.Nil names nothing). A caller verified at v must be
// verified again when it does.
func (g *Guard) ChangedSince(v uint64, user, project, org uuid.UUID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.changedSince(v, user, project, org)
}

func (g *Guard) changedSince(v uint64, user, project, org uuid.UUID) bool {
	if g.allAt > v {
		return true
	}
	for _, k := range [...]changeKey{{'u', user}, {'p', project}, {'o', org}} {
		if k.id != uuid.Nil && g.changed[k] > v {
			return true
		}
	}
	return false
}

// OnInvalidate has f called after every change; f must not block.
func (g *Guard) OnInvalidate(f func()) {
	g.mu.Lock()
	g.onInvalidate = append(g.onInvalidate, f)
	g.mu.Unlock()
}

// CanSee reports whether p may see what happens in project: the project is
// live, p is a member (or administers its organization, or is a
// superadmin), and a project-scoped token is bound to it.
func (g *Guard) CanSee(ctx context.Context, p *Principal, project uuid.UUID) bool {
	if p.BoundProject != uuid.Nil && p.BoundProject != project {
		return false
	}
	org, err := g.projectOrg(ctx, project)
	return err == nil && p.Sees(project, org)
}

// ProjectOrg returns the organization of a live project, cached. Errors:
// ErrNoProject (not_found), or the look-up's.
func (g *Guard) ProjectOrg(ctx context.Context, project uuid.UUID) (uuid.UUID, error) {
	return g.projectOrg(ctx, project)
}

// Authenticate returns the caller presenting the Authorization header value
// header. Errors: unauthenticated.
func (g *Guard) Authenticate(ctx context.Context, header string) (*Principal, error) {
	raw, ok := Bearer(header)
	if !ok {
		return nil, ErrNoToken
	}
	key := HashToken(raw)
	now := g.now()
	g.mu.RLock()
	e, hit := g.tokens[key]
	v := g.version
	g.mu.RUnlock()
	if hit && now.Sub(e.at) < g.ttl && (e.until.IsZero() || now.Before(e.until)) {
		return checkExpiry(e.p, now)
	}

	var p *Principal
	var until time.Time
	var err error
	switch {
	case strings.HasPrefix(raw, TokenPrefix):
		if !ValidTokenFormat(raw) {
			return nil, ErrBadToken
		}
		p, err = g.dir.PrincipalByTokenHash(ctx, key)
	case g.verifier != nil:
		var claims OIDCClaims
		claims, until, err = g.verifier.Verify(ctx, raw)
		if errs.CodeOf(err) == errs.Unavailable {
			return nil, err
		}
		if err != nil {
			return nil, ErrBadToken
		}
		p, err = g.dir.PrincipalByOIDC(ctx, claims)
	default:
		return nil, ErrBadToken
	}
	if err != nil {
		if errs.CodeOf(err) == errs.Unauthenticated {
			return nil, ErrBadToken
		}
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	g.store(v, p.UserID, uuid.Nil, uuid.Nil, func() {
		if len(g.tokens) >= CacheMax {
			g.tokens = map[[32]byte]tokenEntry{}
		}
		g.tokens[key] = tokenEntry{p: p, at: now, until: until}
	})
	return checkExpiry(p, now)
}

// store runs put under the lock unless a change concerning user, project
// or org was announced since the caller read version v: what it read may
// already be stale.
func (g *Guard) store(v uint64, user, project, org uuid.UUID, put func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.changedSince(v, user, project, org) {
		put()
	}
}

func checkExpiry(p *Principal, now time.Time) (*Principal, error) {
	if !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt) {
		return nil, ErrBadToken
	}
	return p, nil
}

// Bearer is the token of an Authorization header value of the Bearer
// scheme (case-insensitive), trimmed; false when h is not one or the
// token is empty.
func Bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// projectOrg returns the organization of a live project, cached.
func (g *Guard) projectOrg(ctx context.Context, project uuid.UUID) (uuid.UUID, error) {
	now := g.now()
	g.mu.RLock()
	e, hit := g.projects[project]
	v := g.version
	g.mu.RUnlock()
	if hit && now.Sub(e.at) < g.ttl {
		return e.org, nil
	}
	org, err := g.dir.ProjectOrg(ctx, project)
	if err != nil {
		if errs.CodeOf(err) == errs.NotFound {
			return uuid.Nil, ErrNoProject
		}
		return uuid.Nil, fmt.Errorf("look up project: %w", err)
	}
	g.store(v, uuid.Nil, project, org, func() {
		if len(g.projects) >= CacheMax {
			g.projects = map[uuid.UUID]projectEntry{}
		}
		g.projects[project] = projectEntry{org: org, at: now}
	})
	return org, nil
}
