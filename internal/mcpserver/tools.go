package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
)

// Bounds of tool inputs that no service fixes.
const (
	// ListLimitDefault is the page size of list tools.
	ListLimitDefault = 20
	// NeighborsLimitDefault is the page size of graph_neighbors and of the
	// relationships graph_get_object embeds.
	NeighborsLimitDefault = 50
	// UploadTextMax bounds documents_upload_text's content, in characters,
	// well under the transport's 4 MiB body limit.
	UploadTextMax = 1_000_000
	// WebSearchCountMax bounds web_search's count.
	WebSearchCountMax = 20
)

// Tool names. The two registry tools keep the spec's names, with "/".
const (
	ToolGraphSearchObjects      = "graph_search_objects"
	ToolGraphGetObject          = "graph_get_object"
	ToolGraphCreateObject       = "graph_create_object"
	ToolGraphUpdateObject       = "graph_update_object"
	ToolGraphCreateRelationship = "graph_create_relationship"
	ToolGraphListRelationships  = "graph_list_relationships"
	ToolGraphNeighbors          = "graph_neighbors"
	ToolDocumentsUploadText     = "documents_upload_text"
	ToolDocumentsList           = "documents_list"
	ToolDocumentsGet            = "documents_get"
	ToolSearch                  = "search"
	ToolRegistryList            = "mcp-servers/list"
	ToolRegistryCall            = "mcp-servers/call"
	ToolWebSearch               = "web_search"
)

// addTool registers a tool with its rule and its handler, a method of
// Server. The input schema is derived from In and refined by props; the
// handler's result becomes the structured content (and its JSON the text
// content); its error a tool error.
func addTool[In any](s *Server, t *mcp.Tool, rule toolRule, props map[string][]prop,
	h func(s *Server, ctx context.Context, c *caller, in In) (any, error),
) error {
	schema, err := inputSchema[In](props)
	if err != nil {
		return fmt.Errorf("tool %s: %w", t.Name, err)
	}
	t.InputSchema = schema
	name := t.Name
	s.rules[name] = rule
	s.catalog = append(s.catalog, CatalogTool{Name: name, Description: t.Description, InputSchema: schemaMap(schema)})
	mcp.AddTool(s.mcp, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		c := callerFromContext(ctx)
		if c == nil {
			return errorResult(name + ": internal error"), nil, nil
		}
		out, err := h(s, ctx, c, in)
		if err != nil {
			return s.toolError(ctx, name, err), nil, nil
		}
		if res, ok := out.(*mcp.CallToolResult); ok {
			return res, nil, nil
		}
		return nil, out, nil
	})
	return nil
}

func (s *Server) addTools() error {
	adds := []func() error{s.addGraphTools, s.addDocumentTools, s.addSearchTools, s.addChatTools}
	if s.cfg.Agents != nil {
		adds = append(adds, s.addAgentTools)
	}
	for _, add := range adds {
		if err := add(); err != nil {
			return err
		}
	}
	return nil
}

// parseID reads a UUID argument; a malformed one is a clear tool error.
func parseID(field, v string) (uuid.UUID, error) {
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, errs.Errorf(errs.Invalid, "%s must be a UUID", field)
	}
	return id, nil
}

// notFound names the id of the object or document (what) a caller asked
// for when err is not_found.
func notFound(err error, what string, id uuid.UUID) error {
	if errs.CodeOf(err) == errs.NotFound {
		return errs.Errorf(errs.NotFound, "no %s with id %s in this project", what, id)
	}
	return err
}

type (
	searchObjectsIn struct {
		Type   string `json:"type,omitempty" jsonschema:"only objects of this type (exact, case-sensitive)"`
		Status string `json:"status,omitempty" jsonschema:"only objects in this status"`
		Label  string `json:"label,omitempty" jsonschema:"only objects carrying this label"`
		Text   string `json:"text,omitempty" jsonschema:"case-insensitive text matched in name, key and description"`
		Limit  int    `json:"limit,omitempty" jsonschema:"page size"`
		Offset int    `json:"offset,omitempty" jsonschema:"objects to skip"`
	}
	// pageInfo is the paging of a list tool's result.
	pageInfo struct {
		Total  int `json:"total"`
		Limit  int `json:"limit"`
		Offset int `json:"offset"`
	}
	objectPage struct {
		Objects []graph.Object `json:"objects"`
		pageInfo
	}
	getObjectIn struct {
		ID                string `json:"id" jsonschema:"the object's id"`
		RelationshipLimit int    `json:"relationshipLimit,omitempty" jsonschema:"how many of its relationships (both directions, newest first) to include"`
	}
	objectWithRelationships struct {
		Object             graph.Object         `json:"object"`
		Relationships      []graph.Relationship `json:"relationships"`
		RelationshipsTotal int                  `json:"relationshipsTotal"`
	}
	createObjectIn struct {
		Type        string         `json:"type" jsonschema:"an object type of the project's template packs"`
		Name        string         `json:"name" jsonschema:"display name"`
		Key         string         `json:"key,omitempty" jsonschema:"natural key, unique per type after normalisation; defaults to the name"`
		Description string         `json:"description,omitempty"`
		Properties  map[string]any `json:"properties,omitempty" jsonschema:"properties, validated against the type's schema"`
		Labels      []string       `json:"labels,omitempty"`
		Status      string         `json:"status,omitempty" jsonschema:"default accepted"`
		Confidence  *float64       `json:"confidence,omitempty"`
	}
	updateObjectIn struct {
		ID          string         `json:"id" jsonschema:"the object's id"`
		Name        *string        `json:"name,omitempty"`
		Description *string        `json:"description,omitempty"`
		Properties  map[string]any `json:"properties,omitempty" jsonschema:"replaces the properties; validated against the type's schema"`
		Labels      []string       `json:"labels,omitempty" jsonschema:"replaces the labels"`
		Status      *string        `json:"status,omitempty"`
	}
	createRelationshipIn struct {
		Type       string         `json:"type" jsonschema:"a relationship type of the project's template packs"`
		SourceID   string         `json:"sourceId" jsonschema:"id of the object the relationship goes from"`
		TargetID   string         `json:"targetId" jsonschema:"id of the object the relationship goes to"`
		Properties map[string]any `json:"properties,omitempty"`
		Confidence *float64       `json:"confidence,omitempty"`
	}
	listRelationshipsIn struct {
		Type     string `json:"type,omitempty" jsonschema:"only relationships of this type"`
		SourceID string `json:"sourceId,omitempty" jsonschema:"only relationships from this object"`
		TargetID string `json:"targetId,omitempty" jsonschema:"only relationships to this object"`
		Limit    int    `json:"limit,omitempty" jsonschema:"page size"`
		Offset   int    `json:"offset,omitempty" jsonschema:"relationships to skip"`
	}
	relationshipPage struct {
		Relationships []graph.Relationship `json:"relationships"`
		pageInfo
	}
	neighborsIn struct {
		ID               string `json:"id" jsonschema:"the object whose neighbours to list"`
		RelationshipType string `json:"relationshipType,omitempty" jsonschema:"only neighbours over relationships of this type"`
		Direction        string `json:"direction,omitempty" jsonschema:"outgoing: objects it points to; incoming: objects pointing to it; both"`
		Limit            int    `json:"limit,omitempty" jsonschema:"page size (relationships)"`
		Offset           int    `json:"offset,omitempty" jsonschema:"relationships to skip"`
	}
	neighbor struct {
		Direction    string             `json:"direction" jsonschema:"outgoing or incoming, seen from the object"`
		Relationship graph.Relationship `json:"relationship"`
		Object       graph.Object       `json:"object"`
	}
	neighborPage struct {
		Object    graph.Object `json:"object"`
		Neighbors []neighbor   `json:"neighbors"`
		pageInfo
	}
)

var (
	statusEnum    = enum(graph.StatusAccepted, graph.StatusSuggested)                        //nolint:gochecknoglobals // constant schema refinement
	directionEnum = enum(string(graph.Both), string(graph.Outgoing), string(graph.Incoming)) //nolint:gochecknoglobals // constant schema refinement
)

func (s *Server) addGraphTools() error {
	read := toolRule{scope: auth.GraphRead, role: auth.ProjectViewer}
	write := toolRule{scope: auth.GraphWrite, role: auth.ProjectEditor}
	page := func(def int) []prop { return []prop{intRange(1, graph.ListLimitMax, def)} }
	idProp := []prop{uuidFormat}
	return errors.Join(
		addTool(s, &mcp.Tool{
			Name: ToolGraphSearchObjects, Title: "Search graph objects",
			Description: "List the project's graph objects, newest first, filtered by type, status, label and a text " +
				"matched in name, key and description. For ranked full-text and semantic search use the search tool.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, read, map[string][]prop{
			"type": {strLen(0, graph.TypeMax)}, "status": {statusEnum}, "label": {strLen(0, graph.LabelMax)},
			"text": {strLen(0, graph.QueryMax)}, "limit": page(ListLimitDefault), "offset": {minimum(0)},
		}, (*Server).searchObjects),
		addTool(s, &mcp.Tool{
			Name: ToolGraphGetObject, Title: "Get a graph object",
			Description: "Get one graph object by id, with its relationships in both directions (newest first).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, read, map[string][]prop{
			"id": idProp, "relationshipLimit": page(NeighborsLimitDefault),
		}, (*Server).getObject),
		addTool(s, &mcp.Tool{
			Name: ToolGraphCreateObject, Title: "Create a graph object",
			Description: "Create a graph object. Its properties are validated against its type's schema; a live object " +
				"of the same type and normalised key is a conflict (the error names it).",
		}, write, map[string][]prop{
			"type": {strLen(1, graph.TypeMax)}, "name": {strLen(1, graph.NameMax)}, "key": {strLen(0, graph.KeyMax)},
			"description": {strLen(0, graph.DescriptionMax)}, "labels": {items(graph.LabelsMax, false, strLen(1, graph.LabelMax))},
			"status": {statusEnum}, "confidence": {numRange(0, 1)},
		}, (*Server).createObject),
		addTool(s, &mcp.Tool{
			Name: ToolGraphUpdateObject, Title: "Update a graph object",
			Description: "Change a graph object's name, description, properties (replaced whole), labels (replaced " +
				"whole) or status. Members left out stay as they are.",
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true},
		}, write, map[string][]prop{
			"id": idProp, "name": {strLen(1, graph.NameMax)}, "description": {strLen(0, graph.DescriptionMax)},
			"labels": {items(graph.LabelsMax, false, strLen(1, graph.LabelMax))}, "status": {statusEnum},
		}, (*Server).updateObject),
		addTool(s, &mcp.Tool{
			Name: ToolGraphCreateRelationship, Title: "Create a relationship",
			Description: "Create a typed, directed relationship between two objects of the project. The type must be " +
				"one of the project's relationship types and allow the two objects' types.",
		}, write, map[string][]prop{
			"type": {strLen(1, graph.TypeMax)}, "sourceId": idProp, "targetId": idProp, "confidence": {numRange(0, 1)},
		}, (*Server).createRelationship),
		addTool(s, &mcp.Tool{
			Name: ToolGraphListRelationships, Title: "List relationships",
			Description: "List the project's relationships, newest first, by type, source object and target object.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, read, map[string][]prop{
			"type": {strLen(0, graph.TypeMax)}, "sourceId": idProp, "targetId": idProp,
			"limit": page(ListLimitDefault), "offset": {minimum(0)},
		}, (*Server).listRelationships),
		addTool(s, &mcp.Tool{
			Name: ToolGraphNeighbors, Title: "Neighbours of an object",
			Description: "List the objects one hop away from an object, each with the relationship that links them, " +
				"optionally over one relationship type and in one direction.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, read, map[string][]prop{
			"id": idProp, "relationshipType": {strLen(0, graph.TypeMax)}, "direction": {directionEnum, defaultString(string(graph.Both))},
			"limit": page(NeighborsLimitDefault), "offset": {minimum(0)},
		}, (*Server).neighbors),
	)
}

// searchObjects is graph_search_objects.
func (s *Server) searchObjects(ctx context.Context, c *caller, in searchObjectsIn) (any, error) {
	limit := orDefault(in.Limit, ListLimitDefault)
	list, total, err := s.cfg.Graph.ListObjects(ctx, c.project, graph.ObjectFilter{
		Type: in.Type, Status: in.Status, Label: in.Label, Query: in.Text, Limit: limit, Offset: in.Offset,
	})
	if err != nil {
		return nil, err
	}
	return objectPage{Objects: nonNil(list), pageInfo: pageInfo{Total: total, Limit: limit, Offset: in.Offset}}, nil
}

// getObject is graph_get_object.
func (s *Server) getObject(ctx context.Context, c *caller, in getObjectIn) (any, error) {
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, err
	}
	o, err := s.cfg.Graph.GetObject(ctx, c.project, id)
	if err != nil {
		return nil, notFound(err, "object", id)
	}
	rels, total, err := s.cfg.Graph.ListObjectRelationships(ctx, c.project, id, graph.Both, "", orDefault(in.RelationshipLimit, NeighborsLimitDefault), 0)
	if err != nil {
		return nil, notFound(err, "object", id)
	}
	return objectWithRelationships{Object: o, Relationships: nonNil(rels), RelationshipsTotal: total}, nil
}

// createObject is graph_create_object. An agent's call records the
// object under its call key; resumed, it returns the object the key
// created, if any (Server.Call).
func (s *Server) createObject(ctx context.Context, c *caller, in createObjectIn) (any, error) {
	if c.resumed {
		prev, err := s.cfg.Graph.ObjectOfCall(ctx, c.project, c.callKey)
		if errs.CodeOf(err) != errs.NotFound {
			return prev, err
		}
	}
	user := c.principal.UserID
	return s.cfg.Graph.CreateObject(ctx, c.project, graph.CreateObjectParams{
		Type: in.Type, Key: in.Key, Name: in.Name, Description: in.Description, Properties: in.Properties,
		Labels: in.Labels, Status: in.Status, Confidence: in.Confidence, CreatedBy: &user, CallKey: c.callKey,
	})
}

// updateObject is graph_update_object.
func (s *Server) updateObject(ctx context.Context, c *caller, in updateObjectIn) (any, error) {
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, err
	}
	o, err := s.cfg.Graph.UpdateObject(ctx, c.project, id, graph.ObjectUpdate{
		Name: in.Name, Description: in.Description, Properties: in.Properties, Labels: in.Labels, Status: in.Status,
	})
	return o, notFound(err, "object", id)
}

// createRelationship is graph_create_relationship, recorded and resumed
// as createObject.
func (s *Server) createRelationship(ctx context.Context, c *caller, in createRelationshipIn) (any, error) {
	src, err := parseID("sourceId", in.SourceID)
	if err != nil {
		return nil, err
	}
	tgt, err := parseID("targetId", in.TargetID)
	if err != nil {
		return nil, err
	}
	if c.resumed {
		prev, err := s.cfg.Graph.RelationshipOfCall(ctx, c.project, c.callKey)
		if errs.CodeOf(err) != errs.NotFound {
			return prev, err
		}
	}
	return s.cfg.Graph.CreateRelationship(ctx, c.project, graph.CreateRelationshipParams{
		Type: in.Type, SourceID: src, TargetID: tgt, Properties: in.Properties, Confidence: in.Confidence, CallKey: c.callKey,
	})
}

// listRelationships is graph_list_relationships.
func (s *Server) listRelationships(ctx context.Context, c *caller, in listRelationshipsIn) (any, error) {
	limit := orDefault(in.Limit, ListLimitDefault)
	f := graph.RelationshipFilter{Type: in.Type, Limit: limit, Offset: in.Offset}
	if err := f.ParseEnds(in.SourceID, in.TargetID); err != nil {
		return nil, err
	}
	list, total, err := s.cfg.Graph.ListRelationships(ctx, c.project, f)
	if err != nil {
		return nil, err
	}
	return relationshipPage{Relationships: nonNil(list), pageInfo: pageInfo{Total: total, Limit: limit, Offset: in.Offset}}, nil
}

// neighbors is graph_neighbors.
func (s *Server) neighbors(ctx context.Context, c *caller, in neighborsIn) (any, error) {
	g := s.cfg.Graph
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, err
	}
	o, err := g.GetObject(ctx, c.project, id)
	if err != nil {
		return nil, notFound(err, "object", id)
	}
	limit := orDefault(in.Limit, NeighborsLimitDefault)
	rels, total, err := g.ListObjectRelationships(ctx, c.project, id, graph.Direction(in.Direction), in.RelationshipType, limit, in.Offset)
	if err != nil {
		return nil, notFound(err, "object", id)
	}
	out := neighborPage{Object: o, Neighbors: []neighbor{}, pageInfo: pageInfo{Total: total, Limit: limit, Offset: in.Offset}}
	for _, r := range rels {
		n := neighbor{Direction: string(graph.Outgoing), Relationship: r}
		other := r.TargetID
		if r.TargetID == id && r.SourceID != id {
			n.Direction, other = string(graph.Incoming), r.SourceID
		}
		n.Object, err = g.GetObject(ctx, c.project, other)
		if errs.CodeOf(err) == errs.NotFound {
			continue // deleted since the list was read
		}
		if err != nil {
			return nil, err
		}
		out.Neighbors = append(out.Neighbors, n)
	}
	return out, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// nonNil makes an empty list encode as [].
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}
