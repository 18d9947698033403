package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// withOpenAI sets the GRAPHMILL_OPENAI_* environment: what a user with
// Ollama running sets.
func withOpenAI(baseURL, key, model, embeddingModel string) serverOption {
	return func(c *config.Config) {
		c.OpenAIBaseURL, c.OpenAIAPIKey, c.OpenAIModel, c.OpenAIEmbeddingModel = baseURL, key, model, embeddingModel
	}
}

// openAIAnswer is the fake model's extraction answer.
const openAIAnswer = `{
  "objects": [
    {"type": "Person", "name": "Ada Lovelace", "key": "Ada Lovelace", "description": "Mathematician.", "properties": null, "confidence": 0.95},
    {"type": "Person", "name": "Charles Babbage", "key": "Charles Babbage", "description": null, "properties": null, "confidence": 0.9},
    {"type": "Organization", "name": "Analytical Society", "key": null, "description": null, "properties": null, "confidence": 0.85}
  ],
  "relationships": [
    {"type": "FOUNDED", "source": "Charles Babbage", "target": "Analytical Society", "description": null, "confidence": 0.9}
  ]
}`

// logLines decodes JSON log output.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		lines = append(lines, rec)
	}
	return lines
}

// TestOllamaPathExtractsGraph is the "Done when": the environment
// points at an OpenAI-compatible server on loopback (as Ollama), a
// document is uploaded, and its graph is the model's answer; its chunks
// are embedded by the server's embedding model, one call per batch; the
// start-up log names both; the calls cost nothing.
func TestOllamaPathExtractsGraph(t *testing.T) {
	t.Parallel()
	t.Run("JSONSchema", func(t *testing.T) { t.Parallel(); testOllamaPath(t, false) })
	t.Run("WithoutJSONSchema", func(t *testing.T) { t.Parallel(); testOllamaPath(t, true) })
}

// testOllamaPath runs the path against a server with or without
// json_schema support (without: refused once, then JSON mode).
func testOllamaPath(t *testing.T, noSchema bool) {
	fake := llmtest.NewOpenAI(t)
	fake.SetNoJSONSchema(noSchema)
	fake.SetChat(func(llmtest.OpenAIChat) string { return openAIAnswer })
	logs := &syncBuffer{}
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}),
		withOpenAI(fake.URL(), "", "llama3.1:8b", "nomic-embed-text"))
	project, _ := s.defaultProject()

	var stages []string
	for _, rec := range logLines(t, logs.String()) {
		if st, ok := rec["stage"].(string); ok {
			stages = append(stages, st+" "+rec["level"].(string)+" "+rec["msg"].(string))
		}
	}
	require.Equal(t, []string{
		"extraction INFO extraction uses openai model llama3.1:8b",
		"embedding INFO embedding uses openai model nomic-embed-text",
	}, stages, "no heuristic-extractor warning")

	doc := s.extractionUpload(project, "engine.md", "# The engine\n\nAda Lovelace worked with Charles Babbage, who founded the Analytical Society.")
	j := s.extractionWaitJob(s.extractionJobOf(doc), "completed", "failed", "requires_review")
	require.Equal(t, "completed", j.Status, j.ErrorMsg)
	require.Equal(t, 3, j.ObjectsCreated)
	require.Equal(t, 1, j.RelationshipsCreated)

	ctx := context.Background()
	pool := s.m.db.pool
	rows, err := pool.Query(ctx, `SELECT type, name FROM graph_objects WHERE project_id = $1 AND deleted_at IS NULL ORDER BY name`, project)
	require.NoError(t, err)
	var objs []string
	for rows.Next() {
		var typ, name string
		require.NoError(t, rows.Scan(&typ, &name))
		objs = append(objs, typ+":"+name)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"Person:Ada Lovelace", "Organization:Analytical Society", "Person:Charles Babbage"}, objs)
	var rel string
	require.NoError(t, pool.QueryRow(ctx, `SELECT s.name || ' ' || r.type || ' ' || t.name FROM graph_relationships r
		JOIN graph_objects s ON s.id = r.source_id JOIN graph_objects t ON t.id = r.target_id WHERE r.project_id = $1`, project).Scan(&rel))
	require.Equal(t, "Charles Babbage FOUNDED Analytical Society", rel)
	var desc string
	require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(description, '') FROM graph_objects WHERE project_id = $1 AND name = 'Charles Babbage'`, project).Scan(&desc))
	require.Empty(t, desc, "a null of strict mode is an absent field")

	// The model was asked for structured output under the project's types
	// (without json_schema: refused, then JSON mode with the schema in the
	// system message).
	var formats []string
	for _, call := range fake.Chats() {
		formats = append(formats, call.Format)
		require.Equal(t, "llama3.1:8b", call.Model)
		require.Contains(t, call.Messages[0].Content+string(call.Schema), "FOUNDED", "the project's types are in the schema")
	}
	for _, r := range fake.Requests() {
		require.Empty(t, r.Header.Get("Authorization"), "no key configured, none sent")
	}
	if noSchema {
		require.Equal(t, []string{"json_schema", "json_object"}, formats)
	} else {
		require.Equal(t, []string{"json_schema"}, formats)
	}

	d := s.waitDocument(project, doc)
	require.Equal(t, d.ChunkCount, d.EmbeddedChunks)
	var model string
	var dim, n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT min(embedding_model), min(embedding_dim), count(*) FROM document_chunks WHERE document_id = $1`, doc).
		Scan(&model, &dim, &n))
	require.Equal(t, "nomic-embed-text", model)
	require.Equal(t, 16, dim, "the dimension of the server's vectors")
	require.Equal(t, d.ChunkCount, n)

	var calls int
	var cost float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(estimated_cost_usd), 0)::float8 FROM provider_usage
		WHERE project_id = $1 AND provider = 'openai' AND source = 'environment' AND status = 'ok'`, project).Scan(&calls, &cost))
	require.GreaterOrEqual(t, calls, 2)
	require.Zero(t, cost)
}

// TestStartLogWarnsOnHeuristicExtractor: on the default (local) provider
// the start-up log names the stages and warns once, in plain words, with
// the way to a real model.
func TestStartLogWarnsOnHeuristicExtractor(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var stages, warnings []string
	for _, rec := range logLines(t, logs.String()) {
		if rec["level"] == "WARN" {
			warnings = append(warnings, rec["msg"].(string))
		}
		if st, ok := rec["stage"].(string); ok && rec["level"] == "INFO" {
			stages = append(stages, st+": "+rec["provider"].(string)+" "+rec["model"].(string)+" ("+rec["source"].(string)+")")
		}
	}
	require.Equal(t, []string{"extraction: local local/heuristic-v1 (local)", "embedding: local local/feature-hash-v1 (local)"}, stages)
	require.Equal(t, []string{localWarning}, warnings, "one warning, once")
	require.Contains(t, localWarning, "heuristic extractor: expect a rough graph; set GRAPHMILL_OPENAI_BASE_URL=http://localhost:11434/v1 for Ollama")
}

// TestOpenAICredentials: the organization endpoint of the openai provider:
// bad input is a 400 saying what is wrong (a tenant's loopback URL among
// it, unless the allow list names it), nothing is stored by a refused
// request, the key and URL are sealed and never in a response, log line or
// event; a project policy takes the same credentials.
func TestOpenAICredentials(t *testing.T) {
	t.Parallel()
	const apiKey = "sk-tenant-openai-secret-4242"
	fake := llmtest.NewOpenAI(t)
	fake.SetAPIKey(apiKey)
	fake.SetModels("qwen2.5:14b", "arctic-l-v2")
	logs := &syncBuffer{}
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := &secretWatch{s: s}
	project, org := s.defaultProject()
	base := "/api/v1/organizations/" + org + "/providers/openai/credentials"

	for _, c := range []struct {
		body   map[string]any
		detail string
	}{
		{map[string]any{"apiKey": apiKey, "baseUrl": fake.URL()}, "must use https unless GRAPHMILL_EGRESS_ALLOW names its host"},
		{map[string]any{"apiKey": apiKey, "baseUrl": "https://127.0.0.1/v1"}, "non-public address"},
		{map[string]any{"apiKey": apiKey, "baseUrl": "not a url"}, "baseUrl must be an absolute http(s) URL"},
		{map[string]any{"baseUrl": ""}, "apiKey is required for the OpenAI API"},
		{map[string]any{"apiKey": "sk with space"}, "apiKey must not contain whitespace"},
	} {
		r := w.must(400, "POST", base, s.admin, c.body)
		require.Contains(t, r.Detail(t), c.detail)
	}
	w.must(400, "POST", base, s.admin, map[string]any{"apiKey": apiKey, "gcpProject": "p"})
	var n int
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT count(*) FROM org_provider_credentials`).Scan(&n))
	require.Zero(t, n, "nothing stored by refused requests")

	// A server whose allow list names loopback takes the fake's URL.
	s2 := startLoggedServer(t, s.dbURL, slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}), withEgressAllow("127.0.0.0/8"))
	w2 := &secretWatch{s: s2}
	w2.must(204, "POST", base, s.admin, map[string]any{"apiKey": apiKey, "baseUrl": fake.URL()})
	var creds []map[string]any
	w2.must(200, "GET", "/api/v1/organizations/"+org+"/providers/credentials", s.admin, nil).Decode(t, &creds)
	require.Len(t, creds, 1)
	require.Equal(t, "openai", creds[0]["provider"])
	require.ElementsMatch(t, []string{"id", "orgId", "provider", "createdAt", "updatedAt"}, keys(creds[0]))
	var models []struct {
		ModelName, ModelType string
	}
	w2.must(200, "GET", "/api/v1/providers/openai/models", s.admin, nil).Decode(t, &models)
	got := map[string]string{}
	for _, m := range models {
		got[m.ModelName] = m.ModelType
	}
	require.Equal(t, "generative", got["qwen2.5:14b"], "the endpoint's list, types inferred")
	require.Equal(t, "generative", got["arctic-l-v2"], "an unrecognised embedding model is inferred generative")
	w2.must(200, "PUT", "/api/v1/organizations/"+org+"/providers/openai/models", s.admin, map[string]any{"embeddingModel": "arctic-l-v2"})
	w2.must(200, "GET", "/api/v1/providers/openai/models?modelType=embedding", s.admin, nil).Decode(t, &models)
	var emb []string
	for _, m := range models {
		emb = append(emb, m.ModelName)
	}
	require.Contains(t, emb, "arctic-l-v2", "overridden by choosing it as the embedding model")
	r0 := w2.must(400, "PUT", "/api/v1/organizations/"+org+"/providers/openai/models", s.admin, map[string]any{"embeddingModel": "gpt-4o-mini"})
	require.Contains(t, r0.Detail(t), "the catalog's default generative model")
	r0 = w2.must(400, "PUT", "/api/v1/organizations/"+org+"/providers/openai/models", s.admin, map[string]any{})
	require.Contains(t, r0.Detail(t), "give embeddingModel, generativeModel or both")

	// A project policy with its own endpoint; bad input there too.
	policy := "/api/v1/projects/" + project + "/providers/openai/policy"
	r := w2.must(400, "PUT", policy, s.admin, map[string]any{"policy": "project"})
	require.Contains(t, r.Detail(t), "give baseUrl, apiKey or both")
	r = w2.must(400, "PUT", policy, s.admin, map[string]any{"policy": "organization", "baseUrl": fake.URL()})
	require.Contains(t, r.Detail(t), "only taken with policy project")
	var p map[string]any
	w2.must(200, "PUT", policy, s.admin, map[string]any{"policy": "project", "apiKey": apiKey, "baseUrl": fake.URL(), "generativeModel": "qwen2.5:14b"}).
		Decode(t, &p)
	require.Equal(t, "project", p["policy"])
	require.Equal(t, "qwen2.5:14b", p["generativeModel"])

	w2.must(204, "DELETE", "/api/v1/organizations/"+org+"/providers/openai/credentials", s.admin, nil)

	host := strings.TrimPrefix(fake.URL(), "http://")
	for _, b := range append(w.bodies, w2.bodies...) {
		require.NotContains(t, b, apiKey)
	}
	for _, b := range w2.bodies {
		require.NotContains(t, b, host, "the stored URL is write-only too")
	}
	require.NotContains(t, logs.String(), apiKey)
	var inEvents int
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT count(*) FROM events WHERE payload::text LIKE '%' || $1 || '%'`, apiKey).Scan(&inEvents))
	require.Zero(t, inEvents)
	var sealed string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT secret FROM project_provider_policies WHERE provider = 'openai'`).Scan(&sealed))
	require.NotContains(t, sealed, apiKey)
	require.NotContains(t, sealed, host)
}

// TestOpenAIKeyNeverShown: the environment's key, rejected by a server
// that quotes it back in its 401, appears in no log line, no response and
// no row of any table (job errors, extraction logs and calls, the usage
// ledger, events), while the server did receive it.
func TestOpenAIKeyNeverShown(t *testing.T) {
	t.Parallel()
	const key = "sk-env-openai-secret-9876"
	fake := llmtest.NewOpenAI(t)
	fake.SetAPIKey("sk-the-key-it-wants")
	logs := &syncBuffer{}
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}),
		withOpenAI(fake.URL(), key, "gpt-4o-mini", ""))
	project, _ := s.defaultProject()
	doc := s.extractionUpload(project, "engine.md", "# The engine\n\nAda Lovelace worked with Charles Babbage.")
	j := s.extractionWaitJob(s.extractionJobOf(doc), "completed", "failed", "requires_review")
	require.Equal(t, "failed", j.Status)
	require.Contains(t, j.ErrorMsg, "Incorrect API key provided")
	require.Contains(t, j.ErrorMsg, "[redacted]")

	sent := false
	for _, r := range fake.Requests() {
		sent = sent || r.Header.Get("Authorization") == "Bearer "+key
	}
	require.True(t, sent, "the key went to the server, and only there")

	require.NotContains(t, logs.String(), key)
	for _, path := range []string{"/api/admin/extraction-jobs/" + j.ID, "/api/admin/extraction-jobs/" + j.ID + "/logs", "/api/documents/" + doc} {
		r := s.do("GET", path, s.admin, nil, header{"X-Project-ID", project})
		require.NotContains(t, string(r.Body), key, path)
	}
	ctx := context.Background()
	pool := s.m.db.pool
	rows, err := pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.Contains(t, tables, "provider_usage")
	for _, table := range tables {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM "`+table+`" x WHERE x::text LIKE '%' || $1 || '%'`, key).Scan(&n))
		require.Zero(t, n, table)
	}
	var failed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM provider_usage WHERE project_id = $1 AND provider = 'openai' AND status = 'error'
		`, project).Scan(&failed))
	require.Positive(t, failed, "the failed call is in the ledger, without the key")
}

// TestOpenAIEndpointModelsTenant: the models an organization's own
// endpoint lists are seen by that organization only: another
// organization's admin lists the shared catalog without them (with or
// without X-Org-ID) and cannot take one as its default.
func TestOpenAIEndpointModelsTenant(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	fake.SetModels("acme-private-7b", "acme-embed-secret")
	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	_, orgA := s.defaultProject()
	s.must(204, "POST", "/api/v1/organizations/"+orgA+"/providers/openai/credentials", s.admin, map[string]any{"baseUrl": fake.URL()})
	_, carol := s.newUser("carol@example.com", allScopes, "")
	var orgB struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/orgs", carol, map[string]any{"name": "carol's org"}).Decode(t, &orgB)

	names := func(token string, headers ...header) map[string]string {
		var models []struct{ ModelName, ModelType string }
		s.must(200, "GET", "/api/v1/providers/openai/models", token, nil, headers...).Decode(t, &models)
		out := map[string]string{}
		for _, m := range models {
			out[m.ModelName] = m.ModelType
		}
		return out
	}
	a := names(s.admin)
	require.Equal(t, "generative", a["acme-private-7b"])
	require.Equal(t, "generative", names(s.admin, header{"X-Org-ID", orgA})["acme-private-7b"])
	for _, b := range []map[string]string{names(carol), names(carol, header{"X-Org-ID", orgB.ID})} {
		require.NotContains(t, b, "acme-private-7b")
		require.NotContains(t, b, "acme-embed-secret")
		require.Equal(t, "generative", b["gpt-4o-mini"], "the shared catalog")
	}
	s.must(404, "GET", "/api/v1/providers/openai/models", carol, nil, header{"X-Org-ID", orgA})

	s.must(200, "PUT", "/api/v1/organizations/"+orgA+"/providers/openai/models", s.admin, map[string]any{"generativeModel": "acme-private-7b"})
	r := s.must(400, "PUT", "/api/v1/organizations/"+orgB.ID+"/providers/openai/models", carol, map[string]any{"generativeModel": "acme-private-7b"})
	require.Contains(t, r.Detail(t), "openai has no model of that name")
	var n int
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT count(*) FROM provider_models WHERE model_name LIKE 'acme-%' AND org_id IS DISTINCT FROM $1`, orgA).Scan(&n))
	require.Zero(t, n, "no row of A's endpoint outside A's")
}
