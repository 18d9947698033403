package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// embPolicy is the wire form of an embedding policy.
type embPolicy struct {
	ID             string          `json:"id"`
	ProjectID      string          `json:"project_id"`
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	ObjectTypes    []string        `json:"object_types"`
	Fields         []string        `json:"fields"`
	Template       string          `json:"template"`
	Model          string          `json:"model"`
	Active         bool            `json:"active"`
	ChunkingConfig json.RawMessage `json:"chunking_config"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
}

const embLocalModel = "local/feature-hash-v1"

// embObject inserts a graph object (the graph API is not part of this
// tree) and returns its id.
func (s *testServer) embObject(project, typ, name string, props map[string]any) string {
	s.t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	raw, err := json.Marshal(props)
	require.NoError(s.t, err)
	_, err = s.m.db.pool.Exec(context.Background(), `INSERT INTO graph_objects (id, project_id, type, key, normalized_key, name,
		properties, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $4, $4, $5, 'accepted', now(), now())`,
		id, project, typ, name, raw)
	require.NoError(s.t, err)
	return id
}

// embQueued returns the objects of project with a queued graph embedding
// job.
func (s *testServer) embQueued(project string) []string {
	s.t.Helper()
	rows, _ := s.m.db.pool.Query(context.Background(),
		`SELECT object_id::text FROM graph_embedding_jobs WHERE project_id = $1 AND status = 'queued' ORDER BY object_id`, project)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(s.t, err)
	return ids
}

// embVectors returns, per object and policy ("" for the default text), the
// model and the SHA-256 of the text of project's vectors.
func (s *testServer) embVectors(project string) map[[2]string]embVector {
	s.t.Helper()
	rows, err := s.m.db.pool.Query(context.Background(), `SELECT object_id::text, policy_id::text, model, dimension, text_sha256
		FROM graph_object_embeddings WHERE project_id = $1`, project)
	require.NoError(s.t, err)
	defer rows.Close()
	out := map[[2]string]embVector{}
	for rows.Next() {
		var o, p string
		var v embVector
		require.NoError(s.t, rows.Scan(&o, &p, &v.model, &v.dimension, &v.hash))
		if p == uuid.Nil.String() {
			p = ""
		}
		out[[2]string{o, p}] = v
	}
	require.NoError(s.t, rows.Err())
	return out
}

type embVector struct {
	model     string
	dimension int
	hash      []byte
}

// embWaitIdle waits until project has no queued or running graph
// embedding job and none failed.
func (s *testServer) embWaitIdle(project string) {
	s.t.Helper()
	ctx := context.Background()
	require.Eventually(s.t, func() bool {
		var n int
		require.NoError(s.t, s.m.db.pool.QueryRow(ctx, `SELECT count(*) FROM graph_embedding_jobs
			WHERE project_id = $1 AND status IN ('queued', 'running')`, project).Scan(&n))
		return n == 0
	}, 20*time.Second, 10*time.Millisecond)
	var failed int
	require.NoError(s.t, s.m.db.pool.QueryRow(ctx, `SELECT count(*) FROM graph_embedding_jobs WHERE project_id = $1 AND status <> 'completed'`,
		project).Scan(&failed))
	require.Zero(s.t, failed)
}

func embSHA(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func embBody(project, name string) map[string]any {
	return map[string]any{
		"projectId": project, "name": name, "object_types": []string{"Person"}, "fields": []string{"born"},
		"template": "{{.name}} born {{.born}}", "model": embLocalModel,
	}
}

// TestEmbeddingPolicyAuth: every endpoint's 401, 403 and 404 answers.
func TestEmbeddingPolicyAuth(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	var org2 idBody
	s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": "Other"}).Decode(t, &org2)
	foreign := s.newProject(org2.ID, "foreign")

	var pol embPolicy
	s.must(201, "POST", "/api/graph/embedding-policies", s.admin, embBody(project, "people")).Decode(t, &pol)
	var foreignPol embPolicy
	s.must(201, "POST", "/api/graph/embedding-policies", s.admin, embBody(foreign, "people")).Decode(t, &foreignPol)

	_, editor := s.newMember("emb-editor@example.com", []string{"graph:read", "graph:write"}, project, "editor")
	_, viewer := s.newMember("emb-viewer@example.com", []string{"graph:read", "graph:write"}, project, "viewer")
	_, reader := s.newMember("emb-reader@example.com", []string{"graph:read"}, project, "admin")
	_, noScope := s.newMember("emb-noscope@example.com", []string{"documents:read"}, project, "admin")
	boundID, bound := s.newUser("emb-bound@example.com", []string{"graph:read", "graph:write"}, foreign)
	s.addMember(foreign, boundID, "editor")

	q := "?project_id=" + project
	one := "/api/graph/embedding-policies/" + pol.ID + q
	type call struct {
		method, path string
		body         any
		write        bool
	}
	calls := []call{
		{"GET", "/api/graph/embedding-policies" + q, nil, false},
		{"GET", one, nil, false},
		{"POST", "/api/graph/embedding-policies", embBody(project, "other"), true},
		{"PUT", one, map[string]any{"description": "x"}, true},
		{"DELETE", one, nil, true},
	}
	for _, c := range calls {
		name := c.method + " " + c.path
		r := s.do(c.method, c.path, "", c.body)
		require.Equal(t, http.StatusUnauthorized, r.Status, name)
		r = s.do(c.method, c.path, "gm_"+strings.Repeat("x", 43), c.body)
		require.Equal(t, http.StatusUnauthorized, r.Status, name)
		require.Equal(t, http.StatusForbidden, s.do(c.method, c.path, noScope, c.body).Status, name+": no graph scope")
		require.Equal(t, http.StatusNotFound, s.do(c.method, c.path, bound, c.body).Status, name+": a member of another project only")
		if c.write {
			require.Equal(t, http.StatusForbidden, s.do(c.method, c.path, reader, c.body).Status, name+": graph:read only")
			r := s.do(c.method, c.path, viewer, c.body)
			require.Equal(t, http.StatusForbidden, r.Status, name+": viewer role")
			require.Contains(t, r.Detail(t), "editor")
		}
	}

	// Another tenant's project, and its policy through this project: 404.
	fq := "?project_id=" + foreign
	for _, c := range []call{
		{"GET", "/api/graph/embedding-policies" + fq, nil, false},
		{"GET", "/api/graph/embedding-policies/" + foreignPol.ID + fq, nil, false},
		{"POST", "/api/graph/embedding-policies", embBody(foreign, "mine"), true},
		{"PUT", "/api/graph/embedding-policies/" + foreignPol.ID + fq, map[string]any{"name": "taken"}, true},
		{"DELETE", "/api/graph/embedding-policies/" + foreignPol.ID + fq, nil, true},
		{"GET", "/api/graph/embedding-policies/" + foreignPol.ID + q, nil, false},
		{"PUT", "/api/graph/embedding-policies/" + foreignPol.ID + q, map[string]any{"name": "taken"}, true},
		{"DELETE", "/api/graph/embedding-policies/" + foreignPol.ID + q, nil, true},
		{"GET", "/api/graph/embedding-policies/not-a-uuid" + q, nil, false},
		{"GET", "/api/graph/embedding-policies/" + uuid.NewString() + q, nil, false},
	} {
		r := s.do(c.method, c.path, editor, c.body)
		require.Equal(t, http.StatusNotFound, r.Status, "%s %s: %s", c.method, c.path, r.Body)
	}
	// No project at all (an account token, no project_id): 400.
	for _, path := range []string{"/api/graph/embedding-policies", "/api/graph/embedding-policies/" + pol.ID} {
		r := s.must(400, "GET", path, editor, nil)
		require.Contains(t, strings.ToLower(r.Detail(t)), "project")
	}
	s.must(400, "PUT", "/api/graph/embedding-policies/"+pol.ID, editor, map[string]any{"name": "x"})

	// The bound token works on its own project (project_id may be left out).
	s.must(200, "GET", "/api/graph/embedding-policies", bound, nil)
	s.must(200, "PUT", "/api/graph/embedding-policies/"+foreignPol.ID, bound, map[string]any{"description": "bound"})

	// The editor role suffices to write; the effects are checked below.
	s.must(201, "POST", "/api/graph/embedding-policies", editor, embBody(project, "by editor"))
	s.must(200, "PUT", one, editor, map[string]any{"description": "edited"})
	s.must(204, "DELETE", one, editor, nil)
	var list []embPolicy
	s.must(200, "GET", "/api/graph/embedding-policies"+q, viewer, nil).Decode(t, &list)
	require.Len(t, list, 1)
	require.Equal(t, "by editor", list[0].Name)
	var n int
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM embedding_policies WHERE project_id = $1 AND name = 'mine'`,
		foreign).Scan(&n))
	require.Zero(t, n, "the refused creation wrote nothing")
}

// TestEmbeddingPolicyLifecycle: create, list, get, partial update and
// delete with their effects (rows, queued re-embeddings, vectors), and the
// 400 and 409 answers.
func TestEmbeddingPolicyLifecycle(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	q := "?project_id=" + project
	ctx := context.Background()

	// Before any graph object: an empty list, as [].
	r := s.must(200, "GET", "/api/graph/embedding-policies"+q, s.admin, nil)
	require.JSONEq(t, `[]`, string(r.Body))

	// Stop the worker from racing the assertions on queued jobs.
	s.ops("POST", "/api/embeddings/pause", "")
	ada := s.embObject(project, "Person", "Ada Lovelace", map[string]any{"born": 1815})
	london := s.embObject(project, "Place", "London", nil)
	engine := s.embObject(project, "Thing", "Engine", nil)

	// Create: defaults, snake_case, the row, the objects of its types queued.
	body := embBody(project, "people")
	body["description"] = "people by birth"
	body["chunking_config"] = map[string]any{"size": 10}
	var pol embPolicy
	r = s.must(201, "POST", "/api/graph/embedding-policies", s.admin, body)
	r.Decode(t, &pol)
	raw := r.JSON(t)
	for _, k := range []string{"id", "project_id", "name", "description", "object_types", "fields", "template", "model", "active", "chunking_config", "created_at", "updated_at"} {
		require.Contains(t, raw, k)
	}
	require.Equal(t, project, pol.ProjectID)
	require.True(t, pol.Active)
	require.Equal(t, []string{"Person"}, pol.ObjectTypes)
	require.JSONEq(t, `{"size":10}`, string(pol.ChunkingConfig))
	require.Equal(t, []string{ada}, s.embQueued(project))
	var stored string
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT template FROM embedding_policies WHERE id = $1`, pol.ID).Scan(&stored))
	require.Equal(t, "{{.name}} born {{.born}}", stored)

	var got embPolicy
	s.must(200, "GET", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, nil).Decode(t, &got)
	require.Equal(t, pol, got)

	// Bad input: 400 with a clear detail; 409 for a taken name.
	for _, tc := range []struct {
		name   string
		change func(map[string]any)
		detail string
	}{
		{"NoTemplate", func(b map[string]any) { delete(b, "template") }, "template"},
		{"NoProject", func(b map[string]any) { delete(b, "projectId") }, "projectId"},
		{"UnknownField", func(b map[string]any) { b["template"] = "{{.name}} {{.secret}}" }, `"secret"`},
		{"DoesNotParse", func(b map[string]any) { b["template"] = "{{.name" }, "does not parse"},
		// A template that would keep the graph-embedding workers busy
		// forever, and the other forms an embedding text has no use for.
		{"RangeOverInteger", func(b map[string]any) {
			b["template"] = "{{range 1000000000}}{{range 1000000000}}{{end}}{{end}}"
		}, "range may only iterate over a field"},
		{"Define", func(b map[string]any) { b["template"] = `{{define "x"}}{{.name}}{{end}}{{template "x" .}}` }, "define, block and template are not allowed"},
		{"Printf", func(b map[string]any) { b["template"] = `{{printf "%999999d" 1}}` }, "function printf is not allowed"},
		{"UnknownModel", func(b map[string]any) { b["model"] = "no-such-model" }, "model"},
		{"GenerativeModel", func(b map[string]any) { b["model"] = "gemini-2.5-flash" }, "model"},
		{"NoTypes", func(b map[string]any) { b["object_types"] = []string{} }, "object_types"},
		{"BlankType", func(b map[string]any) { b["object_types"] = []string{" "} }, "object_types"},
		{"ChunkingNotObject", func(b map[string]any) { b["chunking_config"] = []int{1} }, "chunking_config"},
		{"UnknownMember", func(b map[string]any) { b["extra"] = 1 }, "extra"},
	} {
		b := embBody(project, "bad-"+tc.name)
		tc.change(b)
		r := s.do("POST", "/api/graph/embedding-policies", s.admin, b)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", tc.name, r.Body)
		require.Contains(t, r.Detail(t)+string(r.Body), tc.detail, tc.name)
	}
	r = s.must(409, "POST", "/api/graph/embedding-policies", s.admin, embBody(project, "PEOPLE"))
	require.Contains(t, r.Detail(t), "name")
	var n int
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT count(*) FROM embedding_policies WHERE project_id = $1`, project).Scan(&n))
	require.Equal(t, 1, n)

	// Partial update of the name only: everything else stays, nothing queued.
	_, err := s.m.db.pool.Exec(ctx, `DELETE FROM graph_embedding_jobs WHERE project_id = $1`, project)
	require.NoError(t, err)
	var upd embPolicy
	s.must(200, "PUT", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, map[string]any{"name": "persons"}).Decode(t, &upd)
	require.Equal(t, "persons", upd.Name)
	require.Equal(t, "people by birth", upd.Description)
	require.Equal(t, pol.Template, upd.Template)
	require.Equal(t, pol.ObjectTypes, upd.ObjectTypes)
	require.JSONEq(t, `{"size":10}`, string(upd.ChunkingConfig))
	require.True(t, upd.UpdatedAt.After(pol.UpdatedAt) || upd.UpdatedAt.Equal(pol.UpdatedAt))
	require.Empty(t, s.embQueued(project), "a rename does not change texts")

	// A template naming a field the policy does not list: 400 naming it,
	// and nothing changes.
	r = s.must(400, "PUT", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, map[string]any{"template": "{{.name}} {{.city}}"})
	require.Contains(t, r.Detail(t), `"city"`)
	r = s.must(400, "PUT", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, map[string]any{"fields": []string{}})
	require.Contains(t, r.Detail(t), `"born"`, "dropping a field the template uses")
	s.must(400, "PUT", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, map[string]any{"model": "nope"})
	s.must(400, "PUT", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, map[string]any{"name": ""})
	s.must(404, "PUT", "/api/graph/embedding-policies/"+uuid.NewString()+q, s.admin, map[string]any{"name": "x"})
	s.must(201, "POST", "/api/graph/embedding-policies", s.admin, embBody(project, "second"))
	_, err = s.m.db.pool.Exec(ctx, `DELETE FROM graph_embedding_jobs WHERE project_id = $1`, project)
	require.NoError(t, err)
	s.must(409, "PUT", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, map[string]any{"name": "Second"})
	s.must(200, "GET", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, nil).Decode(t, &got)
	require.Equal(t, upd, got)

	// Template and fields together: fine; the covered objects are queued.
	upd = embPolicy{}
	s.must(200, "PUT", "/api/graph/embedding-policies/"+pol.ID+q, s.admin,
		map[string]any{"template": "{{.name}} of {{.city}}", "fields": []string{"city"}, "chunking_config": nil}).Decode(t, &upd)
	require.Equal(t, []string{"city"}, upd.Fields)
	require.Nil(t, upd.ChunkingConfig, "null clears it")
	require.Equal(t, []string{ada}, s.embQueued(project))

	// New object types: the objects of the old and new types are queued.
	_, err = s.m.db.pool.Exec(ctx, `DELETE FROM graph_embedding_jobs WHERE project_id = $1`, project)
	require.NoError(t, err)
	s.must(200, "PUT", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, map[string]any{"object_types": []string{"Place"}}).Decode(t, &upd)
	require.ElementsMatch(t, []string{ada, london}, s.embQueued(project))

	// Delete: the row and its vectors go, its objects are queued.
	_, err = s.m.db.pool.Exec(ctx, `DELETE FROM graph_embedding_jobs WHERE project_id = $1`, project)
	require.NoError(t, err)
	_, err = s.m.db.pool.Exec(ctx, `INSERT INTO graph_object_embeddings (object_id, policy_id, project_id, provider, model, dimension, embedding,
		text_sha256, embedded_at) VALUES ($1, $2, $3, 'local', $4, 1, '{1}', '\x00', now())`, london, pol.ID, project, embLocalModel)
	require.NoError(t, err)
	r = s.must(204, "DELETE", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, nil)
	require.Empty(t, r.Body)
	s.must(404, "GET", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, nil)
	s.must(404, "DELETE", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, nil)
	require.Empty(t, s.embVectors(project))
	require.Equal(t, []string{london}, s.embQueued(project))
	require.NotContains(t, s.embQueued(project), engine)
	var list []embPolicy
	s.must(200, "GET", "/api/graph/embedding-policies"+q, s.admin, nil).Decode(t, &list)
	require.Len(t, list, 1)
	require.Equal(t, "second", list[0].Name)
}

// TestGraphEmbeddingUnderPolicies: end to end with the local provider,
// policy changes show as new vectors.
func TestGraphEmbeddingUnderPolicies(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	q := "?project_id=" + project
	ada := s.embObject(project, "Person", "Ada Lovelace", map[string]any{"born": 1815, "city": "London"})
	london := s.embObject(project, "Place", "London", map[string]any{"country": "England"})

	// The graph domain queues new objects; here the test does, through a
	// policy-free start: no policy, default texts.
	_, err := s.m.db.pool.Exec(context.Background(), `INSERT INTO graph_embedding_jobs (id, project_id, run_at, created_at, updated_at, object_id)
		SELECT gen_random_uuid(), project_id, now(), now(), now(), id FROM graph_objects WHERE project_id = $1`, project)
	require.NoError(t, err)
	s.embWaitIdle(project)
	vs := s.embVectors(project)
	require.Len(t, vs, 2)
	require.Equal(t, embSHA("Person: Ada Lovelace\nborn: 1815\ncity: London"), vs[[2]string{ada, ""}].hash)
	require.Equal(t, embLocalModel, vs[[2]string{ada, ""}].model)

	// A policy for people: Ada gets its vector instead of the default.
	var pol embPolicy
	s.must(201, "POST", "/api/graph/embedding-policies", s.admin, embBody(project, "people")).Decode(t, &pol)
	s.embWaitIdle(project)
	vs = s.embVectors(project)
	require.Len(t, vs, 2)
	require.Equal(t, embSHA("Ada Lovelace born 1815"), vs[[2]string{ada, pol.ID}].hash)
	require.Contains(t, vs, [2]string{london, ""})

	// A second policy over both types: Ada has two vectors, London one.
	var pol2 embPolicy
	b := embBody(project, "places and people")
	b["object_types"], b["fields"], b["template"] = []string{"Person", "Place"}, []string{"city", "country"}, "{{.name}}: {{.city}}{{.country}}"
	s.must(201, "POST", "/api/graph/embedding-policies", s.admin, b).Decode(t, &pol2)
	s.embWaitIdle(project)
	vs = s.embVectors(project)
	require.Len(t, vs, 3)
	require.Equal(t, embSHA("Ada Lovelace: London"), vs[[2]string{ada, pol2.ID}].hash)
	require.Equal(t, embSHA("London: England"), vs[[2]string{london, pol2.ID}].hash)

	// Changing the first policy's template re-embeds Ada.
	s.must(200, "PUT", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, map[string]any{"template": "{{.name}} ({{.born}})"})
	s.embWaitIdle(project)
	require.Equal(t, embSHA("Ada Lovelace (1815)"), s.embVectors(project)[[2]string{ada, pol.ID}].hash)

	// Deactivating the second: its vectors go; London falls back to the
	// default text.
	s.must(200, "PUT", "/api/graph/embedding-policies/"+pol2.ID+q, s.admin, map[string]any{"active": false})
	s.embWaitIdle(project)
	vs = s.embVectors(project)
	require.Len(t, vs, 2)
	require.Contains(t, vs, [2]string{ada, pol.ID})
	require.Equal(t, embSHA("Place: London\ncountry: England"), vs[[2]string{london, ""}].hash)

	// Deleting the first: Ada falls back to the default text.
	s.must(204, "DELETE", "/api/graph/embedding-policies/"+pol.ID+q, s.admin, nil)
	s.embWaitIdle(project)
	vs = s.embVectors(project)
	require.Len(t, vs, 2)
	require.Contains(t, vs, [2]string{ada, ""})
}
