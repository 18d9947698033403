package graph

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	objectListIn struct {
		Type   string   `query:"type" maxLength:"200" doc:"Only objects of this type."`
		Status string   `query:"status" enum:"accepted,suggested" doc:"Only objects in this status."`
		Label  string   `query:"label" maxLength:"100" doc:"Only objects carrying this label."`
		Q      string   `query:"q" maxLength:"200" doc:"Case-insensitive text matched in name, key and description."`
		IDs    []string `query:"ids" doc:"Only these objects (at most 200 ids, separated by commas); ids of no live object of the project are left out."`
		httpapi.PageParams
	}
	objectCreateIn struct {
		Body struct {
			Type        string         `json:"type" minLength:"1" maxLength:"200" doc:"An object type of the project's template packs."`
			Key         string         `json:"key,omitempty" maxLength:"500" doc:"Natural key; defaults to the name."`
			Name        string         `json:"name" minLength:"1" maxLength:"500"`
			Description string         `json:"description,omitempty" maxLength:"10000"`
			Properties  map[string]any `json:"properties,omitempty" doc:"Validated against the type's schema."`
			Labels      []string       `json:"labels,omitempty" maxItems:"100"`
			Status      string         `json:"status,omitempty" enum:"accepted,suggested" doc:"Default accepted."`
			Confidence  *float64       `json:"confidence,omitempty" minimum:"0" maximum:"1"`
		}
	}
	objectIn struct {
		ID string `path:"id"`
	}
	objectPatchIn struct {
		ID   string `path:"id"`
		Body struct {
			Name        *string        `json:"name,omitempty" minLength:"1" maxLength:"500"`
			Description *string        `json:"description,omitempty" maxLength:"10000"`
			Properties  map[string]any `json:"properties,omitempty" doc:"Replaces the properties; validated against the type's schema."`
			Labels      []string       `json:"labels,omitempty" maxItems:"100" doc:"Replaces the labels."`
			Status      *string        `json:"status,omitempty" enum:"accepted,suggested"`
		}
	}
	objectRelsIn struct {
		ID        string `path:"id"`
		Direction string `query:"direction" enum:"both,outgoing,incoming" default:"both" doc:"Relationships from the object (outgoing), to it (incoming) or both."`
		Type      string `query:"type" maxLength:"200" doc:"Only relationships of this type."`
		httpapi.PageParams
	}
	relListIn struct {
		Type     string `query:"type" maxLength:"200" doc:"Only relationships of this type."`
		SourceID string `query:"sourceId" doc:"Only relationships from this object."`
		TargetID string `query:"targetId" doc:"Only relationships to this object."`
		httpapi.PageParams
	}
	relCreateIn struct {
		Body struct {
			Type       string         `json:"type" minLength:"1" maxLength:"200" doc:"A relationship type of the project's template packs."`
			SourceID   uuid.UUID      `json:"sourceId" format:"uuid"`
			TargetID   uuid.UUID      `json:"targetId" format:"uuid"`
			Properties map[string]any `json:"properties,omitempty"`
			Confidence *float64       `json:"confidence,omitempty" minimum:"0" maximum:"1"`
		}
	}
	relIn struct {
		ID string `path:"id"`
	}
)

// Register adds the graph routes. The project comes from X-Project-ID or
// a project-scoped token; an object or relationship the path names must
// be of it.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.GraphRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.GraphWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
	object := &auth.Owner{Param: "id", Kind: "graph-object", Resolve: auth.InProject(svc.ObjectProject), NotFound: ErrObjectNotFound, NamedProject: true}
	rel := &auth.Owner{Param: "id", Kind: "relationship", Resolve: auth.InProject(svc.RelationshipProject), NotFound: ErrRelationshipNotFound, NamedProject: true}
	h := handlers{svc: svc}

	huma.Register(api, httpapi.Op("list-graph-objects", http.MethodGet, "/api/graph/objects", "List the project's graph objects, newest first", read), h.listObjects)
	huma.Register(api, httpapi.Op("create-graph-object", http.MethodPost, "/api/graph/objects",
		"Create a graph object (409 when a live object of its type has the same normalized key)", write), h.createObject)
	huma.Register(api, httpapi.Op("get-graph-object", http.MethodGet, "/api/graph/objects/{id}", "Get a graph object", read.WithOwner(object)), h.getObject)
	huma.Register(api, httpapi.Op("update-graph-object", http.MethodPatch, "/api/graph/objects/{id}",
		"Change a graph object's name, description, properties (replaced), labels (replaced) or status", write.WithOwner(object)), h.updateObject)
	huma.Register(api, httpapi.Op("delete-graph-object", http.MethodDelete, "/api/graph/objects/{id}",
		"Delete a graph object (soft) and its relationships", write.WithOwner(object)), h.deleteObject)
	huma.Register(api, httpapi.Op("list-graph-object-relationships", http.MethodGet, "/api/graph/objects/{id}/relationships",
		"List the relationships of a graph object, in both directions unless direction says otherwise", read.WithOwner(object)), h.objectRelationships)
	huma.Register(api, httpapi.Op("list-graph-relationships", http.MethodGet, "/api/graph/relationships", "List the project's relationships, newest first", read), h.listRelationships)
	huma.Register(api, httpapi.Op("create-graph-relationship", http.MethodPost, "/api/graph/relationships",
		"Create a relationship between two objects of the project (409 when it exists)", write), h.createRelationship)
	huma.Register(api, httpapi.Op("get-graph-relationship", http.MethodGet, "/api/graph/relationships/{id}", "Get a relationship", read.WithOwner(rel)), h.getRelationship)
	huma.Register(api, httpapi.Op("delete-graph-relationship", http.MethodDelete, "/api/graph/relationships/{id}", "Delete a relationship",
		write.WithOwner(rel)), h.deleteRelationship)
}

// handlers are the graph routes' handlers: each decodes, calls the
// service with the project and resource the middleware authorised
// (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

// Resolve implements huma.Resolver: the ids filter is given once.
func (in *objectListIn) Resolve(ctx huma.Context) []error { return httpapi.QueryOnce(ctx, "ids") }

func (h handlers) listObjects(ctx context.Context, in *objectListIn) (*httpapi.Out[httpapi.List[Object]], error) {
	ids, err := httpapi.ParseIDs("ids", in.IDs)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.ListObjects(ctx, auth.AccessFrom(ctx).ProjectID, ObjectFilter{
		Type: in.Type, Status: in.Status, Label: in.Label, Query: in.Q, IDs: ids, Limit: in.Limit, Offset: in.Offset,
	})
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) createObject(ctx context.Context, in *objectCreateIn) (*httpapi.Created[Object], error) {
	b := in.Body
	user := auth.PrincipalFrom(ctx).UserID
	return httpapi.ReplyCreated(h.svc.CreateObject(ctx, auth.AccessFrom(ctx).ProjectID, CreateObjectParams{
		Type: b.Type, Key: b.Key, Name: b.Name, Description: b.Description, Properties: b.Properties,
		Labels: b.Labels, Status: b.Status, Confidence: b.Confidence, CreatedBy: &user,
	}))
}

func (h handlers) getObject(ctx context.Context, _ *objectIn) (*httpapi.Out[Object], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.GetObject(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) updateObject(ctx context.Context, in *objectPatchIn) (*httpapi.Out[Object], error) {
	a, b := auth.AccessFrom(ctx), in.Body
	return httpapi.Reply(h.svc.UpdateObject(ctx, a.ProjectID, a.ResourceID, ObjectUpdate{
		Name: b.Name, Description: b.Description, Properties: b.Properties, Labels: b.Labels, Status: b.Status,
	}))
}

func (h handlers) deleteObject(ctx context.Context, _ *objectIn) (*httpapi.NoContent, error) {
	a := auth.AccessFrom(ctx)
	return nil, h.svc.DeleteObject(ctx, a.ProjectID, a.ResourceID)
}

func (h handlers) objectRelationships(ctx context.Context, in *objectRelsIn) (*httpapi.Out[httpapi.List[Relationship]], error) {
	a := auth.AccessFrom(ctx)
	list, total, err := h.svc.ListObjectRelationships(ctx, a.ProjectID, a.ResourceID, Direction(in.Direction), in.Type, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) listRelationships(ctx context.Context, in *relListIn) (*httpapi.Out[httpapi.List[Relationship]], error) {
	f := RelationshipFilter{Type: in.Type, Limit: in.Limit, Offset: in.Offset}
	if err := f.ParseEnds(in.SourceID, in.TargetID); err != nil {
		return nil, err
	}
	list, total, err := h.svc.ListRelationships(ctx, auth.AccessFrom(ctx).ProjectID, f)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) createRelationship(ctx context.Context, in *relCreateIn) (*httpapi.Created[Relationship], error) {
	b := in.Body
	return httpapi.ReplyCreated(h.svc.CreateRelationship(ctx, auth.AccessFrom(ctx).ProjectID, CreateRelationshipParams{
		Type: b.Type, SourceID: b.SourceID, TargetID: b.TargetID, Properties: b.Properties, Confidence: b.Confidence,
	}))
}

func (h handlers) getRelationship(ctx context.Context, _ *relIn) (*httpapi.Out[Relationship], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.GetRelationship(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) deleteRelationship(ctx context.Context, _ *relIn) (*httpapi.NoContent, error) {
	a := auth.AccessFrom(ctx)
	return nil, h.svc.DeleteRelationship(ctx, a.ProjectID, a.ResourceID)
}
