package embeddingpolicy

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	projectIn struct {
		ProjectID string `query:"project_id" doc:"The project (required unless the token is bound to one)."`
	}
	policyIn struct {
		ID        string `path:"id"`
		ProjectID string `query:"project_id" doc:"The project (required unless the token is bound to one)."`
	}
	createIn struct {
		OrgID string `header:"X-Org-ID" doc:"When given, must be the project's organization."`
		Body  struct {
			ProjectID      uuid.UUID       `json:"projectId" format:"uuid" doc:"The project the policy belongs to."`
			Name           string          `json:"name" maxLength:"200"`
			Description    string          `json:"description,omitempty" maxLength:"2000"`
			ObjectTypes    []string        `json:"object_types" maxItems:"100"`
			Fields         []string        `json:"fields" maxItems:"100"`
			Template       string          `json:"template" maxLength:"10000"`
			Model          string          `json:"model" maxLength:"200"`
			Active         *bool           `json:"active,omitempty" doc:"Default true."`
			ChunkingConfig json.RawMessage `json:"chunking_config,omitempty" doc:"Provider-specific JSON object."`
		}
	}
	updateIn struct {
		ID        string `path:"id"`
		ProjectID string `query:"project_id" doc:"The project (required unless the token is bound to one)."`
		Body      struct {
			Name        *string   `json:"name,omitempty" maxLength:"200"`
			Description *string   `json:"description,omitempty" maxLength:"2000"`
			ObjectTypes *[]string `json:"object_types,omitempty" maxItems:"100"`
			Fields      *[]string `json:"fields,omitempty" maxItems:"100"`
			Template    *string   `json:"template,omitempty" maxLength:"10000"`
			Model       *string   `json:"model,omitempty" maxLength:"200"`
			Active      *bool     `json:"active,omitempty"`
			// A plain RawMessage, not a pointer: JSON null reaches it as
			// "null" (clear), an absent member leaves it empty (unchanged).
			ChunkingConfig json.RawMessage `json:"chunking_config,omitempty" doc:"A JSON object; null clears it."`
		}
	}
)

// Register adds the five embedding policy routes. Reading needs graph:read
// and any project role; writing needs graph:write and the project role
// editor or admin. Creation names its project in the body (projectId);
// the other routes name it with project_id (the spec's), and a policy
// must belong to it.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.GraphRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.GraphWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
	create := write
	create.BodyField = "projectId"
	policy := &auth.Owner{Param: "id", Kind: "embedding-policy", Resolve: auth.InProject(svc.PolicyProject), NotFound: ErrNotFound, NamedProject: true}
	readOne, writeOne := read.WithOwner(policy), write.WithOwner(policy)
	h := handlers{svc: svc}

	huma.Register(api, httpapi.Op("list-embedding-policies", http.MethodGet, "/api/graph/embedding-policies",
		"List a project's embedding policies", read), h.listEmbeddingPolicies)
	huma.Register(api, httpapi.Op("get-embedding-policy", http.MethodGet, "/api/graph/embedding-policies/{id}",
		"Get an embedding policy", readOne), h.getEmbeddingPolicy)
	huma.Register(api, httpapi.Op("create-embedding-policy", http.MethodPost, "/api/graph/embedding-policies",
		"Create an embedding policy; its objects are queued for re-embedding", create), h.createEmbeddingPolicy)
	huma.Register(api, httpapi.Op("update-embedding-policy", http.MethodPut, "/api/graph/embedding-policies/{id}",
		"Change the given fields of an embedding policy; the objects whose texts change are queued for re-embedding", writeOne), h.updateEmbeddingPolicy)
	huma.Register(api, httpapi.Op("delete-embedding-policy", http.MethodDelete, "/api/graph/embedding-policies/{id}",
		"Delete an embedding policy and its vectors; its objects are queued for re-embedding", writeOne), h.deleteEmbeddingPolicy)
}

// handlers are the embedding policy routes' handlers: each decodes, calls the
// service with what the middleware authorised (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

func (h handlers) listEmbeddingPolicies(ctx context.Context, _ *projectIn) (*httpapi.Out[[]Policy], error) {
	return httpapi.Reply(h.svc.List(ctx, auth.AccessFrom(ctx).ProjectID))
}

func (h handlers) getEmbeddingPolicy(ctx context.Context, _ *policyIn) (*httpapi.Out[Policy], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.Get(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) createEmbeddingPolicy(ctx context.Context, in *createIn) (*httpapi.Created[Policy], error) {
	b := in.Body
	return httpapi.ReplyCreated(h.svc.Create(ctx, auth.AccessFrom(ctx).ProjectID, CreateParams{
		Name: b.Name, Description: b.Description, ObjectTypes: b.ObjectTypes, Fields: b.Fields,
		Template: b.Template, Model: b.Model, Active: b.Active, ChunkingConfig: b.ChunkingConfig,
	}))
}

func (h handlers) updateEmbeddingPolicy(ctx context.Context, in *updateIn) (*httpapi.Out[Policy], error) {
	b := in.Body
	u := Update{
		Name: b.Name, Description: b.Description, ObjectTypes: b.ObjectTypes, Fields: b.Fields,
		Template: b.Template, Model: b.Model, Active: b.Active,
	}
	if b.ChunkingConfig != nil {
		u.ChunkingConfig = &b.ChunkingConfig
	}
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.Update(ctx, a.ProjectID, a.ResourceID, u))
}

func (h handlers) deleteEmbeddingPolicy(ctx context.Context, _ *policyIn) (*httpapi.NoContent, error) {
	a := auth.AccessFrom(ctx)
	return nil, h.svc.Delete(ctx, a.ProjectID, a.ResourceID)
}
