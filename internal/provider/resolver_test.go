package provider_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/secrets"
)

type fixture struct {
	pool    *pgxpool.Pool
	org     uuid.UUID
	project uuid.UUID
	box     *secrets.Box
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	pool := pgtest.New(t)
	f := &fixture{pool: pool, org: uuid.Must(uuid.NewV7()), project: uuid.Must(uuid.NewV7())}
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, f.org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, f.project, f.org)
	require.NoError(t, err)
	f.box, err = secrets.New(secrets.GenerateKey())
	require.NoError(t, err)
	return f
}

func (f *fixture) service(c provider.Config) *provider.Service {
	c.Pool, c.Box = f.pool, f.box
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return provider.NewService(c)
}

// loopback allows the fakes' addresses, as GRAPHMILL_EGRESS_ALLOW=127.0.0.0/8.
func loopback(t *testing.T) *egress.Guard {
	t.Helper()
	g, err := egress.New([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	return g
}

const (
	orgKey     = "AIza-org-key-0123456789"
	projectKey = "AIza-project-key-0123456789"
	envKey     = "AIza-env-key-0123456789"
)

// TestResolverOrder walks the resolver's order, checking at each step that
// the calls reach the provider holding the expected key.
func TestResolverOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)

	// Nothing configured and no local provider: a clear error.
	_, err := f.service(provider.Config{}).Resolve(ctx, f.project, provider.Embedding)
	require.ErrorIs(t, err, provider.ErrNoProvider)
	require.ErrorContains(t, err, f.project.String())
	require.ErrorContains(t, err, "GRAPHMILL_KEY_AI_API_KEY")

	// Local enabled: the offline provider.
	h, err := f.service(provider.Config{LocalEnabled: true, LocalDimension: 64}).Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)
	require.Equal(t, provider.Local, h.Provider())
	require.Equal(t, provider.SourceLocal, h.Source())
	require.Equal(t, llm.LocalEmbedModel, h.Model())
	require.Equal(t, 64, h.Dimension())

	// Each source gets its own fake, which accepts only its key; the
	// service sees all three through one base URL per provider, so they
	// are told apart by the key the fake checks. One fake per test run is
	// enough: it is switched by key.
	envFake := llmtest.NewGemini(t, envKey)
	svc := f.service(provider.Config{
		LocalEnabled: true, KeyAIBaseURL: envFake.URL(), Environment: provider.Environment{KeyAIAPIKey: envKey},
	})
	h, err = svc.Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)
	require.Equal(t, provider.KeyAI, h.Provider())
	require.Equal(t, provider.SourceEnvironment, h.Source())
	require.Equal(t, "gemini-embedding-001", h.Model(), "the catalog's default embedding model")
	_, err = h.Embed(ctx, []string{"hello"})
	require.NoError(t, err)
	require.Equal(t, 1, envFake.Count(llmtest.EndpointEmbed))
	g, err := svc.Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)
	require.Equal(t, "gemini-2.5-flash", g.Model())

	// Organization credentials win over the environment's.
	orgFake := llmtest.NewGemini(t, orgKey)
	svc = f.service(provider.Config{
		LocalEnabled: true, KeyAIBaseURL: orgFake.URL(), Environment: provider.Environment{KeyAIAPIKey: envKey},
	})
	require.NoError(t, svc.SaveCredentials(ctx, f.org, provider.KeyAI, provider.Credentials{APIKey: orgKey}))
	h, err = svc.Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)
	require.Equal(t, provider.SourceOrganization, h.Source())
	_, err = h.Embed(ctx, []string{"hello"})
	require.NoError(t, err, "the org key is the one sent")
	require.Equal(t, 1, orgFake.Count(llmtest.EndpointEmbed))

	// The organization's default models apply.
	_, err = svc.SetOrgModels(ctx, f.org, provider.KeyAI, "", "gemini-2.5-pro")
	require.NoError(t, err)
	g, err = svc.Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)
	require.Equal(t, "gemini-2.5-pro", g.Model())

	// Policy none for key-ai: the organization's key-ai credentials are
	// skipped and the environment's are used.
	_, err = svc.PutPolicy(ctx, f.project, provider.KeyAI, provider.PolicyInput{Policy: provider.PolicyNone})
	require.NoError(t, err)
	h, err = svc.Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)
	require.Equal(t, provider.SourceEnvironment, h.Source())

	// Policy organization: back to the organization's.
	_, err = svc.PutPolicy(ctx, f.project, provider.KeyAI, provider.PolicyInput{Policy: provider.PolicyOrganization})
	require.NoError(t, err)
	h, err = svc.Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)
	require.Equal(t, provider.SourceOrganization, h.Source())

	// Policy project: the project's own key and model, over everything.
	projFake := llmtest.NewGemini(t, projectKey)
	svc = f.service(provider.Config{
		LocalEnabled: true, KeyAIBaseURL: projFake.URL(), Environment: provider.Environment{KeyAIAPIKey: envKey},
	})
	_, err = svc.PutPolicy(ctx, f.project, provider.KeyAI, provider.PolicyInput{
		Policy: provider.PolicyProject, Credentials: provider.Credentials{APIKey: projectKey}, GenerativeModel: "gemini-2.5-flash-lite",
	})
	require.NoError(t, err)
	g, err = svc.Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)
	require.Equal(t, provider.SourceProject, g.Source())
	require.Equal(t, "gemini-2.5-flash-lite", g.Model(), "the policy's model beats the organization's default")
	_, err = g.Generate(ctx, llm.GenerateRequest{Prompt: "say {}", Schema: map[string]any{"type": "object"}})
	require.NoError(t, err)
	require.Equal(t, 1, projFake.Count(llmtest.EndpointGenerate))

	// An account-ai organization credential is used when key-ai has none
	// anywhere.
	vfake := llmtest.NewVertex(t, "gcp-proj", "us-central1")
	f2 := newFixture(t)
	svc = f2.service(provider.Config{AccountAIBaseURL: vfake.URL(), Egress: loopback(t)})
	require.NoError(t, svc.SaveCredentials(ctx, f2.org, provider.AccountAI, provider.Credentials{ServiceAccountJSON: vfake.ServiceAccountJSON(), GCPProject: "gcp-proj", Location: "us-central1"}))
	h, err = svc.Resolve(ctx, f2.project, provider.Embedding)
	require.NoError(t, err)
	require.Equal(t, provider.AccountAI, h.Provider())
	require.Equal(t, "text-embedding-005", h.Model())
	require.Equal(t, 768, h.Dimension())
	vecs, err := h.Embed(ctx, []string{"a", "b", "c"})
	require.NoError(t, err)
	require.Len(t, vecs, 3)
	require.Equal(t, 1, vfake.Count(llmtest.EndpointEmbed), "one predict call for the batch")
}

// TestLedger checks that every call writes a ledger row with the
// provider's token counts and the catalog's price, and that the usage sums
// agree with the ledger.
func TestLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	fake := llmtest.NewGemini(t, envKey)
	fake.SetUsage(llmtest.Usage{PromptText: 1000, PromptImage: 200, PromptVideo: 300, PromptAudio: 100, Candidates: 400, Thoughts: 100})
	fake.SetGenerate(func(llmtest.GenerateCall) string { return `{"ok":true}` })
	svc := f.service(provider.Config{KeyAIBaseURL: fake.URL(), Environment: provider.Environment{KeyAIAPIKey: envKey}})

	g, err := svc.Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)
	res, err := g.Generate(ctx, llm.GenerateRequest{Prompt: "x", Schema: map[string]any{"type": "object"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, string(res.JSON))

	// A call inside a job handler is attributed to the job.
	e, err := svc.Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)
	job := uuid.Must(uuid.NewV7())
	jobCtx := jobqueue.ContextWithJobs(ctx, []jobqueue.Job{{ID: job, ProjectID: &f.project}})
	_, err = e.Embed(jobCtx, []string{"one two three four", "five six"})
	require.NoError(t, err)

	// A failed call is recorded too.
	fake.FailNext(1, 500, "", "")
	_, err = e.Embed(ctx, []string{"x"})
	require.Error(t, err)

	type row struct {
		model, op, status                 string
		text, image, video, audio, output int64
		cost                              float64
		items                             int
		jobID                             *uuid.UUID
	}
	rows, err := f.pool.Query(ctx, `SELECT model, operation, status, text_tokens, image_tokens, video_tokens, audio_tokens, output_tokens,
		estimated_cost_usd::float8, items, job_id FROM provider_usage WHERE project_id = $1 ORDER BY created_at, id`, f.project)
	require.NoError(t, err)
	var got []row
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.model, &r.op, &r.status, &r.text, &r.image, &r.video, &r.audio, &r.output, &r.cost, &r.items, &r.jobID))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	require.Len(t, got, 3)

	gen := got[0]
	require.Equal(t, "gemini-2.5-flash", gen.model)
	require.Equal(t, "generate", gen.op)
	require.Equal(t, []int64{1000, 200, 300, 100, 500}, []int64{gen.text, gen.image, gen.video, gen.audio, gen.output}, "thoughts count as output")
	// gemini-2.5-flash: 0.30 text/image/video, 1.00 audio, 2.50 output per million.
	want := (1000*0.30 + 200*0.30 + 300*0.30 + 100*1.00 + 500*2.50) / 1e6
	require.InDelta(t, want, gen.cost, 1e-12)
	require.Nil(t, gen.jobID)

	emb := got[1]
	require.Equal(t, "embed", emb.op)
	require.Equal(t, "ok", emb.status)
	require.Equal(t, 2, emb.items)
	require.Positive(t, emb.text)
	require.InDelta(t, float64(emb.text)*0.15/1e6, emb.cost, 1e-12)
	require.NotNil(t, emb.jobID)
	require.Equal(t, job, *emb.jobID)

	require.Equal(t, "error", got[2].status)
	require.Zero(t, got[2].cost)

	// The summary sums the ledger, per model.
	sum, err := svc.Usage(ctx, uuid.Nil, &f.project, nil, nil)
	require.NoError(t, err)
	require.Equal(t, provider.UsageNote, sum.Note)
	require.Len(t, sum.Data, 2)
	byModel := map[string]provider.UsageRow{}
	for _, r := range sum.Data {
		byModel[r.Model] = r
	}
	require.Equal(t, int64(1000), byModel["gemini-2.5-flash"].TotalText)
	require.Equal(t, int64(500), byModel["gemini-2.5-flash"].TotalOutput)
	require.InDelta(t, want, byModel["gemini-2.5-flash"].EstimatedCostUSD, 1e-12)
	require.Equal(t, emb.text, byModel["gemini-embedding-001"].TotalText)

	// The organization's summary is the same (one project); a window
	// after the calls is empty; a reversed one is refused.
	orgSum, err := svc.Usage(ctx, f.org, nil, nil, nil)
	require.NoError(t, err)
	require.ElementsMatch(t, sum.Data, orgSum.Data)
	later := time.Now().Add(time.Hour)
	empty, err := svc.Usage(ctx, f.org, nil, &later, nil)
	require.NoError(t, err)
	require.Empty(t, empty.Data)
	earlier := later.Add(-2 * time.Hour)
	_, err = svc.Usage(ctx, f.org, nil, &later, &earlier)
	require.ErrorContains(t, err, "until is before since")
}

// TestRateLimit: a 429 comes back as the job engine's rate-limit error with
// the provider's delay, and holds the key back for that long.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	fake := llmtest.NewGemini(t, envKey)
	svc := f.service(provider.Config{KeyAIBaseURL: fake.URL(), Environment: provider.Environment{KeyAIAPIKey: envKey}})
	h, err := svc.Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)

	fake.FailNext(1, 429, "1", "")
	_, err = h.Embed(ctx, []string{"x"})
	require.Error(t, err)
	wait, ok := jobqueue.RetryAfterOf(err)
	require.True(t, ok, "a rate-limit error for the job engine: %v", err)
	require.Equal(t, time.Second, wait)

	// The next call waits out the hold before reaching the provider.
	start := time.Now()
	_, err = h.Embed(ctx, []string{"x"})
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
	require.Equal(t, 2, fake.Count(llmtest.EndpointEmbed))

	// Auth failures are permanent.
	fake.FailNext(1, 401, "", "")
	_, err = h.Embed(ctx, []string{"x"})
	require.True(t, jobqueue.IsPermanent(err), "%v", err)
	require.NotContains(t, err.Error(), envKey)
}

// TestGovernorPacesBurst: with a limit of 60 requests a minute and a full
// bucket spent, callers wait instead of calling the provider at once. The
// clock stands still, so the bucket does not refill during the test.
func TestGovernorPacesBurst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	fake := llmtest.NewGemini(t, envKey)
	frozen := time.Now()
	svc := f.service(provider.Config{
		KeyAIBaseURL: fake.URL(), Environment: provider.Environment{KeyAIAPIKey: envKey}, RPM: 60,
		Now: func() time.Time { return frozen },
	})
	h, err := svc.Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)
	for range 60 { // the bucket holds a minute: 60 calls go at once
		_, err := h.Embed(ctx, []string{"x"})
		require.NoError(t, err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = h.Embed(short, []string{"x"})
	require.True(t, errors.Is(err, context.DeadlineExceeded), "the 61st call waits a second: %v", err)
	require.Equal(t, 60, fake.Count(llmtest.EndpointEmbed), "the waiting call never reached the provider")
}

// TestResolveModel: a preferred model is used when the resolved provider's
// catalog has it for the purpose; otherwise the usual choice stands.
func TestResolveModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	_, err := f.pool.Exec(ctx, `INSERT INTO provider_models (id, provider, model_name, model_type, dimension, last_synced)
		VALUES ($1, 'key-ai', 'text-embedding-004', 'embedding', 768, now())`, uuid.Must(uuid.NewV7()))
	require.NoError(t, err)
	fake := llmtest.NewGemini(t, envKey)
	svc := f.service(provider.Config{KeyAIBaseURL: fake.URL(), Environment: provider.Environment{KeyAIAPIKey: envKey}})

	for _, tc := range []struct{ name, purpose, preferred, want string }{
		{"CatalogModel", provider.Embedding, "text-embedding-004", "text-embedding-004"},
		{"Empty", provider.Embedding, "", "gemini-embedding-001"},
		{"OtherProvidersModel", provider.Embedding, "text-embedding-005", "gemini-embedding-001"},
		{"Unknown", provider.Embedding, "no-such-model", "gemini-embedding-001"},
		{"WrongPurpose", provider.Embedding, "gemini-2.5-flash", "gemini-embedding-001"},
		{"Generative", provider.Generative, "gemini-2.5-pro", "gemini-2.5-pro"},
	} {
		h, err := svc.ResolveModel(ctx, f.project, tc.purpose, tc.preferred)
		require.NoError(t, err, tc.name)
		require.Equal(t, provider.KeyAI, h.Provider(), tc.name)
		require.Equal(t, tc.want, h.Model(), tc.name)
	}
	h, err := svc.ResolveModel(ctx, f.project, provider.Embedding, "text-embedding-004")
	require.NoError(t, err)
	require.Equal(t, 768, h.Dimension())
	_, err = h.Embed(ctx, []string{"hello"})
	require.NoError(t, err)
	reqs := fake.Requests()
	require.Equal(t, "text-embedding-004", reqs[len(reqs)-1].Model, "the call goes to the preferred model")

	// The local provider: its one embedding model, by name or by default.
	local := f.service(provider.Config{LocalEnabled: true, LocalDimension: 32})
	h, err = local.ResolveModel(ctx, f.project, provider.Embedding, "gemini-embedding-001")
	require.NoError(t, err)
	require.Equal(t, llm.LocalEmbedModel, h.Model())
	require.Equal(t, 32, h.Dimension())
	h, err = local.ResolveModel(ctx, f.project, provider.Embedding, llm.LocalEmbedModel)
	require.NoError(t, err)
	require.Equal(t, llm.LocalEmbedModel, h.Model())
	require.Equal(t, 32, h.Dimension())
}

// TestTokenEndpointEgress: a service-account file whose token_uri is not
// Google's is refused at save unless GRAPHMILL_EGRESS_ALLOW names its
// host; one stored while it did is refused at call time once it does not,
// and the token request is never made.
func TestTokenEndpointEgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	vfake := llmtest.NewVertex(t, "gcp-proj", "us-central1")
	strict := f.service(provider.Config{AccountAIBaseURL: vfake.URL()})
	err := strict.SaveCredentials(ctx, f.org, provider.AccountAI, provider.Credentials{ServiceAccountJSON: vfake.ServiceAccountJSON(), GCPProject: "gcp-proj", Location: "us-central1"})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.Contains(t, err.Error(), "token_uri")
	require.Contains(t, err.Error(), "GRAPHMILL_EGRESS_ALLOW")
	var n int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM org_provider_credentials`).Scan(&n))
	require.Zero(t, n, "nothing stored")

	allowed := f.service(provider.Config{AccountAIBaseURL: vfake.URL(), Egress: loopback(t)})
	require.NoError(t, allowed.SaveCredentials(ctx, f.org, provider.AccountAI, provider.Credentials{ServiceAccountJSON: vfake.ServiceAccountJSON(), GCPProject: "gcp-proj", Location: "us-central1"}))
	tokens := vfake.Count(llmtest.EndpointToken) // the model list refresh of the save
	h, err := strict.Resolve(ctx, f.project, provider.Embedding)
	if err == nil {
		_, err = h.Embed(ctx, []string{"a"})
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), "GRAPHMILL_EGRESS_ALLOW")
	require.Equal(t, tokens, vfake.Count(llmtest.EndpointToken), "no token request left the process")
	require.Zero(t, vfake.Count(llmtest.EndpointEmbed))

	// The allowed service uses the same credentials.
	h, err = allowed.Resolve(ctx, f.project, provider.Embedding)
	require.NoError(t, err)
	_, err = h.Embed(ctx, []string{"a"})
	require.NoError(t, err)
	require.Equal(t, 1, vfake.Count(llmtest.EndpointEmbed))
}
