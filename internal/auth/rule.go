package auth

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// Resource is what a route is scoped to.
type Resource uint8

// Resources.
const (
	// Public routes need no token.
	Public Resource = iota
	// Authenticated routes take any caller, project-scoped tokens included;
	// only the scope is checked, and, when the path names a resource
	// (Rule.Owner), that the caller can see its tenant.
	Authenticated
	// Self routes act on the caller's own account; project-scoped tokens
	// are refused (they must not mint account-wide credentials).
	Self
	// Org routes act on the organization named in the path (orgId/orgID),
	// the body (Rule.BodyField) or the X-Org-ID header.
	Org
	// Project routes act on the project the request names (path, query,
	// X-Project-ID, the body's Rule.BodyField, or the token's bound
	// project) or, when the path names a resource (Rule.Owner), on that
	// resource's project.
	Project
	// ProjectOrAll routes are Project routes that a superadmin may call
	// without a project, for every project at once (Access.ProjectID is
	// then uuid.Nil).
	ProjectOrAll
	// Superadmin routes need the superadmin grant.
	Superadmin
	// Personal routes act on the caller's own records (notifications,
	// recent activity). A project named by the request, or the project a
	// token is bound to, is checked as for Project routes and narrows
	// the records to it; without one, an X-Org-ID header must name an
	// organization the caller belongs to, and only the scope is checked.
	Personal
	resourceCount
)

var resourceNames = [resourceCount]string{ //nolint:gochecknoglobals // constant table
	"public", "authenticated", "self", "org", "project", "project-or-all", "superadmin", "personal",
}

// String is the resource's name in the OpenAPI document.
func (r Resource) String() string {
	if r < resourceCount {
		return resourceNames[r]
	}
	return fmt.Sprintf("resource(%d)", r)
}

// Rule is what a route requires. Every route declares one; one middleware
// applies it (Guard.Check), and the OpenAPI document publishes it.
type Rule struct {
	Scope       Scope
	Resource    Resource
	ProjectRole ProjectRole // minimum, for Project, ProjectOrAll and Personal routes
	OrgRole     OrgRole     // minimum, for Org routes
	// Owner resolves the resource a path parameter names to its tenant,
	// on routes whose path names one; the tenant is then checked like
	// the project or organization of any other route.
	Owner *Owner
	// BodyField names the member of the JSON body that holds the project
	// (Project routes) or organization (Org routes) of a route that
	// creates something in it.
	BodyField string
	// Keys are the route's other path parameters: names looked up inside
	// the tenant the route resolved (a member of the project in the path,
	// a tool of the server the Owner resolved, an entry of the caller's
	// own history) or outside tenancy (a provider, a registry server),
	// which no other tenant can own. They need no Owner.
	Keys []string
}

// WithKeys is r with the route's other path parameters (Keys).
func (r Rule) WithKeys(keys ...string) Rule {
	r.Keys = keys
	return r
}

// WithOwner is r for routes whose path names a resource of o.
func (r Rule) WithOwner(o *Owner) Rule {
	r.Owner = o
	return r
}

// Owner declares how the resource a route's path names is found and whom
// it belongs to. A malformed id, an unknown one, one of a tenant the
// caller cannot see and one of another project than the request names
// all answer NotFound.
type Owner struct {
	// Param is the path parameter holding the resource's id (a UUID).
	Param string
	// Kind names the resource (document, extraction-job, ...) in the
	// OpenAPI document and in the route-table test's fixtures.
	Kind string
	// Resolve returns the tenant of the resource id; an unknown id is a
	// not_found error.
	Resolve func(ctx context.Context, id uuid.UUID) (Tenant, error)
	// NotFound is the resource's own not-found error.
	NotFound error
	// NamedProject says that the request must name the project as on a
	// route without an id (path, query, header or a bound token), as the
	// spec wants of some routes; otherwise the resource's project is the
	// request's, and a project the request names must be it.
	NamedProject bool
}

// Tenant is whom a resource belongs to: a project (on Project and
// Personal routes), an organization (Org routes), a user (Self and
// Personal routes), or, all zero, every caller (shared, built-in
// resources of Authenticated routes).
type Tenant struct {
	Project uuid.UUID
	Org     uuid.UUID
	User    uuid.UUID
}

// InProject adapts a look-up of a resource's project to Owner.Resolve.
func InProject(f func(context.Context, uuid.UUID) (uuid.UUID, error)) func(context.Context, uuid.UUID) (Tenant, error) {
	return func(ctx context.Context, id uuid.UUID) (Tenant, error) {
		project, err := f(ctx, id)
		return Tenant{Project: project}, err
	}
}

// InOrg adapts a look-up of a resource's organization to Owner.Resolve.
func InOrg(f func(context.Context, uuid.UUID) (uuid.UUID, error)) func(context.Context, uuid.UUID) (Tenant, error) {
	return func(ctx context.Context, id uuid.UUID) (Tenant, error) {
		org, err := f(ctx, id)
		return Tenant{Org: org}, err
	}
}

// OfUser adapts a look-up of a resource's user to Owner.Resolve.
func OfUser(f func(context.Context, uuid.UUID) (uuid.UUID, error)) func(context.Context, uuid.UUID) (Tenant, error) {
	return func(ctx context.Context, id uuid.UUID) (Tenant, error) {
		user, err := f(ctx, id)
		return Tenant{User: user}, err
	}
}

// Request holds the raw values a request names, as the transport found
// them: ProjectID is the path parameter, else the projectId/project_id
// query, else X-Project-ID.
type Request struct {
	ProjectID   string
	OrgID       string
	HeaderOrgID string
	// ResourceID is the value of the path parameter Rule.Owner names.
	ResourceID string
	// Body is the value of the body member Rule.BodyField names (empty
	// when absent).
	Body string
}

// Check applies rule to the caller p for request r, and returns what the
// request is authorised for. The order is the same for every route: first
// not_found (the project, organization or resource is unknown or
// invisible to the caller; a project the request names that is not the
// resource's), then permission_denied (visible, but the token is bound
// elsewhere, lacks the scope, or the role is too low). Two exceptions:
// superadmin routes refuse other callers (permission_denied) before they
// look anything up, and the project a request names is checked, a
// project-scoped token bound to another one refused, before the resource
// is looked up in it. invalid_argument: nothing to check against (a
// project route with no project, a missing body member).
func (g *Guard) Check(ctx context.Context, p *Principal, rule Rule, r Request) (Access, error) {
	if rule.BodyField != "" {
		var err error
		if r, err = fromBody(rule, r); err != nil {
			return Access{}, err
		}
	}
	switch rule.Resource {
	case Public:
		return Access{}, nil
	case Authenticated:
		return g.checkAuthenticated(ctx, p, rule, r)
	case Self, Superadmin:
		return checkAccount(ctx, p, rule, r)
	case Org:
		return g.checkOrg(ctx, p, rule, r)
	case Personal:
		if r.ProjectID == "" && p.BoundProject == uuid.Nil {
			return g.checkPersonal(ctx, p, rule, r)
		}
		return g.checkProject(ctx, p, rule, r)
	case Project, ProjectOrAll:
		return g.checkProject(ctx, p, rule, r)
	}
	return Access{}, fmt.Errorf("unknown resource %d", rule.Resource)
}

// fromBody makes the tenant the body names the request's; one named
// elsewhere too must be the same.
func fromBody(rule Rule, r Request) (Request, error) {
	if r.Body == "" {
		return r, errs.Errorf(errs.Invalid, "%s is required", rule.BodyField)
	}
	switch rule.Resource {
	case Project:
		if r.ProjectID != "" && !sameIDs(r.ProjectID, r.Body) {
			return r, ErrNoProject
		}
		r.ProjectID = r.Body
	case Org:
		if r.OrgID != "" && !sameIDs(r.OrgID, r.Body) {
			return r, ErrNoOrg
		}
		r.OrgID = r.Body
	default:
		return r, fmt.Errorf("a body field on a route of resource %s", rule.Resource)
	}
	return r, nil
}

// resolve finds the tenant of the resource the request names; a malformed
// or unknown id is the Owner's NotFound.
func resolve(ctx context.Context, o *Owner, raw string) (uuid.UUID, Tenant, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, Tenant{}, o.NotFound
	}
	t, err := o.Resolve(ctx, id)
	if err != nil {
		if errs.CodeOf(err) == errs.NotFound {
			return uuid.Nil, Tenant{}, o.NotFound
		}
		return uuid.Nil, Tenant{}, fmt.Errorf("find the owner of %s %s: %w", o.Kind, id, err)
	}
	return id, t, nil
}

// ownerErr answers a route's not_found with its resource's own error.
func ownerErr(o *Owner, err error) error {
	if o != nil && err != nil && errs.CodeOf(err) == errs.NotFound {
		return o.NotFound
	}
	return err
}

// checkProject authorises a Project route (and a Personal one in a
// project): the project the request names, else the project of the
// resource the path names, else the project its token is bound to.
func (g *Guard) checkProject(ctx context.Context, p *Principal, rule Rule, r Request) (Access, error) {
	raw := r.ProjectID
	o := rule.Owner
	if raw == "" && p.BoundProject != uuid.Nil && (o == nil || o.NamedProject || rule.Resource == Personal) {
		raw = p.BoundProject.String()
	}
	if raw == "" && (o == nil || o.NamedProject) {
		if rule.Resource == ProjectOrAll && p.Superadmin {
			return Access{}, needScope(p, rule.Scope)
		}
		return Access{}, ErrNeedProject
	}
	var named uuid.UUID
	if raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			return Access{}, ownerErr(o, ErrNoProject)
		}
		named = id
	}
	if o == nil {
		return g.requireProject(ctx, p, named, rule, r.HeaderOrgID)
	}
	if named != uuid.Nil {
		if err := g.checkNamed(ctx, p, named, r.HeaderOrgID); err != nil {
			return Access{}, ownerErr(o, err)
		}
	}
	id, t, err := resolve(ctx, o, r.ResourceID)
	if err != nil {
		return Access{}, err
	}
	if named != uuid.Nil && t.Project != named {
		return Access{}, o.NotFound
	}
	if t.Project == uuid.Nil {
		return Access{}, fmt.Errorf("the owner of %s %s is no project", o.Kind, id)
	}
	if rule.Resource == Personal && t.User != p.UserID {
		return Access{}, o.NotFound
	}
	a, err := g.requireProject(ctx, p, t.Project, rule, r.HeaderOrgID)
	if err != nil {
		return Access{}, ownerErr(o, err)
	}
	a.ResourceID = id
	return a, nil
}

// checkNamed checks the project a request names (or its token is bound
// to) before the resource is looked up in it: it must be visible, and a
// project-scoped token must be bound to it.
func (g *Guard) checkNamed(ctx context.Context, p *Principal, project uuid.UUID, headerOrg string) error {
	if _, _, err := g.visibleProject(ctx, p, project, headerOrg); err != nil {
		return err
	}
	if p.BoundProject != uuid.Nil && p.BoundProject != project {
		return ErrBound
	}
	return nil
}

// visibleProject returns the organization of project and p's role there,
// when p can see it. headerOrg, when not empty, must be the project's
// organization. Errors: not_found.
func (g *Guard) visibleProject(ctx context.Context, p *Principal, project uuid.UUID, headerOrg string) (uuid.UUID, ProjectRole, error) {
	org, err := g.projectOrg(ctx, project)
	if err != nil {
		return uuid.Nil, "", err
	}
	role := p.ProjectRole(project, org)
	if role == "" {
		return uuid.Nil, "", ErrNoProject
	}
	if headerOrg != "" && !sameUUID(headerOrg, org) {
		return uuid.Nil, "", ErrNoProject
	}
	return org, role, nil
}

// requireProject authorises p for project under rule's scope and project
// role. headerOrg, when not empty, must be the project's organization.
// Errors as Check.
func (g *Guard) requireProject(ctx context.Context, p *Principal, project uuid.UUID, rule Rule, headerOrg string) (Access, error) {
	org, role, err := g.visibleProject(ctx, p, project, headerOrg)
	if err != nil {
		return Access{}, err
	}
	if p.BoundProject != uuid.Nil && p.BoundProject != project {
		return Access{}, ErrBound
	}
	if err := needScope(p, rule.Scope); err != nil {
		return Access{}, err
	}
	if rule.ProjectRole != "" && role.rank() < rule.ProjectRole.rank() {
		return Access{}, errs.Errorf(errs.PermissionDenied, "this needs the project role %s or higher; yours is %s", rule.ProjectRole, role)
	}
	return Access{ProjectID: project, OrgID: org}, nil
}

// checkOrg authorises an Org route: the organization of the path (or
// body), else of X-Org-ID, else of the resource the path names.
func (g *Guard) checkOrg(ctx context.Context, p *Principal, rule Rule, r Request) (Access, error) {
	raw := r.OrgID
	if raw == "" {
		raw = r.HeaderOrgID
	}
	o := rule.Owner
	if raw == "" && o == nil {
		return Access{}, errs.New(errs.Invalid, "no organization given: pass it in the path or the X-Org-ID header")
	}
	var named uuid.UUID
	if raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil || (r.HeaderOrgID != "" && !sameUUID(r.HeaderOrgID, id)) {
			return Access{}, ownerErr(o, ErrNoOrg)
		}
		named = id
	}
	if o == nil {
		return g.requireOrg(ctx, p, named, rule)
	}
	id, t, err := resolve(ctx, o, r.ResourceID)
	if err != nil {
		return Access{}, err
	}
	if t.Org == uuid.Nil || (named != uuid.Nil && t.Org != named) {
		return Access{}, o.NotFound
	}
	a, err := g.requireOrg(ctx, p, t.Org, rule)
	if err != nil {
		return Access{}, ownerErr(o, err)
	}
	a.ResourceID = id
	return a, nil
}

// requireOrg authorises p for org under rule's scope and organization
// role. Errors as Check.
func (g *Guard) requireOrg(ctx context.Context, p *Principal, id uuid.UUID, rule Rule) (Access, error) {
	if err := g.visibleOrg(ctx, p, id); err != nil {
		return Access{}, err
	}
	if p.BoundProject != uuid.Nil {
		return Access{}, ErrBoundScope
	}
	if err := needScope(p, rule.Scope); err != nil {
		return Access{}, err
	}
	if role := p.OrgRole(id); rule.OrgRole != "" && role.rank() < rule.OrgRole.rank() {
		return Access{}, errs.Errorf(errs.PermissionDenied, "this needs the organization role %s or higher; yours is %s", rule.OrgRole, role)
	}
	return Access{OrgID: id}, nil
}

// visibleOrg reports (not_found) unless org is live and p belongs to it.
func (g *Guard) visibleOrg(ctx context.Context, p *Principal, org uuid.UUID) error {
	if p.OrgRole(org) == "" {
		return ErrNoOrg
	}
	live, err := g.dir.OrgLive(ctx, org)
	if err != nil {
		return fmt.Errorf("look up organization: %w", err)
	}
	if !live {
		return ErrNoOrg
	}
	return nil
}

// checkPersonal authorises a Personal route without a project: the
// X-Org-ID header when one is sent, the scope, then the caller's own
// resource (when the path names one). The scope comes before the
// resource: without it none of the caller's records is visible, and the
// answer does not tell whose a record is.
func (g *Guard) checkPersonal(ctx context.Context, p *Principal, rule Rule, r Request) (Access, error) {
	var a Access
	if r.HeaderOrgID != "" {
		id, err := uuid.Parse(r.HeaderOrgID)
		if err != nil {
			return Access{}, ownerErr(rule.Owner, ErrNoOrg)
		}
		if err := g.visibleOrg(ctx, p, id); err != nil {
			return Access{}, ownerErr(rule.Owner, err)
		}
		a.OrgID = id
	}
	if err := needScope(p, rule.Scope); err != nil {
		return Access{}, err
	}
	if o := rule.Owner; o != nil {
		id, t, err := resolve(ctx, o, r.ResourceID)
		if err != nil {
			return Access{}, err
		}
		if t.User != p.UserID {
			return Access{}, o.NotFound
		}
		a.ResourceID = id
	}
	return a, nil
}

// checkAccount authorises a Self or Superadmin route: an account token
// (of a superadmin, for Superadmin routes), the caller's own resource
// (Self routes; any existing one for superadmins), and the scope.
func checkAccount(ctx context.Context, p *Principal, rule Rule, r Request) (Access, error) {
	if p.BoundProject != uuid.Nil {
		return Access{}, ErrBoundScope
	}
	if rule.Resource == Superadmin && !p.Superadmin {
		return Access{}, ErrNotSuperuser
	}
	var a Access
	if o := rule.Owner; o != nil {
		id, t, err := resolve(ctx, o, r.ResourceID)
		if err != nil {
			return Access{}, err
		}
		if rule.Resource == Self && t.User != p.UserID {
			return Access{}, o.NotFound
		}
		a.ResourceID = id
	}
	if err := needScope(p, rule.Scope); err != nil {
		return Access{}, err
	}
	return a, nil
}

// checkAuthenticated authorises an Authenticated route: the scope, and
// that the caller can see the tenant of the resource the path names.
func (g *Guard) checkAuthenticated(ctx context.Context, p *Principal, rule Rule, r Request) (Access, error) {
	var a Access
	if o := rule.Owner; o != nil {
		id, t, err := resolve(ctx, o, r.ResourceID)
		if err != nil {
			return Access{}, err
		}
		if !g.sees(ctx, p, t) {
			return Access{}, o.NotFound
		}
		a = Access{ProjectID: t.Project, OrgID: t.Org, ResourceID: id}
	}
	if err := needScope(p, rule.Scope); err != nil {
		return Access{}, err
	}
	return a, nil
}

// sees reports whether p can see what t owns: its own records, a project
// it sees, an organization it administers or sees a project of, and
// anything shared.
func (g *Guard) sees(ctx context.Context, p *Principal, t Tenant) bool {
	switch {
	case t.User != uuid.Nil:
		return t.User == p.UserID
	case t.Project != uuid.Nil:
		return g.CanSee(ctx, p, t.Project)
	case t.Org != uuid.Nil:
		return g.seesOrg(ctx, p, t.Org)
	}
	return true
}

// seesOrg reports whether p sees a project of org: its bound project's, or
// any for superadmins and the organization's owners and admins, or one of
// its memberships.
func (g *Guard) seesOrg(ctx context.Context, p *Principal, org uuid.UUID) bool {
	if p.BoundProject != uuid.Nil {
		o, err := g.projectOrg(ctx, p.BoundProject)
		return err == nil && o == org
	}
	if p.OrgRole(org).rank() >= OrgAdmin.rank() {
		return true
	}
	for project := range p.ProjectRoles {
		if o, err := g.projectOrg(ctx, project); err == nil && o == org {
			return true
		}
	}
	return false
}

// sameUUID reports whether raw spells id. UUIDs compare by value, not by
// spelling: an upper-case X-Org-ID names the same organization.
func sameUUID(raw string, id uuid.UUID) bool {
	parsed, err := uuid.Parse(raw)
	return err == nil && parsed == id
}

// sameIDs reports whether a and b spell the same UUID.
func sameIDs(a, b string) bool {
	id, err := uuid.Parse(b)
	return err == nil && sameUUID(a, id)
}

func needScope(p *Principal, s Scope) error {
	if s == ScopeNone || p.Scopes.Has(s) {
		return nil
	}
	return errs.Errorf(errs.PermissionDenied, "this token lacks the scope %s", s)
}
