package superadmin

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// PageParams are the page/limit parameters of superadmin lists. The page
// is bounded so that (page-1)*limit stays far inside the database's
// integers (at most 99,999,800).
type PageParams struct {
	Page  int `query:"page" default:"1" minimum:"1" maximum:"999999" doc:"Page number, from 1 to 999999."`
	Limit int `query:"limit" default:"20" minimum:"1" maximum:"100" doc:"Page size."`
}

// offset is the number of rows before the page.
func (p PageParams) offset() int { return (p.Page - 1) * p.Limit }

// replyPaged answers a page of a superadmin list, or err when the call
// that gave it failed.
func replyPaged[T any](list []T, total int, p PageParams, err error) (*httpapi.Out[Paged[T]], error) {
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[Paged[T]]{Body: Paged[T]{Data: list, Meta: NewMeta(p.Page, p.Limit, total)}}, nil
}

type (
	meOut struct {
		IsSuperadmin bool      `json:"isSuperadmin"`
		UserID       uuid.UUID `json:"userId" format:"uuid"`
	}
	usersIn struct {
		PageParams
		Search string `query:"search" maxLength:"200" doc:"Matches name or email."`
		OrgID  string `query:"orgId" doc:"Only members of this organization."`
	}
	orgsIn struct {
		PageParams
		Search         string `query:"search" maxLength:"200"`
		IncludeDeleted bool   `query:"includeDeleted" doc:"Include soft-deleted organizations."`
	}
	projectsIn struct {
		PageParams
		Search         string `query:"search" maxLength:"200"`
		OrgID          string `query:"orgId"`
		IncludeDeleted bool   `query:"includeDeleted"`
	}
	userIDIn struct {
		UserID string `path:"userID"`
	}
	orgIDIn struct {
		OrgID string `path:"orgID"`
	}
	projectIDIn struct {
		ProjectID string `path:"projectID"`
	}
	userCreateIn struct {
		Body struct {
			PrimaryEmail string `json:"primaryEmail" maxLength:"320"`
			DisplayName  string `json:"displayName,omitempty" maxLength:"200"`
		}
	}
	userTokenIn struct {
		UserID string `path:"userID"`
		Body   struct {
			Name      string     `json:"name" maxLength:"200"`
			Scopes    []string   `json:"scopes" minItems:"1"`
			ExpiresAt *time.Time `json:"expiresAt,omitempty"`
			ProjectID *uuid.UUID `json:"projectId,omitempty" format:"uuid"`
		}
	}
)

// Register adds the superadmin routes.
func Register(api huma.API, svc *Service, ten *tenancy.Service, ext *extraction.Service, docs *document.Service, emb *embedding.Service,
	auditLog *audit.Service,
) {
	read := auth.Rule{Scope: auth.AdminRead, Resource: auth.Superadmin}
	write := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Superadmin}
	user := write.WithOwner(&auth.Owner{Param: "userID", Kind: "user", Resolve: auth.OfUser(ten.LiveUser), NotFound: tenancy.ErrUserNotFound})
	org := write.WithOwner(&auth.Owner{Param: "orgID", Kind: "org", Resolve: auth.InOrg(ten.LiveOrg), NotFound: tenancy.ErrOrgNotFound})
	project := write.WithOwner(&auth.Owner{Param: "projectID", Kind: "project", Resolve: auth.InProject(ten.LiveProject), NotFound: tenancy.ErrProjectNotFound})
	h := handlers{svc: svc, ten: ten, extraction: ext, documents: docs, embedding: emb, audit: auditLog}

	huma.Register(api, httpapi.Op("superadmin-me", http.MethodGet, "/api/superadmin/me", "Tell whether the caller is a superadmin",
		auth.Rule{Scope: auth.AdminRead, Resource: auth.Authenticated}), h.me)
	huma.Register(api, httpapi.Op("superadmin-list-users", http.MethodGet, "/api/superadmin/users", "List users", read), h.listUsers)
	huma.Register(api, httpapi.Op("superadmin-create-user", http.MethodPost, "/api/superadmin/users", "Create a local user", write), h.createUser)
	huma.Register(api, httpapi.Op("superadmin-create-user-token", http.MethodPost, "/api/superadmin/users/{userID}/tokens",
		"Mint a token for a user (shown once)", user), h.createUserToken)
	huma.Register(api, httpapi.Op("superadmin-delete-user", http.MethodDelete, "/api/superadmin/users/{userID}",
		"Soft-delete a user; their tokens stop working at once", user), h.deleteUser)
	huma.Register(api, httpapi.Op("superadmin-list-organizations", http.MethodGet, "/api/superadmin/organizations", "List organizations", read), h.listOrganizations)
	huma.Register(api, httpapi.Op("superadmin-delete-organization", http.MethodDelete, "/api/superadmin/organizations/{orgID}",
		"Soft-delete an organization and its projects", org), h.deleteOrganization)
	huma.Register(api, httpapi.Op("superadmin-list-projects", http.MethodGet, "/api/superadmin/projects", "List projects", read), h.listProjects)
	huma.Register(api, httpapi.Op("superadmin-delete-project", http.MethodDelete, "/api/superadmin/projects/{projectID}",
		"Soft-delete a project", project), h.deleteProject)
	registerJobs(api, h, read, write)
	registerAudit(api, h, read)
}

// replyDeleted answers the deletion of what id, or err when it failed.
func replyDeleted(what string, id uuid.UUID, err error) (*httpapi.Out[DeleteResult], error) {
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[DeleteResult]{Body: DeleteResult{Success: true, DeletedCount: 1, Message: fmt.Sprintf("%s %s deleted", what, id)}}, nil
}

// handlers are the superadmin routes' handlers: each decodes, calls the
// service with what the middleware authorised (auth.Access), and encodes.
type handlers struct {
	svc        *Service
	ten        *tenancy.Service
	extraction *extraction.Service
	documents  *document.Service
	embedding  *embedding.Service
	audit      *audit.Service
}

func (h handlers) me(ctx context.Context, _ *struct{}) (*httpapi.Out[meOut], error) {
	p := auth.PrincipalFrom(ctx)
	return &httpapi.Out[meOut]{Body: meOut{IsSuperadmin: p.Superadmin && p.BoundProject == uuid.Nil, UserID: p.UserID}}, nil
}

func (h handlers) listUsers(ctx context.Context, in *usersIn) (*httpapi.Out[Paged[User]], error) {
	org, err := httpapi.ParseOptionalID("orgId", in.OrgID)
	if err != nil {
		return nil, err
	}
	f := Filter{Search: in.Search, OrgID: org, PageParams: in.PageParams}
	list, total, err := h.svc.ListUsers(ctx, f)
	return replyPaged(list, total, in.PageParams, err)
}

func (h handlers) createUser(ctx context.Context, in *userCreateIn) (*httpapi.Created[tenancy.User], error) {
	return httpapi.ReplyCreated(h.ten.CreateUser(ctx, in.Body.PrimaryEmail, in.Body.DisplayName, h.recordCreated(audit.UserCreate)))
}

func (h handlers) createUserToken(ctx context.Context, in *userTokenIn) (*httpapi.Created[tenancy.Token], error) {
	user := auth.AccessFrom(ctx).ResourceID
	return httpapi.ReplyCreated(h.ten.CreateToken(ctx, auth.PrincipalFrom(ctx), tenancy.CreateTokenParams{
		UserID: user, ProjectID: in.Body.ProjectID, Name: in.Body.Name, Scopes: in.Body.Scopes, ExpiresAt: in.Body.ExpiresAt,
	}, h.recordCreated(audit.UserTokenCreate, user)))
}

func (h handlers) deleteUser(ctx context.Context, _ *userIDIn) (*httpapi.Out[DeleteResult], error) {
	id := auth.AccessFrom(ctx).ResourceID
	return replyDeleted("user", id, h.svc.DeleteUser(ctx, auth.PrincipalFrom(ctx).UserID, id, h.record(audit.UserDelete, []uuid.UUID{id}, 1)))
}

func (h handlers) listOrganizations(ctx context.Context, in *orgsIn) (*httpapi.Out[Paged[Organization]], error) {
	f := Filter{Search: in.Search, IncludeDeleted: in.IncludeDeleted, PageParams: in.PageParams}
	list, total, err := h.svc.ListOrganizations(ctx, f)
	return replyPaged(list, total, in.PageParams, err)
}

func (h handlers) deleteOrganization(ctx context.Context, _ *orgIDIn) (*httpapi.Out[DeleteResult], error) {
	id := auth.AccessFrom(ctx).ResourceID
	return replyDeleted("organization", id, h.ten.DeleteOrg(ctx, id, h.record(audit.OrganizationDelete, []uuid.UUID{id}, 1)))
}

func (h handlers) listProjects(ctx context.Context, in *projectsIn) (*httpapi.Out[Paged[Project]], error) {
	org, err := httpapi.ParseOptionalID("orgId", in.OrgID)
	if err != nil {
		return nil, err
	}
	f := Filter{Search: in.Search, OrgID: org, IncludeDeleted: in.IncludeDeleted, PageParams: in.PageParams}
	list, total, err := h.svc.ListProjects(ctx, f)
	return replyPaged(list, total, in.PageParams, err)
}

func (h handlers) deleteProject(ctx context.Context, _ *projectIDIn) (*httpapi.Out[DeleteResult], error) {
	id := auth.AccessFrom(ctx).ResourceID
	return replyDeleted("project", id, h.ten.DeleteProject(ctx, id, h.record(audit.ProjectDelete, []uuid.UUID{id}, 1)))
}
