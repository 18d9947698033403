package jobqueue_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// TestFinishInTxRolledBackNotCounted: a handler's transaction finishes
// its job (FinishInTx), then loses a deadlock on a later statement and
// rolls back; before it runs again the job is cancelled, so the second
// run's FinishInTx answers ErrCancelled and the job ends cancelled. The
// completion of the run that rolled back was never committed: it must
// not be counted.
func TestFinishInTxRolledBackNotCounted(t *testing.T) {
	t.Parallel()
	h := newHookDeadlock(t)
	reg := prometheus.NewRegistry()
	runs := 0
	var client *jobqueue.Client // set before any job is inserted
	client = h.newProcess(t, opts{cfg: jobqueue.Config{Metrics: reg}, queue: jobqueue.QueueConfig{
		Handler: jobqueue.EachFunc(func(ctx context.Context, j jobqueue.Job) error {
			return postgres.WithTxRetryDeadlock(ctx, h.pool, func(tx pgx.Tx) error {
				runs++
				if runs == 2 {
					// Cancelled between the runs (its own transaction).
					if _, err := client.Cancel(context.WithoutCancel(ctx), h.pool, queueName, j.ID); err != nil {
						return err
					}
				}
				if err := client.FinishInTx(ctx, tx, queueName, j, jobqueue.StatusCompleted); err != nil {
					return err
				}
				// A later statement of the transaction: the deadlock's
				// victim on the first run (deadlockFinish).
				_, err := tx.Exec(ctx, `UPDATE hook_target SET n = n + 1 WHERE id = 1`)
				return err
			})
		}),
	}}).client
	id := h.deadlockFinish(t)
	h.requireStatus(t, id, jobqueue.StatusCancelled)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, client.Stop(ctx)) // the batch has ended: its metrics are final
	require.Equal(t, 2, runs, "the handler's transaction ran again")
	require.Zero(t, counterOrZero(t, reg, "graphmill_jobqueue_jobs_completed_total"), "a completion that rolled back is not counted")
}

// counterOrZero is the value of the counter name (of one label set), 0
// when it was never counted.
func counterOrZero(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
