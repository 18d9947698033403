package provider_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/secrets"
)

const openAIOrgKey = "sk-org-openai-0123456789abcdef"

// usageRows reads the ledger of the fixture's project.
func (f *fixture) usageRows(t *testing.T) []struct {
	Provider, Model, Status string
	Text, Output            int64
	Cost                    float64
} {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT provider, model, status, text_tokens, output_tokens, estimated_cost_usd::float8
		FROM provider_usage WHERE project_id = $1 ORDER BY created_at, id`, f.project)
	require.NoError(t, err)
	defer rows.Close()
	var out []struct {
		Provider, Model, Status string
		Text, Output            int64
		Cost                    float64
	}
	for rows.Next() {
		var r struct {
			Provider, Model, Status string
			Text, Output            int64
			Cost                    float64
		}
		require.NoError(t, rows.Scan(&r.Provider, &r.Model, &r.Status, &r.Text, &r.Output, &r.Cost))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestOpenAIEnvironment: the operator's base URL (loopback, as Ollama's)
// is dialled without an allow list; the environment's models are used;
// the ledger records the calls at cost 0 off the OpenAI API even for a
// model the catalog prices; Fallback reports the stages.
func TestOpenAIEnvironment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	fake := llmtest.NewOpenAI(t)
	fake.SetChat(func(llmtest.OpenAIChat) string { return `{"ok":true}` })
	svc := f.service(provider.Config{LocalEnabled: true, Environment: provider.Environment{
		OpenAIBaseURL: fake.URL(), OpenAIModel: "gpt-4o-mini", OpenAIEmbeddingModel: "nomic-embed-text",
	}})

	g, err := svc.Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)
	require.Equal(t, provider.OpenAI, g.Provider())
	require.Equal(t, provider.SourceEnvironment, g.Source())
	require.Equal(t, "gpt-4o-mini", g.Model())
	res, err := g.Generate(ctx, llm.GenerateRequest{Prompt: "p", Schema: map[string]any{"type": "object"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, string(res.JSON))

	e, err := svc.Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)
	require.Equal(t, "nomic-embed-text", e.Model())
	vecs, err := e.Embed(ctx, []string{"one", "two", "three"})
	require.NoError(t, err)
	require.Len(t, vecs, 3)
	require.Equal(t, 1, fake.Count(llmtest.EndpointEmbed), "one call per batch")

	rows := f.usageRows(t)
	require.Len(t, rows, 2)
	require.Equal(t, "gpt-4o-mini", rows[0].Model)
	require.Positive(t, rows[0].Text)
	require.Zero(t, rows[0].Cost, "a local endpoint costs nothing, whatever the model's catalog price")
	require.Equal(t, "nomic-embed-text", rows[1].Model)
	require.Equal(t, int64(3), rows[1].Text)

	stages, err := svc.Fallback(ctx)
	require.NoError(t, err)
	require.Equal(t, []provider.Stage{
		{Purpose: provider.Generative, Provider: provider.OpenAI, Model: "gpt-4o-mini", Source: provider.SourceEnvironment},
		{Purpose: provider.Embedding, Provider: provider.OpenAI, Model: "nomic-embed-text", Source: provider.SourceEnvironment},
	}, stages)
	local, err := f.service(provider.Config{LocalEnabled: true}).Fallback(ctx)
	require.NoError(t, err)
	require.Equal(t, provider.Local, local[0].Provider)
	require.Equal(t, llm.LocalEmbedModel, local[1].Model)
}

// TestOpenAIRateLimit: a 429 with Retry-After comes back as the job
// engine's rate limit with that delay and is recorded as a failed call.
func TestOpenAIRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	fake := llmtest.NewOpenAI(t)
	svc := f.service(provider.Config{Environment: provider.Environment{OpenAIBaseURL: fake.URL(), OpenAIModel: "llama3.1:8b"}})
	g, err := svc.Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)
	fake.FailNext(1, http.StatusTooManyRequests, "9")
	_, err = g.Generate(ctx, llm.GenerateRequest{Prompt: "p"})
	d, ok := jobqueue.RetryAfterOf(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 9*time.Second, d)
	fake.FailNext(1, http.StatusBadGateway, "")
	_, err = g.Generate(ctx, llm.GenerateRequest{Prompt: "p"})
	require.Error(t, err)
	require.False(t, jobqueue.IsPermanent(err), "5xx is retried")
	rows := f.usageRows(t)
	require.Len(t, rows, 2)
	require.Equal(t, "error", rows[0].Status)
	require.Equal(t, "error", rows[1].Status)
}

// TestOpenAITenantURL: a base URL an organization sets goes through the
// egress rule: a loopback or private host is refused at save (400) unless
// GRAPHMILL_EGRESS_ALLOW names it; saved credentials refresh the catalog
// from the endpoint's model list (types inferred); the organization's
// calls carry its key; the metadata never holds the key or the URL.
func TestOpenAITenantURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	fake := llmtest.NewOpenAI(t)
	fake.SetAPIKey(openAIOrgKey)
	fake.SetModels("qwen2.5:7b", "mxbai-embed-large", "tts-1")

	strict := f.service(provider.Config{})
	for _, c := range []struct{ url, msg string }{
		{fake.URL(), "must use https unless GRAPHMILL_EGRESS_ALLOW names its host"},
		{"https://127.0.0.1:8443/v1", "non-public address"},
		{"https://10.1.2.3/v1", "non-public address"},
		{"https://ollama.internal/v1", "local host"},
		{"https://user:pw@api.example.com/v1", "absolute http(s) URL without user"},
		{"ftp://api.example.com/v1", "absolute http(s) URL"},
	} {
		err := strict.SaveCredentials(ctx, f.org, provider.OpenAI, provider.Credentials{APIKey: openAIOrgKey, BaseURL: c.url})
		require.Equal(t, errs.Invalid, errs.CodeOf(err), "%s: %v", c.url, err)
		require.ErrorContains(t, err, c.msg, c.url)
	}
	err := strict.SaveCredentials(ctx, f.org, provider.OpenAI, provider.Credentials{})
	require.ErrorContains(t, err, "apiKey is required for the OpenAI API")
	err = strict.SaveCredentials(ctx, f.org, provider.OpenAI, provider.Credentials{APIKey: "k", BaseURL: "https://api.example.com/v1", GCPProject: "proj"})
	require.ErrorContains(t, err, "not a service account, gcpProject or location")
	err = strict.SaveCredentials(ctx, f.org, provider.OpenAI, provider.Credentials{APIKey: "k", Organization: "org acme"})
	require.ErrorContains(t, err, "organization and project may hold only")
	err = strict.SaveCredentials(ctx, f.org, provider.KeyAI, provider.Credentials{APIKey: "k", BaseURL: "https://api.example.com"})
	require.ErrorContains(t, err, "taken by openai only, not key-ai")
	list, err := strict.Credentials(ctx, f.org)
	require.NoError(t, err)
	require.Empty(t, list)

	// Saved with a key but another organization's guard (nothing allowed):
	// the URL passes the check only where the allow list names it.
	allowed := f.service(provider.Config{Egress: loopback(t)})
	require.NoError(t, allowed.SaveCredentials(ctx, f.org, provider.OpenAI, provider.Credentials{APIKey: openAIOrgKey, BaseURL: fake.URL() + "/", Organization: "org-acme", Project: "proj_1"}))
	ms, err := allowed.Models(ctx, f.org, provider.OpenAI, "")
	require.NoError(t, err)
	types := map[string]string{}
	for _, m := range ms {
		types[m.ModelName] = m.ModelType
	}
	require.Equal(t, "generative", types["qwen2.5:7b"])
	require.Equal(t, "embedding", types["mxbai-embed-large"])
	require.NotContains(t, types, "tts-1")
	require.Equal(t, "embedding", types["text-embedding-3-small"], "the seeded OpenAI models stay")

	_, err = allowed.SetOrgModels(ctx, f.org, provider.OpenAI, "mxbai-embed-large", "qwen2.5:7b")
	require.NoError(t, err)
	g, err := allowed.Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)
	require.Equal(t, provider.SourceOrganization, g.Source())
	require.Equal(t, "qwen2.5:7b", g.Model())
	_, err = g.Generate(ctx, llm.GenerateRequest{Prompt: "p"})
	require.NoError(t, err)
	last := fake.Requests()[len(fake.Requests())-1]
	require.Equal(t, "Bearer "+openAIOrgKey, last.Header.Get("Authorization"))
	require.Equal(t, "org-acme", last.Header.Get("OpenAI-Organization"))
	require.Equal(t, "proj_1", last.Header.Get("OpenAI-Project"))

	list, err = allowed.Credentials(ctx, f.org)
	require.NoError(t, err)
	require.Len(t, list, 1)
	raw, err := json.Marshal(list)
	require.NoError(t, err)
	require.NotContains(t, string(raw), openAIOrgKey)
	require.NotContains(t, string(raw), strings.TrimPrefix(fake.URL(), "http://"))
	var sealed string
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT secret FROM org_provider_credentials WHERE org_id = $1`, f.org).Scan(&sealed))
	require.NotContains(t, sealed, openAIOrgKey, "sealed at rest")
	require.NotContains(t, sealed, "127.0.0.1")

	// The same stored URL is checked again when the client is built: a
	// service whose guard no longer names it refuses without a request.
	before := len(fake.Requests())
	_, err = f.service(provider.Config{}).Resolve(ctx, f.project, provider.Generative)
	require.ErrorContains(t, err, "must use https")
	require.Len(t, fake.Requests(), before)
}

// TestOpenAIModelTypeOverride: a model whose inferred type is wrong is
// fixed by choosing it as a default of the other type; a later refresh
// keeps the chosen type; a name the list lacks is added.
func TestOpenAIModelTypeOverride(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	fake := llmtest.NewOpenAI(t)
	fake.SetModels("all-mpnet-v2", "llama3.1:8b")
	svc := f.service(provider.Config{Egress: loopback(t), Environment: provider.Environment{OpenAIBaseURL: fake.URL()}})
	require.NoError(t, svc.SyncCatalog(ctx))
	typeOf := func(name string) string {
		ms, err := svc.Models(ctx, f.org, provider.OpenAI, "")
		require.NoError(t, err)
		for _, m := range ms {
			if m.ModelName == name {
				return m.ModelType
			}
		}
		return ""
	}
	require.Equal(t, "generative", typeOf("all-mpnet-v2"), "inferred from the name")
	_, err := svc.SetOrgModels(ctx, f.org, provider.OpenAI, "all-mpnet-v2", "")
	require.NoError(t, err)
	require.Equal(t, "embedding", typeOf("all-mpnet-v2"))
	require.NoError(t, svc.SyncCatalog(ctx))
	require.Equal(t, "embedding", typeOf("all-mpnet-v2"), "a refresh keeps the chosen type")

	_, err = svc.SetOrgModels(ctx, f.org, provider.OpenAI, "", "mistral-small:24b")
	require.NoError(t, err)
	require.Equal(t, "generative", typeOf("mistral-small:24b"))
	_, err = svc.SetOrgModels(ctx, f.org, provider.OpenAI, "gpt-4o-mini", "")
	require.ErrorContains(t, err, "the catalog's default generative model")

	// Other providers still take only catalog models of the right type.
	_, err = svc.SetOrgModels(ctx, f.org, provider.KeyAI, "gemini-2.5-flash", "")
	require.ErrorContains(t, err, "has modelType generative, not embedding")
}

// TestOpenAIEndpointModelsPerOrg: the models listed from an
// organization's own endpoint are its own: another organization lists
// the shared catalog only, cannot take them as defaults, and a scheduled
// refresh does not copy them into the shared catalog.
func TestOpenAIEndpointModelsPerOrg(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	orgB := uuid.Must(uuid.NewV7())
	_, err := f.pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'b', now(), now())`, orgB)
	require.NoError(t, err)
	fake := llmtest.NewOpenAI(t)
	fake.SetModels("acme-private-7b", "acme-embed-secret")
	svc := f.service(provider.Config{Egress: loopback(t)})
	require.NoError(t, svc.SaveCredentials(ctx, f.org, provider.OpenAI, provider.Credentials{BaseURL: fake.URL()}))
	// The scheduled refresh lists A's endpoint again, into A's rows.
	fake.SetModels("acme-private-7b", "acme-embed-secret", "acme-new-13b")
	require.NoError(t, svc.SyncCatalog(ctx))

	names := func(org uuid.UUID) map[string]string {
		ms, err := svc.Models(ctx, org, provider.OpenAI, "")
		require.NoError(t, err)
		out := map[string]string{}
		for _, m := range ms {
			out[m.ModelName] = m.ModelType
		}
		return out
	}
	a := names(f.org)
	require.Equal(t, "generative", a["acme-private-7b"])
	require.Equal(t, "embedding", a["acme-embed-secret"])
	require.Equal(t, "generative", a["acme-new-13b"], "refreshed by the scheduled sync")
	require.Equal(t, "generative", a["gpt-4o-mini"], "the shared catalog stays visible")
	for _, org := range []uuid.UUID{orgB, uuid.Nil} {
		b := names(org)
		require.NotContains(t, b, "acme-private-7b")
		require.NotContains(t, b, "acme-embed-secret")
		require.NotContains(t, b, "acme-new-13b")
		require.Equal(t, "generative", b["gpt-4o-mini"])
	}
	var shared int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM provider_models WHERE model_name LIKE 'acme-%' AND org_id IS DISTINCT FROM $1`, f.org).Scan(&shared))
	require.Zero(t, shared, "no row of A's endpoint outside A's")

	_, err = svc.SetOrgModels(ctx, f.org, provider.OpenAI, "acme-embed-secret", "acme-private-7b")
	require.NoError(t, err)
	g, err := svc.Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)
	require.Equal(t, "acme-private-7b", g.Model())

	// B has no endpoint listing A's models: the names are unknown to it,
	// and A's rows keep their types.
	_, err = svc.SetOrgModels(ctx, orgB, provider.OpenAI, "acme-private-7b", "")
	require.Equal(t, errs.Invalid, errs.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "openai has no model of that name")
	_, err = svc.SetOrgModels(ctx, orgB, provider.OpenAI, "", "acme-private-7b")
	require.ErrorContains(t, err, "openai has no model of that name")
	require.Equal(t, "generative", names(f.org)["acme-private-7b"])
	require.NotContains(t, names(orgB), "acme-private-7b")
}

// TestOpenAIModelListWithNUL: an endpoint listing a model whose name
// holds a NUL refreshes the catalog without it (it could not be asked for
// by another name): the other models are recorded and the refresh does
// not fail.
func TestOpenAIModelListWithNUL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	fake := llmtest.NewOpenAI(t)
	fake.SetModels("llama3.1:8b", "bad\x00model", "nomic-embed-text")
	svc := f.service(provider.Config{Egress: loopback(t), Environment: provider.Environment{OpenAIBaseURL: fake.URL()}})
	require.NoError(t, svc.SyncCatalog(ctx))
	ms, err := svc.Models(ctx, f.org, provider.OpenAI, "")
	require.NoError(t, err)
	var names []string
	for _, m := range ms {
		names = append(names, m.ModelName)
	}
	require.Contains(t, names, "llama3.1:8b")
	require.Contains(t, names, "nomic-embed-text")
	for _, n := range names {
		require.NotContains(t, n, "bad")
	}
}

// TestMigrationBoundsLedgerCounts applies migration 00042 over a ledger
// holding the counts a hostile endpoint reported before calls were
// bounded (near the int64 limit, negative): the sums overflowed and every
// usage summary of the project and organization failed. Each count is
// then within 0 and llm.MaxCallTokens, a negative cost 0; the summaries
// answer, and rows already in range are left as they were.
func TestMigrationBoundsLedgerCounts(t *testing.T) {
	t.Parallel()
	pool, migrate := pgtest.NewAtVersion(t, 41)
	org, project := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	ctx := t.Context()
	pgtest.Exec(t, pool, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, org)
	pgtest.Exec(t, pool, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	for _, r := range []struct {
		model        string
		text, output int64
		cost         float64
	}{
		{"big", math.MaxInt64, math.MaxInt64, 1e12},
		{"big", math.MaxInt64, 3, 1e12},
		{"neg", -1000000, -5, -0.5},
		{"fine", 120, 30, 0.25},
	} {
		pgtest.Exec(t, pool, `INSERT INTO provider_usage (id, org_id, project_id, provider, model, operation, source, text_tokens, output_tokens,
				duration_ms, status, estimated_cost_usd, created_at)
			VALUES ($1, $2, $3, 'openai', $4, 'generate', 'organization', $5, $6, 1, 'ok', $7, now())`,
			uuid.Must(uuid.NewV7()), org, project, r.model, r.text, r.output, r.cost)
	}
	_, err := migrate.UpTo(ctx, 42)
	require.NoError(t, err)

	box, err := secrets.New(secrets.GenerateKey())
	require.NoError(t, err)
	svc := provider.NewService(provider.Config{Pool: pool, Box: box, Logger: slog.New(slog.DiscardHandler)})
	for _, p := range []*uuid.UUID{&project, nil} {
		sum, err := svc.Usage(ctx, org, p, nil, nil)
		require.NoError(t, err)
		got := map[string][2]int64{}
		for _, row := range sum.Data {
			got[row.Model] = [2]int64{row.TotalText, row.TotalOutput}
			require.GreaterOrEqual(t, row.EstimatedCostUSD, 0.0, row.Model)
		}
		require.Equal(t, map[string][2]int64{"big": {2 * llm.MaxCallTokens, llm.MaxCallTokens + 3}, "neg": {0, 0}, "fine": {120, 30}}, got)
	}
}
