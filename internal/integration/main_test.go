package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/activity"
	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/secrets"
)

func TestMain(m *testing.M) {
	if helperProcess() {
		return
	}
	pgtest.Main(m)
}

// memSource is the test's connector: a source held in memory. Its
// listing first fetches the config's url through the Env (so that the
// egress guard is on the path), then reports each item in order.
type memSource struct {
	mu    sync.Mutex
	items map[string]connector.Item
	// walkErr ends the walk with an error after the items.
	walkErr error
	// failing items are reported as Failed, from walk number failFrom on
	// (0: every walk).
	failing  map[string]bool
	failFrom int
	// gate, when set, is received from before each item (the test paces
	// the walk); started is closed when the walk begins.
	gate    chan struct{}
	started chan struct{}
	// delay paces the walk: it waits this long before each item.
	delay time.Duration
	// appendOnly makes the descriptor Append (a feed: lists recent items only).
	appendOnly atomic.Bool
	walks      int
	// reads counts, per item, the walks that read its content (Item).
	reads map[string]int
	state json.RawMessage // the last State the walk saw
	// states are the States every walk saw, in order.
	states []json.RawMessage
	// checkpoint makes the walk record {"through": id} with SetState
	// after each item it reports.
	checkpoint bool
	// breakAfter, when > 0, makes the next walk fail after reporting that
	// many items (then it is cleared).
	breakAfter int
	// logDetails, when set, are logged by each walk before its items.
	logDetails map[string]any
}

func newMemSource() *memSource {
	return &memSource{items: map[string]connector.Item{}, failing: map[string]bool{}, reads: map[string]int{}}
}

func (m *memSource) put(ext, content string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[ext] = connector.Item{
		ExternalID: ext, Version: fmt.Sprintf("v-%x", len(content)) + content[:min(len(content), 8)], Title: "Title " + ext,
		URL: "https://source.test/" + ext, Filename: ext + ".md", MimeType: "text/markdown", Content: []byte(content),
	}
}

func (m *memSource) remove(ext string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.items, ext)
}

func (m *memSource) Descriptor() connector.Descriptor {
	return connector.Descriptor{
		Name: "mem", DisplayName: "Memory", Description: "A source held in memory.", Category: "test", AuthType: "token",
		RequiredFields: []connector.Field{{Name: "url", Type: connector.TypeURL, Description: "Where the listing is.", Target: true}},
		OptionalFields: []connector.Field{
			{Name: "token", Type: connector.TypeString, Description: "The access token.", Secret: true},
			{Name: "tags", Type: connector.TypeArray, Description: "Tags."},
			{Name: "max_items", Type: connector.TypeInteger, Description: "A cap."},
			{Name: "verbose", Type: connector.TypeBoolean, Description: "More logs."},
		},
		DocumentationURL: "https://docs.test/mem",
		Append:           m.appendOnly.Load(),
	}
}

func (m *memSource) Validate(cfg connector.Config) error {
	if cfg.Int("max_items", 1) < 1 {
		return errs.New(errs.Invalid, "max_items must be at least 1")
	}
	return nil
}

// fetch GETs the config's url with the token, through env.
func fetch(ctx context.Context, env connector.Env, cfg connector.Config) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.String("url"), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.String("token"))
	resp, err := env.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Careless on purpose: the domain must redact it.
		return fmt.Errorf("listing answered %d for token %s", resp.StatusCode, cfg.String("token"))
	}
	return nil
}

func (m *memSource) Test(ctx context.Context, env connector.Env, cfg connector.Config) error {
	return fetch(ctx, env, cfg)
}

func (m *memSource) Walk(ctx context.Context, env connector.Env, cfg connector.Config, _ connector.Options, w connector.Walker) error {
	m.mu.Lock()
	m.walks++
	m.state = w.State()
	m.states = append(m.states, m.state)
	started, gate, delay := m.started, m.gate, m.delay
	checkpoint, breakAfter := m.checkpoint, m.breakAfter
	m.breakAfter = 0
	ids := make([]string, 0, len(m.items))
	for id := range m.items {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	items := make([]connector.Item, len(ids))
	for i, id := range ids {
		items[i] = m.items[id]
	}
	failing := maps(m.failing)
	if m.walks < m.failFrom {
		failing = nil
	}
	walkErr, logDetails := m.walkErr, m.logDetails
	m.mu.Unlock()
	if started != nil {
		close(started)
	}
	if err := fetch(ctx, env, cfg); err != nil {
		return err
	}
	w.Log(ctx, connector.LevelInfo, "listing with token "+cfg.String("token"), map[string]any{
		"token": cfg.String("token"), "request": map[string]any{"headers": []string{"Bearer " + cfg.String("token")}},
	})
	if logDetails != nil {
		w.Log(ctx, connector.LevelInfo, "listing details", logDetails)
	}
	for i, it := range items {
		if checkpoint && i > 0 {
			w.SetState(json.RawMessage(fmt.Sprintf(`{"through":%q}`, items[i-1].ExternalID)))
		}
		if breakAfter > 0 && i == breakAfter {
			return errors.New("the listing broke off midway")
		}
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if failing[it.ExternalID] {
			w.Failed(ctx, it.ExternalID, errors.New("fetch failed"))
			continue
		}
		if v, ok := w.Known(it.ExternalID); ok && v == it.Version {
			if err := w.Unchanged(ctx, it.ExternalID); err != nil {
				return err
			}
			continue
		}
		m.mu.Lock()
		m.reads[it.ExternalID]++
		m.mu.Unlock()
		if err := w.Item(ctx, it); err != nil && !errors.Is(err, connector.ErrSkipItem) {
			return err
		}
	}
	w.SetState(json.RawMessage(fmt.Sprintf(`{"items":%d}`, len(items))))
	return walkErr
}

func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// extractions records what the document service asks of extraction.
type extractions struct {
	mu    sync.Mutex
	calls []extractionCall
}

type extractionCall struct {
	Document   uuid.UUID
	Datasource *uuid.UUID
	Trigger    string
}

func (e *extractions) EnqueueDocument(_ context.Context, _ pgx.Tx, _, doc uuid.UUID, datasource *uuid.UUID, trigger string, _ bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, extractionCall{doc, datasource, trigger})
	return nil
}

func (e *extractions) CancelDocumentJobs(context.Context, pgx.Tx, uuid.UUID, uuid.UUID) error {
	return nil
}

func (e *extractions) list() []extractionCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

type bundle struct {
	pool    *pgxpool.Pool
	svc     *integration.Service
	docs    *document.Service
	jobs    *jobqueue.Client
	src     *memSource
	extract *extractions
	project uuid.UUID
	site    *httptest.Server
	hits    *hits
}

// hits counts the requests of the source's site and the tokens sent.
type hits struct {
	mu     sync.Mutex
	tokens []string
}

type setupOpts struct {
	allow []string      // egress allow list; default loopback
	start bool          // start the job client (the sync worker)
	lease time.Duration // the sync jobs' lease (0: the default)
	pool  *pgxpool.Pool
	// listener is told of every sync that ended.
	listener integration.SyncListener
	// configure changes the service's configuration (nil: none).
	configure func(*integration.Config)
}

// maxItemBytes bounds the tests' items.
const maxItemBytes = 64 << 10

// secretKey is the tests' sealing key (base64 of 32 bytes).
const secretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

func setup(t testing.TB, o setupOpts) *bundle {
	t.Helper()
	ctx := context.Background()
	pool := o.pool
	if pool == nil {
		pool = pgtest.New(t)
	}
	b := &bundle{pool: pool, src: newMemSource(), extract: &extractions{}, hits: &hits{}}
	b.site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.mu.Lock()
		b.hits.tokens = append(b.hits.tokens, r.Header.Get("Authorization"))
		b.hits.mu.Unlock()
		if r.URL.Path == "/denied" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(b.site.Close)
	b.project = newProject(t, pool)
	n := events.NewNotifier(pool, slog.New(slog.DiscardHandler))
	require.NoError(t, n.Start(ctx))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	allow := o.allow
	if allow == nil {
		allow = []string{"127.0.0.0/8"}
	}
	var err error
	b.svc, b.docs, b.jobs, err = build(pool, n, b.src, b.extract, allow, o.lease, t.TempDir(), func(c *integration.Config) {
		c.Listener = o.listener
		if o.configure != nil {
			o.configure(c)
		}
	})
	require.NoError(t, err)
	if o.start {
		b.startWorkers(t)
	}
	return b
}

// startWorkers starts the job client: the sync worker and the parsers.
func (b *bundle) startWorkers(t testing.TB) {
	t.Helper()
	require.NoError(t, b.jobs.Start(context.Background()))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.jobs.Stop(sctx)
	})
}

// build wires the integration service as app.go does, with src as its
// only connector and every connection through an egress guard allowing
// allow; the job client is not started.
func build(pool *pgxpool.Pool, n *events.Notifier, src connector.Connector, ext *extractions, allow []string, lease time.Duration, cache string,
	opts ...func(*integration.Config),
) (*integration.Service, *document.Service, *jobqueue.Client, error) {
	jobs, err := jobqueue.NewClient(pool, jobqueue.Config{Notifier: n, PollInterval: 200 * time.Millisecond, ReapInterval: 100 * time.Millisecond})
	if err != nil {
		return nil, nil, nil, err
	}
	docs, err := document.NewService(document.Config{
		Pool: pool, Jobs: jobs, Extraction: ext, Activity: activity.ForgetterOf(activity.ResourceDocument), Embedders: noEmbedder{}, Now: time.Now,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	guard, err := egress.New(allow)
	if err != nil {
		return nil, nil, nil, err
	}
	reg, err := integration.NewRegistry(src)
	if err != nil {
		return nil, nil, nil, err
	}
	box, err := secrets.New(secretKey)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg := integration.Config{
		Pool: pool, Jobs: jobs, Box: box, Registry: reg, Documents: docs, Egress: guard, CacheDir: cache,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }, Lease: lease, MaxItemBytes: maxItemBytes,
	}
	for _, o := range opts {
		o(&cfg)
	}
	svc, err := integration.NewService(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := svc.AddQueue(2, 0); err != nil {
		return nil, nil, nil, err
	}
	// A started client parses what syncs store.
	return svc, docs, jobs, docs.AddQueues(1, 0)
}

type noEmbedder struct{}

func (noEmbedder) Embedder(context.Context, uuid.UUID) (llm.Embedder, error) {
	return nil, errors.New("no embedder in these tests")
}

func newProject(t testing.TB, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	org, project := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, now(), now())`, org, org.String())
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	require.NoError(t, err)
	return project
}

// cfg is a config of the test connector.
func (b *bundle) cfg(extra map[string]any) map[string]json.RawMessage {
	out := map[string]json.RawMessage{"url": raw(b.site.URL + "/list"), "token": raw("tok-SECRET-123456")}
	for k, v := range extra {
		out[k] = raw(v)
	}
	return out
}

func raw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// create configures integration name.
func (b *bundle) create(t testing.TB, name string, extra map[string]any) integration.Integration {
	t.Helper()
	i, err := b.svc.Create(context.Background(), b.project, nil, integration.CreateParams{
		Name: name, DisplayName: "Source " + name, ProviderType: "mem", Config: b.cfg(extra),
	})
	require.NoError(t, err)
	return i
}

func count(t testing.TB, db *pgxpool.Pool, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// syncRow is a sync job as stored.
type syncRow struct {
	Status, Phase, Error                                           string
	Total, Processed, Created, Updated, Unchanged, Deleted, Failed int
}

func (b *bundle) job(t testing.TB, id uuid.UUID) syncRow {
	t.Helper()
	var r syncRow
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT status, phase, COALESCE(error_msg, ''), total_items, processed_items,
		created_items, updated_items, unchanged_items, deleted_items, failed_items FROM integration_sync_jobs WHERE id = $1`, id).
		Scan(&r.Status, &r.Phase, &r.Error, &r.Total, &r.Processed, &r.Created, &r.Updated, &r.Unchanged, &r.Deleted, &r.Failed))
	return r
}

// syncAndWait queues a sync and waits for it to end.
// firstSync puts the items ids at the source, creates the integration
// "docs" and syncs it.
func (b *bundle) firstSync(t testing.TB, ids ...string) {
	t.Helper()
	for _, id := range ids {
		b.src.put(id, "# "+id+"\n\ntext "+id)
	}
	b.create(t, "docs", nil)
	require.Equal(t, "completed", b.syncAndWait(t, "docs", integration.SyncOptions{}).Status)
}

func (b *bundle) syncAndWait(t testing.TB, name string, opts integration.SyncOptions) syncRow {
	t.Helper()
	res, err := b.svc.Sync(context.Background(), b.project, name, integration.TriggerManual, opts)
	require.NoError(t, err)
	require.True(t, res.Success, res.Message)
	return b.wait(t, res.JobID)
}

func (b *bundle) wait(t testing.TB, id uuid.UUID) syncRow {
	t.Helper()
	var r syncRow
	require.Eventually(t, func() bool {
		r = b.job(t, id)
		return jobqueue.Status(r.Status).Final()
	}, 30*time.Second, 20*time.Millisecond)
	return r
}

// docs lists the project's synced documents: external id to content.
func (b *bundle) synced(t testing.TB) map[string]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT external_id, convert_from(content, 'UTF8') FROM documents WHERE project_id = $1 AND datasource_id IS NOT NULL`, b.project)
	require.NoError(t, err)
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		require.NoError(t, rows.Scan(&k, &v))
		out[k] = v
	}
	require.NoError(t, rows.Err())
	return out
}
