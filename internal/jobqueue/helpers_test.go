package jobqueue_test

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// waitFor bounds every wait in these tests.
const waitFor = 20 * time.Second

const queueName = "test_queue"

// testBundle is one test's database with a job table "jobs" (plus a
// "job_logs" table for OutcomeFunc).
type testBundle struct {
	url  string
	pool *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	url := pgtest.NewURL(t)
	pool := openPool(t, url)
	ctx := context.Background()
	_, err := pool.Exec(ctx, jobqueue.CreateTableSQL("jobs", "payload int NOT NULL DEFAULT 0"))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE job_logs (job_id uuid NOT NULL, status text NOT NULL, message text)`)
	require.NoError(t, err)
	return &testBundle{url: url, pool: pool}
}

func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	pool, err := postgres.Open(ctx, url, 20)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// jobSpec describes a job to insert; zero values take the defaults.
type jobSpec struct {
	project    *uuid.UUID
	priority   int
	maxRetries int // 0 means the column default (3)
	runAt      time.Time
	status     jobqueue.Status
	// traceParent is the trace_parent column ("": NULL).
	traceParent string
}

// insert inserts jobs in one transaction that also notifies the queue, as
// a domain would.
func (b *testBundle) insert(t *testing.T, specs ...jobSpec) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	ids := make([]uuid.UUID, len(specs))
	err := postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		for i, s := range specs {
			ids[i] = uuid.Must(uuid.NewV7())
			runAt := s.runAt
			if runAt.IsZero() {
				runAt = now
			}
			maxRetries := s.maxRetries
			if maxRetries == 0 {
				maxRetries = 3
			}
			status := s.status
			if status == "" {
				status = jobqueue.StatusQueued
			}
			var parent *string
			if s.traceParent != "" {
				parent = &s.traceParent
			}
			batch.Queue(`INSERT INTO jobs (id, project_id, priority, max_retries, run_at, status, created_at, updated_at, trace_parent)
VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8)`, ids[i], s.project, s.priority, maxRetries, runAt, string(status), now, parent)
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		return jobqueue.Notify(ctx, tx, queueName)
	})
	require.NoError(t, err)
	return ids
}

func (b *testBundle) insertN(t *testing.T, n int, spec jobSpec) []uuid.UUID {
	t.Helper()
	specs := make([]jobSpec, n)
	for i := range specs {
		specs[i] = spec
	}
	return b.insert(t, specs...)
}

// jobRow is what tests read back.
type jobRow struct {
	Status     string
	Attempt    int
	RetryCount int
	ErrorMsg   *string
	LockedBy   *string
	RunAt      time.Time
}

func (b *testBundle) job(t *testing.T, id uuid.UUID) jobRow {
	t.Helper()
	var r jobRow
	err := b.pool.QueryRow(context.Background(),
		`SELECT status, attempt, retry_count, error_msg, locked_by, run_at FROM jobs WHERE id = $1`, id).
		Scan(&r.Status, &r.Attempt, &r.RetryCount, &r.ErrorMsg, &r.LockedBy, &r.RunAt)
	require.NoError(t, err)
	return r
}

func (b *testBundle) countStatus(t *testing.T, status jobqueue.Status) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM jobs WHERE status = $1`, string(status)).Scan(&n))
	return n
}

// requireStatus waits until job id has status.
func (b *testBundle) requireStatus(t *testing.T, id uuid.UUID, status jobqueue.Status) jobRow {
	t.Helper()
	var last jobRow
	require.Eventually(t, func() bool {
		last = b.job(t, id)
		return last.Status == string(status)
	}, waitFor, 5*time.Millisecond, "job %s never became %s", id, status)
	return last
}

// process is one simulated Graphmill process: its own notifier and client.
type process struct {
	notifier *events.Notifier
	client   *jobqueue.Client
}

// opts tunes newProcess.
type opts struct {
	cfg   jobqueue.Config
	queue jobqueue.QueueConfig
	pool  *pgxpool.Pool // default: the bundle's pool
	// noStop leaves stopping to the test.
	noStop bool
}

// newProcess starts a client with one queue on the jobs table. The queue
// defaults to fast retries, a short reap interval and a poll far too slow
// to mask a missing notification.
func (b *testBundle) newProcess(t *testing.T, o opts) *process {
	t.Helper()
	pool := o.pool
	if pool == nil {
		pool = b.pool
	}
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("JOBQUEUE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	n := events.NewNotifier(pool, logger)
	require.NoError(t, n.Start(context.Background()))
	cfg := o.cfg
	cfg.Logger = logger
	cfg.Notifier = n
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Minute
	}
	if cfg.ReapInterval == 0 {
		cfg.ReapInterval = 50 * time.Millisecond
	}
	c, err := jobqueue.NewClient(pool, cfg)
	require.NoError(t, err)
	qc := o.queue
	qc.Name = queueName
	qc.Table = "jobs"
	if qc.BackoffFunc == nil {
		qc.BackoffFunc = func(int) time.Duration { return 10 * time.Millisecond }
	}
	if qc.Handler == nil {
		qc.Handler = jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error { return make([]error, len(jobs)) })
	}
	require.NoError(t, c.AddQueue(qc))
	p := &process{notifier: n, client: c}
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Stop(context.Background())) })
	if !o.noStop {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			_ = c.Stop(ctx)
		})
	}
	return p
}

// executions counts handler runs per job id.
type executions struct {
	mu sync.Mutex
	n  map[uuid.UUID]int
}

func newExecutions() *executions { return &executions{n: map[uuid.UUID]int{}} }

func (e *executions) add(jobs []jobqueue.Job) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, j := range jobs {
		e.n[j.ID]++
	}
}

func (e *executions) snapshot() map[uuid.UUID]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[uuid.UUID]int, len(e.n))
	for k, v := range e.n {
		out[k] = v
	}
	return out
}

// requireNever checks that cond stays false for d, polling every tick in
// the test's own goroutine. testify's Never runs cond on a goroutine it
// does not wait for, so a check still in flight when the test ends would
// query a pool its cleanup already closed.
func requireNever(t *testing.T, cond func() bool, d, tick time.Duration, msg ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		require.False(t, cond(), msg...)
		time.Sleep(tick)
	}
}

// errOf is the error of a transition, for tests that need only that.
func errOf(_ jobqueue.Changed, err error) error { return err }

// declaredClient is a client of the test's database with the test queue
// declared (no worker runs), for the administrative calls.
func declaredClient(t *testing.T, b *testBundle) *jobqueue.Client {
	t.Helper()
	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{})
	require.NoError(t, err)
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{Name: queueName, Table: "jobs", Handler: jobqueue.HandlerFunc(nil)}))
	return c
}

// blockUntilCancelled is a handler that closes started, waits for its
// context to end and sends the cause to observed.
func blockUntilCancelled(started chan struct{}, observed chan error) jobqueue.HandlerFunc {
	return func(ctx context.Context, _ []jobqueue.Job) []error {
		close(started)
		<-ctx.Done()
		observed <- context.Cause(ctx)
		return []error{ctx.Err()}
	}
}

// requireCancelledWithin requires that the handler reports ErrCancelled on
// observed within d.
func requireCancelledWithin(t *testing.T, observed <-chan error, d time.Duration, msg string) {
	t.Helper()
	select {
	case cause := <-observed:
		require.ErrorIs(t, cause, jobqueue.ErrCancelled)
	case <-time.After(d):
		require.FailNow(t, msg)
	}
}
