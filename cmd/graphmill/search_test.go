package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

type searchHit struct {
	Target      string   `json:"target"`
	ID          string   `json:"id"`
	Score       float64  `json:"score"`
	Snippet     string   `json:"snippet"`
	DocumentID  string   `json:"documentId"`
	ChunkIndex  *int     `json:"chunkIndex"`
	HeadingPath []string `json:"headingPath"`
	ObjectType  string   `json:"objectType"`
	Name        string   `json:"name"`
}

type searchResult struct {
	Mode   string            `json:"mode"`
	Data   []searchHit       `json:"data"`
	Models map[string]string `json:"models"`
}

// searchSetup uploads two documents and creates two objects with unusual
// words, and waits until they are parsed and embedded.
func searchSetup(t *testing.T, s *testServer, project string) (docA, docB, person string) {
	t.Helper()
	hp := header{"X-Project-ID", project}
	upload := func(name, text string) string {
		var d docBody
		s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": name, "content": text, "mimeType": "text/markdown"}, hp).Decode(t, &d)
		d = s.waitDocument(project, d.ID)
		require.Equal(t, "parsed", d.Status, d.Error)
		return d.ID
	}
	docA = upload("zephyr.md", "# Zephyrine turbines\n\nThe zephyrine turbine spins quietly in the northern valley.\n\n"+
		"## Maintenance\n\nQuarterly lubrication keeps the quillwort bearings healthy.")
	docB = upload("orchard.md", "# Orchards\n\nApple orchards need pruning in late winter. Zephyrine winds help pollination.")
	var o struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/graph/objects", s.admin, map[string]any{
		"type": "Person", "name": "Ottoline Quillfeather", "description": "Engineer who designed the zephyrine turbine.",
	}, hp).Decode(t, &o)
	s.must(201, "POST", "/api/graph/objects", s.admin, map[string]any{
		"type": "Location", "name": "Northern Valley", "description": "A windy valley.",
	}, hp)
	require.Eventually(t, func() bool { // the objects' embeddings
		return s.extractionCount(`SELECT count(*) FROM graph_object_embeddings e JOIN graph_objects o ON o.id = e.object_id
			WHERE o.project_id = $1 AND o.name IN ('Ottoline Quillfeather', 'Northern Valley')`, project) == 2
	}, 20*time.Second, 20*time.Millisecond)
	return docA, docB, o.ID
}

func TestSearchKeyword(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	docA, docB, person := searchSetup(t, s, project)

	var r searchResult
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": "zephyrine turbine", "mode": "keyword"}, hp).Decode(t, &r)
	require.Equal(t, "keyword", r.Mode)
	require.NotEmpty(t, r.Data)
	var firstChunk *searchHit
	for i := range r.Data {
		if r.Data[i].Target == "chunk" {
			firstChunk = &r.Data[i]
			break
		}
	}
	require.NotNil(t, firstChunk)
	require.Equal(t, docA, firstChunk.DocumentID, "the chunk naming both words ranks above the one naming one")
	require.Contains(t, firstChunk.Snippet, "<b>")
	require.NotNil(t, firstChunk.ChunkIndex)
	require.Equal(t, []string{"Zephyrine turbines"}, firstChunk.HeadingPath)
	var sawPerson bool
	for i, h := range r.Data {
		if i > 0 {
			require.LessOrEqual(t, h.Score, r.Data[i-1].Score, "ranked")
		}
		if h.ID == person {
			sawPerson = true
			require.Equal(t, "object", h.Target)
			require.Equal(t, "Person", h.ObjectType)
			require.Equal(t, "Ottoline Quillfeather", h.Name)
		}
	}
	require.True(t, sawPerson, "the object whose description matches is found")

	// Websearch syntax: a phrase and an exclusion.
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": `"apple orchards" -turbine`, "mode": "keyword", "targets": []string{"chunks"}}, hp).Decode(t, &r)
	require.Len(t, r.Data, 1)
	require.Equal(t, docB, r.Data[0].DocumentID)

	// Filters: documents and object types.
	s.must(200, "POST", "/api/search", s.admin, map[string]any{
		"query": "zephyrine", "mode": "keyword", "targets": []string{"chunks"},
		"documentIds": []string{docB},
	}, hp).Decode(t, &r)
	require.NotEmpty(t, r.Data)
	for _, h := range r.Data {
		require.Equal(t, docB, h.DocumentID)
	}
	s.must(200, "POST", "/api/search", s.admin, map[string]any{
		"query": "valley", "mode": "keyword", "targets": []string{"objects"},
		"objectTypes": []string{"Location"},
	}, hp).Decode(t, &r)
	require.Len(t, r.Data, 1)
	require.Equal(t, "Northern Valley", r.Data[0].Name)

	// Limit.
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": "zephyrine", "mode": "keyword", "limit": 1}, hp).Decode(t, &r)
	require.Len(t, r.Data, 1)

	// Nothing found is an empty list.
	raw := s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": "xylophonics", "mode": "keyword"}, hp)
	require.Contains(t, string(raw.Body), `"data":[]`)
}

func TestSearchAuthAndInput(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	_, noScope := s.newMember("m@example.com", []string{"documents:read"}, project, "viewer")
	_, viewer := s.newMember("v@example.com", []string{"search:read"}, project, "viewer")
	_, stranger := s.newUser("s@example.com", allScopes, "")
	body := map[string]any{"query": "x", "mode": "keyword"}

	s.must(401, "POST", "/api/search", "", body, hp)
	s.must(403, "POST", "/api/search", noScope, body, hp)
	s.must(404, "POST", "/api/search", stranger, body, hp)
	r := s.must(400, "POST", "/api/search", viewer, body)
	require.Contains(t, r.Detail(t), "no project given")
	s.must(200, "POST", "/api/search", viewer, body, hp)

	for _, c := range []struct {
		body   map[string]any
		detail string
	}{
		{map[string]any{"query": ""}, "query"},
		{map[string]any{"query": "x", "mode": "fuzzy"}, "mode"},
		{map[string]any{"query": "x", "targets": []string{"pages"}}, "targets"},
		{map[string]any{"query": "x", "limit": 101}, "limit"},
		{map[string]any{"query": "x", "limit": -1}, "limit"},
		{map[string]any{"query": "x", "documentIds": []string{"nope"}}, "UUID"},
	} {
		r := s.must(400, "POST", "/api/search", viewer, c.body, hp)
		require.Contains(t, r.Detail(t), c.detail, "%v", c.body)
	}
}

func TestSearchVectorAndHybrid(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	docA, _, person := searchSetup(t, s, project)

	// Vector: the query is embedded with the stored vectors' model.
	var r searchResult
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": "quillwort bearings lubrication", "mode": "vector", "targets": []string{"chunks"}}, hp).Decode(t, &r)
	require.Equal(t, "vector", r.Mode)
	require.Equal(t, map[string]string{"chunks": "local/feature-hash-v1"}, r.Models)
	require.NotEmpty(t, r.Data)
	require.Equal(t, docA, r.Data[0].DocumentID, "the chunk about bearings is nearest")
	require.Equal(t, []string{"Zephyrine turbines"}, r.Data[0].HeadingPath)
	require.NotEmpty(t, r.Data[0].Snippet)
	for i, h := range r.Data {
		require.Equal(t, "chunk", h.Target)
		require.LessOrEqual(t, h.Score, 1.0001)
		if i > 0 {
			require.LessOrEqual(t, h.Score, r.Data[i-1].Score)
		}
	}
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": "Ottoline Quillfeather engineer", "mode": "vector", "targets": []string{"objects"}}, hp).Decode(t, &r)
	require.NotEmpty(t, r.Data)
	require.Equal(t, person, r.Data[0].ID)
	require.Equal(t, "Person", r.Data[0].ObjectType)

	// Filters apply to the vector side too.
	s.must(200, "POST", "/api/search", s.admin, map[string]any{
		"query": "valley", "mode": "vector", "targets": []string{"objects"},
		"objectTypes": []string{"Location"},
	}, hp).Decode(t, &r)
	for _, h := range r.Data {
		require.Equal(t, "Location", h.ObjectType)
	}

	// Hybrid (the default) fuses both: a hit found by keyword and vector
	// search outranks one found by only one of them.
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": "zephyrine turbine"}, hp).Decode(t, &r)
	require.Equal(t, "hybrid", r.Mode)
	require.NotEmpty(t, r.Data)
	require.Contains(t, r.Models, "chunks")
	require.Contains(t, r.Models, "objects")
	top := r.Data[0]
	require.Greater(t, top.Score, 1.0/61, "found by more than one list")
	require.Contains(t, []string{docA, ""}, top.DocumentID)

	// A deleted object disappears from vector results at once.
	s.must(204, "DELETE", "/api/graph/objects/"+person, s.admin, nil, hp)
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": "Ottoline Quillfeather engineer", "mode": "vector", "targets": []string{"objects"}}, hp).Decode(t, &r)
	for _, h := range r.Data {
		require.NotEqual(t, person, h.ID)
	}
}

// TestSearchEmbedsQueryOncePerModel: a hybrid search over chunks and
// objects embedded with the same model asks the provider for the query's
// embedding once, not once per target.
func TestSearchEmbedsQueryOncePerModel(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	s := newServer(t, withOpenAI(fake.URL(), "", "llama3.1:8b", "nomic-embed-text"))
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	chatUpload(t, s, project)
	s.must(201, "POST", "/api/graph/objects", s.admin, map[string]any{"type": "Person", "name": "Ottoline Quillfeather", "description": "designed the zephyrine turbine"}, hp)
	// The object's embedding is a job of its own: wait for it.
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, s.m.db.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM graph_object_embeddings WHERE project_id = $1`, project).Scan(&n))
		return n > 0
	}, 30*time.Second, 20*time.Millisecond)

	before := fake.Count(llmtest.EndpointEmbed)
	var r searchResult
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": "Who designed the zephyrine turbine?"}, hp).Decode(t, &r)
	require.Equal(t, map[string]string{"chunks": "nomic-embed-text", "objects": "nomic-embed-text"}, r.Models)
	require.NotEmpty(t, r.Data)
	require.Equal(t, before+1, fake.Count(llmtest.EndpointEmbed), "one embedding of the query for both targets")
}
