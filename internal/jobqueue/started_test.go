package jobqueue_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// project inserts an organization and a project (events name projects)
// and returns the project's id.
func (b *testBundle) project(t *testing.T) uuid.UUID {
	t.Helper()
	id, now := uuid.New(), time.Now()
	_, err := b.pool.Exec(context.Background(), `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, $3, $3)`, id, id.String(), now)
	require.NoError(t, err)
	_, err = b.pool.Exec(context.Background(), `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $1, 'p', $2, $2)`, id, now)
	require.NoError(t, err)
	return id
}

// startedEvent is a job.started event as stored.
type startedEvent struct {
	Project uuid.UUID
	Queue   string      `json:"queue"`
	JobIDs  []uuid.UUID `json:"jobIds"`
	Status  string      `json:"status"`
}

func (b *testBundle) startedEvents(t *testing.T) []startedEvent {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT project_id, payload FROM events WHERE type = 'job.started' ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []startedEvent
	for rows.Next() {
		var e startedEvent
		var raw []byte
		require.NoError(t, rows.Scan(&e.Project, &raw))
		require.NoError(t, json.Unmarshal(raw, &e))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

// A claimed batch is announced as job.started, one event per project of
// the batch, while its handler runs (which does not wait for it), and
// before its jobs' job.completed; jobs without a project are not
// announced.
func TestClaimPublishesStarted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p1, p2 := b.project(t), b.project(t)
	ids := b.insert(t, jobSpec{project: &p1}, jobSpec{project: &p2}, jobSpec{project: &p1}, jobSpec{})
	want := []startedEvent{
		{Project: p1, Queue: queueName, JobIDs: []uuid.UUID{ids[0], ids[2]}, Status: "running"},
		{Project: p2, Queue: queueName, JobIDs: []uuid.UUID{ids[1]}, Status: "running"},
	}
	var seen atomic.Bool
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		BatchSize: 10, AnnounceStarted: true, OutcomeFunc: jobqueue.PublishCompletedFunc(queueName, time.Now),
		Handler: jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
			// The announcement comes while the handler runs (on the
			// handler's goroutine: assert, and no require inside).
			seen.Store(assert.Eventually(t, func() bool {
				var n int
				err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = 'job.started'`).Scan(&n)
				return err == nil && n == len(want)
			}, waitFor, 5*time.Millisecond))
			return make([]error, len(jobs))
		}),
	}})
	require.Eventually(t, func() bool { return b.countStatus(t, jobqueue.StatusCompleted) == len(ids) }, waitFor, 5*time.Millisecond)
	require.True(t, seen.Load(), "the handler saw the announcement")
	require.Equal(t, want, b.startedEvents(t))
	b.requireStartedFirst(t, ids[:3]...)
}

// requireStartedFirst requires each job of ids to have one job.started
// and one job.completed event, in that order.
func (b *testBundle) requireStartedFirst(t *testing.T, ids ...uuid.UUID) {
	t.Helper()
	for _, id := range ids {
		var started, completed []int64
		rows, err := b.pool.Query(context.Background(), `SELECT id, type FROM events
			WHERE type IN ('job.started', 'job.completed') AND (payload->>'jobId' = $1::text OR payload->'jobIds' ? $1::text) ORDER BY id`, id)
		require.NoError(t, err)
		for rows.Next() {
			var n int64
			var typ string
			require.NoError(t, rows.Scan(&n, &typ))
			if typ == "job.started" {
				started = append(started, n)
			} else {
				completed = append(completed, n)
			}
		}
		require.NoError(t, rows.Err())
		require.Len(t, started, 1, "job %s: one job.started", id)
		require.Len(t, completed, 1, "job %s: one job.completed", id)
		require.Less(t, started[0], completed[0], "job %s: job.started first", id)
	}
}

// A batch starts while the events publish lock is held (announcing does
// not hold it up; it waited up to a fifth of the lease before); its job
// finishing in the handler's transaction (FinishInTx) waits for the
// announcement, so job.started still comes before job.completed.
func TestBatchStartsWhilePublishLockHeld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := b.project(t)
	lock, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(0x67726576)) // events' publish lock
	require.NoError(t, err)

	started, release := make(chan struct{}), make(chan struct{})
	var client *jobqueue.Client // set before any job is inserted
	client = b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		Lease: time.Hour, AnnounceStarted: true, OutcomeFunc: jobqueue.PublishCompletedFunc(queueName, time.Now),
		Handler: jobqueue.EachFunc(func(ctx context.Context, j jobqueue.Job) error {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			return postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
				return client.FinishInTx(ctx, tx, queueName, j, jobqueue.StatusCompleted)
			})
		}),
	}}).client
	id := b.insert(t, jobSpec{project: &p})[0]
	select {
	case <-started:
	case <-time.After(waitFor):
		require.FailNow(t, "the batch waits for the publish lock")
	}
	close(release)
	require.Eventually(t, func() bool { return pgtest.LockWaits(t, b.pool) == 1 }, waitFor, 5*time.Millisecond, "the announcement waits for the lock")
	require.Equal(t, string(jobqueue.StatusRunning), b.job(t, id).Status)
	require.NoError(t, lock.Rollback(ctx))
	b.requireStatus(t, id, jobqueue.StatusCompleted)
	b.requireStartedFirst(t, id)
}

// The job.started announcement waits for the events publish lock at most
// a fifth of the lease, after the batch is registered for heartbeats: a
// publishing transaction holding the lock for many leases neither lets
// the reaper take the running job back (it ran twice, a lost attempt
// counted) nor holds the job up; its job.started is dropped.
func TestStartedAnnouncementBoundedWhilePublishLockHeld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := b.project(t)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(0x67726576)) // events' publish lock
	require.NoError(t, err)

	var runs atomic.Int32
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{Lease: 300 * time.Millisecond, AnnounceStarted: true, Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			runs.Add(1)
			return make([]error, len(jobs))
		})}})
	id := b.insert(t, jobSpec{project: &p})[0]
	// Many leases pass before the lock is released.
	time.Sleep(2 * time.Second)
	require.NoError(t, tx.Rollback(ctx))
	r := b.requireStatus(t, id, jobqueue.StatusCompleted)
	require.Equal(t, int32(1), runs.Load(), "the job ran once")
	require.Equal(t, 0, r.RetryCount, "no lost attempt")
	require.Equal(t, 1, r.Attempt)
	require.Empty(t, b.startedEvents(t), "the announcement was dropped, not published late")
}

// A queue without AnnounceStarted (one that publishes no job.completed)
// publishes no job.started either: its jobs' starts are no wider than
// their ends.
func TestStartedOnlyWhenAnnounced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.project(t)
	ids := b.insert(t, jobSpec{project: &p}, jobSpec{project: &p})
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error { return make([]error, len(jobs)) })}})
	require.Eventually(t, func() bool { return b.countStatus(t, jobqueue.StatusCompleted) == len(ids) }, waitFor, 5*time.Millisecond)
	require.Empty(t, b.startedEvents(t))
}
