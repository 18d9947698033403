package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/integration"
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
