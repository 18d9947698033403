package jobqueue

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
)

// lockOrderWorker runs the jobs of the lock order tests.
const lockOrderWorker = "worker-a"

// lockOrderSetup makes a queue whose table holds two jobs running under
// lockOrderWorker at attempt 1, the one with the higher id stored first;
// it returns them, higher id first.
func lockOrderSetup(t *testing.T) (*pgxpool.Pool, *queue, []Job) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	_, err := pool.Exec(ctx, CreateTableSQL("lock_jobs", ""))
	require.NoError(t, err)
	c, err := NewClient(pool, Config{WorkerID: lockOrderWorker})
	require.NoError(t, err)
	require.NoError(t, c.AddQueue(QueueConfig{
		Name: "lock", Table: "lock_jobs", BatchSize: 2,
		Handler: HandlerFunc(func(_ context.Context, jobs []Job) []error { return make([]error, len(jobs)) }),
	}))
	q, err := c.queue("lock")
	require.NoError(t, err)
	jobs := []Job{
		{ID: uuid.MustParse("ffffffff-0000-7000-8000-000000000000"), Queue: "lock", Attempt: 1},
		{ID: uuid.MustParse("00000000-0000-7000-8000-000000000000"), Queue: "lock", Attempt: 1},
	}
	for _, j := range jobs {
		_, err := pool.Exec(ctx, `INSERT INTO lock_jobs (id, status, attempt, locked_by, locked_until, run_at, created_at, updated_at)
			VALUES ($1, 'running', 1, $2, now() + interval '1 minute', now(), now(), now())`, j.ID, lockOrderWorker)
		require.NoError(t, err)
	}
	return pool, q, jobs
}

// holdLowerThenHigher runs fn while a transaction that mimics a bulk
// cancel (transitionSQL locks its jobs by id) holds the lower job and
// fn's statement waits for it; the transaction then takes the higher job,
// which fn's statement must not hold (it would be a deadlock, and fn's
// statement its victim: the transaction's deadlock check runs last), and
// commits. It returns fn's error.
func holdLowerThenHigher(t *testing.T, pool *pgxpool.Pool, jobs []Job, fn func() error) error {
	t.Helper()
	ctx := context.Background()
	cancel := pgtest.Hold(t, pool, `SELECT 1 FROM lock_jobs WHERE id = $1 FOR UPDATE`, jobs[1].ID)
	done := make(chan error, 1)
	go func() { done <- fn() }()
	require.Eventually(t, func() bool { return pgtest.LockWaits(t, pool) == 1 }, 10*time.Second, 10*time.Millisecond, "the statement waits for the lower job")
	_, err := cancel.Exec(ctx, `SELECT 1 FROM lock_jobs WHERE id = $1 FOR UPDATE`, jobs[0].ID)
	require.NoError(t, err, "the statement gave way")
	require.NoError(t, cancel.Commit(ctx))
	return <-done
}

// TestHeartbeatWaitsForNoRow: a heartbeat does not wait for a job row
// another transaction holds (a bulk cancel, a cascading delete): it
// renews the other jobs' leases at once, keeps the held job as its own
// and tells it apart (renewHeld then waits for it alone), and so can
// neither deadlock with the holder nor hold the queue's other leases up.
// Once the holder commits a cancel, the job is no longer owned.
func TestHeartbeatWaitsForNoRow(t *testing.T) {
	t.Parallel()
	pool, q, jobs := lockOrderSetup(t)
	ctx := context.Background()
	leaseOf := func(id uuid.UUID) time.Time {
		var until time.Time
		require.NoError(t, pool.QueryRow(ctx, `SELECT locked_until FROM lock_jobs WHERE id = $1`, id).Scan(&until))
		return until
	}
	held, free := jobs[1], jobs[0]
	heldLease := leaseOf(held.ID)
	holder := pgtest.Hold(t, pool, `SELECT 1 FROM lock_jobs WHERE id = $1 FOR UPDATE`, held.ID)

	now := time.Now().Add(time.Hour)
	beat, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	owned, skipped, err := q.jobHeartbeat(beat, pool, now, lockOrderWorker, jobs)
	require.NoError(t, err, "the heartbeat waited for the held row")
	require.ElementsMatch(t, []uuid.UUID{held.ID, free.ID}, owned)
	require.Equal(t, []Job{held}, skipped, "the held job is told apart")
	require.WithinDuration(t, now.Add(q.cfg.Lease), leaseOf(free.ID), time.Millisecond, "the free job's lease is renewed")
	require.WithinDuration(t, heldLease, leaseOf(held.ID), time.Millisecond, "the held job is left for the next beat")

	_, err = holder.Exec(ctx, `UPDATE lock_jobs SET status = 'cancelled', locked_by = NULL, locked_until = NULL WHERE id = $1`, held.ID)
	require.NoError(t, err)
	require.NoError(t, holder.Commit(ctx))
	owned, skipped, err = q.jobHeartbeat(ctx, pool, now, lockOrderWorker, jobs)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{free.ID}, owned, "a committed cancel is seen")
	require.Empty(t, skipped)
}

// TestHeldJobKeepsItsLease: a job whose row was held past its lease (a
// long finishing transaction that then rolled back, a deletion given up)
// is not taken back by the reaper from its running handler once the row
// is let go unchanged: the heartbeat renews it, waiting for that row alone
// after the other leases are renewed, ahead of the reaper, which skips
// held rows.
func TestHeldJobKeepsItsLease(t *testing.T) {
	t.Parallel()
	pool, q, jobs := lockOrderSetup(t)
	ctx := context.Background()
	held := jobs[1]
	pgtest.Exec(t, pool, `UPDATE lock_jobs SET locked_until = now() - interval '1 second' WHERE id = $1`, held.ID)
	holder := pgtest.Hold(t, pool, `SELECT 1 FROM lock_jobs WHERE id = $1 FOR UPDATE`, held.ID)

	owned, skipped, err := q.jobHeartbeat(ctx, pool, time.Now(), lockOrderWorker, jobs)
	require.NoError(t, err)
	require.Len(t, owned, 2)
	require.Equal(t, []Job{held}, skipped)
	n, err := q.reap(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the reaper skips the held row")

	done := make(chan struct{})
	go func() {
		defer close(done)
		q.c.renewHeld([]heldJob{{q: q, job: held}}, 10*time.Second)
	}()
	require.Eventually(t, func() bool { // the renewal waits for the held row, or gave up
		select {
		case <-done:
			return true
		default:
			return pgtest.LockWaits(t, pool) == 1
		}
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, holder.Rollback(ctx))
	<-done

	n, err = q.reap(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the job kept its lease")
	var status, by string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status, locked_by FROM lock_jobs WHERE id = $1`, held.ID).Scan(&status, &by))
	require.Equal(t, []string{"running", lockOrderWorker}, []string{status, by})
}

// TestFinishLocksByID: recording a batch's outcomes takes the jobs' rows
// in id order, as a bulk cancel or delete does, whatever the batch's
// order (by priority and run time); it deadlocked with the cancel before.
func TestFinishLocksByID(t *testing.T) {
	t.Parallel()
	pool, q, jobs := lockOrderSetup(t)
	now := time.Now()
	me := lockOrderWorker
	ups := make([]update, len(jobs))
	for i, j := range jobs {
		ups[i] = update{job: j, decision: decision{status: StatusCompleted, completed: &now}}
	}
	var done []uuid.UUID
	err := holdLowerThenHigher(t, pool, jobs, func() error {
		var err error
		done, err = q.jobFinish(context.Background(), pool, now, &me, ups)
		return err
	})
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{jobs[0].ID, jobs[1].ID}, done)
	var completed int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM lock_jobs WHERE status = 'completed'`).Scan(&completed))
	require.Equal(t, 2, completed)
}
