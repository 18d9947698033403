package integration

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	listIn struct {
		httpapi.PageParams
	}
	nameIn struct {
		Name string `path:"name" maxLength:"100"`
	}
	createIn struct {
		Body struct {
			Name         string         `json:"name" maxLength:"100" doc:"Unique in the project; used in paths."`
			DisplayName  string         `json:"display_name" maxLength:"200"`
			ProviderType string         `json:"provider_type" maxLength:"100" doc:"One of the available integrations."`
			Config       map[string]any `json:"config,omitempty" doc:"The provider's fields (required_fields, optional_fields), plus sync_interval_minutes and max_delete_fraction."`
		}
	}
	updateIn struct {
		Name string `path:"name" maxLength:"100"`
		Body struct {
			DisplayName *string        `json:"display_name,omitempty" maxLength:"200"`
			Config      map[string]any `json:"config,omitempty" doc:"Replaces the stored config; a secret sent back masked keeps its stored value."`
			Status      *string        `json:"status,omitempty" enum:"active,inactive,error"`
		}
	}
	syncIn struct {
		Name string `path:"name" maxLength:"100"`
		Body *struct {
			FullSync        bool     `json:"full_sync,omitempty" doc:"Also delete beyond max_delete_fraction."`
			SourceTypes     []string `json:"source_types,omitempty" maxItems:"20"`
			SpaceIDs        []string `json:"space_ids,omitempty" maxItems:"1000"`
			IncludeArchived bool     `json:"includeArchived,omitempty"`
			BatchSize       int      `json:"batchSize,omitempty" minimum:"0" maximum:"1000"`
		}
	}
)

// rawConfig turns a decoded config into raw JSON values (nil stays nil:
// no config given).
func rawConfig(in map[string]any) (map[string]json.RawMessage, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(in))
	for k, v := range in {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, errs.Errorf(errs.Invalid, "config field %s: %v", k, err)
		}
		out[k] = raw
	}
	return out, nil
}

// Register adds the integration routes. The project comes from
// X-Project-ID (or a project-scoped token); reading needs
// integrations:read, the full view and every change integrations:write
// and the project admin role.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.IntegrationsRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	admin := auth.Rule{Scope: auth.IntegrationsWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
	available := auth.Rule{Scope: auth.IntegrationsRead, Resource: auth.Authenticated}
	h := handlers{svc: svc}

	huma.Register(api, httpapi.Op("list-available-integrations", http.MethodGet, "/api/integrations/available", "List the available integrations", available), h.available)
	huma.Register(api, httpapi.Op("list-integrations", http.MethodGet, "/api/integrations", "List the project's integrations", read), h.list)
	huma.Register(api, httpapi.Op("get-integration", http.MethodGet, "/api/integrations/{name}",
		"Get an integration with its config (credentials masked)", admin.WithKeys("name")), h.get)
	huma.Register(api, httpapi.Op("get-integration-public", http.MethodGet, "/api/integrations/{name}/public",
		"Get an integration without its config", read.WithKeys("name")), h.getPublic)
	huma.Register(api, httpapi.Op("create-integration", http.MethodPost, "/api/integrations", "Configure an integration", admin), h.create)
	huma.Register(api, httpapi.Op("update-integration", http.MethodPut, "/api/integrations/{name}",
		"Change an integration (a given config replaces the stored one)", admin.WithKeys("name")), h.update)
	huma.Register(api, httpapi.Op("delete-integration", http.MethodDelete, "/api/integrations/{name}",
		"Remove an integration and its config (its documents stay)", admin.WithKeys("name")), h.delete)
	huma.Register(api, httpapi.Op("test-integration", http.MethodPost, "/api/integrations/{name}/test",
		"Connect to the integration's source and list one item", admin.WithKeys("name")), h.test)
	huma.Register(api, httpapi.Op("sync-integration", http.MethodPost, "/api/integrations/{name}/sync",
		"Queue a sync of the integration (one at a time)", admin.WithKeys("name")), h.sync)
}

// handlers are the integration routes' handlers.
type handlers struct {
	svc *Service
}

func (h handlers) available(_ context.Context, _ *struct{}) (*httpapi.Out[[]Available], error) {
	return &httpapi.Out[[]Available]{Body: h.svc.Available()}, nil
}

func (h handlers) list(ctx context.Context, in *listIn) (*httpapi.Out[httpapi.List[Integration]], error) {
	list, total, err := h.svc.List(ctx, auth.AccessFrom(ctx).ProjectID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) get(ctx context.Context, in *nameIn) (*httpapi.Out[Integration], error) {
	return httpapi.Reply(h.svc.Get(ctx, auth.AccessFrom(ctx).ProjectID, in.Name))
}

func (h handlers) getPublic(ctx context.Context, in *nameIn) (*httpapi.Out[Public], error) {
	return httpapi.Reply(h.svc.GetPublic(ctx, auth.AccessFrom(ctx).ProjectID, in.Name))
}

func (h handlers) create(ctx context.Context, in *createIn) (*httpapi.Created[Integration], error) {
	cfg, err := rawConfig(in.Body.Config)
	if err != nil {
		return nil, err
	}
	return httpapi.ReplyCreated(h.svc.Create(ctx, auth.AccessFrom(ctx).ProjectID, auth.UserFrom(ctx), CreateParams{
		Name: in.Body.Name, DisplayName: in.Body.DisplayName, ProviderType: in.Body.ProviderType, Config: cfg,
	}))
}

func (h handlers) update(ctx context.Context, in *updateIn) (*httpapi.Out[Integration], error) {
	cfg, err := rawConfig(in.Body.Config)
	if err != nil {
		return nil, err
	}
	return httpapi.Reply(h.svc.Update(ctx, auth.AccessFrom(ctx).ProjectID, in.Name, UpdateParams{
		DisplayName: in.Body.DisplayName, Config: cfg, Status: in.Body.Status,
	}))
}

func (h handlers) delete(ctx context.Context, in *nameIn) (*httpapi.NoContent, error) {
	return nil, h.svc.Delete(ctx, auth.AccessFrom(ctx).ProjectID, in.Name)
}

func (h handlers) test(ctx context.Context, in *nameIn) (*httpapi.Out[TestResult], error) {
	return httpapi.Reply(h.svc.Test(ctx, auth.AccessFrom(ctx).ProjectID, in.Name))
}

func (h handlers) sync(ctx context.Context, in *syncIn) (*httpapi.Out[SyncResult], error) {
	var opts SyncOptions
	if b := in.Body; b != nil {
		opts = SyncOptions{FullSync: b.FullSync, SourceTypes: b.SourceTypes, SpaceIDs: b.SpaceIDs, IncludeArchived: b.IncludeArchived, BatchSize: b.BatchSize}
	}
	return httpapi.Reply(h.svc.Sync(ctx, auth.AccessFrom(ctx).ProjectID, in.Name, TriggerManual, opts))
}
