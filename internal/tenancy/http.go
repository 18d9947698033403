package tenancy

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	orgCreateIn struct {
		Body struct {
			Name string `json:"name" maxLength:"200" doc:"Organization name, unique."`
		}
	}
	orgListIn struct {
		httpapi.PageParams
	}
	projectCreateIn struct {
		Body struct {
			Name  string    `json:"name" maxLength:"200"`
			OrgID uuid.UUID `json:"orgId" format:"uuid"`
		}
	}
	projectListIn struct {
		httpapi.PageParams
		OrgID string `query:"orgId" doc:"Only projects of this organization."`
	}
	projectIn struct {
		ProjectID string `path:"projectId"`
	}
	memberListIn struct {
		ProjectID string `path:"projectId"`
		httpapi.PageParams
	}
	memberAddIn struct {
		ProjectID string `path:"projectId"`
		Body      struct {
			UserID uuid.UUID `json:"userId" format:"uuid"`
			Role   string    `json:"role" enum:"admin,editor,viewer"`
		}
	}
	memberIn struct {
		ProjectID string `path:"projectId"`
		UserID    string `path:"userId"`
	}
	tokenBody struct {
		Name      string     `json:"name" maxLength:"200"`
		Scopes    []string   `json:"scopes" minItems:"1"`
		ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	}
	tokenCreateIn struct {
		Body tokenBody
	}
	projectTokenCreateIn struct {
		ProjectID string `path:"projectId"`
		Body      tokenBody
	}
	tokenListIn struct {
		httpapi.PageParams
	}
	projectTokenListIn struct {
		ProjectID string `path:"projectId"`
		httpapi.PageParams
	}
	tokenIn struct {
		ID string `path:"id"`
	}
	projectTokenIn struct {
		ProjectID string `path:"projectId"`
		ID        string `path:"id"`
	}
	invitationCreateIn struct {
		ProjectID string `path:"projectId"`
		Body      struct {
			Email string `json:"email" maxLength:"320" doc:"The address to send the invitation to; whoever signs in with it may accept."`
			Role  string `json:"role" enum:"admin,editor,viewer" doc:"The project role accepting gives."`
		}
	}
	invitationListIn struct {
		ProjectID string `path:"projectId"`
		httpapi.PageParams
	}
	invitationIn struct {
		ProjectID    string `path:"projectId"`
		InvitationID string `path:"invitationId"`
	}
	invitationAcceptIn struct {
		Body struct {
			Token string `json:"token" minLength:"1" maxLength:"200" doc:"The token of the invitation's link (after #token=)."`
		}
	}
	myInvitationsIn struct {
		httpapi.PageParams
	}
)

// Register adds the organization, project, membership and token routes.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.AdminRead, Resource: auth.Self}
	write := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Self}
	h := handlers{svc: svc}

	huma.Register(api, httpapi.Op("list-orgs", http.MethodGet, "/api/orgs", "List your organizations", read), h.listOrgs)
	huma.Register(api, httpapi.Op("create-org", http.MethodPost, "/api/orgs", "Create an organization you own", write), h.createOrg)
	huma.Register(api, httpapi.Op("list-projects", http.MethodGet, "/api/projects", "List the projects you can see",
		auth.Rule{Scope: auth.AdminRead, Resource: auth.Authenticated}), h.listProjects)
	huma.Register(api, httpapi.Op("create-project", http.MethodPost, "/api/projects", "Create a project (organization admins)",
		auth.Rule{Scope: auth.AdminWrite, Resource: auth.Org, OrgRole: auth.OrgAdmin, BodyField: "orgId"}), h.createProject)

	projectRead := auth.Rule{Scope: auth.AdminRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	projectAdmin := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}

	huma.Register(api, httpapi.Op("get-project", http.MethodGet, "/api/projects/{projectId}", "Get a project", projectRead), h.getProject)
	huma.Register(api, httpapi.Op("delete-project", http.MethodDelete, "/api/projects/{projectId}", "Delete a project (project admins)", projectAdmin), h.deleteProject)
	huma.Register(api, httpapi.Op("list-project-members", http.MethodGet, "/api/projects/{projectId}/members", "List a project's members", projectRead), h.listProjectMembers)
	huma.Register(api, httpapi.Op("add-project-member", http.MethodPost, "/api/projects/{projectId}/members", "Add a member or change a member's role", projectAdmin), h.addProjectMember)
	huma.Register(api, httpapi.Op("remove-project-member", http.MethodDelete, "/api/projects/{projectId}/members/{userId}", "Remove a member",
		projectAdmin.WithKeys("userId")), h.removeProjectMember)

	registerTokens(api, svc, h)
}

// registerTokens adds the token routes.
func registerTokens(api huma.API, svc *Service, h handlers) {
	huma.Register(api, httpapi.Op("list-tokens", http.MethodGet, "/api/tokens", "List your API tokens", auth.Rule{Scope: auth.AdminRead, Resource: auth.Self}), h.listTokens)
	huma.Register(api, httpapi.Op("create-token", http.MethodPost, "/api/tokens", "Create an account-level API token (shown once)",
		auth.Rule{Scope: auth.AdminWrite, Resource: auth.Self}), h.createToken)
	huma.Register(api, httpapi.Op("revoke-token", http.MethodDelete, "/api/tokens/{id}", "Revoke one of your tokens", auth.Rule{
		Scope: auth.AdminWrite, Resource: auth.Self,
		Owner: &auth.Owner{Param: "id", Kind: "token", Resolve: auth.OfUser(svc.TokenUser), NotFound: ErrTokenNotFound},
	}), h.revokeToken)

	projectTokens := auth.Rule{Scope: auth.AdminRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	huma.Register(api, httpapi.Op("list-project-tokens", http.MethodGet, "/api/projects/{projectId}/tokens",
		"List tokens bound to a project (yours; every one for project admins)", projectTokens), h.listProjectTokens)
	huma.Register(api, httpapi.Op("create-project-token", http.MethodPost, "/api/projects/{projectId}/tokens",
		"Create a token bound to a project (shown once)", auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, ProjectRole: auth.ProjectViewer}), h.createProjectToken)
	huma.Register(api, httpapi.Op("revoke-project-token", http.MethodDelete, "/api/projects/{projectId}/tokens/{id}",
		"Revoke a token bound to a project (yours; any for project admins)",
		auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, ProjectRole: auth.ProjectViewer, Keys: []string{"id"}}), h.revokeProjectToken)
}

// RegisterInvitations adds the invitation routes: project admins invite
// by email; the invited user lists and accepts.
func RegisterInvitations(api huma.API, inv *Invitations) {
	h := invitationHandlers{inv: inv}
	admins := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
	huma.Register(api, httpapi.Op("create-project-invitation", http.MethodPost, "/api/projects/{projectId}/invitations",
		"Invite someone to the project by email (project admins); inviting a pending address again sends a new link", admins), h.create)
	huma.Register(api, httpapi.Op("list-project-invitations", http.MethodGet, "/api/projects/{projectId}/invitations",
		"List the project's invitations (project admins)", auth.Rule{Scope: auth.AdminRead, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}), h.list)
	huma.Register(api, httpapi.Op("revoke-project-invitation", http.MethodDelete, "/api/projects/{projectId}/invitations/{invitationId}",
		"Revoke a pending invitation (project admins)", admins.WithKeys("invitationId")), h.revoke)
	huma.Register(api, httpapi.Op("accept-invitation", http.MethodPost, "/api/invitations/accept",
		"Accept an invitation sent to your email address: you become a member of its project",
		auth.Rule{Scope: auth.AdminWrite, Resource: auth.Self}), h.accept)
	huma.Register(api, httpapi.Op("list-my-invitations", http.MethodGet, "/api/me/invitations",
		"List the pending invitations sent to your email address", auth.Rule{Scope: auth.AdminRead, Resource: auth.Self}), h.mine)
}

// invitationHandlers are the invitation routes' handlers.
type invitationHandlers struct {
	inv *Invitations
}

func (h invitationHandlers) create(ctx context.Context, in *invitationCreateIn) (*httpapi.Created[Invitation], error) {
	return httpapi.ReplyCreated(h.inv.Create(ctx, auth.PrincipalFrom(ctx), auth.AccessFrom(ctx).ProjectID, in.Body.Email, in.Body.Role))
}

func (h invitationHandlers) list(ctx context.Context, in *invitationListIn) (*httpapi.Out[httpapi.List[Invitation]], error) {
	list, total, err := h.inv.List(ctx, auth.AccessFrom(ctx).ProjectID, Page{in.Limit, in.Offset})
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h invitationHandlers) revoke(ctx context.Context, in *invitationIn) (*httpapi.NoContent, error) {
	id, err := httpapi.ParseID(in.InvitationID, ErrInvitationNotFound)
	if err != nil {
		return nil, err
	}
	return nil, h.inv.Revoke(ctx, auth.AccessFrom(ctx).ProjectID, id)
}

func (h invitationHandlers) accept(ctx context.Context, in *invitationAcceptIn) (*httpapi.Out[Invitation], error) {
	return httpapi.Reply(h.inv.Accept(ctx, auth.PrincipalFrom(ctx), in.Body.Token))
}

func (h invitationHandlers) mine(ctx context.Context, in *myInvitationsIn) (*httpapi.Out[httpapi.List[Invitation]], error) {
	list, total, err := h.inv.Mine(ctx, auth.PrincipalFrom(ctx), Page{in.Limit, in.Offset})
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

// handlers are the tenancy routes' handlers: each decodes, calls the
// service with what the middleware authorised (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

func (h handlers) listOrgs(ctx context.Context, in *orgListIn) (*httpapi.Out[httpapi.List[Org]], error) {
	list, total, err := h.svc.ListOrgs(ctx, auth.PrincipalFrom(ctx), Page{in.Limit, in.Offset})
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) createOrg(ctx context.Context, in *orgCreateIn) (*httpapi.Created[Org], error) {
	return httpapi.ReplyCreated(h.svc.CreateOrg(ctx, auth.PrincipalFrom(ctx), in.Body.Name))
}

func (h handlers) listProjects(ctx context.Context, in *projectListIn) (*httpapi.Out[httpapi.List[Project]], error) {
	org, err := httpapi.ParseOptionalID("orgId", in.OrgID)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.ListProjects(ctx, auth.PrincipalFrom(ctx), org, Page{in.Limit, in.Offset})
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) createProject(ctx context.Context, in *projectCreateIn) (*httpapi.Created[Project], error) {
	return httpapi.ReplyCreated(h.svc.CreateProject(ctx, auth.PrincipalFrom(ctx), auth.AccessFrom(ctx).OrgID, in.Body.Name))
}

func (h handlers) getProject(ctx context.Context, _ *projectIn) (*httpapi.Out[Project], error) {
	return httpapi.Reply(h.svc.GetProject(ctx, auth.PrincipalFrom(ctx), auth.AccessFrom(ctx).ProjectID))
}

func (h handlers) deleteProject(ctx context.Context, _ *projectIn) (*httpapi.NoContent, error) {
	return nil, h.svc.DeleteProject(ctx, auth.AccessFrom(ctx).ProjectID, nil)
}

func (h handlers) listProjectMembers(ctx context.Context, in *memberListIn) (*httpapi.Out[httpapi.List[Member]], error) {
	list, total, err := h.svc.ListMembers(ctx, auth.AccessFrom(ctx).ProjectID, Page{in.Limit, in.Offset})
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) addProjectMember(ctx context.Context, in *memberAddIn) (*httpapi.Out[Member], error) {
	return httpapi.Reply(h.svc.AddMember(ctx, auth.AccessFrom(ctx).ProjectID, in.Body.UserID, in.Body.Role))
}

func (h handlers) removeProjectMember(ctx context.Context, in *memberIn) (*httpapi.NoContent, error) {
	user, err := httpapi.ParseID(in.UserID, ErrMemberNotFound)
	if err != nil {
		return nil, err
	}
	return nil, h.svc.RemoveMember(ctx, auth.AccessFrom(ctx).ProjectID, user)
}

func (h handlers) listTokens(ctx context.Context, in *tokenListIn) (*httpapi.Out[httpapi.List[Token]], error) {
	user := auth.PrincipalFrom(ctx).UserID
	list, total, err := h.svc.ListTokens(ctx, &user, nil, Page{in.Limit, in.Offset})
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) createToken(ctx context.Context, in *tokenCreateIn) (*httpapi.Created[Token], error) {
	p := auth.PrincipalFrom(ctx)
	return httpapi.ReplyCreated(h.svc.CreateToken(ctx, p, CreateTokenParams{UserID: p.UserID, Name: in.Body.Name, Scopes: in.Body.Scopes, ExpiresAt: in.Body.ExpiresAt}, nil))
}

func (h handlers) listProjectTokens(ctx context.Context, in *projectTokenListIn) (*httpapi.Out[httpapi.List[Token]], error) {
	list, total, err := h.svc.ListProjectTokens(ctx, auth.PrincipalFrom(ctx), auth.AccessFrom(ctx), Page{in.Limit, in.Offset})
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) createProjectToken(ctx context.Context, in *projectTokenCreateIn) (*httpapi.Created[Token], error) {
	p := auth.PrincipalFrom(ctx)
	project := auth.AccessFrom(ctx).ProjectID
	return httpapi.ReplyCreated(h.svc.CreateToken(ctx, p, CreateTokenParams{
		UserID: p.UserID, ProjectID: &project, Name: in.Body.Name, Scopes: in.Body.Scopes, ExpiresAt: in.Body.ExpiresAt,
	}, nil))
}

func (h handlers) revokeProjectToken(ctx context.Context, in *projectTokenIn) (*httpapi.NoContent, error) {
	id, err := httpapi.ParseID(in.ID, ErrTokenNotFound)
	if err != nil {
		return nil, err
	}
	return nil, h.svc.RevokeProjectToken(ctx, auth.PrincipalFrom(ctx), auth.AccessFrom(ctx), id)
}

func (h handlers) revokeToken(ctx context.Context, _ *tokenIn) (*httpapi.NoContent, error) {
	user := auth.PrincipalFrom(ctx).UserID
	return nil, h.svc.RevokeToken(ctx, auth.AccessFrom(ctx).ResourceID, &user, nil)
}
