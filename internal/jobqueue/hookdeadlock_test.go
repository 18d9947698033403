package jobqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// hookDeadlock is a test whose queue's outcome hook bumps a counter row
// (hook_target), then logs the outcome (job_logs) and publishes
// job.completed: a hook whose first lock another transaction can hold.
type hookDeadlock struct {
	*testBundle
	project uuid.UUID
}

func newHookDeadlock(t *testing.T) *hookDeadlock {
	t.Helper()
	b := setup(t)
	_, err := b.pool.Exec(context.Background(), `CREATE TABLE hook_target (id int PRIMARY KEY, n int NOT NULL);
		INSERT INTO hook_target VALUES (1, 0);
		CREATE TABLE job_results (job_id uuid NOT NULL)`)
	require.NoError(t, err)
	return &hookDeadlock{testBundle: b, project: b.project(t)}
}

func (h *hookDeadlock) hook(ctx context.Context, tx pgx.Tx, outs []jobqueue.Outcome) error {
	if _, err := tx.Exec(ctx, `UPDATE hook_target SET n = n + 1 WHERE id = 1`); err != nil {
		return err
	}
	for _, o := range outs {
		if _, err := tx.Exec(ctx, `INSERT INTO job_logs (job_id, status) VALUES ($1, $2)`, o.Job.ID, string(o.Status)); err != nil {
			return err
		}
	}
	return jobqueue.PublishCompletedFunc(queueName, time.Now)(ctx, tx, outs)
}

// deadlockFinish holds hook_target's row, inserts a job (insert returns
// its id), waits until the job's finishing transaction waits for
// hook_target (holding the job's row), then takes the job's row: a
// deadlock whose victim is the finishing transaction, inside the hook. It
// then commits, freeing both rows, and returns the job's id.
func (h *hookDeadlock) deadlockFinish(t *testing.T) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	other := pgtest.Hold(t, h.pool, `UPDATE hook_target SET n = n + 1 WHERE id = 1`)
	id := h.insert(t, jobSpec{project: &h.project})[0]
	require.Eventually(t, func() bool { return pgtest.LockWaits(t, h.pool) == 1 }, waitFor, 10*time.Millisecond, "the hook waits for hook_target")
	_, err := other.Exec(ctx, `SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, id)
	require.NoError(t, err, "the finishing transaction gave way")
	require.NoError(t, other.Commit(ctx))
	return id
}

// requireFinishedOnce requires job id completed at its first attempt with
// the hook's writes committed once: its log row, its job.completed event
// and its bump of hook_target (besides the other transaction's).
func (h *hookDeadlock) requireFinishedOnce(t *testing.T, id uuid.UUID) {
	t.Helper()
	r := h.requireStatus(t, id, jobqueue.StatusCompleted)
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, 1, h.count(t, `SELECT count(*) FROM job_logs WHERE job_id = $1 AND status = 'completed'`, id), "the hook's log row")
	require.Equal(t, 1, h.count(t, `SELECT count(*) FROM events WHERE type = 'job.completed' AND payload->>'jobId' = $1::text`, id), "the hook's event")
	require.Equal(t, 2, h.count(t, `SELECT n FROM hook_target WHERE id = 1`), "the hook's bump and the other transaction's")
}

func (h *hookDeadlock) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, h.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// TestOutcomeHookDeadlockRunsRecordAgain: when the engine's transaction
// recording a batch's outcomes is a deadlock's victim inside the queue's
// outcome hook, the whole transaction runs again: the job's status and
// the hook's writes (a log row, job.completed) commit together, once.
// Before, the hook's savepoint was rolled back and the status committed
// without them.
func TestOutcomeHookDeadlockRunsRecordAgain(t *testing.T) {
	t.Parallel()
	h := newHookDeadlock(t)
	reg := prometheus.NewRegistry()
	exec := newExecutions()
	p := h.newProcess(t, opts{cfg: jobqueue.Config{Metrics: reg}, queue: jobqueue.QueueConfig{
		OutcomeFunc: h.hook,
		Handler: jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
			exec.add(jobs)
			return make([]error, len(jobs))
		}),
	}})
	id := h.deadlockFinish(t)
	h.requireFinishedOnce(t, id)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, p.client.Stop(ctx)) // the batch has ended: its metrics are final
	require.Equal(t, 1, exec.snapshot()[id], "the handler ran once")
	require.InDelta(t, 1, metricValue(t, reg, "graphmill_jobqueue_jobs_completed_total"), 0, "counted completed once")
}

// TestFinishInTxHookDeadlockRunsAgain: when a handler's transaction
// finishing its job (FinishInTx) is a deadlock's victim inside the
// queue's outcome hook, FinishInTx answers the deadlock; the handler's
// transaction, in postgres.WithTxRetryDeadlock, runs again, and its
// results, the job's status and the hook's writes commit together, once;
// the job is counted completed once. Before, the hook's writes were lost
// and the rest committed.
func TestFinishInTxHookDeadlockRunsAgain(t *testing.T) {
	t.Parallel()
	h := newHookDeadlock(t)
	reg := prometheus.NewRegistry()
	exec := newExecutions()
	runs := 0
	var client *jobqueue.Client // set before any job is inserted
	client = h.newProcess(t, opts{cfg: jobqueue.Config{Metrics: reg}, queue: jobqueue.QueueConfig{
		OutcomeFunc: h.hook,
		Handler: jobqueue.EachFunc(func(ctx context.Context, j jobqueue.Job) error {
			exec.add([]jobqueue.Job{j})
			return postgres.WithTxRetryDeadlock(ctx, h.pool, func(tx pgx.Tx) error {
				runs++
				if _, err := tx.Exec(ctx, `INSERT INTO job_results (job_id) VALUES ($1)`, j.ID); err != nil {
					return err
				}
				return client.FinishInTx(ctx, tx, queueName, j, jobqueue.StatusCompleted)
			})
		}),
	}}).client
	id := h.deadlockFinish(t)
	h.requireFinishedOnce(t, id)
	require.Equal(t, 1, h.count(t, `SELECT count(*) FROM job_results WHERE job_id = $1`, id), "the results, once")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, client.Stop(ctx)) // the batch has ended: its metrics are final
	// At least once again: under load the rerun can lose another
	// conflict (CI saw 3 runs); what must hold is below and above: the
	// results, the status and the hook's writes once.
	require.GreaterOrEqual(t, runs, 2, "the handler's transaction ran again")
	require.Equal(t, 1, exec.snapshot()[id], "the handler ran once")
	require.InDelta(t, 1, metricValue(t, reg, "graphmill_jobqueue_jobs_completed_total"), 0, "counted completed once")
}
