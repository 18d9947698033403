package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// graphPack is the test fixture of a project's own pack: Widget objects
// (size required, at least 1) and Gadget objects, with USES from
// Gadget to Widget.
func graphPack(name string) templatepack.PackInput {
	return templatepack.PackInput{
		Name: name, Source: templatepack.SourceManual, Description: "Test pack.",
		ObjectTypes: []templatepack.ObjectType{
			{Name: "Widget", Description: "A widget.", Schema: map[string]any{
				"type": "object", "required": []any{"size"},
				"properties": map[string]any{"size": map[string]any{"type": "integer", "minimum": 1}},
			}},
			{Name: "Gadget", Description: "A gadget.", Schema: map[string]any{"type": "object"}},
		},
		RelationshipTypes: []templatepack.RelationshipType{
			{Name: "USES", SourceType: "Gadget", TargetType: "Widget", Cardinality: templatepack.ManyToMany, Description: "uses"},
		},
	}
}

// graphCreatePack stores a pack owned by project straight through the
// service (packs are created by discovery, which has no endpoint yet).
func (s *testServer) graphCreatePack(project string, in templatepack.PackInput) string {
	s.t.Helper()
	svc, err := templatepack.NewService(s.pool(), nil, time.Now)
	require.NoError(s.t, err)
	var p templatepack.Pack
	err = postgres.WithTx(context.Background(), s.pool(), func(tx pgx.Tx) error {
		var err error
		p, err = svc.CreatePack(context.Background(), tx, uuid.MustParse(project), in, nil)
		return err
	})
	require.NoError(s.t, err)
	return p.ID.String()
}

// graphNewProject creates a project (as the admin) in org.
func (s *testServer) graphNewProject(org, name string) string {
	s.t.Helper()
	var p struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": name, "orgId": org}).Decode(s.t, &p)
	return p.ID
}

// graphCreateObject creates an object through the API and returns its id.
func (s *testServer) graphCreateObject(token, project string, body map[string]any) string {
	s.t.Helper()
	var o struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/graph/objects", token, body, header{"X-Project-ID", project}).Decode(s.t, &o)
	return o.ID
}

type graphPackBody struct {
	ID                string                          `json:"id"`
	ProjectID         string                          `json:"projectId"`
	Name              string                          `json:"name"`
	Version           string                          `json:"version"`
	Source            string                          `json:"source"`
	ObjectTypes       []templatepack.ObjectType       `json:"objectTypes"`
	RelationshipTypes []templatepack.RelationshipType `json:"relationshipTypes"`
	InstalledAt       string                          `json:"installedAt"`
}

type graphPackList struct {
	Data   []graphPackBody `json:"data"`
	Total  int             `json:"total"`
	Limit  int             `json:"limit"`
	Offset int             `json:"offset"`
}

func TestTemplatePacksAPI(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	var org2 struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": "elsewhere"}).Decode(t, &org2)
	farProject := s.graphNewProject(org2.ID, "far")
	sibling := s.graphNewProject(org, "sibling")
	own := s.graphCreatePack(project, graphPack("Widgets"))
	far := s.graphCreatePack(farProject, graphPack("Far widgets"))
	siblingPack := s.graphCreatePack(sibling, graphPack("Sibling widgets"))

	_, reader := s.newMember("reader@example.com", []string{"schema:read"}, project, "viewer")
	_, writer := s.newMember("writer@example.com", []string{"schema:read", "schema:write"}, project, "editor")
	adminID, padmin := s.newMember("padmin@example.com", []string{"schema:read", "schema:write", "graph:read", "graph:write"}, project, "admin")
	_, noScope := s.newMember("noscope@example.com", []string{"graph:read"}, project, "admin")
	_, stranger := s.newUser("stranger@example.com", allScopes, "")

	// Auth.
	s.must(401, "GET", "/api/template-packs", "", nil)
	s.must(401, "POST", "/api/projects/"+project+"/template-packs/"+own, "", nil)
	require.Contains(t, s.must(403, "GET", "/api/template-packs", noScope, nil).Detail(t), "schema:read")
	require.Contains(t, s.must(403, "GET", "/api/projects/"+project+"/template-packs", noScope, nil).Detail(t), "schema:read")
	require.Contains(t, s.must(403, "POST", "/api/projects/"+project+"/template-packs/"+own, reader, nil).Detail(t), "schema:write")
	require.Contains(t, s.must(403, "POST", "/api/projects/"+project+"/template-packs/"+own, writer, nil).Detail(t), "role admin")
	require.Contains(t, s.must(403, "DELETE", "/api/projects/"+project+"/template-packs/"+own, writer, nil).Detail(t), "role admin")
	s.must(404, "GET", "/api/projects/"+project+"/template-packs", stranger, nil)
	s.must(404, "POST", "/api/projects/"+project+"/template-packs/"+own, stranger, nil)
	s.must(404, "DELETE", "/api/projects/"+project+"/template-packs/"+own, stranger, nil)

	// Visibility: built-in packs and the packs of the caller's projects'
	// organizations.
	var list graphPackList
	s.must(200, "GET", "/api/template-packs", reader, nil).Decode(t, &list)
	require.Equal(t, 3, list.Total)
	require.Equal(t, 50, list.Limit)
	require.Equal(t, templatepack.DefaultPackName, list.Data[0].Name)
	require.Equal(t, templatepack.SourceBuiltin, list.Data[0].Source)
	require.Equal(t, "1.0.0", list.Data[0].Version)
	require.Empty(t, list.Data[0].ProjectID)
	require.Len(t, list.Data[0].ObjectTypes, 7)
	require.Equal(t, []string{"Default", "Sibling widgets", "Widgets"}, []string{list.Data[0].Name, list.Data[1].Name, list.Data[2].Name})
	builtin := list.Data[0].ID
	s.must(200, "GET", "/api/template-packs?limit=1&offset=2", reader, nil).Decode(t, &list)
	require.Equal(t, 3, list.Total)
	require.Len(t, list.Data, 1)
	require.Equal(t, own, list.Data[0].ID)
	s.must(200, "GET", "/api/template-packs", stranger, nil).Decode(t, &list)
	require.Equal(t, 1, list.Total, "a user of no project sees the built-in packs only")
	s.must(200, "GET", "/api/template-packs", s.admin, nil).Decode(t, &list)
	require.Equal(t, 4, list.Total, "a superadmin sees every pack")
	require.Contains(t, s.must(400, "GET", "/api/template-packs?limit=0", reader, nil).Detail(t), "limit")
	s.must(400, "GET", "/api/template-packs?limit=201", reader, nil)

	var one graphPackBody
	s.must(200, "GET", "/api/template-packs/"+own, reader, nil).Decode(t, &one)
	require.Equal(t, "Widgets", one.Name)
	require.Equal(t, project, one.ProjectID)
	require.Equal(t, "USES", one.RelationshipTypes[0].Name)
	s.must(200, "GET", "/api/template-packs/"+builtin, stranger, nil)
	s.must(404, "GET", "/api/template-packs/"+far, reader, nil)
	s.must(404, "GET", "/api/template-packs/"+own, stranger, nil)
	s.must(404, "GET", "/api/template-packs/not-a-uuid", reader, nil)
	s.must(404, "GET", "/api/template-packs/"+uuid.NewString(), reader, nil)

	// Nothing installed: the default pack applies.
	s.must(200, "GET", "/api/projects/"+project+"/template-packs", reader, nil).Decode(t, &list)
	require.Zero(t, list.Total)
	require.NotNil(t, list.Data)
	hp := header{"X-Project-ID", project}
	s.must(201, "POST", "/api/graph/objects", padmin, map[string]any{"type": "Person", "name": "Ada"}, hp)
	require.Contains(t, s.must(400, "POST", "/api/graph/objects", padmin, map[string]any{"type": "Widget", "name": "w"}, hp).Detail(t),
		`unknown object type "Widget"`)

	// Install: 201, then 200 (idempotent); another organization's pack is
	// not found, a sibling project's pack may be installed.
	r := s.must(201, "POST", "/api/projects/"+project+"/template-packs/"+own, padmin, nil)
	r.Decode(t, &one)
	require.Equal(t, own, one.ID)
	require.NotEmpty(t, one.InstalledAt)
	s.must(200, "POST", "/api/projects/"+project+"/template-packs/"+own, padmin, nil)
	s.must(404, "POST", "/api/projects/"+project+"/template-packs/"+far, padmin, nil)
	s.must(404, "POST", "/api/projects/"+project+"/template-packs/"+uuid.NewString(), padmin, nil)
	s.must(404, "POST", "/api/projects/"+project+"/template-packs/nope", padmin, nil)
	var installedBy string
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT installed_by::text FROM project_template_packs WHERE project_id = $1 AND pack_id = $2`, project, own).Scan(&installedBy))
	require.Equal(t, adminID, installedBy)

	// Effect: the project's types are now the pack's.
	s.must(201, "POST", "/api/graph/objects", padmin, map[string]any{"type": "Widget", "name": "w", "properties": map[string]any{"size": 2}}, hp)
	require.Contains(t, s.must(400, "POST", "/api/graph/objects", padmin, map[string]any{"type": "Person", "name": "Bob"}, hp).Detail(t),
		`unknown object type "Person"`)

	s.must(201, "POST", "/api/projects/"+project+"/template-packs/"+siblingPack, padmin, nil)
	s.must(201, "POST", "/api/projects/"+project+"/template-packs/"+builtin, padmin, nil)
	s.must(200, "GET", "/api/projects/"+project+"/template-packs", reader, nil).Decode(t, &list)
	require.Equal(t, 3, list.Total)
	require.Equal(t, []string{own, siblingPack, builtin}, []string{list.Data[0].ID, list.Data[1].ID, list.Data[2].ID}, "install order")
	s.must(201, "POST", "/api/graph/objects", padmin, map[string]any{"type": "Person", "name": "Bob"}, hp)

	// Uninstall.
	s.must(204, "DELETE", "/api/projects/"+project+"/template-packs/"+builtin, padmin, nil)
	s.must(404, "DELETE", "/api/projects/"+project+"/template-packs/"+builtin, padmin, nil)
	s.must(404, "DELETE", "/api/projects/"+project+"/template-packs/nope", padmin, nil)
	s.must(200, "GET", "/api/projects/"+project+"/template-packs", reader, nil).Decode(t, &list)
	require.Equal(t, 2, list.Total)
}

type graphObjectBody struct {
	ID              string         `json:"id"`
	ProjectID       string         `json:"projectId"`
	Type            string         `json:"type"`
	Key             string         `json:"key"`
	Name            string         `json:"name"`
	Description     string         `json:"description"`
	Properties      map[string]any `json:"properties"`
	Labels          []string       `json:"labels"`
	Status          string         `json:"status"`
	Confidence      *float64       `json:"confidence"`
	CreatedBy       string         `json:"createdBy"`
	ExtractionJobID string         `json:"extractionJobId"`
}

type graphObjectList struct {
	Data   []graphObjectBody `json:"data"`
	Total  int               `json:"total"`
	Limit  int               `json:"limit"`
	Offset int               `json:"offset"`
}

func TestGraphObjectsAPI(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.graphNewProject(org, "other")
	hp, ho := header{"X-Project-ID", project}, header{"X-Project-ID", other}
	editorID, editor := s.newMember("editor@example.com", []string{"graph:read", "graph:write"}, project, "editor")
	_, viewer := s.newMember("viewer@example.com", []string{"graph:read", "graph:write"}, project, "viewer")
	_, reader := s.newMember("reader@example.com", []string{"graph:read"}, project, "admin")
	_, noScope := s.newMember("noscope@example.com", []string{"schema:read"}, project, "admin")
	boundID, bound := s.newUser("bound@example.com", []string{"graph:read", "graph:write"}, project)
	s.addMember(project, boundID, "editor")
	s.addMember(other, boundID, "editor")

	ada := map[string]any{
		"type": "Person", "key": "Ada Lovelace", "name": "Ada Lovelace", "description": "Mathematician",
		"properties": map[string]any{"occupation": "mathematician", "birthDate": "1815-12-10"},
		"labels":     []string{"scientist", "poet"}, "confidence": 0.9,
	}
	adaID := s.graphCreateObject(editor, project, ada)
	otherID := s.graphCreateObject(s.admin, other, map[string]any{"type": "Organization", "name": "Elsewhere Inc"})

	// Auth on every route.
	routes := []struct {
		method, path string
		body         any
		write        bool
	}{
		{"GET", "/api/graph/objects", nil, false},
		{"POST", "/api/graph/objects", map[string]any{"type": "Person", "name": "X"}, true},
		{"GET", "/api/graph/objects/" + adaID, nil, false},
		{"PATCH", "/api/graph/objects/" + adaID, map[string]any{"name": "X"}, true},
		{"DELETE", "/api/graph/objects/" + adaID, nil, true},
		{"GET", "/api/graph/objects/" + adaID + "/relationships", nil, false},
	}
	for _, r := range routes {
		s.must(401, r.method, r.path, "", r.body, hp)
		require.Contains(t, s.must(403, r.method, r.path, noScope, r.body, hp).Detail(t), "graph:")
		s.must(404, r.method, r.path, editor, r.body, ho)                                        // a project the editor cannot see
		require.Contains(t, s.must(403, r.method, r.path, bound, r.body, ho).Detail(t), "bound") // visible, but the token is bound elsewhere
		if r.write {
			require.Contains(t, s.must(403, r.method, r.path, reader, r.body, hp).Detail(t), "graph:write")
			require.Contains(t, s.must(403, r.method, r.path, viewer, r.body, hp).Detail(t), "role editor")
		}
	}
	require.Contains(t, s.must(400, "GET", "/api/graph/objects", editor, nil).Detail(t), "X-Project-ID")
	// Another project's object is not found from this project.
	s.must(404, "GET", "/api/graph/objects/"+otherID, editor, nil, hp)
	s.must(404, "PATCH", "/api/graph/objects/"+otherID, editor, map[string]any{"name": "X"}, hp)
	s.must(404, "DELETE", "/api/graph/objects/"+otherID, editor, nil, hp)
	s.must(404, "GET", "/api/graph/objects/"+otherID+"/relationships", editor, nil, hp)
	s.must(404, "GET", "/api/graph/objects/not-a-uuid", editor, nil, hp)

	// Create: the effect, the natural-key conflict, bad input.
	var o graphObjectBody
	s.must(200, "GET", "/api/graph/objects/"+adaID, bound, nil).Decode(t, &o)
	require.Equal(t, project, o.ProjectID)
	require.Equal(t, "Ada Lovelace", o.Key)
	require.Equal(t, "accepted", o.Status)
	require.Equal(t, 0.9, *o.Confidence)
	require.Equal(t, editorID, o.CreatedBy)
	require.Equal(t, []string{"scientist", "poet"}, o.Labels)
	require.Equal(t, "mathematician", o.Properties["occupation"])
	var nkey string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT normalized_key FROM graph_objects WHERE id = $1`, adaID).Scan(&nkey))
	require.Equal(t, "ada lovelace", nkey)

	r := s.must(409, "POST", "/api/graph/objects", editor, map[string]any{"type": "Person", "key": "ada  LOVELACE!", "name": "Ada"}, hp)
	require.Contains(t, r.Detail(t), adaID)
	require.Equal(t, "conflict", r.JSON(t)["code"])
	s.graphCreateObject(editor, project, map[string]any{"type": "Concept", "name": "Ada Lovelace"}) // another type: no conflict

	r = s.must(400, "POST", "/api/graph/objects", editor, map[string]any{
		"type": "Location", "name": "Nowhere",
		"properties": map[string]any{"latitude": 123.25, "country": 5},
	}, hp)
	require.Contains(t, r.Detail(t), "property latitude: must be at most 90")
	require.Contains(t, r.Detail(t), "property country: must be string")
	require.NotContains(t, r.Detail(t), "123.25")
	require.Contains(t, s.must(400, "POST", "/api/graph/objects", editor, map[string]any{"type": "Starship", "name": "x"}, hp).Detail(t),
		`unknown object type "Starship"`)
	require.Contains(t, s.must(400, "POST", "/api/graph/objects", editor, map[string]any{"type": "Person", "name": "?!"}, hp).Detail(t),
		"letter or a digit")
	s.must(400, "POST", "/api/graph/objects", editor, map[string]any{"type": "Person", "name": "x", "status": "maybe"}, hp)
	s.must(400, "POST", "/api/graph/objects", editor, map[string]any{"type": "Person", "name": "x", "confidence": 2}, hp)
	s.must(400, "POST", "/api/graph/objects", editor, map[string]any{"type": "Person", "name": "x", "bogus": 1}, hp)
	s.must(400, "POST", "/api/graph/objects", editor, map[string]any{"type": "Person"}, hp)

	// List and filters.
	s.graphCreateObject(editor, project, map[string]any{
		"type": "Organization", "name": "Analytical Engines Ltd",
		"description": "makes 100% engines", "labels": []string{"poet"}, "status": "suggested",
	})
	var list graphObjectList
	s.must(200, "GET", "/api/graph/objects", reader, nil, hp).Decode(t, &list)
	require.Equal(t, 3, list.Total)
	require.Equal(t, 50, list.Limit)
	require.Equal(t, "Analytical Engines Ltd", list.Data[0].Name, "newest first")
	for q, want := range map[string]int{
		"type=Person": 1, "type=Concept": 1, "status=suggested": 1, "status=accepted": 2, "label=poet": 2, "label=scientist": 1,
		"q=lovelace": 2, "q=ENGINE": 1, "q=100%25": 1, "q=_": 0, "type=Person&q=ada&label=poet": 1,
	} {
		s.must(200, "GET", "/api/graph/objects?"+q, reader, nil, hp).Decode(t, &list)
		require.Equal(t, want, list.Total, q)
	}
	s.must(200, "GET", "/api/graph/objects?limit=1&offset=1", reader, nil, hp).Decode(t, &list)
	require.Equal(t, 3, list.Total)
	require.Len(t, list.Data, 1)
	require.Equal(t, 1, list.Offset)
	for _, q := range []string{"limit=0", "limit=201", "offset=-1", "status=maybe", "q=" + strings.Repeat("x", 201)} {
		require.NotEmpty(t, s.must(400, "GET", "/api/graph/objects?"+q, reader, nil, hp).Detail(t), q)
	}
	s.must(200, "GET", "/api/graph/objects", s.admin, nil, ho).Decode(t, &list)
	require.Equal(t, 1, list.Total, "projects are separate")

	// PATCH: partial; properties and labels replaced and validated.
	var o2, o3 graphObjectBody
	s.must(200, "PATCH", "/api/graph/objects/"+adaID, editor, map[string]any{"description": "Countess"}, hp).Decode(t, &o)
	require.Equal(t, "Ada Lovelace", o.Name)
	require.Equal(t, "Countess", o.Description)
	require.Equal(t, "mathematician", o.Properties["occupation"])
	s.must(200, "PATCH", "/api/graph/objects/"+adaID, editor, map[string]any{
		"name": "Ada King", "properties": map[string]any{"title": "Countess of Lovelace"}, "labels": []string{"noble"}, "status": "suggested",
	}, hp).Decode(t, &o2)
	require.Equal(t, map[string]any{"title": "Countess of Lovelace"}, o2.Properties, "replaced, not merged")
	require.Equal(t, []string{"noble"}, o2.Labels)
	require.Equal(t, "suggested", o2.Status)
	var name, status string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT name, status FROM graph_objects WHERE id = $1`, adaID).Scan(&name, &status))
	require.Equal(t, "Ada King", name)
	require.Equal(t, "suggested", status)
	require.Contains(t, s.must(400, "PATCH", "/api/graph/objects/"+adaID, editor, map[string]any{"properties": map[string]any{"email": 5}}, hp).Detail(t),
		"property email")
	s.must(400, "PATCH", "/api/graph/objects/"+adaID, editor, map[string]any{"name": ""}, hp)
	s.must(400, "PATCH", "/api/graph/objects/"+adaID, editor, map[string]any{"type": "Concept"}, hp)
	s.must(400, "PATCH", "/api/graph/objects/"+adaID, editor, map[string]any{"status": "gone"}, hp)
	s.must(200, "PATCH", "/api/graph/objects/"+adaID, editor, map[string]any{"labels": []string{}}, hp).Decode(t, &o3)
	require.Equal(t, []string{}, o3.Labels)
	var props string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT properties::text FROM graph_objects WHERE id = $1`, adaID).Scan(&props))
	require.JSONEq(t, `{"title": "Countess of Lovelace"}`, props)

	// DELETE: soft; gone from every view; the key is free again.
	s.must(204, "DELETE", "/api/graph/objects/"+adaID, editor, nil, hp)
	s.must(404, "GET", "/api/graph/objects/"+adaID, editor, nil, hp)
	s.must(404, "DELETE", "/api/graph/objects/"+adaID, editor, nil, hp)
	var deleted bool
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT deleted_at IS NOT NULL FROM graph_objects WHERE id = $1`, adaID).Scan(&deleted))
	require.True(t, deleted)
	s.must(200, "GET", "/api/graph/objects?type=Person", reader, nil, hp).Decode(t, &list)
	require.Zero(t, list.Total)
	require.NotEqual(t, adaID, s.graphCreateObject(editor, project, ada))
}

type graphRelBody struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	SourceID   string         `json:"sourceId"`
	TargetID   string         `json:"targetId"`
	Properties map[string]any `json:"properties"`
	Confidence *float64       `json:"confidence"`
}

type graphRelList struct {
	Data  []graphRelBody `json:"data"`
	Total int            `json:"total"`
	Limit int            `json:"limit"`
}

func TestGraphRelationshipsAPI(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.graphNewProject(org, "other")
	hp, ho := header{"X-Project-ID", project}, header{"X-Project-ID", other}
	_, editor := s.newMember("editor@example.com", []string{"graph:read", "graph:write"}, project, "editor")
	_, viewer := s.newMember("viewer@example.com", []string{"graph:read", "graph:write"}, project, "viewer")
	_, noScope := s.newMember("noscope@example.com", []string{"schema:read"}, project, "admin")

	ada := s.graphCreateObject(editor, project, map[string]any{"type": "Person", "name": "Ada"})
	acme := s.graphCreateObject(editor, project, map[string]any{"type": "Organization", "name": "Acme"})
	london := s.graphCreateObject(editor, project, map[string]any{"type": "Location", "name": "London"})
	far := s.graphCreateObject(s.admin, other, map[string]any{"type": "Organization", "name": "Far"})

	var rel graphRelBody
	s.must(201, "POST", "/api/graph/relationships", editor, map[string]any{
		"type": "WORKS_FOR", "sourceId": ada, "targetId": acme, "properties": map[string]any{"since": 1840}, "confidence": 0.75,
	}, hp).Decode(t, &rel)
	require.Equal(t, ada, rel.SourceID)
	require.Equal(t, 0.75, *rel.Confidence)
	var n int
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT count(*) FROM graph_relationships WHERE id = $1 AND type = 'WORKS_FOR' AND source_id = $2 AND target_id = $3`, rel.ID, ada, acme).Scan(&n))
	require.Equal(t, 1, n)
	located := ""
	var r2 graphRelBody
	s.must(201, "POST", "/api/graph/relationships", editor, map[string]any{"type": "LOCATED_IN", "sourceId": acme, "targetId": london}, hp).Decode(t, &r2)
	located = r2.ID

	// Auth.
	routes := []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/graph/relationships", nil},
		{"POST", "/api/graph/relationships", map[string]any{"type": "LOCATED_IN", "sourceId": ada, "targetId": london}},
		{"GET", "/api/graph/relationships/" + rel.ID, nil},
		{"DELETE", "/api/graph/relationships/" + rel.ID, nil},
	}
	for _, r := range routes {
		s.must(401, r.method, r.path, "", r.body, hp)
		require.Contains(t, s.must(403, r.method, r.path, noScope, r.body, hp).Detail(t), "graph:")
		s.must(404, r.method, r.path, editor, r.body, ho)
		if r.method != "GET" {
			require.Contains(t, s.must(403, r.method, r.path, viewer, r.body, hp).Detail(t), "role editor")
		}
	}
	s.must(404, "GET", "/api/graph/relationships/"+rel.ID, s.admin, nil, ho)
	s.must(404, "DELETE", "/api/graph/relationships/"+rel.ID, s.admin, nil, ho)
	s.must(404, "GET", "/api/graph/relationships/bad", editor, nil, hp)

	// Bad input.
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"type": "WORKS_FOR", "sourceId": acme, "targetId": ada}, "goes from Person to Organization, not from Organization to Person"},
		{map[string]any{"type": "HELD_IN", "sourceId": ada, "targetId": london}, "goes from Event to Location"},
		{map[string]any{"type": "LOVES", "sourceId": ada, "targetId": acme}, `unknown relationship type "LOVES"`},
		{map[string]any{"type": "WORKS_FOR", "sourceId": ada, "targetId": far}, "targetId: no live object"},
		{map[string]any{"type": "WORKS_FOR", "sourceId": uuid.NewString(), "targetId": acme}, "sourceId: no live object"},
		{map[string]any{"type": "WORKS_FOR", "sourceId": "nope", "targetId": acme}, "sourceId"},
		{map[string]any{"type": "WORKS_FOR", "sourceId": ada, "targetId": acme, "confidence": -1}, "confidence"},
	} {
		require.Contains(t, s.must(400, "POST", "/api/graph/relationships", editor, c.body, hp).Detail(t), c.want)
	}
	r := s.must(409, "POST", "/api/graph/relationships", editor, map[string]any{"type": "WORKS_FOR", "sourceId": ada, "targetId": acme}, hp)
	require.Contains(t, r.Detail(t), rel.ID)

	// Lists.
	var list graphRelList
	s.must(200, "GET", "/api/graph/relationships", viewer, nil, hp).Decode(t, &list)
	require.Equal(t, 2, list.Total)
	for q, want := range map[string]int{
		"type=WORKS_FOR": 1, "sourceId=" + acme: 1, "targetId=" + acme: 1, "sourceId=" + ada + "&targetId=" + acme: 1,
		"type=LOCATED_IN&sourceId=" + ada: 0, "limit=1": 2,
	} {
		s.must(200, "GET", "/api/graph/relationships?"+q, viewer, nil, hp).Decode(t, &list)
		require.Equal(t, want, list.Total, q)
	}
	require.Contains(t, s.must(400, "GET", "/api/graph/relationships?sourceId=nope", viewer, nil, hp).Detail(t), "sourceId must be a UUID")
	s.must(400, "GET", "/api/graph/relationships?limit=500", viewer, nil, hp)

	rels := "/api/graph/objects/" + acme + "/relationships"
	s.must(200, "GET", rels, viewer, nil, hp).Decode(t, &list)
	require.Equal(t, 2, list.Total, "both directions")
	s.must(200, "GET", rels+"?direction=outgoing", viewer, nil, hp).Decode(t, &list)
	require.Equal(t, 1, list.Total)
	require.Equal(t, located, list.Data[0].ID)
	s.must(200, "GET", rels+"?direction=incoming", viewer, nil, hp).Decode(t, &list)
	require.Equal(t, 1, list.Total)
	require.Equal(t, rel.ID, list.Data[0].ID)
	s.must(200, "GET", rels+"?type=LOCATED_IN", viewer, nil, hp).Decode(t, &list)
	require.Equal(t, 1, list.Total)
	s.must(400, "GET", rels+"?direction=sideways", viewer, nil, hp)
	s.must(400, "GET", rels+"?limit=0", viewer, nil, hp)

	// Delete one; deleting an object removes the rest.
	s.must(204, "DELETE", "/api/graph/relationships/"+rel.ID, editor, nil, hp)
	s.must(404, "DELETE", "/api/graph/relationships/"+rel.ID, editor, nil, hp)
	s.must(404, "GET", "/api/graph/relationships/"+rel.ID, editor, nil, hp)
	s.must(204, "DELETE", "/api/graph/objects/"+london, editor, nil, hp)
	s.must(200, "GET", "/api/graph/relationships", viewer, nil, hp).Decode(t, &list)
	require.Zero(t, list.Total)
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT count(*) FROM graph_relationships`).Scan(&n))
	require.Equal(t, 0, n, "only the other project's (none) remain")
}
