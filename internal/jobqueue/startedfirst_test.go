package jobqueue

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// TestStartedFirstWhenTxHoldsPublishLock: a handler's transaction that
// holds the events publish lock when it finishes a job whose batch's
// announcement is still pending (it waits for that lock) publishes the
// job's job.started itself, before the hook's job.completed; the
// announcement, coming after, leaves out the job that transaction made
// final, and announces it when that transaction rolled back.
func TestStartedFirstWhenTxHoldsPublishLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	project, now := uuid.New(), time.Now()
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)`, project, now)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $1, 'p', $2, $2)`, project, now)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, CreateTableSQL("first_jobs", ""))
	require.NoError(t, err)
	c, err := NewClient(pool, Config{})
	require.NoError(t, err)
	require.NoError(t, c.AddQueue(QueueConfig{
		Name: "first", Table: "first_jobs", AnnounceStarted: true, OutcomeFunc: PublishCompletedFunc("first", time.Now),
		Handler: HandlerFunc(func(_ context.Context, jobs []Job) []error { return make([]error, len(jobs)) }),
	}))
	q, err := c.queue("first")
	require.NoError(t, err)
	// A batch of one running job whose announcement has not ended.
	launched := func() (Job, *batch) {
		j := Job{ID: uuid.Must(uuid.NewV7()), Queue: "first", ProjectID: &project, Attempt: 1}
		_, err := pool.Exec(ctx, `INSERT INTO first_jobs (id, project_id, status, attempt, locked_by, locked_until, run_at, created_at, updated_at)
			VALUES ($1, $2, 'running', 1, $3, now() + interval '1 minute', now(), now(), now())`, j.ID, project, c.workerID)
		require.NoError(t, err)
		b := &batch{queue: "first", jobs: []Job{j}, cancelled: map[uuid.UUID]bool{}, inTx: map[uuid.UUID]update{}, announced: make(chan struct{})}
		c.mu.Lock()
		c.inflight[j.ID] = entry{b: b, job: j}
		c.mu.Unlock()
		return j, b
	}
	eventIDs := func(typ string, id uuid.UUID) []int64 {
		rows, err := pool.Query(ctx, `SELECT id FROM events WHERE type = $1 AND (payload->>'jobId' = $2::text OR payload->'jobIds' ? $2::text) ORDER BY id`, typ, id)
		require.NoError(t, err)
		var ids []int64
		for rows.Next() {
			var n int64
			require.NoError(t, rows.Scan(&n))
			ids = append(ids, n)
		}
		require.NoError(t, rows.Err())
		return ids
	}
	// finish finishes j in a transaction holding the publish lock, as a
	// handler's that published an event first does.
	finish := func(j Job, commit bool) {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		require.NoError(t, events.Lock(ctx, tx))
		require.NoError(t, c.FinishInTx(ctx, tx, "first", j, StatusCompleted))
		if commit {
			require.NoError(t, tx.Commit(ctx))
		}
	}

	j, b := launched()
	finish(j, true)
	q.announce(ctx, b)
	started, completed := eventIDs("job.started", j.ID), eventIDs("job.completed", j.ID)
	require.Len(t, started, 1, "published by the finishing transaction, not again by the announcement")
	require.Len(t, completed, 1)
	require.Less(t, started[0], completed[0])

	// The finishing transaction rolled back: the announcement tells of the
	// job, still running.
	j, b = launched()
	finish(j, false)
	q.announce(ctx, b)
	require.Len(t, eventIDs("job.started", j.ID), 1)
	require.Empty(t, eventIDs("job.completed", j.ID))
}
