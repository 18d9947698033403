package discovery

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	listIn struct {
		httpapi.PageParams
	}
	jobIn struct {
		ID string `path:"id"`
	}
	startIn struct {
		Body struct {
			DocumentIDs          []string `json:"document_ids" maxItems:"500" doc:"1 to 500 parsed documents of the project."`
			BatchSize            *int     `json:"batch_size,omitempty" doc:"Documents per provider call, 1 to 50 (default 5)."`
			MinConfidence        *float64 `json:"min_confidence,omitempty" doc:"Merged types below this confidence are dropped, 0 to 1 (default 0.5)."`
			IncludeRelationships *bool    `json:"include_relationships,omitempty" doc:"Propose relationship types too (default true)."`
			MaxIterations        *int     `json:"max_iterations,omitempty" doc:"Merge passes, 1 to 10 (default 3): the first merges the batches, each further one asks the model to refine the list."`
		}
	}
	finalizeIn struct {
		ID   string `path:"id"`
		Body struct {
			PackName              string                 `json:"packName"`
			Mode                  string                 `json:"mode" enum:"create,update"`
			ExistingPackID        *string                `json:"existingPackId,omitempty" doc:"The pack to extend (mode update)."`
			IncludedTypes         []IncludedType         `json:"includedTypes"`
			IncludedRelationships []IncludedRelationship `json:"includedRelationships,omitempty"`
			Install               *bool                  `json:"install,omitempty" doc:"Install the pack in the project (default true)."`
			Reextract             bool                   `json:"reextract,omitempty" doc:"Queue a reextraction of the job's documents with the new types (default false)."`
		}
	}
)

// Register adds the discovery routes. The project comes from
// X-Project-ID (or a project-scoped token); routes naming a job take the
// job's project. Reading needs discovery:read; starting, cancelling and
// finalizing discovery:write and the editor role.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.DiscoveryRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.DiscoveryWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
	job := &auth.Owner{Param: "id", Kind: "discovery-job", Resolve: auth.InProject(svc.JobProject), NotFound: ErrNotFound}
	h := handlers{svc: svc}
	base := "/api/discovery-jobs"

	start := httpapi.Op("start-discovery-job", http.MethodPost, base, "Start a schema discovery job over documents of the project", write)
	start.DefaultStatus = http.StatusCreated
	huma.Register(api, start, h.start)
	huma.Register(api, httpapi.Op("list-discovery-jobs", http.MethodGet, base, "List the project's discovery jobs, newest first", read), h.list)
	huma.Register(api, httpapi.Op("get-discovery-job", http.MethodGet, base+"/{id}", "Get a discovery job's status and result", read.WithOwner(job)), h.get)
	huma.Register(api, httpapi.Op("cancel-discovery-job", http.MethodPost, base+"/{id}/cancel",
		"Cancel a pending or running discovery job", write.WithOwner(job)), h.cancel)
	huma.Register(api, httpapi.Op("finalize-discovery-job", http.MethodPost, base+"/{id}/finalize",
		"Make a template pack (new, or a new version of one) of a completed discovery job's types", write.WithOwner(job)), h.finalize)
}

// handlers are the discovery routes' handlers.
type handlers struct {
	svc *Service
}

func (h handlers) start(ctx context.Context, in *startIn) (*httpapi.Out[Started], error) {
	ids := make([]uuid.UUID, len(in.Body.DocumentIDs))
	for i, raw := range in.Body.DocumentIDs {
		id, err := uuid.Parse(raw)
		if err != nil {
			return nil, errs.Errorf(errs.Invalid, "document_ids[%d]: %s is not a document id", i, errs.Quoted(raw))
		}
		ids[i] = id
	}
	return httpapi.Reply(h.svc.Start(ctx, auth.AccessFrom(ctx).ProjectID, StartParams{
		DocumentIDs: ids, BatchSize: in.Body.BatchSize, MinConfidence: in.Body.MinConfidence,
		IncludeRelationships: in.Body.IncludeRelationships, MaxIterations: in.Body.MaxIterations, CreatedBy: auth.UserFrom(ctx),
	}))
}

func (h handlers) list(ctx context.Context, in *listIn) (*httpapi.Out[httpapi.List[ListItem]], error) {
	list, total, err := h.svc.List(ctx, auth.AccessFrom(ctx).ProjectID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) get(ctx context.Context, _ *jobIn) (*httpapi.Out[Job], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.Get(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) cancel(ctx context.Context, _ *jobIn) (*httpapi.Out[Job], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.Cancel(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) finalize(ctx context.Context, in *finalizeIn) (*httpapi.Out[Finalized], error) {
	b := in.Body
	p := FinalizeParams{
		PackName: b.PackName, Mode: b.Mode, IncludedTypes: b.IncludedTypes, IncludedRelationships: b.IncludedRelationships,
		Install: b.Install == nil || *b.Install, Reextract: b.Reextract, Principal: auth.PrincipalFrom(ctx), By: auth.UserFrom(ctx),
	}
	if b.ExistingPackID != nil {
		pack, err := uuid.Parse(*b.ExistingPackID)
		if err != nil {
			return nil, errs.Errorf(errs.Invalid, "existingPackId %s is not a template pack id", errs.Quoted(*b.ExistingPackID))
		}
		p.ExistingPackID = &pack
	}
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.Finalize(ctx, a.ProjectID, a.ResourceID, p))
}
