package auth_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// fakeDirectory is an in-memory auth.Directory that counts its look-ups.
type fakeDirectory struct {
	mu         sync.Mutex
	principals map[[32]byte]*auth.Principal
	oidc       map[string]*auth.Principal // by subject
	projects   map[uuid.UUID]uuid.UUID    // project -> org
	orgs       map[uuid.UUID]bool         // live organizations
	err        error                      // returned by every look-up when set
	// duringTokenLookup runs inside PrincipalByTokenHash, before it answers.
	duringTokenLookup func(call int64)

	tokenCalls   atomic.Int64
	oidcCalls    atomic.Int64
	projectCalls atomic.Int64
	orgCalls     atomic.Int64
}

func newFakeDirectory() *fakeDirectory {
	return &fakeDirectory{
		principals: map[[32]byte]*auth.Principal{},
		oidc:       map[string]*auth.Principal{},
		projects:   map[uuid.UUID]uuid.UUID{},
		orgs:       map[uuid.UUID]bool{},
	}
}

var errUnknown = errs.New(errs.Unauthenticated, "unknown credential")

func (d *fakeDirectory) PrincipalByTokenHash(_ context.Context, hash [32]byte) (*auth.Principal, error) {
	n := d.tokenCalls.Add(1)
	if d.duringTokenLookup != nil {
		d.duringTokenLookup(n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	p, ok := d.principals[hash]
	if !ok {
		return nil, errUnknown
	}
	return p, nil
}

func (d *fakeDirectory) PrincipalByOIDC(_ context.Context, c auth.OIDCClaims) (*auth.Principal, error) {
	d.oidcCalls.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	p, ok := d.oidc[c.Subject]
	if !ok {
		return nil, errUnknown
	}
	return p, nil
}

func (d *fakeDirectory) ProjectOrg(_ context.Context, project uuid.UUID) (uuid.UUID, error) {
	d.projectCalls.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return uuid.Nil, d.err
	}
	org, ok := d.projects[project]
	if !ok {
		return uuid.Nil, errs.New(errs.NotFound, "project not found")
	}
	return org, nil
}

func (d *fakeDirectory) OrgLive(_ context.Context, org uuid.UUID) (bool, error) {
	d.orgCalls.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return false, d.err
	}
	return d.orgs[org], nil
}

// addToken registers p under a fresh token and returns the token.
func (d *fakeDirectory) addToken(p *auth.Principal) string {
	tok := auth.NewToken()
	d.mu.Lock()
	d.principals[auth.HashToken(tok)] = p
	d.mu.Unlock()
	return tok
}

// fakeClock is a settable clock for the guard's TTL and expiry checks.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fakeVerifier accepts the OIDC tokens it lists.
type fakeVerifier struct {
	tokens map[string]auth.OIDCClaims
	until  time.Time
	calls  atomic.Int64
}

func (v *fakeVerifier) Verify(_ context.Context, raw string) (auth.OIDCClaims, time.Time, error) {
	v.calls.Add(1)
	c, ok := v.tokens[raw]
	if !ok {
		return auth.OIDCClaims{}, time.Time{}, errors.New("bad signature")
	}
	return c, v.until, nil
}

const testTTL = time.Minute

type guardBundle struct {
	guard *auth.Guard
	dir   *fakeDirectory
	clock *fakeClock
}

func setupGuard(t *testing.T, verifier auth.Verifier) *guardBundle {
	t.Helper()
	dir := newFakeDirectory()
	clock := &fakeClock{now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	g := auth.NewGuard(auth.GuardConfig{Directory: dir, Verifier: verifier, TTL: testTTL, Now: clock.Now})
	return &guardBundle{guard: g, dir: dir, clock: clock}
}

func account() *auth.Principal {
	return &auth.Principal{UserID: uuid.New(), Kind: auth.KindAPIToken, TokenID: uuid.New(), Scopes: auth.AllScopes}
}

func TestAuthenticateCaches(t *testing.T) {
	t.Parallel()
	b := setupGuard(t, nil)
	ctx := context.Background()
	want := account()
	tok := b.dir.addToken(want)

	p, err := b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	require.Same(t, want, p)
	require.EqualValues(t, 1, b.dir.tokenCalls.Load())

	// Scheme case and surrounding spaces do not matter, and the second
	// request is answered from the cache.
	p, err = b.guard.Authenticate(ctx, "  bearer   "+tok+" ")
	require.NoError(t, err)
	require.Same(t, want, p)
	require.EqualValues(t, 1, b.dir.tokenCalls.Load())

	// Another token is another entry.
	other := account()
	p, err = b.guard.Authenticate(ctx, "Bearer "+b.dir.addToken(other))
	require.NoError(t, err)
	require.Same(t, other, p)
	require.EqualValues(t, 2, b.dir.tokenCalls.Load())
}

func TestAuthenticateInvalidate(t *testing.T) {
	t.Parallel()
	b := setupGuard(t, nil)
	ctx := context.Background()
	p := account()
	tok := b.dir.addToken(p)

	_, err := b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	b.guard.Invalidate()
	_, err = b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	require.EqualValues(t, 2, b.dir.tokenCalls.Load())

	// A revocation seen after the invalidation takes effect at once.
	b.dir.mu.Lock()
	delete(b.dir.principals, auth.HashToken(tok))
	b.dir.mu.Unlock()
	b.guard.Invalidate()
	_, err = b.guard.Authenticate(ctx, "Bearer "+tok)
	require.ErrorIs(t, err, auth.ErrBadToken)
	require.EqualValues(t, 3, b.dir.tokenCalls.Load())
}

func TestAuthenticateTTL(t *testing.T) {
	t.Parallel()
	b := setupGuard(t, nil)
	ctx := context.Background()
	tok := b.dir.addToken(account())

	_, err := b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	b.clock.Advance(testTTL - time.Nanosecond)
	_, err = b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.dir.tokenCalls.Load(), "still fresh just before the TTL")

	b.clock.Advance(time.Nanosecond)
	_, err = b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	require.EqualValues(t, 2, b.dir.tokenCalls.Load(), "refreshed once the TTL passed")

	// The refreshed entry counts from its own look-up.
	b.clock.Advance(testTTL / 2)
	_, err = b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	require.EqualValues(t, 2, b.dir.tokenCalls.Load())
}

func TestAuthenticateExpired(t *testing.T) {
	t.Parallel()
	b := setupGuard(t, nil)
	ctx := context.Background()

	expired := account()
	expired.ExpiresAt = b.clock.Now().Add(-time.Second)
	_, err := b.guard.Authenticate(ctx, "Bearer "+b.dir.addToken(expired))
	require.ErrorIs(t, err, auth.ErrBadToken)
	require.Equal(t, errs.Unauthenticated, errs.CodeOf(err))

	// A cached token that expires while cached is refused from the cache.
	expiring := account()
	expiring.ExpiresAt = b.clock.Now().Add(10 * time.Second)
	tok := b.dir.addToken(expiring)
	p, err := b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	require.Same(t, expiring, p)
	b.clock.Advance(10 * time.Second)
	_, err = b.guard.Authenticate(ctx, "Bearer "+tok)
	require.ErrorIs(t, err, auth.ErrBadToken)
	require.EqualValues(t, 2, b.dir.tokenCalls.Load(), "the expiry was decided from the cache")
}

// TestAuthenticateGeneration invalidates the cache while a look-up is in
// flight: what that look-up read may predate the change, so it must not be
// cached.
func TestAuthenticateGeneration(t *testing.T) {
	t.Parallel()
	b := setupGuard(t, nil)
	ctx := context.Background()
	want := account()
	tok := b.dir.addToken(want)
	b.dir.duringTokenLookup = func(call int64) {
		if call == 1 {
			b.guard.Invalidate()
		}
	}

	p, err := b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err, "the in-flight caller still gets its answer")
	require.Same(t, want, p)

	_, err = b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	require.EqualValues(t, 2, b.dir.tokenCalls.Load(), "the stale result was not cached")

	_, err = b.guard.Authenticate(ctx, "Bearer "+tok)
	require.NoError(t, err)
	require.EqualValues(t, 2, b.dir.tokenCalls.Load(), "an undisturbed look-up is cached")
}

func TestAuthenticateErrors(t *testing.T) {
	t.Parallel()

	internalErr := errors.New("connection refused")
	tests := []struct {
		name      string
		header    string
		dirErr    error
		wantErr   error
		wantCode  errs.Code
		wantCalls int64
	}{
		{name: "NoHeader", header: "", wantErr: auth.ErrNoToken, wantCode: errs.Unauthenticated},
		{name: "BasicScheme", header: "Basic dXNlcjpwYXNz", wantErr: auth.ErrNoToken, wantCode: errs.Unauthenticated},
		{name: "SchemeOnly", header: "Bearer", wantErr: auth.ErrNoToken, wantCode: errs.Unauthenticated},
		{name: "EmptyToken", header: "Bearer   ", wantErr: auth.ErrNoToken, wantCode: errs.Unauthenticated},
		{name: "MalformedAPIToken", header: "Bearer gm_short", wantErr: auth.ErrBadToken, wantCode: errs.Unauthenticated},
		{name: "UnknownAPIToken", header: "Bearer " + auth.NewToken(), wantErr: auth.ErrBadToken, wantCode: errs.Unauthenticated, wantCalls: 1},
		{name: "OIDCTokenWithOIDCOff", header: "Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln", wantErr: auth.ErrBadToken, wantCode: errs.Unauthenticated},
		{name: "DirectoryDown", header: "Bearer " + auth.NewToken(), dirErr: internalErr, wantErr: internalErr, wantCode: errs.Internal, wantCalls: 1},
		{name: "DirectoryUnauthenticated", header: "Bearer " + auth.NewToken(), dirErr: errs.New(errs.Unauthenticated, "user deleted"), wantErr: auth.ErrBadToken, wantCode: errs.Unauthenticated, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupGuard(t, nil)
			b.dir.err = tt.dirErr
			p, err := b.guard.Authenticate(context.Background(), tt.header)
			require.Nil(t, p)
			require.ErrorIs(t, err, tt.wantErr)
			require.Equal(t, tt.wantCode, errs.CodeOf(err))
			require.Equal(t, tt.wantCalls, b.dir.tokenCalls.Load())
		})
	}
}

func TestAuthenticateOIDC(t *testing.T) {
	t.Parallel()
	v := &fakeVerifier{tokens: map[string]auth.OIDCClaims{"jwt-1": {Issuer: "https://id", Subject: "alice"}}}
	b := setupGuard(t, v)
	ctx := context.Background()
	alice := &auth.Principal{UserID: uuid.New(), Kind: auth.KindOIDC, Scopes: auth.AllScopes}
	b.dir.oidc["alice"] = alice
	v.until = b.clock.Now().Add(testTTL / 4)

	p, err := b.guard.Authenticate(ctx, "Bearer jwt-1")
	require.NoError(t, err)
	require.Same(t, alice, p)
	_, err = b.guard.Authenticate(ctx, "Bearer jwt-1")
	require.NoError(t, err)
	require.EqualValues(t, 1, v.calls.Load())
	require.EqualValues(t, 1, b.dir.oidcCalls.Load())

	// The entry lives no longer than the token itself, even within the TTL.
	b.clock.Advance(testTTL / 4)
	_, err = b.guard.Authenticate(ctx, "Bearer jwt-1")
	require.NoError(t, err)
	require.EqualValues(t, 2, v.calls.Load())

	_, err = b.guard.Authenticate(ctx, "Bearer jwt-2")
	require.ErrorIs(t, err, auth.ErrBadToken)
	require.EqualValues(t, 2, b.dir.oidcCalls.Load(), "an unverified token never reaches the directory")
}

func TestProjectLookupCached(t *testing.T) {
	t.Parallel()
	b := setupGuard(t, nil)
	ctx := context.Background()
	org, project := uuid.New(), uuid.New()
	b.dir.projects[project] = org
	p := &auth.Principal{Superadmin: true, Scopes: auth.AllScopes}
	rule := auth.Rule{Scope: auth.GraphRead, Resource: auth.Project}
	req := auth.Request{ProjectID: project.String()}

	for range 3 {
		a, err := b.guard.Check(ctx, p, rule, req)
		require.NoError(t, err)
		require.Equal(t, auth.Access{ProjectID: project, OrgID: org}, a)
	}
	require.EqualValues(t, 1, b.dir.projectCalls.Load())

	// A deleted project disappears once the change is announced.
	delete(b.dir.projects, project)
	b.guard.Invalidate()
	_, err := b.guard.Check(ctx, p, rule, req)
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
	require.EqualValues(t, 2, b.dir.projectCalls.Load())

	// Directory failures are internal errors, not "not found".
	b.dir.err = errors.New("connection refused")
	_, err = b.guard.Check(ctx, p, rule, auth.Request{ProjectID: uuid.NewString()})
	require.Equal(t, errs.Internal, errs.CodeOf(err))
}

// TestCheck walks the authorization rules of DESIGN.md section 4: 404
// (not visible) before 403 (visible, but bound elsewhere, lacking the scope
// or the role) before 400 (nothing to check against).
func TestCheck(t *testing.T) {
	t.Parallel()

	var (
		orgA, orgB, orgGone = uuid.New(), uuid.New(), uuid.New()
		pA1, pA2, pB, pGone = uuid.New(), uuid.New(), uuid.New(), uuid.New() // pGone is never registered: a deleted project
	)
	graph := auth.Scopes(0).With(auth.GraphRead).With(auth.GraphWrite)
	// viewer: a member of org A who views project A1.
	viewer := &auth.Principal{
		UserID: uuid.New(), Scopes: graph,
		OrgRoles: map[uuid.UUID]auth.OrgRole{orgA: auth.OrgMember}, ProjectRoles: map[uuid.UUID]auth.ProjectRole{pA1: auth.ProjectViewer},
	}
	orgAdmin := &auth.Principal{UserID: uuid.New(), Scopes: auth.AllScopes, OrgRoles: map[uuid.UUID]auth.OrgRole{orgA: auth.OrgAdmin}}
	orgOwner := &auth.Principal{UserID: uuid.New(), Scopes: auth.AllScopes, OrgRoles: map[uuid.UUID]auth.OrgRole{orgA: auth.OrgOwner}}
	super := &auth.Principal{UserID: uuid.New(), Scopes: auth.AllScopes, Superadmin: true}
	boundSuper := &auth.Principal{UserID: uuid.New(), Scopes: auth.AllScopes, Superadmin: true, BoundProject: pA1}
	// bound: a token bound to A1 of a user who edits A1 and A2.
	bound := &auth.Principal{
		UserID: uuid.New(), Scopes: auth.AllScopes, BoundProject: pA1,
		OrgRoles:     map[uuid.UUID]auth.OrgRole{orgA: auth.OrgMember},
		ProjectRoles: map[uuid.UUID]auth.ProjectRole{pA1: auth.ProjectEditor, pA2: auth.ProjectEditor},
	}
	boundReadOnly := &auth.Principal{
		UserID: bound.UserID, Scopes: auth.Scopes(0).With(auth.GraphRead), BoundProject: pA1,
		OrgRoles: bound.OrgRoles, ProjectRoles: bound.ProjectRoles,
	}

	readProject := auth.Rule{Scope: auth.GraphRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	writeProject := auth.Rule{Scope: auth.GraphWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
	adminProject := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
	adminScopeViewerRole := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	orgMemberRule := auth.Rule{Scope: auth.GraphRead, Resource: auth.Org, OrgRole: auth.OrgMember}
	orgAdminRule := auth.Rule{Scope: auth.GraphRead, Resource: auth.Org, OrgRole: auth.OrgAdmin}
	orgAdminScope := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Org, OrgRole: auth.OrgMember}
	personal := auth.Rule{Scope: auth.GraphRead, Resource: auth.Personal, ProjectRole: auth.ProjectViewer}
	bodyProject := auth.Rule{Scope: auth.GraphRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer, BodyField: "projectId"}
	allProjects := auth.Rule{Scope: auth.GraphRead, Resource: auth.ProjectOrAll, ProjectRole: auth.ProjectViewer}

	project := func(id uuid.UUID) auth.Request { return auth.Request{ProjectID: id.String()} }
	org := func(id uuid.UUID) auth.Request { return auth.Request{OrgID: id.String()} }
	inA := func(id uuid.UUID) auth.Access { return auth.Access{ProjectID: id, OrgID: orgA} }

	tests := []struct {
		name    string
		p       *auth.Principal
		rule    auth.Rule
		req     auth.Request
		want    auth.Access
		code    errs.Code // empty: allowed
		message string    // part of the message, when it matters
	}{
		// Project routes: visibility first.
		{name: "InvisibleProjectEvenWithoutScope", p: viewer, rule: adminProject, req: project(pB), code: errs.NotFound},
		{name: "UnknownProject", p: viewer, rule: readProject, req: project(uuid.New()), code: errs.NotFound},
		{name: "DeletedProjectForSuperadmin", p: super, rule: readProject, req: project(pGone), code: errs.NotFound},
		{name: "MalformedProjectID", p: super, rule: readProject, req: auth.Request{ProjectID: "not-a-uuid"}, code: errs.NotFound},
		{name: "NoProjectNoBoundToken", p: viewer, rule: readProject, req: auth.Request{}, code: errs.Invalid},
		{name: "HeaderOrgMismatch", p: viewer, rule: readProject, req: auth.Request{ProjectID: pA1.String(), HeaderOrgID: orgB.String()}, code: errs.NotFound},
		{name: "HeaderOrgMalformed", p: viewer, rule: readProject, req: auth.Request{ProjectID: pA1.String(), HeaderOrgID: "org-a"}, code: errs.NotFound},
		{name: "HeaderOrgMatches", p: viewer, rule: readProject, req: auth.Request{ProjectID: pA1.String(), HeaderOrgID: orgA.String()}, want: inA(pA1)},
		{name: "HeaderOrgUpperCase", p: viewer, rule: readProject, req: auth.Request{ProjectID: strings.ToUpper(pA1.String()), HeaderOrgID: strings.ToUpper(orgA.String())}, want: inA(pA1)},
		// Project routes: then 403s.
		{name: "VisibleProjectMissingScope", p: viewer, rule: adminScopeViewerRole, req: project(pA1), code: errs.PermissionDenied, message: "admin:write"},
		{name: "RoleTooLow", p: viewer, rule: writeProject, req: project(pA1), code: errs.PermissionDenied, message: "editor"},
		{name: "ViewerReads", p: viewer, rule: readProject, req: project(pA1), want: inA(pA1)},
		{name: "NoRoleRequired", p: viewer, rule: auth.Rule{Scope: auth.GraphRead, Resource: auth.Project}, req: project(pA1), want: inA(pA1)},
		{name: "OrgAdminSeesEveryProjectOfOrg", p: orgAdmin, rule: adminProject, req: project(pA2), want: inA(pA2)},
		{name: "OrgOwnerSeesEveryProjectOfOrg", p: orgOwner, rule: adminProject, req: project(pA1), want: inA(pA1)},
		{name: "OrgAdminOtherOrg", p: orgAdmin, rule: readProject, req: project(pB), code: errs.NotFound},
		{name: "SuperadminSeesAll", p: super, rule: adminProject, req: project(pB), want: auth.Access{ProjectID: pB, OrgID: orgB}},
		// Bound tokens.
		{name: "BoundTokenOwnProjectImplicit", p: bound, rule: writeProject, req: auth.Request{}, want: inA(pA1)},
		{name: "BoundTokenOwnProjectExplicit", p: bound, rule: writeProject, req: project(pA1), want: inA(pA1)},
		{name: "BoundTokenOtherVisibleProject", p: bound, rule: readProject, req: project(pA2), code: errs.PermissionDenied, message: "bound"},
		{name: "BoundTokenOtherInvisibleProject", p: bound, rule: readProject, req: project(pB), code: errs.NotFound},
		{name: "BoundTokenMissingScope", p: boundReadOnly, rule: writeProject, req: project(pA1), code: errs.PermissionDenied, message: "graph:write"},
		{name: "BoundSuperadminElsewhere", p: boundSuper, rule: readProject, req: project(pB), code: errs.PermissionDenied},
		// Org routes.
		{name: "OrgMemberReads", p: viewer, rule: orgMemberRule, req: org(orgA), want: auth.Access{OrgID: orgA}},
		{name: "OrgRoleTooLow", p: viewer, rule: orgAdminRule, req: org(orgA), code: errs.PermissionDenied, message: "admin"},
		{name: "OrgMissingScope", p: viewer, rule: orgAdminScope, req: org(orgA), code: errs.PermissionDenied, message: "admin:write"},
		{name: "OrgInvisibleEvenWithoutScope", p: viewer, rule: orgAdminScope, req: org(orgB), code: errs.NotFound},
		{name: "OrgAdminAdministers", p: orgAdmin, rule: orgAdminRule, req: org(orgA), want: auth.Access{OrgID: orgA}},
		{name: "OrgOwnerAdministers", p: orgOwner, rule: orgAdminRule, req: org(orgA), want: auth.Access{OrgID: orgA}},
		{name: "OrgFromHeader", p: viewer, rule: orgMemberRule, req: auth.Request{HeaderOrgID: orgA.String()}, want: auth.Access{OrgID: orgA}},
		{name: "OrgPathHeaderMismatch", p: super, rule: orgMemberRule, req: auth.Request{OrgID: orgA.String(), HeaderOrgID: orgB.String()}, code: errs.NotFound},
		{name: "OrgPathHeaderCase", p: viewer, rule: orgMemberRule, req: auth.Request{OrgID: orgA.String(), HeaderOrgID: strings.ToUpper(orgA.String())}, want: auth.Access{OrgID: orgA}},
		{name: "OrgMissing", p: viewer, rule: orgMemberRule, req: auth.Request{}, code: errs.Invalid},
		{name: "OrgMalformedID", p: super, rule: orgMemberRule, req: auth.Request{OrgID: "acme"}, code: errs.NotFound},
		{name: "OrgDeletedForSuperadmin", p: super, rule: orgMemberRule, req: org(orgGone), code: errs.NotFound},
		{name: "SuperadminAnyOrg", p: super, rule: orgAdminRule, req: org(orgB), want: auth.Access{OrgID: orgB}},
		{name: "OrgBoundToken", p: bound, rule: orgMemberRule, req: org(orgA), code: errs.PermissionDenied},
		// Personal routes: the caller's own records, optionally in a project.
		{name: "PersonalWithoutContext", p: viewer, rule: personal, req: auth.Request{}},
		{name: "PersonalMissingScope", p: viewer, rule: auth.Rule{Scope: auth.NotificationsRead, Resource: auth.Personal}, code: errs.PermissionDenied, message: "notifications:read"},
		{name: "PersonalProject", p: viewer, rule: personal, req: project(pA1), want: inA(pA1)},
		{name: "PersonalInvisibleProject", p: viewer, rule: personal, req: project(pB), code: errs.NotFound},
		{name: "PersonalProjectHeaderOrgMismatch", p: viewer, rule: personal, req: auth.Request{ProjectID: pA1.String(), HeaderOrgID: orgB.String()}, code: errs.NotFound},
		{name: "PersonalOrgHeader", p: viewer, rule: personal, req: auth.Request{HeaderOrgID: orgA.String()}, want: auth.Access{OrgID: orgA}},
		{name: "PersonalForeignOrgHeader", p: viewer, rule: personal, req: auth.Request{HeaderOrgID: orgB.String()}, code: errs.NotFound},
		{name: "PersonalMalformedOrgHeader", p: viewer, rule: personal, req: auth.Request{HeaderOrgID: "acme"}, code: errs.NotFound},
		{name: "PersonalDeletedOrgHeader", p: super, rule: personal, req: auth.Request{HeaderOrgID: orgGone.String()}, code: errs.NotFound},
		{name: "PersonalBoundTokenImplicit", p: bound, rule: personal, req: auth.Request{}, want: inA(pA1)},
		{name: "PersonalBoundTokenElsewhere", p: bound, rule: personal, req: project(pA2), code: errs.PermissionDenied, message: "bound"},
		{name: "PersonalBoundTokenOrgMismatch", p: bound, rule: personal, req: auth.Request{HeaderOrgID: orgB.String()}, code: errs.NotFound},
		// Other resources.
		{name: "PublicNeedsNothing", p: nil, rule: auth.Rule{Resource: auth.Public}},
		{name: "AuthenticatedScope", p: bound, rule: auth.Rule{Scope: auth.SearchRead, Resource: auth.Authenticated}},
		{name: "AuthenticatedMissingScope", p: viewer, rule: auth.Rule{Scope: auth.SearchRead, Resource: auth.Authenticated}, code: errs.PermissionDenied},
		{name: "AuthenticatedNoScope", p: viewer, rule: auth.Rule{Resource: auth.Authenticated}},
		// Body routes: the body names the project or organization.
		{name: "BodyProject", p: viewer, rule: bodyProject, req: auth.Request{Body: pA1.String()}, want: inA(pA1)},
		{name: "BodyMissing", p: viewer, rule: bodyProject, req: auth.Request{ProjectID: pA1.String()}, code: errs.Invalid, message: "projectId is required"},
		{name: "BodyInvisibleEvenWithoutScope", p: viewer, rule: auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, BodyField: "projectId"}, req: auth.Request{Body: pB.String()}, code: errs.NotFound},
		{name: "BodyMalformed", p: super, rule: bodyProject, req: auth.Request{Body: "nope"}, code: errs.NotFound},
		{name: "BodyNamedElsewhere", p: super, rule: bodyProject, req: auth.Request{ProjectID: pA2.String(), Body: pA1.String()}, code: errs.NotFound},
		{name: "BodyMissingScope", p: viewer, rule: auth.Rule{Scope: auth.ExtractionWrite, Resource: auth.Project, BodyField: "projectId"}, req: auth.Request{Body: pA1.String()}, code: errs.PermissionDenied},
		{name: "BodyRoleTooLow", p: viewer, rule: auth.Rule{Scope: auth.GraphWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor, BodyField: "projectId"}, req: auth.Request{Body: pA1.String()}, code: errs.PermissionDenied, message: "editor"},
		{name: "BodyOrg", p: orgAdmin, rule: auth.Rule{Scope: auth.AdminWrite, Resource: auth.Org, OrgRole: auth.OrgAdmin, BodyField: "orgId"}, req: auth.Request{Body: orgA.String()}, want: auth.Access{OrgID: orgA}},
		{name: "BodyOrgRoleTooLow", p: viewer, rule: auth.Rule{Scope: auth.GraphRead, Resource: auth.Org, OrgRole: auth.OrgAdmin, BodyField: "orgId"}, req: auth.Request{Body: orgA.String()}, code: errs.PermissionDenied},
		{name: "BodyOrgInvisible", p: viewer, rule: auth.Rule{Scope: auth.GraphRead, Resource: auth.Org, BodyField: "orgId"}, req: auth.Request{Body: orgB.String()}, code: errs.NotFound},
		// ProjectOrAll routes: superadmins may name no project.
		{name: "AllProjectsSuperadmin", p: super, rule: allProjects, req: auth.Request{}},
		{name: "AllProjectsSuperadminMissingScope", p: &auth.Principal{UserID: uuid.New(), Superadmin: true}, rule: allProjects, req: auth.Request{}, code: errs.PermissionDenied},
		{name: "AllProjectsOthersNameOne", p: orgOwner, rule: allProjects, req: auth.Request{}, code: errs.Invalid},
		{name: "AllProjectsOneProject", p: viewer, rule: allProjects, req: project(pA1), want: inA(pA1)},
		{name: "AllProjectsBoundToken", p: bound, rule: allProjects, req: auth.Request{}, want: inA(pA1)},
		{name: "SelfAccountToken", p: viewer, rule: auth.Rule{Scope: auth.GraphRead, Resource: auth.Self}},
		{name: "SelfMissingScope", p: viewer, rule: auth.Rule{Scope: auth.AdminWrite, Resource: auth.Self}, code: errs.PermissionDenied},
		{name: "SelfRefusesBoundToken", p: bound, rule: auth.Rule{Scope: auth.GraphRead, Resource: auth.Self}, code: errs.PermissionDenied, message: "project-scoped"},
		{name: "SuperadminRule", p: super, rule: auth.Rule{Scope: auth.AdminRead, Resource: auth.Superadmin}},
		{name: "SuperadminRuleRefusesOthers", p: orgOwner, rule: auth.Rule{Scope: auth.AdminRead, Resource: auth.Superadmin}, code: errs.PermissionDenied, message: "superadmin"},
		{name: "SuperadminRuleRefusesBoundToken", p: boundSuper, rule: auth.Rule{Scope: auth.AdminRead, Resource: auth.Superadmin}, code: errs.PermissionDenied},
		{name: "UnknownResource", p: super, rule: auth.Rule{Resource: auth.Resource(99)}, code: errs.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupGuard(t, nil)
			b.dir.projects = map[uuid.UUID]uuid.UUID{pA1: orgA, pA2: orgA, pB: orgB}
			b.dir.orgs = map[uuid.UUID]bool{orgA: true, orgB: true}

			got, err := b.guard.Check(context.Background(), tt.p, tt.rule, tt.req)
			if tt.code == "" {
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			require.Equal(t, tt.code, errs.CodeOf(err), "error: %v", err)
			require.Contains(t, err.Error(), tt.message)
			require.Equal(t, auth.Access{}, got)
		})
	}
}
