package integration

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// finishingTx finishes the active sync (from another connection) right
// after the first conflicting insert: the race between the insert and
// the select of the active job.
type finishingTx struct {
	pgx.Tx
	pool *pgxpool.Pool
	job  uuid.UUID
	done bool
}

func (f *finishingTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := f.Tx.Exec(ctx, sql, args...)
	if err == nil && !f.done && tag.RowsAffected() == 0 {
		f.done = true
		if _, err := f.pool.Exec(ctx, `UPDATE integration_sync_jobs SET status = 'completed' WHERE id = $1`, f.job); err != nil {
			return tag, err
		}
	}
	return tag, err
}

// TestSyncJobInsertActiveFinishesMeanwhile: the active sync finishing
// between the conflicting insert and the select of the active job does
// not answer "already in progress" without a job: the insert is tried
// again and queues the sync.
func TestSyncJobInsertActiveFinishesMeanwhile(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	org, project, in, active := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, now(), now())`, []any{org, org.String()}},
		{`INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, []any{project, org}},
		{`INSERT INTO integrations (id, project_id, name, display_name, provider_type, config_sealed, created_at, updated_at)
			VALUES ($1, $2, 'docs', 'D', 'mem', 'x', now(), now())`, []any{in, project}},
		{`INSERT INTO integration_sync_jobs (id, project_id, run_at, created_at, updated_at, integration_id, trigger_type, options, status)
			VALUES ($1, $2, now(), now(), now(), $3, 'manual', '{}', 'running')`, []any{active, project, in}},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err)
	}
	var (
		id     uuid.UUID
		queued bool
	)
	err := postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
		var err error
		id, queued, err = syncJobInsert(ctx, &finishingTx{Tx: tx, pool: pool, job: active}, project, in, TriggerManual, SyncOptions{}, time.Now())
		return err
	})
	require.NoError(t, err)
	require.True(t, queued)
	require.NotEqual(t, active, id)
	var status string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM integration_sync_jobs WHERE id = $1`, id).Scan(&status))
	require.Equal(t, "queued", status)
}
