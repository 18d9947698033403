package jobqueue_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
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
// the batch, committed before the handler runs; jobs without a project
// are not announced.
func TestClaimPublishesStarted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p1, p2 := b.project(t), b.project(t)
	ids := b.insert(t, jobSpec{project: &p1}, jobSpec{project: &p2}, jobSpec{project: &p1}, jobSpec{})
	var mu sync.Mutex
	var seen []startedEvent
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{BatchSize: 10, AnnounceStarted: true, Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			mu.Lock()
			defer mu.Unlock()
			seen = b.startedEvents(t)
			return make([]error, len(jobs))
		})}})
	require.Eventually(t, func() bool { return b.countStatus(t, jobqueue.StatusCompleted) == len(ids) }, waitFor, 5*time.Millisecond)
	want := []startedEvent{
		{Project: p1, Queue: queueName, JobIDs: []uuid.UUID{ids[0], ids[2]}, Status: "running"},
		{Project: p2, Queue: queueName, JobIDs: []uuid.UUID{ids[1]}, Status: "running"},
	}
	require.Equal(t, want, b.startedEvents(t))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, seen, "the handler ran after the announcement committed")
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
