package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// TestScheduleQueuesDueSyncs: the scheduler task queues a scheduled sync
// of each due, active integration of a live project and moves its next
// run one interval on; one not due, inactive, without a schedule or of a
// deleted project gets none, nor one whose sync is still active.
func TestScheduleQueuesDueSyncs(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	due := b.create(t, "due", map[string]any{"sync_interval_minutes": 10})
	b.create(t, "later", map[string]any{"sync_interval_minutes": 10})
	b.create(t, "never", nil)
	b.create(t, "off", map[string]any{"sync_interval_minutes": 10})
	inactive := integration.StatusInactive
	_, err := b.svc.Update(ctx, b.project, "off", integration.UpdateParams{Status: &inactive})
	require.NoError(t, err)
	gone := newProject(t, b.pool)
	_, err = b.svc.Create(ctx, gone, nil, integration.CreateParams{
		Name: "gone", DisplayName: "G", ProviderType: "mem",
		Config: b.cfg(map[string]any{"sync_interval_minutes": 10}),
	})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE projects SET deleted_at = now() WHERE id = $1`, gone)
	require.NoError(t, err)
	past := time.Now().Add(-time.Minute)
	_, err = b.pool.Exec(ctx, `UPDATE integrations SET next_sync_at = $1 WHERE name IN ('due', 'off', 'gone')`, past)
	require.NoError(t, err)

	run := func() {
		t.Helper()
		require.NoError(t, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error { return b.svc.QueueScheduled(ctx, tx) }))
	}
	run()
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs WHERE integration_id = $1 AND trigger_type = 'scheduled'`, due.ID))
	full, err := b.svc.Get(ctx, b.project, "due")
	require.NoError(t, err)
	require.True(t, full.NextSyncAt.After(time.Now().Add(9*time.Minute)), "next run one interval on: %s", full.NextSyncAt)
	require.Equal(t, "pending", full.LastSyncStatus)

	// Due again while its sync is still queued: none added.
	_, err = b.pool.Exec(ctx, `UPDATE integrations SET next_sync_at = $1 WHERE name = 'due'`, past)
	require.NoError(t, err)
	run()
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs`))
}

// TestScheduleQueuesErrorIntegrations: an integration whose last sync gave
// up (status error) is still scheduled: its next successful sync puts it
// back to active without a manual sync.
func TestScheduleQueuesErrorIntegrations(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	in := b.create(t, "docs", map[string]any{"sync_interval_minutes": 5})
	_, err := b.pool.Exec(ctx, `UPDATE integrations SET status = 'error', next_sync_at = now() - interval '1 hour'`)
	require.NoError(t, err)
	require.NoError(t, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error { return b.svc.QueueScheduled(ctx, tx) }))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs WHERE integration_id = $1 AND trigger_type = 'scheduled'`, in.ID),
		"a due integration in status error got no scheduled sync")
}

// TestScheduleDuringSyncCommit: an integration falls due while its sync's
// final transaction, holding the job row, waits to record the sync on
// the integration. The scheduler passes over it (its sync is active)
// without waiting for the job row while it holds the integration's (a
// deadlock before: the scheduler's insert waited for the sync's
// transaction, which waited for the scheduler's lock).
func TestScheduleDuringSyncCommit(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	i := b.create(t, "due", map[string]any{"sync_interval_minutes": 10})
	res, err := b.svc.Sync(ctx, b.project, "due", integration.TriggerManual, integration.SyncOptions{})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE integration_sync_jobs SET status = 'running', attempt = 1 WHERE id = $1`, res.JobID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE integrations SET next_sync_at = now() - interval '1 minute' WHERE id = $1`, i.ID)
	require.NoError(t, err)

	// The sync's final transaction: its job row, then the integration's.
	sync := pgtest.Hold(t, b.pool, `UPDATE integration_sync_jobs SET phase = 'done' WHERE id = $1`, res.JobID)
	scheduled := make(chan error, 1)
	go func() {
		scheduled <- postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
			if err := b.svc.QueueScheduled(ctx, tx); err != nil {
				return err
			}
			// The scheduler's transaction commits with the scheduler's
			// other tasks: it holds its locks until then.
			_, err := tx.Exec(ctx, `SELECT pg_sleep(0.2)`)
			return err
		})
	}()
	require.Eventually(t, func() bool {
		return len(scheduled) == 1 || pgtest.LockWaits(t, b.pool) == 1 ||
			count(t, b.pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE 'SELECT pg_sleep%'`) == 1
	}, 10*time.Second, 10*time.Millisecond, "the scheduler waits for the job row, or holds the integration's")
	_, err = sync.Exec(ctx, `UPDATE integrations SET last_sync_at = now() WHERE id = $1`, i.ID)
	require.NoError(t, err, "the scheduler gave way")
	require.NoError(t, sync.Commit(ctx))

	require.NoError(t, <-scheduled)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs`), "none queued: the sync was active")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integrations WHERE id = $1 AND next_sync_at > now() + interval '9 minutes'`, i.ID))
}
