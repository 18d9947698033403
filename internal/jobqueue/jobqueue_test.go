package jobqueue_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/startstop"
)

// TestCreateTableSQL: a table made by CreateTableSQL takes the defaults of
// CommonColumns, refuses unknown states and has both partial indexes. It
// needs no commit: it runs in a transaction rolled back at the end.
func TestCreateTableSQL(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	ctx := context.Background()
	_, err := tx.Exec(ctx, jobqueue.CreateTableSQL("create_table_sql_jobs", "payload int NOT NULL DEFAULT 0"))
	require.NoError(t, err)
	now := time.Now()
	id := uuid.Must(uuid.NewV7())
	_, err = tx.Exec(ctx, `INSERT INTO create_table_sql_jobs (id, run_at, created_at, updated_at) VALUES ($1, $2, $2, $2)`, id, now)
	require.NoError(t, err)
	var status string
	var attempt, maxRetries, priority int
	require.NoError(t, tx.QueryRow(ctx, `SELECT status, attempt, max_retries, priority FROM create_table_sql_jobs WHERE id = $1`, id).
		Scan(&status, &attempt, &maxRetries, &priority))
	require.Equal(t, "queued", status)
	require.Equal(t, 0, attempt)
	require.Equal(t, 3, maxRetries)
	require.Equal(t, 0, priority)

	sp, err := tx.Begin(ctx)
	require.NoError(t, err)
	_, err = sp.Exec(ctx, `UPDATE create_table_sql_jobs SET status = 'done' WHERE id = $1`, id)
	require.Error(t, err, "the status check constraint rejects unknown states")
	require.NoError(t, sp.Rollback(ctx))

	var defs []string
	rows, err := tx.Query(ctx, `SELECT indexdef FROM pg_indexes WHERE tablename = 'create_table_sql_jobs' ORDER BY indexname`)
	require.NoError(t, err)
	defs, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, defs, `CREATE INDEX create_table_sql_jobs_queued_idx ON public.create_table_sql_jobs USING btree (priority DESC, run_at, id) WHERE (status = 'queued'::text)`)
	require.Contains(t, defs, `CREATE INDEX create_table_sql_jobs_running_idx ON public.create_table_sql_jobs USING btree (locked_until) WHERE (status = 'running'::text)`)
}

func TestManyWorkersRunEachJobOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const total = 1000
	ids := b.insertN(t, total, jobSpec{})
	exec := newExecutions()
	reg := prometheus.NewRegistry()
	var procs []*process
	for i := range 3 {
		procs = append(procs, b.newProcess(t, opts{
			cfg: jobqueue.Config{Metrics: reg}, // shared registry: collectors are shared, not duplicated
			queue: jobqueue.QueueConfig{Concurrency: 4, BatchSize: 1 + i*4, Handler: jobqueue.HandlerFunc(
				func(_ context.Context, jobs []jobqueue.Job) []error {
					exec.add(jobs)
					return make([]error, len(jobs))
				})},
		}))
	}
	require.Eventually(t, func() bool { return b.countStatus(t, jobqueue.StatusCompleted) == total }, waitFor, 10*time.Millisecond)
	counts := exec.snapshot()
	require.Len(t, counts, total)
	for _, id := range ids {
		require.Equal(t, 1, counts[id], "job %s ran %d times", id, counts[id])
	}
	// A batch counts its jobs completed after its commit, which the count
	// above may see first: the metrics are final once every batch ended.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for _, p := range procs {
		require.NoError(t, p.client.Stop(ctx))
	}
	require.InDelta(t, float64(total), metricValue(t, reg, "graphmill_jobqueue_jobs_claimed_total"), 0, "claimed")
	require.InDelta(t, float64(total), metricValue(t, reg, "graphmill_jobqueue_jobs_completed_total"), 0, "completed")
	require.Equal(t, 1, testutil.CollectAndCount(reg, "graphmill_jobqueue_batch_duration_seconds"))
}

// metricValue gathers the single counter series of name from reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			require.Len(t, mf.GetMetric(), 1)
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	require.FailNow(t, "metric not registered", name)
	return 0
}

func TestPriorityOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := time.Now().Add(-time.Minute)
	var specs []jobSpec
	for i := range 30 {
		specs = append(specs, jobSpec{priority: (i * 7) % 5, runAt: base.Add(time.Duration(i) * time.Millisecond)})
	}
	ids := b.insert(t, specs...)
	var mu sync.Mutex
	var order []uuid.UUID
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			mu.Lock()
			defer mu.Unlock()
			for _, j := range jobs {
				order = append(order, j.ID)
			}
			return make([]error, len(jobs))
		})}})
	require.Eventually(t, func() bool { return b.countStatus(t, jobqueue.StatusCompleted) == len(ids) }, waitFor, 5*time.Millisecond)
	want := slices.Clone(ids)
	idx := func(id uuid.UUID) int { return slices.Index(ids, id) }
	slices.SortStableFunc(want, func(x, y uuid.UUID) int {
		return specs[idx(y)].priority - specs[idx(x)].priority // higher first, then insertion (run_at) order
	})
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, order)
}

func TestNotifyWakesIdleWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan uuid.UUID, 1)
	b.newProcess(t, opts{
		cfg: jobqueue.Config{PollInterval: time.Hour}, // only a notification can wake it
		queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
			started <- jobs[0].ID
			return make([]error, len(jobs))
		})},
	})
	for range 3 {
		id := b.insert(t, jobSpec{})[0]
		select {
		case got := <-started:
			require.Equal(t, id, got)
		case <-time.After(waitFor):
			require.FailNow(t, "the notification did not wake the worker")
		}
		b.requireStatus(t, id, jobqueue.StatusCompleted)
	}
}

// TestFutureRunAtIsPickedUpByPoll: a job that is not due is left alone by
// the polls until the client's clock reaches its run_at (no notification
// arrives then), and a poll picks it up.
func TestFutureRunAtIsPickedUpByPoll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var offset atomic.Int64 // the stub clock's lead over the wall clock
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	polls := make(chan struct{}, 100)
	b.newProcess(t, opts{cfg: jobqueue.Config{Now: func() time.Time {
		select {
		case polls <- struct{}{}:
		default:
		}
		return clock()
	}, PollInterval: 20 * time.Millisecond}})
	id := b.insert(t, jobSpec{runAt: time.Now().Add(time.Hour)})[0]
	for range 10 { // ten readings of the clock: polls have come and gone
		<-polls
	}
	require.Equal(t, "queued", b.job(t, id).Status, "not due yet")
	offset.Store(int64(2 * time.Hour))
	b.requireStatus(t, id, jobqueue.StatusCompleted)
}

func TestKilledWorkerJobIsRetriedElsewhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Process A runs the job, then loses its database (its pool is
	// closed): no more heartbeats, as if it had crashed.
	poolA := openPool(t, b.url)
	startedA := make(chan struct{})
	a := b.newProcess(t, opts{pool: poolA, noStop: true, queue: jobqueue.QueueConfig{
		Lease: 300 * time.Millisecond,
		Handler: jobqueue.HandlerFunc(func(ctx context.Context, jobs []jobqueue.Job) []error {
			close(startedA)
			<-ctx.Done()
			return []error{ctx.Err()}
		}),
	}})
	id := b.insert(t, jobSpec{})[0]
	<-startedA
	require.Equal(t, a.client.WorkerID(), *b.job(t, id).LockedBy)
	require.NoError(t, a.notifier.Stop(context.Background()))
	poolA.Close()

	// Process B reaps the expired lease and runs the job.
	var ranB atomic.Int32
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{Lease: 300 * time.Millisecond, Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			ranB.Add(1)
			return make([]error, len(jobs))
		})}, cfg: jobqueue.Config{PollInterval: 20 * time.Millisecond}})
	r := b.requireStatus(t, id, jobqueue.StatusCompleted)
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, 1, r.RetryCount, "the lost attempt counts as a failure")
	require.Equal(t, int32(1), ranB.Load())

	// A is finally stopped: its handler is cancelled, and it must not
	// overwrite the job B completed.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = a.client.Stop(ctx)
	require.Equal(t, "completed", b.job(t, id).Status)
}

func TestReaperRule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Minute)
	ids := b.insert(t, jobSpec{maxRetries: 2}, jobSpec{maxRetries: 2})
	// Left behind by a crashed worker: one with a retry left, one without.
	_, err := b.pool.Exec(ctx, `UPDATE jobs SET status = 'running', attempt = 1, retry_count = 1, locked_by = 'dead', locked_until = $2 WHERE id = $1`, ids[0], past)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE jobs SET status = 'running', attempt = 3, retry_count = 2, locked_by = 'dead', locked_until = $2 WHERE id = $1`, ids[1], past)
	require.NoError(t, err)
	var mu sync.Mutex
	var outcomes []jobqueue.Outcome
	b.newProcess(t, opts{cfg: jobqueue.Config{PollInterval: 20 * time.Millisecond}, queue: jobqueue.QueueConfig{
		OutcomeFunc: func(_ context.Context, _ pgx.Tx, outs []jobqueue.Outcome) error {
			mu.Lock()
			defer mu.Unlock()
			outcomes = append(outcomes, outs...)
			return nil
		},
	}})
	r := b.requireStatus(t, ids[0], jobqueue.StatusCompleted)
	require.Equal(t, 2, r.RetryCount)
	r = b.requireStatus(t, ids[1], jobqueue.StatusFailed)
	require.Equal(t, 2, r.RetryCount)
	require.Contains(t, *r.ErrorMsg, "lease expired")
	require.Contains(t, *r.ErrorMsg, "worker dead")
	mu.Lock()
	defer mu.Unlock()
	var reaped int
	for _, o := range outcomes {
		if errors.Is(o.Err, jobqueue.ErrLeaseExpired) {
			reaped++
		}
	}
	require.Equal(t, 2, reaped, "the hook hears of reaped jobs too")
}

func TestHeartbeatKeepsLongJobAlive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The lease is short but generous enough for a loaded 2-core CI machine
	// to get a heartbeat (every third of it) in.
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{Lease: 600 * time.Millisecond, Handler: jobqueue.HandlerFunc(
		func(ctx context.Context, jobs []jobqueue.Job) []error {
			select {
			case <-time.After(3 * time.Second): // several leases long
				return make([]error, len(jobs))
			case <-ctx.Done():
				return []error{context.Cause(ctx)}
			}
		})}})
	id := b.insert(t, jobSpec{})[0]
	r := b.requireStatus(t, id, jobqueue.StatusCompleted)
	require.Equal(t, 1, r.Attempt, "never reaped")
	require.Equal(t, 0, r.RetryCount)
}

func TestCancelRunningJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{})
	observed := make(chan error, 1)
	// Worker process: a long lease, so only the notification can tell it.
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{Lease: time.Minute, Handler: blockUntilCancelled(started, observed)}})
	// API process: an unstarted client, so the worker hears of the cancel
	// only through the notification.
	api, err := jobqueue.NewClient(b.pool, jobqueue.Config{})
	require.NoError(t, err)
	require.NoError(t, api.AddQueue(jobqueue.QueueConfig{Name: queueName, Table: "jobs", Handler: jobqueue.HandlerFunc(nil)}))
	id := b.insert(t, jobSpec{})[0]
	<-started
	require.NoError(t, errOf(api.Cancel(context.Background(), b.pool, queueName, id)))
	requireCancelledWithin(t, observed, time.Second, "the running job's context was not cancelled within a second")
	// The worker's failure must not overwrite the cancellation.
	requireNever(t, func() bool { return b.job(t, id).Status != "cancelled" }, 200*time.Millisecond, 10*time.Millisecond)
	r := b.job(t, id)
	require.Nil(t, r.LockedBy)
}

// TestCancelInTxTakesEffectAtCommit: a cancel in the caller's
// transaction stops the handler of a job running in the same process only
// once it commits: rolled back, the handler goes on (and its job stays
// running); committed, the handler is cancelled within a second, through
// the notification this process hears too.
func TestCancelInTxTakesEffectAtCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	started := make(chan struct{})
	observed := make(chan error, 1)
	p := b.newProcess(t, opts{queue: jobqueue.QueueConfig{Lease: time.Minute, Handler: blockUntilCancelled(started, observed)}})
	id := b.insert(t, jobSpec{})[0]
	<-started

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	changed, err := p.client.CancelWhere(ctx, tx, queueName, jobqueue.Where{IDs: []uuid.UUID{id}})
	require.NoError(t, err)
	require.Len(t, changed, 1)
	require.NoError(t, tx.Rollback(ctx))
	select {
	case cause := <-observed:
		require.FailNow(t, "a rolled-back cancel stopped the handler", "cause %v", cause)
	case <-time.After(500 * time.Millisecond):
	}
	require.Equal(t, "running", b.job(t, id).Status)

	tx, err = b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = p.client.Cancel(ctx, tx, queueName, id)
	require.NoError(t, err)
	select {
	case cause := <-observed:
		require.FailNow(t, "an uncommitted cancel stopped the handler", "cause %v", cause)
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, tx.Commit(ctx))
	requireCancelledWithin(t, observed, time.Second, "the committed cancel did not reach the handler within a second")
	requireNever(t, func() bool { return b.job(t, id).Status != "cancelled" }, 200*time.Millisecond, 10*time.Millisecond)
}

// TestClearOnFinal: the columns a queue clears on final are set to NULL by
// the statement that ends a job (completed, failed, cancelled), and kept
// while it may still run (queued for a retry, or not yet claimed).
func TestClearOnFinal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `ALTER TABLE jobs ADD COLUMN secret text`)
	require.NoError(t, err)
	ids := b.insert(t, jobSpec{}, jobSpec{}, jobSpec{}, jobSpec{runAt: time.Now().Add(time.Hour)}, jobSpec{runAt: time.Now().Add(time.Hour)})
	done, failed, retried, cancelled, waiting := ids[0], ids[1], ids[2], ids[3], ids[4]
	_, err = b.pool.Exec(ctx, `UPDATE jobs SET secret = 's'`)
	require.NoError(t, err)
	outcome := map[uuid.UUID]error{done: nil, failed: jobqueue.Permanent(errors.New("no")), retried: errors.New("later")}
	p := b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		ClearOnFinal: []string{"secret"},
		BackoffFunc:  func(int) time.Duration { return time.Hour },
		Handler: jobqueue.EachFunc(func(_ context.Context, j jobqueue.Job) error {
			return outcome[j.ID]
		}),
	}})
	b.requireStatus(t, done, jobqueue.StatusCompleted)
	b.requireStatus(t, failed, jobqueue.StatusFailed)
	require.Eventually(t, func() bool { return b.job(t, retried).RetryCount == 1 }, waitFor, 5*time.Millisecond)
	require.NoError(t, errOf(p.client.Cancel(ctx, b.pool, queueName, cancelled)))
	secrets := map[uuid.UUID]*string{}
	rows, err := b.pool.Query(ctx, `SELECT id, secret FROM jobs`)
	require.NoError(t, err)
	for rows.Next() {
		var id uuid.UUID
		var v *string
		require.NoError(t, rows.Scan(&id, &v))
		secrets[id] = v
	}
	require.NoError(t, rows.Err())
	for _, id := range []uuid.UUID{done, failed, cancelled} {
		require.Nil(t, secrets[id], "a final job's column is cleared")
	}
	for _, id := range []uuid.UUID{retried, waiting} {
		require.NotNil(t, secrets[id], "a job that may still run keeps it")
	}
	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{})
	require.NoError(t, err)
	require.Error(t, c.AddQueue(jobqueue.QueueConfig{Name: "other", Table: "jobs", ClearOnFinal: []string{"secret; DROP TABLE jobs"}}))
}

func TestCancelAndRetryRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	fail := atomic.Bool{}
	fail.Store(true)
	p := b.newProcess(t, opts{queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			if fail.Load() {
				return []error{jobqueue.Permanent(errors.New("bad input"))}
			}
			return make([]error, len(jobs))
		})}})
	c := p.client
	require.NoError(t, c.Pause(ctx, queueName))
	queued := b.insert(t, jobSpec{})[0]

	// Queued: cancelled at once, never runs.
	require.NoError(t, errOf(c.Cancel(ctx, b.pool, queueName, queued)))
	require.Equal(t, "cancelled", b.job(t, queued).Status)
	_, err := c.Cancel(ctx, b.pool, queueName, queued)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	require.Contains(t, err.Error(), "is cancelled")
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(errOf(c.Retry(ctx, b.pool, queueName, queued))), "only failed jobs retry")
	require.Equal(t, errs.NotFound, errs.CodeOf(errOf(c.Cancel(ctx, b.pool, queueName, uuid.New()))))
	require.Equal(t, errs.NotFound, errs.CodeOf(errOf(c.Retry(ctx, b.pool, queueName, uuid.New()))))

	// Failed: retry puts it back with a clean slate; it then runs.
	failed := b.insert(t, jobSpec{})[0]
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(errOf(c.Retry(ctx, b.pool, queueName, failed))), "queued is not failed")
	require.NoError(t, c.Resume(ctx, queueName))
	r := b.requireStatus(t, failed, jobqueue.StatusFailed)
	require.Equal(t, "bad input", *r.ErrorMsg)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(errOf(c.Cancel(ctx, b.pool, queueName, failed))), "final jobs cannot be cancelled")
	fail.Store(false)
	require.NoError(t, c.Pause(ctx, queueName))
	require.NoError(t, errOf(c.Retry(ctx, b.pool, queueName, failed)))
	r = b.job(t, failed)
	require.Equal(t, "queued", r.Status)
	require.Nil(t, r.ErrorMsg)
	require.Equal(t, 0, r.RetryCount)
	require.NoError(t, c.Resume(ctx, queueName))
	r = b.requireStatus(t, failed, jobqueue.StatusCompleted)
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(errOf(c.Cancel(ctx, b.pool, queueName, failed))))

	// Both work inside the caller's transaction.
	inTx := b.insert(t, jobSpec{status: jobqueue.StatusFailed})[0]
	require.NoError(t, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		return errOf(c.Retry(ctx, tx, queueName, inTx))
	}))
	b.requireStatus(t, inTx, jobqueue.StatusCompleted)
}

func TestPermanentErrorDoesNotRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	exec := newExecutions()
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		Handler: jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
			exec.add(jobs)
			return []error{jobqueue.Permanent(errors.New("unsupported file"))}
		}),
		// The domain's log entry is written with the status change.
		OutcomeFunc: func(ctx context.Context, tx pgx.Tx, outs []jobqueue.Outcome) error {
			for _, o := range outs {
				if _, err := tx.Exec(ctx, `INSERT INTO job_logs (job_id, status, message) VALUES ($1, $2, $3)`,
					o.Job.ID, string(o.Status), o.Err.Error()); err != nil {
					return err
				}
			}
			return nil
		},
	}})
	id := b.insert(t, jobSpec{})[0]
	r := b.requireStatus(t, id, jobqueue.StatusFailed)
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, 0, r.RetryCount)
	require.Equal(t, "unsupported file", *r.ErrorMsg)
	require.Equal(t, 1, exec.snapshot()[id])
	var status, msg string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT status, message FROM job_logs WHERE job_id = $1`, id).Scan(&status, &msg))
	require.Equal(t, "failed", status)
	require.Equal(t, "unsupported file", msg)
}

// TestErrorMessageStorable: a handler's error quoting text the database
// cannot hold (a provider's answer with a NUL, bytes that are not UTF-8)
// fails the job with that message, the NUL dropped and the bytes
// replaced, instead of leaving the job unfinished.
func TestErrorMessageStorable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		Handler: jobqueue.HandlerFunc(func(context.Context, []jobqueue.Job) []error {
			return []error{jobqueue.Permanent(errors.New("provider said: bad\x00 request \xff"))}
		}),
	}})
	id := b.insert(t, jobSpec{})[0]
	r := b.requireStatus(t, id, jobqueue.StatusFailed)
	require.Equal(t, "provider said: bad request \uFFFD", *r.ErrorMsg)
}

func TestRetriesBackOffThenFail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const backoff = 100 * time.Millisecond
	var mu sync.Mutex
	var starts []time.Time
	var statuses []jobqueue.Status
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		BackoffFunc: func(n int) time.Duration { return time.Duration(n) * backoff },
		Handler: jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			return []error{errors.New("provider hiccup")}
		}),
		OutcomeFunc: func(_ context.Context, _ pgx.Tx, outs []jobqueue.Outcome) error {
			mu.Lock()
			defer mu.Unlock()
			for _, o := range outs {
				statuses = append(statuses, o.Status)
			}
			return nil
		},
	}})
	id := b.insert(t, jobSpec{maxRetries: 2})[0]
	r := b.requireStatus(t, id, jobqueue.StatusFailed)
	require.Equal(t, 3, r.Attempt, "first run plus max_retries")
	require.Equal(t, 2, r.RetryCount)
	require.Equal(t, "provider hiccup", *r.ErrorMsg)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, starts, 3)
	require.GreaterOrEqual(t, starts[1].Sub(starts[0]), 1*backoff)
	require.GreaterOrEqual(t, starts[2].Sub(starts[1]), 2*backoff, "the second retry waits longer")
	require.Equal(t, []jobqueue.Status{jobqueue.StatusQueued, jobqueue.StatusQueued, jobqueue.StatusFailed}, statuses)
}

func TestRateLimitDoesNotConsumeRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			if calls.Add(1) <= 4 {
				return []error{jobqueue.RateLimited(errors.New("429 slow down"), 20*time.Millisecond)}
			}
			return make([]error, len(jobs))
		})}})
	id := b.insert(t, jobSpec{maxRetries: 1})[0]
	r := b.requireStatus(t, id, jobqueue.StatusCompleted)
	require.Equal(t, 5, r.Attempt)
	require.Equal(t, 0, r.RetryCount, "rate limits are not failures")
}

func TestRateLimitGivesUpAfterAnHour(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var offset atomic.Int64 // the stub clock's lead over the wall clock
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	// The lease outlasts the clock's jumps, so the reaper stays out of it.
	b.newProcess(t, opts{cfg: jobqueue.Config{Now: clock}, queue: jobqueue.QueueConfig{Lease: 3 * time.Hour, Handler: jobqueue.HandlerFunc(
		func(_ context.Context, _ []jobqueue.Job) []error {
			offset.Add(int64(30 * time.Minute)) // each call "takes" half an hour of waiting
			return []error{jobqueue.RateLimited(errors.New("quota exhausted"), time.Millisecond)}
		})}})
	id := b.insert(t, jobSpec{})[0]
	r := b.requireStatus(t, id, jobqueue.StatusFailed)
	require.Equal(t, "quota exhausted", *r.ErrorMsg, "fails with the provider's message")
	require.Equal(t, 2, r.Attempt, "re-queued after 30 minutes, failed after 60")
	require.Equal(t, 0, r.RetryCount)
}

func TestRequiresReviewAndBatchResults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.insertN(t, 3, jobSpec{})
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{BatchSize: 3, Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			out := make([]error, len(jobs))
			for i, j := range jobs {
				switch j.ID {
				case ids[1]:
					out[i] = jobqueue.ErrRequiresReview
				case ids[2]:
					out[i] = jobqueue.Permanent(errors.New("bad"))
				}
			}
			return out
		})}})
	b.requireStatus(t, ids[0], jobqueue.StatusCompleted)
	r := b.requireStatus(t, ids[1], jobqueue.StatusRequiresReview)
	require.Nil(t, r.ErrorMsg)
	b.requireStatus(t, ids[2], jobqueue.StatusFailed)
}

func TestHandlerPanicIsAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(
		func(context.Context, []jobqueue.Job) []error { panic("boom") })}})
	id := b.insert(t, jobSpec{maxRetries: 1})[0]
	r := b.requireStatus(t, id, jobqueue.StatusFailed)
	require.Equal(t, "handler panic: boom", *r.ErrorMsg)
	require.Equal(t, 2, r.Attempt)
}

func TestSettingsApplyAcrossProcesses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a := b.newProcess(t, opts{})
	var ran atomic.Int32
	other := b.newProcess(t, opts{queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			ran.Add(int32(len(jobs))) //nolint:gosec // tiny
			return make([]error, len(jobs))
		})}})
	settingsOf := func(p *process) jobqueue.Settings {
		s, err := p.client.Settings(queueName)
		require.NoError(t, err)
		return s
	}

	require.NoError(t, a.client.SetConcurrency(ctx, queueName, 7))
	require.NoError(t, a.client.SetBatchSize(ctx, queueName, 5))
	require.Eventually(t, func() bool {
		s := settingsOf(other)
		return s.Concurrency == 7 && s.BatchSize == 5
	}, time.Second, 5*time.Millisecond, "settings reach the other process within a second")
	require.Equal(t, errs.Invalid, errs.CodeOf(a.client.SetConcurrency(ctx, queueName, 0)))
	require.Equal(t, errs.Invalid, errs.CodeOf(a.client.SetBatchSize(ctx, queueName, jobqueue.MaxBatch+1)))

	require.NoError(t, a.client.Pause(ctx, queueName))
	require.Eventually(t, func() bool { return settingsOf(other).Paused }, time.Second, 5*time.Millisecond)
	ids := b.insertN(t, 3, jobSpec{})
	requireNever(t, func() bool { return ran.Load() > 0 }, 300*time.Millisecond, 10*time.Millisecond, "a paused queue claims nothing")
	require.NoError(t, a.client.Resume(ctx, queueName))
	for _, id := range ids {
		b.requireStatus(t, id, jobqueue.StatusCompleted)
	}

	// A process started later reads the persisted settings.
	late := b.newProcess(t, opts{})
	s := settingsOf(late)
	require.Equal(t, 7, s.Concurrency)
	require.Equal(t, 5, s.BatchSize)
	require.False(t, s.Paused)
}

func TestProjectCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bulk, small := uuid.New(), uuid.New()
	// The bulk tenant's jobs come first and outrank the small tenant's.
	b.insertN(t, 60, jobSpec{project: &bulk, priority: 10})
	smallIDs := b.insertN(t, 4, jobSpec{project: &small})
	var mu sync.Mutex
	running := map[uuid.UUID]int{}
	peak := map[uuid.UUID]int{}
	var bulkDone int
	smallDoneAt := -1
	smallDone := 0
	handler := jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
		p := *jobs[0].ProjectID
		mu.Lock()
		running[p]++
		peak[p] = max(peak[p], running[p])
		mu.Unlock()
		time.Sleep(15 * time.Millisecond) // simulated work, not a wait for an assertion
		mu.Lock()
		running[p]--
		if p == bulk {
			bulkDone++
		} else if smallDone++; smallDone == 4 {
			smallDoneAt = bulkDone
		}
		mu.Unlock()
		return make([]error, len(jobs))
	})
	for range 2 { // the cap holds across processes
		b.newProcess(t, opts{queue: jobqueue.QueueConfig{Concurrency: 5, ProjectMax: 2, Handler: handler}})
	}
	for _, id := range smallIDs {
		b.requireStatus(t, id, jobqueue.StatusCompleted)
	}
	require.Eventually(t, func() bool { return b.countStatus(t, jobqueue.StatusCompleted) == 64 }, waitFor, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, peak[bulk], "the bulk tenant never ran more than ProjectMax jobs")
	require.LessOrEqual(t, peak[small], 2)
	require.Less(t, smallDoneAt, 30, "the small tenant finished long before the bulk tenant (bulk jobs done then: %d)", smallDoneAt)
}

func TestStopReleasesJobsInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{}, 2)
	causes := make(chan error, 2)
	p := b.newProcess(t, opts{noStop: true, queue: jobqueue.QueueConfig{Concurrency: 2, Handler: jobqueue.HandlerFunc(
		func(ctx context.Context, jobs []jobqueue.Job) []error {
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return []error{ctx.Err()}
		})}})
	ids := b.insertN(t, 2, jobSpec{})
	<-started
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := p.client.Stop(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, <-causes, jobqueue.ErrShutdown)
	for _, id := range ids {
		r := b.job(t, id)
		require.Equal(t, "queued", r.Status, "released, not failed")
		require.Equal(t, 0, r.RetryCount)
		require.Nil(t, r.LockedBy)
		require.Nil(t, r.ErrorMsg)
	}
	// Another process picks them up.
	b.newProcess(t, opts{})
	for _, id := range ids {
		b.requireStatus(t, id, jobqueue.StatusCompleted)
	}
}

func TestStopWaitsForBatchesInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{})
	release := make(chan struct{})
	p := b.newProcess(t, opts{noStop: true, queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			close(started)
			<-release
			return make([]error, len(jobs))
		})}})
	id := b.insert(t, jobSpec{})[0]
	<-started
	stopped := make(chan error)
	go func() { stopped <- p.client.Stop(context.Background()) }()
	close(release)
	require.NoError(t, <-stopped)
	require.Equal(t, "completed", b.job(t, id).Status)
	// Nothing more is claimed after Stop.
	later := b.insert(t, jobSpec{})[0]
	requireNever(t, func() bool { return b.job(t, later).Status != "queued" }, 200*time.Millisecond, 10*time.Millisecond)
}

// TestPauseLetsBatchInFlightFinish: pausing stops new claims; the batch
// already running finishes and is recorded.
func TestPauseLetsBatchInFlightFinish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var ran atomic.Int32
	p := b.newProcess(t, opts{queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			ran.Add(int32(len(jobs))) //nolint:gosec // tiny
			select {
			case started <- struct{}{}:
			default:
			}
			<-release
			return make([]error, len(jobs))
		})}})
	first := b.insert(t, jobSpec{})[0]
	<-started
	require.NoError(t, p.client.Pause(ctx, queueName))
	require.Eventually(t, func() bool {
		s, err := p.client.Settings(queueName)
		require.NoError(t, err)
		return s.Paused
	}, time.Second, 5*time.Millisecond)
	later := b.insert(t, jobSpec{})[0]
	close(release)
	b.requireStatus(t, first, jobqueue.StatusCompleted)
	requireNever(t, func() bool { return b.job(t, later).Status != "queued" }, 300*time.Millisecond, 10*time.Millisecond,
		"a paused queue claims nothing new")
	require.Equal(t, int32(1), ran.Load())
	require.NoError(t, p.client.Resume(ctx, queueName))
	b.requireStatus(t, later, jobqueue.StatusCompleted)
}

// TestFinishInTx: a handler that records its success in its own
// transaction commits its results and the final status together: a cancel
// arriving afterwards finds the job final (409), the outcome hook runs once,
// and a job cancelled before the handler's commit is refused.
func TestFinishInTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var outcomes atomic.Int32
	var p *process
	cancelFirst := make(chan struct{}, 1)
	p = b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		Handler: jobqueue.HandlerFunc(func(ctx context.Context, jobs []jobqueue.Job) []error {
			out := make([]error, len(jobs))
			for i, j := range jobs {
				wctx := context.WithoutCancel(ctx) // the refusal comes from FinishInTx, not the context
				select {
				case <-cancelFirst: // the job is cancelled while it works
					require.NoError(t, errOf(p.client.Cancel(wctx, b.pool, queueName, j.ID)))
				default:
				}
				out[i] = postgres.WithTx(wctx, b.pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(wctx, `INSERT INTO job_logs (job_id, status, message) VALUES ($1, 'completed', 'result')`, j.ID); err != nil {
						return err
					}
					return p.client.FinishInTx(wctx, tx, queueName, j, jobqueue.StatusCompleted)
				})
			}
			return out
		}),
		OutcomeFunc: func(_ context.Context, _ pgx.Tx, outs []jobqueue.Outcome) error {
			outcomes.Add(int32(len(outs))) //nolint:gosec // tiny
			return nil
		},
	}})

	id := b.insert(t, jobSpec{})[0]
	b.requireStatus(t, id, jobqueue.StatusCompleted)
	_, err := p.client.Cancel(ctx, b.pool, queueName, id)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err), "a finished job cannot be cancelled")
	var results int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM job_logs WHERE job_id = $1`, id).Scan(&results))
	require.Equal(t, 1, results)
	time.Sleep(100 * time.Millisecond) // the engine's own record comes after the handler
	require.Equal(t, int32(1), outcomes.Load(), "the outcome hook runs once")

	// Cancelled before the handler commits: FinishInTx refuses and the
	// handler's writes roll back.
	cancelFirst <- struct{}{}
	second := b.insert(t, jobSpec{})[0]
	b.requireStatus(t, second, jobqueue.StatusCancelled)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM job_logs WHERE job_id = $1 AND message = 'result'`, second).Scan(&results))
	require.Zero(t, results)
}

// TestFinishBatchInTx: a batched handler finishes its successful jobs in
// the transaction that writes their results, with one statement. Before the
// handler even returns (a crash there loses nothing), those jobs are final
// with their results and their outcomes announced once, while the failed
// job is left to the engine. When a job of the batch is lost before the
// commit (cancelled, its notification not heard yet), nothing is written and the others go back to the queue without
// counting a failure, to be finished once by a later batch.
func TestFinishBatchInTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var outcomes sync.Map // job id -> count of outcomes recorded
	var p *process
	var (
		mu       sync.Mutex
		failing  = map[uuid.UUID]bool{}
		cancelOf = map[uuid.UUID]bool{} // cancelled by the handler before its commit
	)
	committed := make(chan []jobqueue.Job, 4)
	release := make(chan struct{})
	p = b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		BatchSize: 4,
		Handler: jobqueue.HandlerFunc(func(ctx context.Context, jobs []jobqueue.Job) []error {
			wctx := context.WithoutCancel(ctx) // the refusal comes from FinishBatchInTx, not the context
			out := make([]error, len(jobs))
			var ok []jobqueue.Job
			mu.Lock()
			for i, j := range jobs {
				if failing[j.ID] {
					out[i] = jobqueue.Permanent(errors.New("bad input"))
					continue
				}
				if cancelOf[j.ID] {
					// Lost to a cancel whose notification never came (the
					// heartbeat would notice it later): the batch's context
					// stays alive, only FinishBatchInTx sees the loss.
					delete(cancelOf, j.ID)
					_, err := b.pool.Exec(wctx, `UPDATE jobs SET status = 'cancelled', locked_by = NULL, completed_at = now() WHERE id = $1`, j.ID)
					require.NoError(t, err)
				}
				ok = append(ok, j)
			}
			mu.Unlock()
			err := postgres.WithTx(wctx, b.pool, func(tx pgx.Tx) error {
				for _, j := range ok {
					if _, err := tx.Exec(wctx, `INSERT INTO job_logs (job_id, status, message) VALUES ($1, 'completed', 'result')`, j.ID); err != nil {
						return err
					}
				}
				return p.client.FinishBatchInTx(wctx, tx, queueName, ok, jobqueue.StatusCompleted)
			})
			for i := range jobs {
				if out[i] == nil && err != nil {
					out[i] = err
				}
			}
			if err == nil {
				committed <- ok
				<-release
			}
			return out
		}),
		OutcomeFunc: func(_ context.Context, _ pgx.Tx, outs []jobqueue.Outcome) error {
			for _, o := range outs {
				if o.Status.Final() {
					n, _ := outcomes.LoadOrStore(o.Job.ID, new(atomic.Int32))
					n.(*atomic.Int32).Add(1)
				}
			}
			return nil
		},
	}})
	results := func(id uuid.UUID) int {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM job_logs WHERE job_id = $1 AND message = 'result'`, id).Scan(&n))
		return n
	}
	outcomesOf := func(id uuid.UUID) int32 {
		n, ok := outcomes.Load(id)
		if !ok {
			return 0
		}
		return n.(*atomic.Int32).Load()
	}

	// A batch of four, one of which fails: the handler commits and stalls.
	mu.Lock()
	ids := b.insertN(t, 4, jobSpec{})
	failing[ids[3]] = true
	mu.Unlock()
	var done []jobqueue.Job
	select {
	case done = <-committed:
	case <-time.After(waitFor):
		t.Fatal("the handler never committed")
	}
	require.Len(t, done, 3, "one batch of four, three successful")
	for _, id := range ids[:3] {
		r := b.job(t, id)
		require.Equal(t, "completed", r.Status, "final before the handler returns")
		require.Nil(t, r.LockedBy)
		require.Equal(t, 1, results(id))
		require.Equal(t, int32(1), outcomesOf(id))
	}
	require.Equal(t, "running", b.job(t, ids[3]).Status, "the failed job is left to the engine")
	close(release)
	b.requireStatus(t, ids[3], jobqueue.StatusFailed)
	time.Sleep(100 * time.Millisecond) // the engine's own record of the batch comes after the handler
	for _, id := range ids[:3] {
		require.Equal(t, int32(1), outcomesOf(id), "the outcome hook runs once")
	}
	require.Zero(t, results(ids[3]))

	// A job of the next batch is lost before the commit: nothing is
	// written, and the three others run again without a failure counted.
	mu.Lock()
	next := b.insertN(t, 4, jobSpec{})
	cancelOf[next[0]] = true
	mu.Unlock()
	b.requireStatus(t, next[0], jobqueue.StatusCancelled)
	for _, id := range next[1:] {
		r := b.requireStatus(t, id, jobqueue.StatusCompleted)
		require.Equal(t, 2, r.Attempt, "ran again after its sibling's loss")
		require.Zero(t, r.RetryCount, "a sibling's loss is not a failure")
		require.Equal(t, 1, results(id))
		require.Equal(t, int32(1), outcomesOf(id))
	}
	require.Zero(t, results(next[0]))
	require.Zero(t, outcomesOf(next[0]))
}

func TestStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	proj, other := uuid.New(), uuid.New()
	b.insert(t,
		jobSpec{project: &proj},
		jobSpec{project: &proj, status: jobqueue.StatusRunning},
		jobSpec{project: &proj, status: jobqueue.StatusCompleted},
		jobSpec{project: &proj, status: jobqueue.StatusRequiresReview},
		jobSpec{project: &proj, status: jobqueue.StatusFailed},
		jobSpec{project: &proj, status: jobqueue.StatusCancelled},
		jobSpec{project: &other, status: jobqueue.StatusFailed},
	)
	_, err := b.pool.Exec(ctx, `UPDATE jobs SET created_at = created_at - interval '2 days' WHERE status = 'cancelled'`)
	require.NoError(t, err)
	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{})
	require.NoError(t, err)
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{Name: queueName, Table: "jobs", Handler: jobqueue.HandlerFunc(nil)}))
	stats, err := c.Stats(ctx, &proj)
	require.NoError(t, err)
	require.Equal(t, []jobqueue.QueueStats{{
		Queue: queueName, Pending: 1, Processing: 1, Completed: 2, Failed: 1, Cancelled: 1, Total: 6, LastHour: 5, Last24Hours: 5,
	}}, stats)
	stats, err = c.Stats(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, int64(7), stats[0].Total)
	require.Equal(t, int64(2), stats[0].Failed)
}

func TestAddQueueValidates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{})
	require.NoError(t, err)
	h := jobqueue.HandlerFunc(func(context.Context, []jobqueue.Job) []error { return nil })
	require.Error(t, c.AddQueue(jobqueue.QueueConfig{Name: "Bad-Name", Table: "jobs", Handler: h}))
	require.Error(t, c.AddQueue(jobqueue.QueueConfig{Name: "q", Handler: h}))
	require.Error(t, c.AddQueue(jobqueue.QueueConfig{Name: "q", Table: "jobs", Handler: h, BatchSize: -1}))
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{Name: "q", Table: "jobs", Handler: h}))
	require.Error(t, c.AddQueue(jobqueue.QueueConfig{Name: "q", Table: "jobs", Handler: h}), "duplicate")
	require.Error(t, errOf(c.Cancel(context.Background(), b.pool, "nope", uuid.New())), "unknown queue")
}

// TestNoGoroutineLeaks is deliberately not parallel: it compares the
// goroutines before and after, which parallel tests would disturb. It runs
// before any parallel test resumes (those wait until the sequential ones
// have finished).
func TestNoGoroutineLeaks(t *testing.T) { //nolint:paralleltest // see above
	before := goleak.IgnoreCurrent()
	b := setup(t)
	n := events.NewNotifier(b.pool, slog.New(slog.DiscardHandler))
	require.NoError(t, n.Start(context.Background()))
	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{Notifier: n, Metrics: prometheus.NewRegistry(), ReapInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	block := make(chan struct{})
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{
		Name: queueName, Table: "jobs", Concurrency: 3, BatchSize: 2,
		Handler: jobqueue.HandlerFunc(func(ctx context.Context, jobs []jobqueue.Job) []error {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return make([]error, len(jobs))
		}),
	}))
	require.NoError(t, c.Start(context.Background()))
	b.insertN(t, 20, jobSpec{})
	require.Eventually(t, func() bool { return b.countStatus(t, jobqueue.StatusRunning) == 6 }, waitFor, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, c.Stop(ctx), context.DeadlineExceeded)
	close(block)
	require.NoError(t, n.Stop(context.Background()))
	b.pool.Close()
	goleak.VerifyNone(t, before)
}

// The client has the start/stop shape of every long-running part: Stop
// before Start does nothing, a second Start is refused, and a second Stop
// waits for the first (until its own context ends).
func TestClientStartStop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{Metrics: prometheus.NewRegistry(), PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	running := make(chan struct{}, 1)
	cancelled := make(chan struct{}, 1)
	release := make(chan struct{})
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{
		Name: queueName, Table: "jobs",
		Handler: jobqueue.HandlerFunc(func(ctx context.Context, _ []jobqueue.Job) []error {
			running <- struct{}{}
			<-ctx.Done()
			cancelled <- struct{}{}
			<-release // a handler slow to return once cancelled
			return []error{ctx.Err()}
		}),
	}))
	require.NoError(t, c.Stop(ctx), "Stop before Start")
	require.NoError(t, c.Start(ctx))
	require.ErrorIs(t, c.Start(ctx), startstop.ErrStarted)
	b.insertN(t, 1, jobSpec{})
	<-running

	ended, cancel := context.WithCancel(ctx)
	cancel()
	first := make(chan error, 1)
	go func() { first <- c.Stop(ended) }()
	<-cancelled // the first Stop cancelled the batch and waits for it
	require.ErrorIs(t, c.Stop(ended), context.Canceled, "a second Stop waits for the first")
	close(release)
	require.ErrorIs(t, <-first, context.Canceled)
	require.NoError(t, c.Stop(ctx), "a Stop after the first has finished")
	require.Equal(t, 1, b.countStatus(t, jobqueue.StatusQueued), "the job went back to the queue")
}

func TestCancelWithoutNotifierIsCaughtByHeartbeat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{})
	observed := make(chan error, 1)
	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{
		Name: queueName, Table: "jobs", Lease: 300 * time.Millisecond,
		Handler: blockUntilCancelled(started, observed),
	}))
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	id := b.insert(t, jobSpec{})[0]
	<-started
	// Cancelled behind the client's back (another process, no notifier).
	_, err = b.pool.Exec(context.Background(), `UPDATE jobs SET status = 'cancelled' WHERE id = $1`, id)
	require.NoError(t, err)
	requireCancelledWithin(t, observed, waitFor, "the heartbeat did not notice the cancellation")
	requireNever(t, func() bool { return b.job(t, id).Status != "cancelled" }, 100*time.Millisecond, 10*time.Millisecond)
}

// A queue declared without a handler is reported, cancelled and retried by
// this process, but its jobs are left for the processes that work it.
func TestDeclaredQueueIsNotWorked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ids := b.insert(t, jobSpec{}, jobSpec{})
	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{Name: queueName, Table: "jobs"}))
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Stop(ctx) })
	time.Sleep(200 * time.Millisecond) // twenty polls in which a worker would have claimed them
	require.Equal(t, 2, b.countStatus(t, jobqueue.StatusQueued))
	stats, err := c.Stats(ctx, nil)
	require.NoError(t, err)
	require.EqualValues(t, 2, stats[0].Pending)
	require.NoError(t, errOf(c.Cancel(ctx, b.pool, queueName, ids[0])))
	b.requireStatus(t, ids[0], jobqueue.StatusCancelled)

	// A worker elsewhere picks up the rest.
	exec := newExecutions()
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
		exec.add(jobs)
		return make([]error, len(jobs))
	})}, cfg: jobqueue.Config{PollInterval: 10 * time.Millisecond}})
	require.Eventually(t, func() bool { return b.countStatus(t, jobqueue.StatusCompleted) == 1 }, waitFor, 10*time.Millisecond)
	require.Equal(t, map[uuid.UUID]int{ids[1]: 1}, exec.snapshot())
}

// An observer sees the outcomes of every queue of the client (a handled
// queue with its own OutcomeFunc, and jobs reaped in a declared queue), in
// the transaction that records them; FinalFailure tells a retried failure
// from a final one; a failing observer loses only its own writes.
func TestObserveEveryQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, jobqueue.CreateTableSQL("other_jobs", ""))
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `CREATE TABLE observed (job_id uuid NOT NULL, queue text NOT NULL, status text NOT NULL, final bool NOT NULL)`)
	require.NoError(t, err)

	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{PollInterval: 10 * time.Millisecond, ReapInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	require.Error(t, c.Observe(nil))
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{
		Name: queueName, Table: "jobs",
		BackoffFunc: func(int) time.Duration { return time.Millisecond },
		Handler: jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
			return fill(len(jobs), errors.New("flaky"))
		}),
		OutcomeFunc: func(ctx context.Context, tx pgx.Tx, outs []jobqueue.Outcome) error {
			for _, o := range outs {
				if _, err := tx.Exec(ctx, `INSERT INTO job_logs (job_id, status, message) VALUES ($1, $2, 'own hook')`, o.Job.ID, string(o.Status)); err != nil {
					return err
				}
			}
			return nil
		},
	}))
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{Name: "other_queue", Table: "other_jobs"})) // declared only
	require.NoError(t, c.Observe(func(ctx context.Context, tx pgx.Tx, outs []jobqueue.Outcome) error {
		for _, o := range outs {
			if _, err := tx.Exec(ctx, `INSERT INTO observed VALUES ($1, $2, $3, $4)`, o.Job.ID, o.Job.Queue, string(o.Status), o.FinalFailure()); err != nil {
				return err
			}
		}
		return nil
	}))
	// A second observer that always fails: its writes vanish, nothing else does.
	require.NoError(t, c.Observe(func(ctx context.Context, tx pgx.Tx, outs []jobqueue.Outcome) error {
		if _, err := tx.Exec(ctx, `INSERT INTO job_logs (job_id, status, message) VALUES ($1, 'x', 'failing observer')`, outs[0].Job.ID); err != nil {
			return err
		}
		return errors.New("observer broke")
	}))
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Stop(ctx) })
	require.Error(t, c.Observe(func(context.Context, pgx.Tx, []jobqueue.Outcome) error { return nil }), "after Start")

	failing := b.insert(t, jobSpec{maxRetries: 1})[0]
	// A job of the declared queue whose worker died on its last retry.
	reaped := uuid.Must(uuid.NewV7())
	past := time.Now().Add(-time.Minute)
	_, err = b.pool.Exec(ctx, `INSERT INTO other_jobs (id, status, run_at, attempt, retry_count, max_retries, locked_by, locked_until, started_at, created_at, updated_at)
		VALUES ($1, 'running', $2, 2, 1, 1, 'dead-worker', $2, $2, $2, $2)`, reaped, past)
	require.NoError(t, err)

	b.requireStatus(t, failing, jobqueue.StatusFailed)
	require.Eventually(t, func() bool {
		var status string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM other_jobs WHERE id = $1`, reaped).Scan(&status))
		return status == "failed"
	}, waitFor, 10*time.Millisecond)

	type seen struct {
		Queue  string
		Status string
		Final  bool
	}
	observed := func(id uuid.UUID) []seen {
		rows, err := b.pool.Query(ctx, `SELECT queue, status, final FROM observed WHERE job_id = $1 ORDER BY status DESC`, id)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (seen, error) {
			var s seen
			return s, r.Scan(&s.Queue, &s.Status, &s.Final)
		})
		require.NoError(t, err)
		return out
	}
	require.Equal(t, []seen{{queueName, "queued", false}, {queueName, "failed", true}}, observed(failing))
	require.Equal(t, []seen{{"other_queue", "failed", true}}, observed(reaped))

	var own, broken int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE message = 'own hook'), count(*) FILTER (WHERE message = 'failing observer') FROM job_logs`).Scan(&own, &broken))
	require.Equal(t, 2, own, "the queue's own hook ran for both attempts")
	require.Zero(t, broken, "the failing observer's writes were rolled back")
}

func fill(n int, err error) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// TestWaitInTx: a handler that must wait for something outside the
// engine puts its job back in the queue until a time, in its own
// transaction, without counting a failure; the engine leaves the job as
// the handler left it. Wake makes it due at once; it runs again and
// completes. Wake refuses a job that is not queued; WaitInTx one that is
// no longer running here.
func TestWaitInTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var p *process
	var outcomes sync.Map // status -> count
	cancelNext := make(chan struct{}, 1)
	waitErr := make(chan error, 1)
	p = b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		Handler: jobqueue.EachFunc(func(ctx context.Context, j jobqueue.Job) error {
			if j.Attempt > 1 {
				return nil
			}
			wctx := context.WithoutCancel(ctx)
			select {
			case <-cancelNext:
				require.NoError(t, errOf(p.client.Cancel(wctx, b.pool, queueName, j.ID)))
			default:
			}
			err := postgres.WithTx(wctx, b.pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(wctx, `INSERT INTO job_logs (job_id, status, message) VALUES ($1, 'queued', 'waiting')`, j.ID); err != nil {
					return err
				}
				return p.client.WaitInTx(wctx, tx, queueName, j, time.Now().Add(time.Hour))
			})
			waitErr <- err
			return nil
		}),
		OutcomeFunc: func(_ context.Context, _ pgx.Tx, outs []jobqueue.Outcome) error {
			for _, o := range outs {
				n, _ := outcomes.LoadOrStore(o.Status, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
			}
			return nil
		},
	}})
	count := func(s jobqueue.Status) int32 {
		n, ok := outcomes.Load(s)
		if !ok {
			return 0
		}
		return n.(*atomic.Int32).Load()
	}

	id := b.insert(t, jobSpec{})[0]
	require.NoError(t, <-waitErr)
	row := b.requireStatus(t, id, jobqueue.StatusQueued)
	require.WithinDuration(t, time.Now().Add(time.Hour), row.RunAt, time.Minute)
	require.Zero(t, row.RetryCount)
	require.Nil(t, row.LockedBy)
	require.Nil(t, row.ErrorMsg)
	requireNever(t, func() bool { return b.job(t, id).Status != "queued" }, 300*time.Millisecond, 10*time.Millisecond,
		"the engine leaves a waiting job queued")
	require.Equal(t, int32(1), count(jobqueue.StatusQueued), "the hooks ran in the waiting transaction")

	startedAt := func() *time.Time {
		var at *time.Time
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT started_at FROM jobs WHERE id = $1`, id).Scan(&at))
		return at
	}
	first := startedAt()
	require.NotNil(t, first)
	ch, err := p.client.Wake(ctx, b.pool, queueName, id)
	require.NoError(t, err)
	require.Equal(t, jobqueue.StatusQueued, ch.Status)
	require.True(t, ch.StartedAt.IsZero(), "a woken job starts afresh (the rate-limit hour)")
	row = b.requireStatus(t, id, jobqueue.StatusCompleted)
	require.True(t, startedAt().After(*first))
	require.Equal(t, 2, row.Attempt)
	require.Zero(t, row.RetryCount)
	require.Equal(t, int32(1), count(jobqueue.StatusCompleted))

	_, err = p.client.Wake(ctx, b.pool, queueName, id)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	_, err = p.client.Wake(ctx, b.pool, queueName, uuid.New())
	require.Equal(t, errs.NotFound, errs.CodeOf(err))

	// Cancelled before the handler's commit: WaitInTx refuses and the
	// handler's writes roll back.
	cancelNext <- struct{}{}
	second := b.insert(t, jobSpec{})[0]
	require.ErrorIs(t, <-waitErr, jobqueue.ErrCancelled)
	b.requireStatus(t, second, jobqueue.StatusCancelled)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM job_logs WHERE job_id = $1 AND message = 'waiting'`, second).Scan(&n))
	require.Zero(t, n)
}
