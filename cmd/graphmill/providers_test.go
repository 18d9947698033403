package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// secretWatch remembers every response body, to be scanned for secrets.
type secretWatch struct {
	s      *testServer
	bodies []string
}

func (w *secretWatch) do(method, path, token string, body any, headers ...header) response {
	w.s.t.Helper()
	r := w.s.do(method, path, token, body, headers...)
	w.bodies = append(w.bodies, string(r.Body))
	return r
}

func (w *secretWatch) must(status int, method, path, token string, body any, headers ...header) response {
	w.s.t.Helper()
	r := w.do(method, path, token, body, headers...)
	require.Equal(w.s.t, status, r.Status, "%s %s: %s", method, path, r.Body)
	return r
}

func withKeyAI(baseURL, key string) serverOption {
	return func(c *config.Config) { c.KeyAIBaseURL, c.KeyAIAPIKey = baseURL, key }
}

// withoutLocalProvider leaves a server without the offline provider, so
// that only the configured providers answer.
func withoutLocalProvider(c *config.Config) {
	no := false
	c.LocalProvider = &no
}

func withAccountAIBase(baseURL string) serverOption {
	return func(c *config.Config) { c.AccountAIBaseURL = baseURL }
}

// withEgressAllow sets GRAPHMILL_EGRESS_ALLOW (the fakes listen on
// 127.0.0.1).
func withEgressAllow(allow ...string) serverOption {
	return func(c *config.Config) { c.EgressAllow = allow }
}

func TestProviderCredentials(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-credential-secret-4242"
	gemini := llmtest.NewGemini(t, apiKey)
	gemini.SetModels([]llmtest.Model{
		{Name: "gemini-2.5-flash", DisplayName: "Gemini 2.5 Flash", Actions: []string{"generateContent"}, InputTokenLimit: 1048576},
		{Name: "gemini-3.0-fresh", DisplayName: "Gemini 3 Fresh", Actions: []string{"generateContent"}, InputTokenLimit: 2000000},
		{Name: "gemini-embedding-001", Actions: []string{"embedContent"}},
	})
	vertex := llmtest.NewVertex(t, "gcp-proj", "europe-west4")
	logs := &syncBuffer{}
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}),
		withKeyAI(gemini.URL(), ""), withAccountAIBase(vertex.URL()), withEgressAllow("127.0.0.0/8"))
	w := &secretWatch{s: s}
	project, org := s.defaultProject()
	base := "/api/v1/organizations/" + org + "/providers"

	// Auth: no token, no scope, too low a role, another organization.
	w.must(401, "POST", base+"/key-ai/credentials", "", map[string]any{"apiKey": apiKey})
	_, readOnly := s.newMember("ro@example.com", []string{"providers:read"}, project, "admin")
	editorID, editor := s.newUser("editor@example.com", []string{"providers:read", "providers:write"}, "")
	s.addMember(project, editorID, "editor") // an organization member, not an admin
	_, stranger := s.newUser("stranger@example.com", allScopes, "")
	w.must(403, "POST", base+"/key-ai/credentials", readOnly, map[string]any{"apiKey": apiKey})
	r := w.must(403, "POST", base+"/key-ai/credentials", editor, map[string]any{"apiKey": apiKey})
	require.Contains(t, r.Detail(t), "organization role admin")
	w.must(404, "POST", base+"/key-ai/credentials", stranger, map[string]any{"apiKey": apiKey})
	w.must(404, "GET", base+"/credentials", stranger, nil)
	w.must(404, "DELETE", base+"/key-ai/credentials", stranger, nil)
	w.must(404, "POST", "/api/v1/organizations/not-a-uuid/providers/key-ai/credentials", s.admin, map[string]any{"apiKey": apiKey})

	// Bad input.
	r = w.must(400, "POST", base+"/key-ai/credentials", s.admin, map[string]any{"apiKey": "  "})
	require.Contains(t, r.Detail(t), "apiKey is empty")
	r = w.must(400, "POST", base+"/account-ai/credentials", s.admin, map[string]any{
		"serviceAccountJson": "{not json", "gcpProject": "gcp-proj", "location": "europe-west4",
	})
	require.Contains(t, r.Detail(t), "serviceAccountJson")
	r = w.must(400, "POST", base+"/account-ai/credentials", s.admin, map[string]any{
		"serviceAccountJson": map[string]any{"type": "authorized_user"}, "gcpProject": "gcp-proj", "location": "europe-west4",
	})
	require.Contains(t, r.Detail(t), "serviceAccountJson")
	r = w.must(400, "POST", base+"/account-ai/credentials", s.admin, map[string]any{
		"serviceAccountJson": string(vertex.ServiceAccountJSON()), "location": "europe-west4",
	})
	require.Contains(t, r.Detail(t), "gcpProject")
	w.must(400, "POST", base+"/key-ai/credentials", s.admin, map[string]any{"apiKey": apiKey, "extra": 1})
	var n int
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT count(*) FROM org_provider_credentials`).Scan(&n))
	require.Zero(t, n, "nothing stored by refused requests")

	// Effect: stored sealed, listed without secrets, catalog refreshed.
	before := time.Now()
	w.must(204, "POST", base+"/key-ai/credentials", s.admin, map[string]any{"apiKey": apiKey})
	w.must(204, "POST", base+"/account-ai/credentials", s.admin, map[string]any{
		"serviceAccountJson": string(vertex.ServiceAccountJSON()), "gcpProject": "gcp-proj", "location": "europe-west4",
	})
	var sealed string
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT secret FROM org_provider_credentials WHERE provider = 'key-ai'`).Scan(&sealed))
	require.True(t, strings.HasPrefix(sealed, "v1:"))
	require.NotContains(t, sealed, apiKey)

	var creds []map[string]any
	w.must(200, "GET", base+"/credentials", editor, nil).Decode(t, &creds)
	require.Len(t, creds, 2)
	require.Equal(t, "account-ai", creds[0]["provider"])
	require.Equal(t, "gcp-proj", creds[0]["gcpProject"])
	require.Equal(t, "europe-west4", creds[0]["location"])
	require.Equal(t, org, creds[1]["orgId"])
	require.ElementsMatch(t, []string{"id", "orgId", "provider", "createdAt", "updatedAt", "gcpProject", "location"}, keys(creds[0]))
	require.ElementsMatch(t, []string{"id", "orgId", "provider", "createdAt", "updatedAt"}, keys(creds[1]))

	require.GreaterOrEqual(t, gemini.Count(llmtest.EndpointModels), 1, "saving credentials refreshes the catalog")
	var models []struct {
		ModelName  string    `json:"modelName"`
		ModelType  string    `json:"modelType"`
		LastSynced time.Time `json:"lastSynced"`
	}
	w.must(200, "GET", "/api/v1/providers/key-ai/models?modelType=generative", readOnly, nil).Decode(t, &models)
	synced := map[string]time.Time{}
	for _, m := range models {
		require.Equal(t, "generative", m.ModelType)
		synced[m.ModelName] = m.LastSynced
	}
	require.Contains(t, synced, "gemini-3.0-fresh", "a model new on the provider's list is added")
	require.True(t, synced["gemini-2.5-flash"].After(before.Add(-time.Second)), "a listed model's lastSynced moves")
	require.True(t, synced["gemini-2.5-pro"].Before(before), "a model missing from the list keeps its old lastSynced")

	// Replacing a credential keeps one row; deleting removes it.
	w.must(204, "POST", base+"/key-ai/credentials", s.admin, map[string]any{"apiKey": apiKey + "-2"})
	w.must(200, "GET", base+"/credentials", s.admin, nil).Decode(t, &creds)
	require.Len(t, creds, 2)
	w.must(403, "DELETE", base+"/key-ai/credentials", editor, nil)
	w.must(204, "DELETE", base+"/key-ai/credentials", s.admin, nil)
	w.must(404, "DELETE", base+"/key-ai/credentials", s.admin, nil)
	w.must(404, "DELETE", base+"/other-ai/credentials", s.admin, nil)
	w.must(200, "GET", base+"/credentials", s.admin, nil).Decode(t, &creds)
	require.Len(t, creds, 1)

	// The secrets never appear in a response or a log line.
	privateKey := string(vertex.ServiceAccountJSON())
	privateKey = privateKey[strings.Index(privateKey, "MII") : strings.Index(privateKey, "MII")+40]
	for _, b := range w.bodies {
		require.NotContains(t, b, apiKey)
		require.NotContains(t, b, privateKey)
	}
	out := logs.String()
	require.Contains(t, out, "/providers/key-ai/credentials", "requests are logged")
	require.NotContains(t, out, apiKey)
	require.NotContains(t, out, privateKey)
}

// TestProviderTokenURIRefused: a service-account file whose token_uri is
// not one of Google's token endpoints is refused at save (400 naming the
// rule), unless GRAPHMILL_EGRESS_ALLOW names its host: a tenant's file
// must not make the server post to its own or its network's addresses
// (a loopback token_uri reached the unauthenticated ops listener).
func TestProviderTokenURIRefused(t *testing.T) {
	t.Parallel()
	vertex := llmtest.NewVertex(t, "gcp-proj", "europe-west4")
	s := newServer(t, withAccountAIBase(vertex.URL()))
	project, org := s.defaultProject()
	base := "/api/v1/organizations/" + org + "/providers"
	file := string(vertex.ServiceAccountJSON()) // token_uri http://127.0.0.1:<port>/token
	fakeToken := vertex.URL() + llmtest.TokenPath
	require.Contains(t, file, fakeToken)
	for _, uri := range []string{
		fakeToken,
		"http://" + s.m.OpsAddr() + "/api/embeddings/control",
		"http://localhost/token",
		"http://169.254.169.254/computeMetadata/v1/token",
		"http://oauth2.googleapis.com/token",
		"https://oauth2.example.com/token",
	} {
		body := map[string]any{"serviceAccountJson": strings.Replace(file, fakeToken, uri, 1), "gcpProject": "gcp-proj", "location": "europe-west4"}
		r := s.must(400, "POST", base+"/account-ai/credentials", s.admin, body)
		require.Contains(t, r.Detail(t), "token_uri", uri)
		require.Contains(t, r.Detail(t), "GRAPHMILL_EGRESS_ALLOW", uri)
		r = s.must(400, "PUT", "/api/v1/projects/"+project+"/providers/account-ai/policy", s.admin,
			map[string]any{"policy": "project", "serviceAccountJson": body["serviceAccountJson"], "gcpProject": "gcp-proj", "location": "europe-west4"})
		require.Contains(t, r.Detail(t), "GRAPHMILL_EGRESS_ALLOW", uri)
	}
	var n int
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM org_provider_credentials) + (SELECT count(*) FROM project_provider_policies)`).Scan(&n))
	require.Zero(t, n, "nothing stored")
	require.Zero(t, vertex.Count(llmtest.EndpointToken), "no token request was made")
}

func TestModelCatalogAndOrgModels(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	_, noScope := s.newUser("n@example.com", []string{"documents:read"}, "")
	memberID, member := s.newUser("m@example.com", []string{"providers:read", "providers:write"}, "")
	s.addMember(project, memberID, "admin") // project admin, organization member only

	s.must(401, "GET", "/api/v1/providers/key-ai/models", "", nil)
	s.must(403, "GET", "/api/v1/providers/key-ai/models", noScope, nil)
	s.must(404, "GET", "/api/v1/providers/nope/models", s.admin, nil)
	r := s.must(400, "GET", "/api/v1/providers/key-ai/models?modelType=chat", s.admin, nil)
	require.Contains(t, r.Detail(t), "modelType")

	var models []map[string]any
	s.must(200, "GET", "/api/v1/providers/account-ai/models", member, nil).Decode(t, &models)
	types := map[string]string{}
	for _, m := range models {
		types[m["modelName"].(string)] = m["modelType"].(string)
		require.Equal(t, "account-ai", m["provider"])
		require.NotEmpty(t, m["id"])
		require.NotEmpty(t, m["lastSynced"])
	}
	require.Equal(t, "embedding", types["text-embedding-005"])
	require.Equal(t, "generative", types["gemini-2.5-flash"])
	s.must(200, "GET", "/api/v1/providers/local/models?modelType=embedding", member, nil).Decode(t, &models)
	require.Len(t, models, 1)
	require.Equal(t, "local/feature-hash-v1", models[0]["modelName"])

	path := "/api/v1/organizations/" + org + "/providers/key-ai/models"
	s.must(401, "PUT", path, "", map[string]any{"embeddingModel": "gemini-embedding-001"})
	s.must(403, "PUT", path, member, map[string]any{"embeddingModel": "gemini-embedding-001"})
	r = s.must(400, "PUT", path, s.admin, map[string]any{"embeddingModel": "gemini-2.5-flash"})
	require.Contains(t, r.Detail(t), "not embedding")
	r = s.must(400, "PUT", path, s.admin, map[string]any{"generativeModel": "gpt-4"})
	require.Contains(t, r.Detail(t), "no model of that name")
	s.must(400, "PUT", path, s.admin, map[string]any{})
	s.must(404, "PUT", "/api/v1/organizations/"+org+"/providers/local/models", s.admin, map[string]any{"generativeModel": "local/heuristic-v1"})

	var got map[string]any
	s.must(200, "PUT", path, s.admin, map[string]any{"embeddingModel": "gemini-embedding-001", "generativeModel": "gemini-2.5-pro"}).Decode(t, &got)
	require.Equal(t, "gemini-2.5-pro", got["generativeModel"])
	s.must(200, "PUT", path, s.admin, map[string]any{"generativeModel": "gemini-2.5-flash-lite"}).Decode(t, &got)
	require.Equal(t, "gemini-embedding-001", got["embeddingModel"], "an absent field is unchanged")
	var emb, gen string
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT embedding_model, generative_model FROM org_provider_models WHERE org_id = $1 AND provider = 'key-ai'`, org).Scan(&emb, &gen))
	require.Equal(t, []string{"gemini-embedding-001", "gemini-2.5-flash-lite"}, []string{emb, gen})
}

func TestProjectPolicies(t *testing.T) {
	t.Parallel()
	const projectKey = "AIzaSy-project-secret-777"
	s := newServer(t)
	project, _ := s.defaultProject()
	_, viewer := s.newMember("v@example.com", []string{"providers:read", "providers:write"}, project, "viewer")
	_, stranger := s.newUser("s@example.com", allScopes, "")
	_, noScope := s.newMember("n@example.com", []string{"documents:read"}, project, "admin")
	path := "/api/v1/projects/" + project + "/providers/key-ai/policy"
	w := &secretWatch{s: s}

	w.must(401, "PUT", path, "", map[string]any{"policy": "none"})
	w.must(403, "PUT", path, viewer, map[string]any{"policy": "none"})
	w.must(403, "GET", path, noScope, nil)
	w.must(404, "PUT", path, stranger, map[string]any{"policy": "none"})
	w.must(404, "GET", "/api/v1/projects/"+project+"/providers/policies", stranger, nil)

	r := w.must(400, "PUT", path, s.admin, map[string]any{"policy": "project"})
	require.Contains(t, r.Detail(t), "needs the project's credentials")
	r = w.must(400, "PUT", path, s.admin, map[string]any{"policy": "sometimes"})
	require.Contains(t, r.Detail(t), "policy must be")
	r = w.must(400, "PUT", path, s.admin, map[string]any{"policy": "none", "apiKey": projectKey})
	require.Contains(t, r.Detail(t), "only taken with policy project")
	r = w.must(400, "PUT", path, s.admin, map[string]any{"policy": "project", "apiKey": projectKey, "embeddingModel": "nope"})
	require.Contains(t, r.Detail(t), "embeddingModel")
	w.must(404, "PUT", "/api/v1/projects/"+project+"/providers/nope/policy", s.admin, map[string]any{"policy": "none"})
	r = w.must(404, "GET", path, s.admin, nil)
	require.Contains(t, r.Detail(t), "no policy set")

	var p map[string]any
	w.must(200, "PUT", path, s.admin, map[string]any{"policy": "project", "apiKey": projectKey, "generativeModel": "gemini-2.5-pro"}).Decode(t, &p)
	require.Equal(t, "project", p["policy"])
	require.Equal(t, project, p["projectId"])
	require.Equal(t, "gemini-2.5-pro", p["generativeModel"])
	id := p["id"]
	// Changing the model alone keeps the stored key.
	w.must(200, "PUT", path, s.admin, map[string]any{"policy": "project", "generativeModel": "gemini-2.5-flash"}).Decode(t, &p)
	require.Equal(t, id, p["id"])
	w.must(200, "GET", path, viewer, nil).Decode(t, &p)
	require.Equal(t, "gemini-2.5-flash", p["generativeModel"])
	var secret *string
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT secret FROM project_provider_policies WHERE project_id = $1`, project).Scan(&secret))
	require.NotNil(t, secret)
	require.NotContains(t, *secret, projectKey)

	var list []map[string]any
	w.must(200, "GET", "/api/v1/projects/"+project+"/providers/policies", viewer, nil).Decode(t, &list)
	require.Len(t, list, 1)

	// Another policy drops the project's credentials.
	w.must(200, "PUT", path, s.admin, map[string]any{"policy": "organization"}).Decode(t, &p)
	require.Equal(t, "organization", p["policy"])
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT secret FROM project_provider_policies WHERE project_id = $1`, project).Scan(&secret))
	require.Nil(t, secret)
	r = w.must(400, "PUT", path, s.admin, map[string]any{"policy": "project"})
	require.Contains(t, r.Detail(t), "give apiKey")

	for _, b := range w.bodies {
		require.NotContains(t, b, projectKey)
	}
}

// TestUsageEndpoints: the sums come from the ledger, bounded by since and
// until, per project and per organization.
func TestUsageEndpoints(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	_, member := s.newMember("m@example.com", []string{"providers:read"}, project, "viewer")
	_, stranger := s.newUser("s@example.com", allScopes, "")

	// A second project of the organization, and ledger rows in both.
	var p2 struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": "second", "orgId": org}).Decode(t, &p2)
	pool := s.pool()
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, row := range []struct {
		project, model string
		text, output   int64
		cost           float64
		at             time.Time
	}{
		{project, "gemini-2.5-flash", 1000, 100, 0.00055, day},
		{project, "gemini-2.5-flash", 2000, 200, 0.0011, day.Add(24 * time.Hour)},
		{project, "gemini-embedding-001", 500, 0, 0.000075, day},
		{p2.ID, "gemini-2.5-flash", 10, 1, 0.0000055, day},
	} {
		_, err := pool.Exec(context.Background(), `INSERT INTO provider_usage (id, org_id, project_id, provider, model, operation, source,
			text_tokens, output_tokens, duration_ms, status, estimated_cost_usd, created_at)
			VALUES (gen_random_uuid(), $1, $2, 'key-ai', $3, 'generate', 'environment', $4, $5, 10, 'ok', $6, $7)`,
			org, row.project, row.model, row.text, row.output, row.cost, row.at)
		require.NoError(t, err, "row %d", i)
	}

	ppath := "/api/v1/projects/" + project + "/usage"
	opath := "/api/v1/organizations/" + org + "/usage"
	s.must(401, "GET", ppath, "", nil)
	s.must(404, "GET", ppath, stranger, nil)
	s.must(404, "GET", opath, stranger, nil)
	s.must(403, "GET", opath, member, nil) // organization usage is for organization admins
	r := s.must(400, "GET", ppath+"?since=yesterday", member, nil)
	require.Contains(t, r.Detail(t), "since must be an RFC 3339 time")
	r = s.must(400, "GET", ppath+"?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z", member, nil)
	require.Contains(t, r.Detail(t), "until is before since")

	type summary struct {
		Note string `json:"note"`
		Data []struct {
			Provider   string  `json:"provider"`
			Model      string  `json:"model"`
			TotalText  int64   `json:"total_text"`
			TotalImage int64   `json:"total_image"`
			TotalOut   int64   `json:"total_output"`
			Cost       float64 `json:"estimated_cost_usd"`
		} `json:"data"`
	}
	var sum summary
	s.must(200, "GET", ppath, member, nil).Decode(t, &sum)
	require.Contains(t, sum.Note, "estimated")
	require.Len(t, sum.Data, 2)
	require.Equal(t, "gemini-2.5-flash", sum.Data[0].Model)
	require.Equal(t, int64(3000), sum.Data[0].TotalText)
	require.Equal(t, int64(300), sum.Data[0].TotalOut)
	require.InDelta(t, 0.00165, sum.Data[0].Cost, 1e-12)
	require.Equal(t, int64(500), sum.Data[1].TotalText)

	s.must(200, "GET", ppath+"?since=2026-03-02T00:00:00Z", member, nil).Decode(t, &sum)
	require.Len(t, sum.Data, 1)
	require.Equal(t, int64(2000), sum.Data[0].TotalText)
	s.must(200, "GET", ppath+"?until=2026-03-01T12:00:00Z", member, nil).Decode(t, &sum)
	require.Empty(t, sum.Data, "until is exclusive")
	require.Contains(t, string(s.must(200, "GET", ppath+"?until=2026-03-01T12:00:00Z", member, nil).Body), `"data":[]`)

	s.must(200, "GET", opath, s.admin, nil).Decode(t, &sum)
	require.Len(t, sum.Data, 2)
	require.Equal(t, int64(3010), sum.Data[0].TotalText, "both projects")
	require.Equal(t, int64(301), sum.Data[0].TotalOut)
}

// TestPipelineEmbedsThroughKeyAI: with the environment's key-ai key, the
// pipeline's chunk embeddings go to the provider end to end; the provider
// rate-limits the first two calls, and the jobs wait and then succeed
// without spending a retry.
func TestPipelineEmbedsThroughKeyAI(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-pipeline-key-1234"
	gemini := llmtest.NewGemini(t, apiKey)
	s := newServer(t, withKeyAI(gemini.URL(), apiKey), withoutLocalProvider)
	// The catalog refresh at start uses the key too, a page per request;
	// let it end first (the scheduler counts the run when every page is
	// in), or its later pages take the failures armed below.
	require.Eventually(t, func() bool {
		var runs int
		err := s.pool().QueryRow(context.Background(), `SELECT runs FROM scheduler_tasks WHERE name = 'provider-models-sync'`).Scan(&runs)
		return err == nil && runs > 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Positive(t, gemini.Count(llmtest.EndpointModels))
	// Extraction would call the provider too; this test is about embeddings.
	require.NoError(t, s.m.jobs.Pause(context.Background(), "object_extraction"))
	gemini.FailNext(2, 429, "1", "")
	project, _ := s.defaultProject()
	text := "# Rate limits\n\nAda Lovelace wrote the first program for the Analytical Engine in London.\n\n" +
		"## More\n\nCharles Babbage designed the engine at Cambridge."
	r := s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "notes.md", "content": text, "mimeType": "text/markdown"},
		header{"X-Project-ID", project})
	var d docBody
	r.Decode(t, &d)
	d = s.waitDocument(project, d.ID)
	require.Equal(t, "parsed", d.Status, d.Error)
	require.Positive(t, d.ChunkCount)
	require.Equal(t, d.ChunkCount, d.EmbeddedChunks)

	pool := s.pool()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT embedding_model, embedding_dim FROM document_chunks WHERE document_id = $1`, d.ID)
	require.NoError(t, err)
	for rows.Next() {
		var model string
		var dim int
		require.NoError(t, rows.Scan(&model, &dim))
		require.Equal(t, "gemini-embedding-001", model)
		require.Equal(t, llmtest.DimensionDefault, dim)
	}
	require.NoError(t, rows.Err())

	var retries, notCompleted int
	require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(sum(retry_count), 0), count(*) FILTER (WHERE status <> 'completed')
		FROM chunk_embedding_jobs WHERE project_id = $1`, project).Scan(&retries, &notCompleted))
	require.Zero(t, notCompleted)
	require.Zero(t, retries, "rate limits do not spend retries")

	// Three calls reached the provider (two refused, one served), each in
	// the ledger, attributed to a job of the project.
	require.Equal(t, 3, gemini.Count(llmtest.EndpointEmbed))
	var okCalls, errCalls, withJob int
	var tokens int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status = 'error'),
			count(*) FILTER (WHERE job_id IS NOT NULL), coalesce(sum(text_tokens), 0)
		FROM provider_usage WHERE project_id = $1 AND provider = 'key-ai' AND source = 'environment' AND operation = 'embed'`, project).
		Scan(&okCalls, &errCalls, &withJob, &tokens))
	require.Equal(t, 1, okCalls)
	require.Equal(t, 2, errCalls)
	require.Equal(t, 3, withJob)
	require.Positive(t, tokens)
	for _, req := range gemini.Requests() {
		require.Equal(t, apiKey, req.Header.Get("x-goog-api-key"))
	}
}

// TestProviderEndpointsAuth: every provider endpoint answers 401 without a
// token, 403 to a member whose token lacks the scope, and 404 to a caller
// outside the organization or project (the catalog is not tenant data).
func TestProviderEndpointsAuth(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	_, noScope := s.newMember("member@example.com", []string{"documents:read", "admin:read"}, project, "admin")
	_, stranger := s.newUser("stranger@example.com", allScopes, "")
	o := "/api/v1/organizations/" + org
	p := "/api/v1/projects/" + project
	cases := []struct {
		method, path string
		body         any
		tenant       bool
	}{
		{"POST", o + "/providers/key-ai/credentials", map[string]any{"apiKey": "k"}, true},
		{"POST", o + "/providers/account-ai/credentials", map[string]any{"serviceAccountJson": "{}", "gcpProject": "p", "location": "l"}, true},
		{"POST", o + "/providers/openai/credentials", map[string]any{"apiKey": "k"}, true},
		{"DELETE", o + "/providers/key-ai/credentials", nil, true},
		{"GET", o + "/providers/credentials", nil, true},
		{"PUT", o + "/providers/key-ai/models", map[string]any{"generativeModel": "gemini-2.5-flash"}, true},
		{"GET", "/api/v1/providers/key-ai/models", nil, false},
		{"PUT", p + "/providers/key-ai/policy", map[string]any{"policy": "none"}, true},
		{"GET", p + "/providers/key-ai/policy", nil, true},
		{"GET", p + "/providers/policies", nil, true},
		{"GET", p + "/usage", nil, true},
		{"GET", o + "/usage", nil, true},
	}
	for _, c := range cases {
		name := c.method + " " + c.path
		r := s.do(c.method, c.path, "", c.body)
		require.Equal(t, 401, r.Status, name)
		r = s.do(c.method, c.path, noScope, c.body)
		require.Equal(t, 403, r.Status, "%s: %s", name, r.Body)
		require.Contains(t, r.Detail(t), "providers:", name)
		if c.tenant {
			r = s.do(c.method, c.path, stranger, c.body)
			require.Equal(t, 404, r.Status, "%s: %s", name, r.Body)
		}
	}
	var n int
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM org_provider_credentials) + (SELECT count(*) FROM project_provider_policies) + (SELECT count(*) FROM org_provider_models)`).Scan(&n))
	require.Zero(t, n, "no refused request changed anything")
}
