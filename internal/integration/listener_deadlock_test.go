package integration_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// targetListener bumps listener_target's row when told of a sync's end:
// a write whose lock another transaction can hold. called is closed at
// its first call.
type targetListener struct {
	once   sync.Once
	called chan struct{}
	calls  atomic.Int32
}

func (l *targetListener) SyncEnded(ctx context.Context, tx pgx.Tx, _ integration.SyncEnded) error {
	l.calls.Add(1)
	l.once.Do(func() { close(l.called) })
	_, err := tx.Exec(ctx, `UPDATE listener_target SET n = n + 1 WHERE id = 1`)
	return err
}

// TestSyncListenerDeadlockRunsTheEndAgain: when the listener loses a
// deadlock in the transaction that ends a sync, that transaction runs
// again (as for any outcome hook, docs/decisions.md "Session 9: job
// engine reliability"): the sync ends once, with the listener's write.
// Before, the listener's savepoint swallowed the deadlock and the sync
// ended without its writes (the agent runs a sync triggers, in Graphmill).
func TestSyncListenerDeadlockRunsTheEndAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := &targetListener{called: make(chan struct{})}
	b := setup(t, setupOpts{start: true, listener: l})
	_, err := b.pool.Exec(ctx, `CREATE TABLE listener_target (id int PRIMARY KEY, n int NOT NULL); INSERT INTO listener_target VALUES (1, 0)`)
	require.NoError(t, err)
	b.src.put("a", "# a\n\ntext a")
	b.create(t, "docs", nil)

	other := pgtest.Hold(t, b.pool, `UPDATE listener_target SET n = n + 1 WHERE id = 1`)
	res, err := b.svc.Sync(ctx, b.project, "docs", integration.TriggerManual, integration.SyncOptions{})
	require.NoError(t, err)
	select {
	case <-l.called:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the listener was not told")
	}
	// Other transactions may wait too (the heartbeat for the job's row,
	// publishers for the events lock the sync's end holds).
	require.Eventually(t, func() bool {
		return count(t, b.pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
			AND query LIKE 'UPDATE listener_target%'`) == 1
	}, 10*time.Second, 10*time.Millisecond, "the listener waits for listener_target")
	// The sync's end holds its job's row: taking it makes a deadlock whose
	// victim is the sync's end (other's deadlock_timeout is long).
	_, err = other.Exec(ctx, `SELECT 1 FROM integration_sync_jobs WHERE id = $1 FOR UPDATE`, res.JobID)
	require.NoError(t, err, "the sync's end gave way")
	require.NoError(t, other.Commit(ctx))

	require.Equal(t, "completed", b.wait(t, res.JobID).Status)
	require.Equal(t, 2, count(t, b.pool, `SELECT n FROM listener_target WHERE id = 1`), "the listener's write and the other transaction's")
	// At least twice: the run again may lose to the other transaction
	// once more before it commits (it can take the job's row first).
	require.GreaterOrEqual(t, l.calls.Load(), int32(2), "told again in the transaction run again")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM events WHERE type = 'integration.sync.completed' AND payload->>'jobId' = $1::text`, res.JobID))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE job_id = $1 AND message = 'sync completed'`, res.JobID))
}
