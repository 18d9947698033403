package activity

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// List is the spec's recent-activity list: {data: [item]}.
type List struct {
	Data []Item `json:"data"`
}

type (
	recordIn struct {
		ProjectID string `query:"projectId" doc:"The project the resource belongs to (required)."`
		Body      struct {
			ResourceType    string `json:"resourceType" maxLength:"64" doc:"For example document, graph-object, agent."`
			ResourceID      string `json:"resourceId" maxLength:"500"`
			ActionType      string `json:"actionType" maxLength:"64" doc:"For example view, edit."`
			ResourceName    string `json:"resourceName,omitempty" maxLength:"500"`
			ResourceSubtype string `json:"resourceSubtype,omitempty" maxLength:"200"`
		}
	}
	recentIn struct {
		Limit int `query:"limit" default:"20" minimum:"1" maximum:"100" doc:"How many items."`
	}
	recentTypeIn struct {
		ResourceType string `path:"resourceType"`
		Limit        int    `query:"limit" default:"20" minimum:"1" maximum:"100" doc:"How many items."`
	}
	clearIn  struct{}
	removeIn struct {
		ResourceType string `path:"resourceType"`
		ResourceID   string `path:"resourceID"`
	}
)

func newList(items []Item) List {
	if items == nil {
		items = []Item{}
	}
	return List{Data: items}
}

// Register adds the recent-activity routes. Each acts on the caller's own
// history; X-Project-ID (or a project-scoped token) narrows it to one
// project.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.UserActivityRead, Resource: auth.Personal, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.UserActivityWrite, Resource: auth.Personal, ProjectRole: auth.ProjectViewer}
	h := handlers{svc: svc}

	huma.Register(api, httpapi.Op("record-user-activity", http.MethodPost, "/api/user-activity/record",
		"Record that you used a resource of the project given by the projectId query parameter", write), h.recordUserActivity)
	huma.Register(api, httpapi.Op("list-user-activity", http.MethodGet, "/api/user-activity/recent",
		"Your recently used resources, most recent first", read), h.listUserActivity)
	huma.Register(api, httpapi.Op("list-user-activity-of-type", http.MethodGet, "/api/user-activity/recent/{resourceType}",
		"Your recently used resources of one type, most recent first", read.WithKeys("resourceType")), h.listUserActivityOfType)

	huma.Register(api, httpapi.Op("clear-user-activity", http.MethodDelete, "/api/user-activity/recent", "Clear your history", write), h.clearUserActivity)
	huma.Register(api, httpapi.Op("remove-user-activity", http.MethodDelete, "/api/user-activity/recent/{resourceType}/{resourceID}",
		"Remove one resource from your history", write.WithKeys("resourceType", "resourceID")), h.removeUserActivity)
}

// handlers are the user activity routes' handlers: each decodes, calls the
// service with what the middleware authorised (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

func (h handlers) recordUserActivity(ctx context.Context, in *recordIn) (*httpapi.Out[Item], error) {
	// The guard checked the project the request names; the spec
	// wants it in the query, not only in a header.
	project := auth.AccessFrom(ctx).ProjectID
	if in.ProjectID == "" || project == uuid.Nil {
		return nil, ErrProjectRequired
	}
	b := in.Body
	return httpapi.Reply(h.svc.Record(ctx, Record{
		UserID: auth.PrincipalFrom(ctx).UserID, ProjectID: project, ResourceType: b.ResourceType, ResourceID: b.ResourceID,
		ResourceName: b.ResourceName, ResourceSubtype: b.ResourceSubtype, ActionType: b.ActionType,
	}))
}

func (h handlers) listUserActivity(ctx context.Context, in *recentIn) (*httpapi.Out[List], error) {
	list, err := h.svc.Recent(ctx, auth.OwnRecordsFrom(ctx), "", in.Limit)
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[List]{Body: newList(list)}, nil
}

func (h handlers) listUserActivityOfType(ctx context.Context, in *recentTypeIn) (*httpapi.Out[List], error) {
	list, err := h.svc.Recent(ctx, auth.OwnRecordsFrom(ctx), in.ResourceType, in.Limit)
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[List]{Body: newList(list)}, nil
}

func (h handlers) clearUserActivity(ctx context.Context, _ *clearIn) (*httpapi.NoContent, error) {
	_, err := h.svc.Clear(ctx, auth.OwnRecordsFrom(ctx))
	return nil, err
}

func (h handlers) removeUserActivity(ctx context.Context, in *removeIn) (*httpapi.NoContent, error) {
	return nil, h.svc.Remove(ctx, auth.OwnRecordsFrom(ctx), in.ResourceType, in.ResourceID)
}
