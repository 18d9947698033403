package auth

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
)

// OrgRole is a role in an organization.
type OrgRole string

// Organization roles, lowest first.
const (
	OrgMember OrgRole = "member"
	OrgAdmin  OrgRole = "admin"
	OrgOwner  OrgRole = "owner"
)

// rankIn is r's place among roles (lowest first) counted from 1, or 0
// when r is not one of them.
func rankIn[R ~string](r R, roles ...R) int { return slices.Index(roles, r) + 1 }

func (r OrgRole) rank() int { return rankIn(r, OrgMember, OrgAdmin, OrgOwner) }

// Valid reports whether r is a known role.
func (r OrgRole) Valid() bool { return r.rank() > 0 }

// ProjectRole is a role in a project.
type ProjectRole string

// Project roles, lowest first.
const (
	ProjectViewer ProjectRole = "viewer"
	ProjectEditor ProjectRole = "editor"
	ProjectAdmin  ProjectRole = "admin"
)

func (r ProjectRole) rank() int { return rankIn(r, ProjectViewer, ProjectEditor, ProjectAdmin) }

// Valid reports whether r is a known role.
func (r ProjectRole) Valid() bool { return r.rank() > 0 }

// Kind tells how a caller authenticated.
type Kind string

// Caller kinds.
const (
	KindAPIToken Kind = "api_token"
	KindOIDC     Kind = "oidc"
)

// Principal is an authenticated caller: the user, what the credential
// allows, and the user's memberships as of authentication. It is shared by
// cached requests and must not be modified.
type Principal struct {
	UserID     uuid.UUID
	Kind       Kind
	TokenID    uuid.UUID // API tokens only
	Scopes     Scopes
	Superadmin bool
	// BoundProject is set for project-scoped API tokens.
	BoundProject uuid.UUID
	ExpiresAt    time.Time // zero: no expiry
	OrgRoles     map[uuid.UUID]OrgRole
	ProjectRoles map[uuid.UUID]ProjectRole
}

// ProjectRole is the caller's effective role in project (of org): superadmins
// and organization owners and admins administer every project of theirs.
func (p *Principal) ProjectRole(project, org uuid.UUID) ProjectRole {
	if p.Superadmin || p.OrgRoles[org].rank() >= OrgAdmin.rank() {
		return ProjectAdmin
	}
	return p.ProjectRoles[project]
}

// Sees reports whether the caller may see what happens in project (a
// live project of org): it has a role there, and a project-scoped token is
// bound to it.
func (p *Principal) Sees(project, org uuid.UUID) bool {
	if p.BoundProject != uuid.Nil && p.BoundProject != project {
		return false
	}
	return p.ProjectRole(project, org) != ""
}

// OrgRole is the caller's role in org (owner for superadmins).
func (p *Principal) OrgRole(org uuid.UUID) OrgRole {
	if p.Superadmin {
		return OrgOwner
	}
	return p.OrgRoles[org]
}

// Access is what a request was authorised for: the project and organization
// it was resolved to, when the rule scopes to one, and the resource its path
// names. Handlers take them from here and never parse or check again.
type Access struct {
	ProjectID uuid.UUID
	OrgID     uuid.UUID
	// ResourceID is the id of the resource the path names (Rule.Owner),
	// parsed and found in the tenant the request was authorised for.
	ResourceID uuid.UUID
}

type principalKey struct{}

type accessKey struct{}

// WithPrincipal attaches the caller to ctx.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the caller attached to ctx, or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// UserFrom is the id of the user calling, for the created_by and
// cancelled_by columns: nil when ctx has no principal or its principal is
// no user.
func UserFrom(ctx context.Context) *uuid.UUID {
	if p := PrincipalFrom(ctx); p != nil && p.UserID != uuid.Nil {
		id := p.UserID
		return &id
	}
	return nil
}

// WithAccess attaches the authorised project and organization to ctx.
func WithAccess(ctx context.Context, a Access) context.Context {
	return context.WithValue(ctx, accessKey{}, a)
}

// AccessFrom returns what the request was authorised for.
func AccessFrom(ctx context.Context) Access {
	a, _ := ctx.Value(accessKey{}).(Access)
	return a
}
