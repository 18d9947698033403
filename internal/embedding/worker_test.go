package embedding_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/embeddingpolicy"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/secrets"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	apiKey  = "AIza-embedding-test-key-0123"
	waitFor = 20 * time.Second
	// altModel is a second key-ai embedding model, added to the catalog.
	altModel = "text-embedding-004"
)

// testBundle is one test's database, providers, services and job engine.
type testBundle struct {
	t        *testing.T
	pool     *pgxpool.Pool
	org      uuid.UUID
	project  uuid.UUID
	gemini   *llmtest.Gemini // nil with the local provider
	emb      *embedding.Service
	policies *embeddingpolicy.Service
	jobs     *jobqueue.Client
}

// setup builds the bundle; with keyAI the environment's key-ai key and a
// Gemini fake, else the local provider. The engine is not started.
func setup(t *testing.T, keyAI bool, opts ...func(*embedding.Config)) *testBundle {
	t.Helper()
	return setupWith(t, keyAI, nil, opts...)
}

// setupWith is setup with the provider requests going through client.
func setupWith(t *testing.T, keyAI bool, client *http.Client, opts ...func(*embedding.Config)) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	b := &testBundle{t: t, pool: pool}
	b.org, b.project = b.newProject()
	box, err := secrets.New(secrets.GenerateKey())
	require.NoError(t, err)
	pc := provider.Config{Pool: pool, Box: box, Logger: slog.New(slog.DiscardHandler), HTTPClient: client}
	if keyAI {
		b.gemini = llmtest.NewGemini(t, apiKey)
		pc.KeyAIBaseURL, pc.Environment = b.gemini.URL(), provider.Environment{KeyAIAPIKey: apiKey}
		_, err = pool.Exec(ctx, `INSERT INTO provider_models (id, provider, model_name, model_type, dimension, last_synced)
			VALUES ($1, 'key-ai', $2, 'embedding', 768, now())`, uuid.Must(uuid.NewV7()), altModel)
		require.NoError(t, err)
	} else {
		pc.LocalEnabled, pc.LocalDimension = true, 64
	}
	providers := provider.NewService(pc)
	b.jobs, err = jobqueue.NewClient(pool, jobqueue.Config{PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	ec := embedding.Config{Pool: pool, Jobs: b.jobs, Objects: tableObjects{}, Models: providers}
	for _, o := range opts {
		o(&ec)
	}
	b.emb, err = embedding.NewService(ec)
	require.NoError(t, err)
	b.policies = embeddingpolicy.NewService(pool, b.emb, providers, nil)
	require.NoError(t, b.emb.AddQueue(b.policies, 0))
	return b
}

// start starts the job engine, stopped when the test ends.
func (b *testBundle) start() {
	b.t.Helper()
	require.NoError(b.t, b.jobs.Start(context.Background()))
	b.t.Cleanup(func() { _ = b.jobs.Stop(context.Background()) })
}

func (b *testBundle) newProject() (org, project uuid.UUID) {
	b.t.Helper()
	ctx := context.Background()
	org, project = uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	_, err := b.pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, now(), now())`, org, "o-"+org.String())
	require.NoError(b.t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	require.NoError(b.t, err)
	return org, project
}

// object inserts a graph object.
func (b *testBundle) object(project uuid.UUID, typ, name, description string, props map[string]any) uuid.UUID {
	b.t.Helper()
	id := uuid.Must(uuid.NewV7())
	if props == nil {
		props = map[string]any{}
	}
	raw, err := json.Marshal(props)
	require.NoError(b.t, err)
	key := strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	_, err = b.pool.Exec(context.Background(), `INSERT INTO graph_objects (id, project_id, type, key, normalized_key, name, description,
		properties, labels, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $4, $5, nullif($6, ''), $7, '{alpha,beta}', 'accepted', now(), now())`,
		id, project, typ, key, name, description, raw)
	require.NoError(b.t, err)
	return id
}

// enqueue queues objects of project in one transaction.
func (b *testBundle) enqueue(project uuid.UUID, ids ...uuid.UUID) {
	b.t.Helper()
	ctx := context.Background()
	require.NoError(b.t, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error { return b.emb.Enqueue(ctx, tx, project, ids) }))
}

// waitIdle waits until no graph embedding job is queued or running, and
// requires that none failed.
func (b *testBundle) waitIdle() {
	b.t.Helper()
	ctx := context.Background()
	b.waitNoneActive()
	var failed []string
	rows, _ := b.pool.Query(ctx, `SELECT coalesce(error_msg, status) FROM graph_embedding_jobs WHERE status <> 'completed'`)
	failed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(b.t, err)
	require.Empty(b.t, failed)
}

// waitNoneActive waits until no graph embedding job is queued or running.
func (b *testBundle) waitNoneActive() {
	b.t.Helper()
	require.Eventually(b.t, func() bool {
		var n int
		require.NoError(b.t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM graph_embedding_jobs WHERE status IN ('queued', 'running')`).Scan(&n))
		return n == 0
	}, waitFor, 10*time.Millisecond)
}

type vector struct {
	provider, model string
	dimension       int
	hash            []byte
	length          int
}

type vkey struct{ object, policy uuid.UUID }

// vectors returns the stored vectors of project.
func (b *testBundle) vectors(project uuid.UUID) map[vkey]vector {
	b.t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT object_id, policy_id, provider, model, dimension, text_sha256, cardinality(embedding)
		FROM graph_object_embeddings WHERE project_id = $1`, project)
	require.NoError(b.t, err)
	defer rows.Close()
	out := map[vkey]vector{}
	for rows.Next() {
		var k vkey
		var v vector
		require.NoError(b.t, rows.Scan(&k.object, &k.policy, &v.provider, &v.model, &v.dimension, &v.hash, &v.length))
		out[k] = v
	}
	require.NoError(b.t, rows.Err())
	return out
}

// embedCalls returns the texts of each embedding request to the fake,
// by model.
func (b *testBundle) embedCalls() []call {
	b.t.Helper()
	var out []call
	for _, r := range b.gemini.Requests() {
		if r.Endpoint != llmtest.EndpointEmbed {
			continue
		}
		var body struct {
			Requests []struct {
				Content struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"content"`
			} `json:"requests"`
		}
		require.NoError(b.t, json.Unmarshal(r.Body, &body))
		c := call{model: r.Model}
		for _, rq := range body.Requests {
			c.texts = append(c.texts, rq.Content.Parts[0].Text)
		}
		out = append(out, c)
	}
	return out
}

type call struct {
	model string
	texts []string
}

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func ptr[T any](v T) *T { return &v }

func TestEnqueueDedupesQueuedJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := context.Background()
	a := b.object(b.project, "Person", "Ada Lovelace", "", nil)
	c := b.object(b.project, "Person", "Charles Babbage", "", nil)

	b.enqueue(b.project, a, a, c)
	b.enqueue(b.project, a)
	count := func(status string) int {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM graph_embedding_jobs WHERE status = $1`, status).Scan(&n))
		return n
	}
	require.Equal(t, 2, count("queued"), "one queued job per object")
	var project uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT project_id FROM graph_embedding_jobs WHERE object_id = $1`, a).Scan(&project))
	require.Equal(t, b.project, project)

	// A running job does not count: a change during a run is queued again.
	_, err := b.pool.Exec(ctx, `UPDATE graph_embedding_jobs SET status = 'running' WHERE object_id = $1`, a)
	require.NoError(t, err)
	b.enqueue(b.project, a)
	require.Equal(t, 2, count("queued"))
	require.Equal(t, 1, count("running"))

	// Nothing to queue: no statement at all.
	b.enqueue(b.project)
}

// TestWorkerLocalProvider: with the offline provider, a batch of objects
// gets its default-text vectors.
func TestWorkerLocalProvider(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	a := b.object(b.project, "Person", "Ada Lovelace", "Wrote the first program.", map[string]any{"born": 1815, "nested": map[string]any{"x": 1}})
	c := b.object(b.project, "Place", "London", "", nil)
	b.enqueue(b.project, a, c)
	b.start()
	b.waitIdle()

	vs := b.vectors(b.project)
	require.Len(t, vs, 2)
	v := vs[vkey{a, uuid.Nil}]
	require.Equal(t, provider.Local, v.provider)
	require.Equal(t, llm.LocalEmbedModel, v.model)
	require.Equal(t, 64, v.dimension)
	require.Equal(t, 64, v.length)
	require.Equal(t, hash("Person: Ada Lovelace\nkey: ada-lovelace\nWrote the first program.\nborn: 1815"), v.hash)
	require.Equal(t, hash("Place: London\nkey: london"), vs[vkey{c, uuid.Nil}].hash)
}

// TestWorkerPolicies walks the policies through the worker with the key-ai
// fake, counting provider calls: one per project and model of a batch;
// two policies give two vectors; unchanged texts are not embedded again;
// deactivating a policy removes its vectors; deleted objects lose theirs.
func TestWorkerPolicies(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := context.Background()
	_, other := b.newProject()

	people := []uuid.UUID{
		b.object(b.project, "Person", "Ada Lovelace", "Mathematician", map[string]any{"born": 1815, "city": "London", "secret": "x"}),
		b.object(b.project, "Person", "Charles Babbage", "", map[string]any{"born": 1791}),
		b.object(b.project, "Person", "Mary Somerville", "", nil),
	}
	places := []uuid.UUID{
		b.object(b.project, "Place", "London", "", map[string]any{"country": "England"}),
		b.object(b.project, "Place", "Cambridge", "", nil),
	}
	thing := b.object(b.project, "Thing", "Analytical Engine", "A machine", map[string]any{"year": 1837, "parts": []any{"mill", "store"}})
	elsewhere := []uuid.UUID{b.object(other, "Person", "Alan Turing", "", nil), b.object(other, "Person", "Grace Hopper", "", nil)}

	// Policies of the project (the other has none): p1 with the default
	// model, p2 with another model of the provider.
	p1, err := b.policies.Create(ctx, b.project, embeddingpolicy.CreateParams{
		Name: "people", ObjectTypes: []string{"Person"}, Fields: []string{"born", "city"},
		Template: "{{.name}} ({{.type}}), born {{.born}} in {{.city}}{{if .description}}: {{.description}}{{end}}", Model: "gemini-embedding-001",
	})
	require.NoError(t, err)
	p2, err := b.policies.Create(ctx, b.project, embeddingpolicy.CreateParams{
		Name: "names", ObjectTypes: []string{"Person", "Place"}, Fields: []string{},
		Template: "{{.name}} [{{.labels}}] {{.status}}", Model: altModel,
	})
	require.NoError(t, err)
	// Creating the policies queued their objects; queue the rest too, so
	// that one batch holds everything.
	b.enqueue(b.project, thing)
	b.enqueue(other, elsewhere...)
	b.start()
	b.waitIdle()

	calls := b.embedCalls()
	require.Len(t, calls, 3, "one call per project and model: %v", calls)
	byModel := map[string][][]string{}
	for _, c := range calls {
		byModel[c.model] = append(byModel[c.model], c.texts)
	}
	require.Len(t, byModel["gemini-embedding-001"], 2, "the project's p1 and default texts in one call, the other project's in another")
	require.Len(t, byModel[altModel], 1)
	require.Len(t, byModel[altModel][0], 5, "p2 covers three people and two places")

	vs := b.vectors(b.project)
	require.Len(t, vs, 3*2+2+1)
	ada := vs[vkey{people[0], p1.ID}]
	require.Equal(t, "gemini-embedding-001", ada.model)
	require.Equal(t, provider.KeyAI, ada.provider)
	require.Equal(t, llmtest.DimensionDefault, ada.dimension)
	require.Equal(t, hash("Ada Lovelace (Person), born 1815 in London: Mathematician"), ada.hash, "only the policy's fields are exposed")
	require.Equal(t, hash("Charles Babbage (Person), born 1791 in"), vs[vkey{people[1], p1.ID}].hash, "a missing property is empty")
	require.Equal(t, altModel, vs[vkey{people[0], p2.ID}].model)
	require.Equal(t, hash("Ada Lovelace [alpha, beta] accepted"), vs[vkey{people[0], p2.ID}].hash)
	for _, id := range places {
		require.Contains(t, vs, vkey{id, p2.ID})
		require.NotContains(t, vs, vkey{id, uuid.Nil}, "a covered object has no default vector")
	}
	require.Equal(t, hash("Thing: Analytical Engine\nkey: analytical-engine\nA machine\nyear: 1837"), vs[vkey{thing, uuid.Nil}].hash,
		"default text: type, name, key, description and scalar properties")
	require.Len(t, b.vectors(other), 2)

	// Everything again, unchanged: no call.
	before := len(b.embedCalls())
	b.enqueue(b.project, append(append([]uuid.UUID{thing}, people...), places...)...)
	b.waitIdle()
	require.Len(t, b.embedCalls(), before, "unchanged texts are not embedded again")

	// One object changes: only its text is embedded.
	_, err = b.pool.Exec(ctx, `UPDATE graph_objects SET description = 'A mechanical computer' WHERE id = $1`, thing)
	require.NoError(t, err)
	b.enqueue(b.project, thing, places[0])
	b.waitIdle()
	calls = b.embedCalls()
	require.Len(t, calls, before+1)
	require.Equal(t, []string{"Thing: Analytical Engine\nkey: analytical-engine\nA mechanical computer\nyear: 1837"}, calls[len(calls)-1].texts)

	// p1 deactivated: its vectors go when the people are re-embedded
	// (queued by the update); p2's stay, without a call.
	before = len(calls)
	_, err = b.policies.Update(ctx, b.project, p1.ID, embeddingpolicy.Update{Active: ptr(false)})
	require.NoError(t, err)
	b.waitIdle()
	vs = b.vectors(b.project)
	for _, id := range people {
		require.NotContains(t, vs, vkey{id, p1.ID})
		require.Contains(t, vs, vkey{id, p2.ID})
	}
	require.Len(t, b.embedCalls(), before)

	// p2 deactivated too: people and places fall back to the default text.
	_, err = b.policies.Update(ctx, b.project, p2.ID, embeddingpolicy.Update{Active: ptr(false)})
	require.NoError(t, err)
	b.waitIdle()
	vs = b.vectors(b.project)
	require.Len(t, vs, 6)
	for _, id := range append(append([]uuid.UUID{}, people...), places...) {
		require.Contains(t, vs, vkey{id, uuid.Nil})
	}
	require.Len(t, b.embedCalls(), before+1, "the five default texts in one call")

	// A deleted object: the job completes and its vectors go.
	_, err = b.pool.Exec(ctx, `UPDATE graph_objects SET deleted_at = now() WHERE id = $1`, thing)
	require.NoError(t, err)
	b.enqueue(b.project, thing)
	b.waitIdle()
	require.NotContains(t, b.vectors(b.project), vkey{thing, uuid.Nil})
}

// TestWorkerProviderFailure: a failed embedding call fails (for retry)
// only the jobs whose texts were in it.
func TestWorkerProviderFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := context.Background()
	a := b.object(b.project, "Person", "Ada Lovelace", "", nil)
	b.gemini.FailNext(1, 500, "", "")
	b.enqueue(b.project, a)
	b.start()
	require.Eventually(t, func() bool {
		var retries int
		var status string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT retry_count, status FROM graph_embedding_jobs WHERE object_id = $1`, a).Scan(&retries, &status))
		return retries == 1
	}, waitFor, 10*time.Millisecond)
	var msg string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(error_msg, '') FROM graph_embedding_jobs WHERE object_id = $1`, a).Scan(&msg))
	require.Contains(t, msg, "embed 1 graph object texts with key-ai gemini-embedding-001")
}

// gate holds every embedding request until released, one at a time.
type gate struct {
	entered chan string
	release chan struct{}
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, ":batchEmbedContents") {
		g.entered <- r.URL.Path
		<-g.release
	}
	return http.DefaultTransport.RoundTrip(r)
}

// setupGated is a key-ai bundle whose embedding requests wait at the
// gate, with one object ("Engine", description "first") queued.
func setupGated(t *testing.T) (*testBundle, *gate, uuid.UUID) {
	t.Helper()
	g := &gate{entered: make(chan string), release: make(chan struct{})}
	b := setupWith(t, true, &http.Client{Transport: g})
	a := b.object(b.project, "Thing", "Engine", "first", nil)
	b.enqueue(b.project, a)
	return b, g, a
}

// TestWorkerStaleWrite: a job whose object changed while it was embedding
// does not store its (stale) vector; the job queued by the change stores
// the current one.
func TestWorkerStaleWrite(t *testing.T) {
	t.Parallel()
	b, g, a := setupGated(t)
	ctx := context.Background()
	b.start()
	<-g.entered // the first job is embedding "first"

	_, err := b.pool.Exec(ctx, `UPDATE graph_objects SET description = 'second' WHERE id = $1`, a)
	require.NoError(t, err)
	b.enqueue(b.project, a)
	g.release <- struct{}{}
	<-g.entered // the second job is embedding "second": the first has written
	require.Empty(t, b.vectors(b.project), "the stale vector was not stored")
	g.release <- struct{}{}
	b.waitIdle()
	vs := b.vectors(b.project)
	require.Len(t, vs, 1)
	require.Equal(t, hash("Thing: Engine\nkey: engine\nsecond"), vs[vkey{a, uuid.Nil}].hash)
}

// TestWorkerFailureWhileRequeued: an object changed (a job queued for it)
// while its running job fails with a retryable error: the failed job is
// cancelled as superseded, since the queued one embeds the object anyway.
// It used to ask for a second queued job of the object, which the table's
// unique index refused: the job stayed running and the reaper failed on it
// every second from then on.
func TestWorkerFailureWhileRequeued(t *testing.T) {
	t.Parallel()
	b, g, a := setupGated(t)
	ctx := context.Background()
	b.gemini.FailNext(1, 500, "", "")
	b.start()
	<-g.entered // the first job is embedding, and will fail

	b.enqueue(b.project, a)
	g.release <- struct{}{}
	<-g.entered // the queued job runs
	g.release <- struct{}{}
	b.waitNoneActive()
	rows, err := b.pool.Query(ctx, `SELECT status, coalesce(error_msg, '') FROM graph_embedding_jobs WHERE object_id = $1 ORDER BY created_at, id`, a)
	require.NoError(t, err)
	type job struct{ status, msg string }
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		return j, r.Scan(&j.status, &j.msg)
	})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	require.Equal(t, "cancelled", jobs[0].status)
	require.Equal(t, "superseded by a queued job for the same object", jobs[0].msg, "the object, not its column")
	require.Equal(t, "completed", jobs[1].status)
	require.Len(t, b.vectors(b.project), 1)
}

// tableObjects is an ObjectSource reading graph_objects directly, so the
// worker is tested without the graph domain (the server wires the graph
// service).
type tableObjects struct{}

type objectRow struct {
	ID          uuid.UUID `db:"id"`
	ProjectID   uuid.UUID `db:"project_id"`
	Type        string    `db:"type"`
	Key         string    `db:"key"`
	Name        string    `db:"name"`
	Description *string   `db:"description"`
	Properties  []byte    `db:"properties"`
	Labels      []string  `db:"labels"`
	Status      string    `db:"status"`
	Confidence  *float64  `db:"confidence"`
}

// ObjectsByID implements graph.ObjectSource.
func (tableObjects) ObjectsByID(ctx context.Context, db postgres.DBTX, ids []uuid.UUID) ([]graph.Object, error) {
	rows, _ := db.Query(ctx, `SELECT id, project_id, type, key, name, description, properties, labels, status, confidence::float8 AS confidence
		FROM graph_objects WHERE id = ANY($1) AND deleted_at IS NULL`, ids)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[objectRow])
	if err != nil {
		return nil, fmt.Errorf("load graph objects: %w", err)
	}
	out := make([]graph.Object, len(list))
	for i, r := range list {
		o := graph.Object{
			ID: r.ID, ProjectID: r.ProjectID, Type: r.Type, Key: r.Key, Name: r.Name, Labels: r.Labels, Status: r.Status,
			Confidence: r.Confidence, Properties: map[string]any{},
		}
		if r.Description != nil {
			o.Description = *r.Description
		}
		if len(r.Properties) > 0 {
			d := json.NewDecoder(bytes.NewReader(r.Properties))
			d.UseNumber()
			if err := d.Decode(&o.Properties); err != nil {
				return nil, fmt.Errorf("decode properties of graph object %s: %w", r.ID, err)
			}
		}
		out[i] = o
	}
	return out, nil
}

// ObjectIDsByType implements graph.ObjectSource.
func (tableObjects) LockObjects(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
	_, err := tx.Exec(ctx, `SELECT id FROM graph_objects WHERE id = ANY($1) ORDER BY id FOR KEY SHARE`, ids)
	return err
}

func (tableObjects) ObjectIDsByType(ctx context.Context, db postgres.DBTX, project uuid.UUID, types []string) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `SELECT id FROM graph_objects WHERE project_id = $1 AND type = ANY($2) AND deleted_at IS NULL ORDER BY id`, project, types)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("list graph objects by type: %w", err)
	}
	return ids, nil
}

// claim marks every queued job running under the bundle's engine, as its
// claim would, and returns them.
func (b *testBundle) claim() []jobqueue.Job {
	b.t.Helper()
	rows, err := b.pool.Query(context.Background(), `UPDATE graph_embedding_jobs SET status = 'running', attempt = attempt + 1,
		locked_by = $1, locked_until = now() + interval '1 hour', started_at = now(), updated_at = now()
		WHERE status = 'queued' RETURNING id, project_id, attempt, retry_count, max_retries, run_at, started_at, created_at`, b.jobs.WorkerID())
	require.NoError(b.t, err)
	defer rows.Close()
	var out []jobqueue.Job
	for rows.Next() {
		j := jobqueue.Job{Queue: embedding.Queue}
		var project uuid.UUID
		require.NoError(b.t, rows.Scan(&j.ID, &project, &j.Attempt, &j.RetryCount, &j.MaxRetries, &j.RunAt, &j.StartedAt, &j.CreatedAt))
		j.ProjectID = &project
		out = append(out, j)
	}
	require.NoError(b.t, rows.Err())
	return out
}

// jobOf returns the id of object's (only) graph embedding job.
func (b *testBundle) jobOf(object uuid.UUID) uuid.UUID {
	b.t.Helper()
	var id uuid.UUID
	require.NoError(b.t, b.pool.QueryRow(context.Background(), `SELECT id FROM graph_embedding_jobs WHERE object_id = $1`, object).Scan(&id))
	return id
}

type jobRow struct {
	Status             string
	Attempt, Retries   int
	ErrorMsg           string
	JobCompletedEvents int
}

// job reads object's graph embedding job and counts its job.completed
// events.
func (b *testBundle) job(object uuid.UUID) jobRow {
	b.t.Helper()
	var r jobRow
	require.NoError(b.t, b.pool.QueryRow(context.Background(), `SELECT status, attempt, retry_count, coalesce(error_msg, ''),
		(SELECT count(*) FROM events e WHERE e.type = 'job.completed' AND e.payload->>'jobId' = j.id::text)
		FROM graph_embedding_jobs j WHERE object_id = $1`, object).Scan(&r.Status, &r.Attempt, &r.Retries, &r.ErrorMsg, &r.JobCompletedEvents))
	return r
}

// TestWorkerCommitsStatusWithVectors: a batch's vectors and its jobs' final
// statuses commit in one transaction. A job cancelled while its batch
// worked gets no vector; a crash right after the handler (before the engine
// records anything) loses nothing and re-runs nothing.
func TestWorkerCommitsStatusWithVectors(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := context.Background()
	cancelled := b.object(b.project, "Person", "Ada Lovelace", "", nil)
	done := b.object(b.project, "Person", "Charles Babbage", "", nil)
	b.enqueue(b.project, cancelled, done)
	jobs := b.claim()
	require.Len(t, jobs, 2)
	// The cancel lands while the batch embeds (its worker never hears of
	// it: the engine is not running).
	_, err := b.jobs.Cancel(ctx, b.pool, embedding.Queue, b.jobOf(cancelled))
	require.NoError(t, err)

	results := embedding.Work(b.emb, jobqueue.ContextWithJobs(ctx, jobs), jobs)
	// The process dies here: the engine records nothing.
	for _, err := range results {
		if err != nil {
			require.ErrorIs(t, err, jobqueue.ErrCancelled)
		}
	}
	vs := b.vectors(b.project)
	require.NotContains(t, vs, vkey{cancelled, uuid.Nil}, "a job cancelled before the commit stores nothing")
	require.Contains(t, vs, vkey{done, uuid.Nil})
	require.Equal(t, jobRow{Status: "completed", Attempt: 1, JobCompletedEvents: 1}, b.job(done),
		"the final status committed with the vector")
	require.Equal(t, "cancelled", b.job(cancelled).Status)

	// Restart after the crash: leases of jobs still running have expired;
	// a new engine finds nothing to run again.
	_, err = b.pool.Exec(ctx, `UPDATE graph_embedding_jobs SET locked_until = now() - interval '1 hour' WHERE status = 'running'`)
	require.NoError(t, err)
	b.start()
	b.enqueue(b.project) // nothing
	// Polled in this goroutine: require.Never runs its condition in
	// goroutines it does not wait for, and one still reading when the test
	// ends finds the pool closed.
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		require.Equal(t, 1, b.job(done).Attempt, "a new engine runs the completed job again")
	}
	require.Equal(t, jobRow{Status: "completed", Attempt: 1, JobCompletedEvents: 1}, b.job(done), "not run twice, one event")
	require.Len(t, b.vectors(b.project), 1)
}

// TestWorkerHostileTemplate: a policy whose template would keep a worker
// busy forever fails only the jobs of the objects it covers, at once and
// for good; every other object of the batch (other policies, the default
// text, another project) is embedded.
func TestWorkerHostileTemplate(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := context.Background()
	_, other := b.newProject()

	parts := make([]any, 100000)
	for i := range parts {
		parts[i] = fmt.Sprintf("part %d", i)
	}
	person := b.object(b.project, "Person", "Ada Lovelace", "", nil)
	machine := b.object(b.project, "Machine", "Analytical Engine", "", map[string]any{"parts": parts})
	place := b.object(b.project, "Place", "London", "", nil)
	thing := b.object(b.project, "Thing", "Loom", "", nil)
	elsewhere := b.object(other, "Person", "Grace Hopper", "", nil)

	// Stored before templates were restricted: the checker refuses it now.
	hostile := uuid.Must(uuid.NewV7())
	_, err := b.pool.Exec(ctx, `INSERT INTO embedding_policies (id, project_id, name, object_types, fields, template, model, created_at, updated_at)
		VALUES ($1, $2, 'hostile', '{Person}', '{}', '{{range 1000000000}}{{range 1000000000}}{{end}}{{end}}', $3, now(), now())`,
		hostile, b.project, llm.LocalEmbedModel)
	require.NoError(t, err)
	// Accepted by the checker (ranges over a list field), but 10^15
	// iterations: stopped by the render deadline.
	slow, err := b.policies.Create(ctx, b.project, embeddingpolicy.CreateParams{
		Name: "slow", ObjectTypes: []string{"Machine"}, Fields: []string{"parts"},
		Template: "{{range $.parts}}{{range $.parts}}{{range $.parts}}{{end}}{{end}}{{end}}", Model: llm.LocalEmbedModel,
	})
	require.NoError(t, err)
	good, err := b.policies.Create(ctx, b.project, embeddingpolicy.CreateParams{
		Name: "places", ObjectTypes: []string{"Place"}, Fields: []string{}, Template: "{{.name}} ({{.type}})", Model: llm.LocalEmbedModel,
	})
	require.NoError(t, err)
	b.enqueue(b.project, person, thing)
	b.enqueue(other, elsewhere)
	b.start()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM graph_embedding_jobs
			WHERE status = 'running' OR (status = 'queued' AND retry_count = 0)`).Scan(&n))
		return n == 0
	}, waitFor, 10*time.Millisecond)

	p := b.job(person)
	require.Equal(t, "failed", p.Status)
	require.Zero(t, p.Retries, "failed for good: the template will not get better")
	require.Contains(t, p.ErrorMsg, hostile.String())
	require.Contains(t, p.ErrorMsg, "range may only iterate over a field")
	m := b.job(machine)
	require.Equal(t, "queued", m.Status, "past its deadline once: retried, since a loaded machine can do that to a sound template")
	require.Equal(t, 1, m.Retries)
	require.Contains(t, m.ErrorMsg, slow.ID.String())
	require.Contains(t, m.ErrorMsg, "render budget")
	for _, id := range []uuid.UUID{place, thing, elsewhere} {
		require.Equal(t, "completed", b.job(id).Status)
	}
	vs := b.vectors(b.project)
	require.Len(t, vs, 2)
	require.Equal(t, hash("London (Place)"), vs[vkey{place, good.ID}].hash)
	require.Contains(t, vs, vkey{thing, uuid.Nil})
	require.Contains(t, b.vectors(other), vkey{elsewhere, uuid.Nil})
}

// TestWorkerRenderBatchBudget: once a batch has spent its render budget,
// its remaining objects are retried later instead of holding the worker;
// what was rendered in time is embedded.
func TestWorkerRenderBatchBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, false, func(c *embedding.Config) { c.RenderBatchBudget = time.Nanosecond })
	ctx := context.Background()
	_, err := b.policies.Create(ctx, b.project, embeddingpolicy.CreateParams{
		Name: "people", ObjectTypes: []string{"Person"}, Fields: []string{}, Template: "{{.name}}", Model: llm.LocalEmbedModel,
	})
	require.NoError(t, err)
	ids := []uuid.UUID{
		b.object(b.project, "Person", "Ada Lovelace", "", nil),
		b.object(b.project, "Person", "Grace Hopper", "", nil),
		b.object(b.project, "Person", "Alan Turing", "", nil),
	}
	b.enqueue(b.project, ids...)
	b.start()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM graph_embedding_jobs
			WHERE status = 'running' OR (status = 'queued' AND retry_count = 0)`).Scan(&n))
		return n == 0
	}, waitFor, 10*time.Millisecond)
	var completed, retried int
	for _, id := range ids {
		j := b.job(id)
		switch {
		case j.Status == "completed":
			completed++
		case j.Status == "queued" && j.Retries == 1:
			retried++
			require.Contains(t, j.ErrorMsg, "render budget of 1ns was spent")
		default:
			require.Failf(t, "unexpected job state", "%s: %s after %d retries (%s)", id, j.Status, j.Retries, j.ErrorMsg)
		}
	}
	require.Equal(t, 1, completed, "the first object of the batch renders")
	require.Equal(t, 2, retried)
	require.Len(t, b.vectors(b.project), 1)
}

// TestWorkerLocksObjectsBeforeJobs: while a delete holds an object (as a
// review rejection does before its cascade reaches the embedding jobs),
// the worker waits for it without holding the object's job, so the
// delete's cascade can take the job: the two cannot deadlock.
func TestWorkerLocksObjectsBeforeJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := context.Background()
	obj := b.object(b.project, "Person", "Ada Lovelace", "", nil)
	b.enqueue(b.project, obj)

	deleter, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = deleter.Rollback(ctx) }()
	_, err = deleter.Exec(ctx, `SELECT id FROM graph_objects WHERE id = $1 FOR UPDATE`, obj)
	require.NoError(t, err)

	b.start()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n))
		return n == 1
	}, waitFor, 5*time.Millisecond, "the worker's write waits for the deleting transaction")
	_, err = deleter.Exec(ctx, `SELECT id FROM graph_embedding_jobs WHERE object_id = $1 FOR UPDATE NOWAIT`, obj)
	require.NoError(t, err, "the waiting worker holds no lock on the object's job")
	require.NoError(t, deleter.Rollback(ctx))

	require.Eventually(t, func() bool { return b.job(obj).Status == "completed" }, waitFor, 10*time.Millisecond)
	require.Len(t, b.vectors(b.project), 1)
}
