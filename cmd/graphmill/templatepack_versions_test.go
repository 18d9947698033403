package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// graphExtendPack extends project's pack id through the service (as a
// discovery's finalize does), by user.
func (s *testServer) graphExtendPack(project, id, user string, in templatepack.PackInput) templatepack.Pack {
	s.t.Helper()
	svc, err := templatepack.NewService(s.pool(), nil, time.Now)
	require.NoError(s.t, err)
	by := uuid.MustParse(user)
	var p templatepack.Extended
	require.NoError(s.t, postgres.WithTx(context.Background(), s.pool(), func(tx pgx.Tx) error {
		var err error
		p, err = svc.ExtendPack(context.Background(), tx, uuid.MustParse(project), uuid.MustParse(id), in, &by)
		return err
	}))
	return p.Pack
}

type packVersionBody struct {
	Version           string                          `json:"version"`
	CreatedAt         time.Time                       `json:"createdAt"`
	CreatedBy         *string                         `json:"createdBy"`
	Changelog         templatepack.Changelog          `json:"changelog"`
	Name              string                          `json:"name"`
	ObjectTypes       []templatepack.ObjectType       `json:"objectTypes"`
	RelationshipTypes []templatepack.RelationshipType `json:"relationshipTypes"`
}

func TestTemplatePackVersionsAPI(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	var elsewhere struct{ ID string }
	s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": "elsewhere"}).Decode(t, &elsewhere)
	far := s.graphCreatePack(s.graphNewProject(elsewhere.ID, "far"), graphPack("Far widgets"))
	sibling := s.graphNewProject(org, "sibling")
	own := s.graphCreatePack(project, graphPack("Widgets"))

	_, reader := s.newMember("reader@example.com", []string{"schema:read"}, project, "viewer")
	writerID, _ := s.newMember("writer@example.com", []string{"schema:read", "schema:write"}, project, "editor")
	_, noScope := s.newMember("noscope@example.com", []string{"graph:read"}, project, "admin")
	_, stranger := s.newUser("stranger@example.com", allScopes, "")
	_, siblingReader := s.newMember("sibling@example.com", []string{"schema:read"}, sibling, "viewer")

	added := templatepack.PackInput{ObjectTypes: []templatepack.ObjectType{
		{Name: "widget", Schema: map[string]any{"type": "object", "properties": map[string]any{"color": map[string]any{"type": "string"}}}},
		{Name: "Sprocket", Description: "A sprocket."},
	}}
	extended := s.graphExtendPack(project, own, writerID, added)
	require.Equal(t, "1.0.1", extended.Version)

	versions := "/api/template-packs/" + own + "/versions"
	// Auth and tenancy.
	s.must(401, "GET", versions, "", nil)
	s.must(401, "GET", versions+"/1.0.0", "", nil)
	require.Contains(t, s.must(403, "GET", versions, noScope, nil).Detail(t), "schema:read")
	require.Contains(t, s.must(403, "GET", versions+"/1.0.0", noScope, nil).Detail(t), "schema:read")
	s.must(404, "GET", versions, stranger, nil)
	s.must(404, "GET", versions+"/1.0.0", stranger, nil)
	s.must(404, "GET", "/api/template-packs/"+far+"/versions", reader, nil)
	s.must(404, "GET", "/api/template-packs/"+far+"/versions/1.0.0", reader, nil)
	s.must(404, "GET", "/api/template-packs/"+uuid.NewString()+"/versions", reader, nil)
	s.must(404, "GET", "/api/template-packs/nope/versions", reader, nil)
	s.must(404, "GET", versions+"/1.0.2", reader, nil)
	// Bad input.
	require.Contains(t, s.must(400, "GET", versions+"?limit=0", reader, nil).Detail(t), "limit")
	require.Contains(t, s.must(400, "GET", versions+"?limit=201", reader, nil).Detail(t), "limit")
	require.Contains(t, s.must(400, "GET", versions+"?offset=-1", reader, nil).Detail(t), "offset")

	// The history, newest first.
	var list httpapi.List[packVersionBody]
	s.must(200, "GET", versions, reader, nil).Decode(t, &list)
	require.Equal(t, 2, list.Total)
	require.Equal(t, 50, list.Limit)
	require.Equal(t, []string{"1.0.1", "1.0.0"}, []string{list.Data[0].Version, list.Data[1].Version})
	require.Equal(t, &writerID, list.Data[0].CreatedBy)
	require.Nil(t, list.Data[1].CreatedBy, "the fixture pack was created without an author")
	require.Equal(t, []string{"Sprocket"}, list.Data[0].Changelog.TypesAdded)
	require.Len(t, list.Data[0].Changelog.TypesChanged, 1)
	require.Equal(t, "Widget", list.Data[0].Changelog.TypesChanged[0].Name)
	require.Equal(t, []string{"color"}, list.Data[0].Changelog.TypesChanged[0].PropertiesAdded)
	require.Equal(t, []string{}, list.Data[0].Changelog.TypesChanged[0].PropertiesRemoved)
	require.Equal(t, []string{"Widget", "Gadget"}, list.Data[1].Changelog.TypesAdded)
	require.Nil(t, list.Data[0].ObjectTypes, "list items carry no definition")
	s.must(200, "GET", versions+"?limit=1&offset=1", reader, nil).Decode(t, &list)
	require.Equal(t, 2, list.Total)
	require.Len(t, list.Data, 1)
	require.Equal(t, "1.0.0", list.Data[0].Version)

	// A version's definition: the previous one is kept.
	var v packVersionBody
	s.must(200, "GET", versions+"/1.0.0", reader, nil).Decode(t, &v)
	require.Equal(t, "Widgets", v.Name)
	require.Len(t, v.ObjectTypes, 2)
	require.NotContains(t, v.ObjectTypes[0].Schema["properties"], "color")
	require.Equal(t, "USES", v.RelationshipTypes[0].Name)
	s.must(200, "GET", versions+"/1.0.1", siblingReader, nil).Decode(t, &v)
	require.Len(t, v.ObjectTypes, 3, "a project of the same organization sees the pack's history")
	require.Contains(t, v.ObjectTypes[0].Schema["properties"], "color")
	require.Equal(t, &writerID, v.CreatedBy)

	// The built-in pack's history is everyone's to read.
	var builtin string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT id::text FROM template_packs WHERE project_id IS NULL`).Scan(&builtin))
	s.must(200, "GET", "/api/template-packs/"+builtin+"/versions", stranger, nil).Decode(t, &list)
	require.Equal(t, 1, list.Total)
	require.Equal(t, "1.0.0", list.Data[0].Version)
	require.Len(t, list.Data[0].Changelog.TypesAdded, len(templatepack.DefaultPack().ObjectTypes))
}
