package discovery

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
)

// TestStoreFiltersByProject: the worker's reads and writes of a job name
// its project: with another project's id they find and change nothing.
func TestStoreFiltersByProject(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	org, project, other, pack := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, now(), now())`, []any{org, org.String()}},
		{`INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now()), ($3, $2, 'o', now(), now())`, []any{project, org, other}},
		{`INSERT INTO template_packs (id, project_id, name, source, created_at, updated_at) VALUES ($1, $2, 'p', 'discovery', now(), now())`, []any{pack, project}},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err)
	}
	now := time.Now().UTC()
	job := jobRow{ID: uuid.Must(uuid.NewV7()), ProjectID: project, DocumentIDs: []uuid.UUID{uuid.New()}, Options: Options{BatchSize: 1}, CreatedAt: now}
	require.NoError(t, postgres.WithTx(ctx, pool, func(tx pgx.Tx) error { return jobInsert(ctx, tx, job) }))
	_, err := pool.Exec(ctx, `UPDATE discovery_jobs SET status = 'running', attempt = 1 WHERE id = $1`, job.ID)
	require.NoError(t, err)
	require.NoError(t, callInsert(ctx, pool, callRow{
		Call:  provider.Call{ID: uuid.Must(uuid.NewV7()), Provider: "p", ModelName: "m", Status: provider.CallSuccess, InputTokens: 5, StartedAt: now},
		JobID: job.ID, ProjectID: project, Phase: PhaseAnalyzing, Step: 1,
	}))

	_, err = workGet(ctx, pool, other, job.ID)
	require.ErrorIs(t, err, ErrNotFound)
	w, err := workGet(ctx, pool, project, job.ID)
	require.NoError(t, err)
	require.Equal(t, job.DocumentIDs, w.DocumentIDs)

	u, err := callTotals(ctx, pool, other, job.ID)
	require.NoError(t, err)
	require.Zero(t, u.Calls)
	u, err = callTotals(ctx, pool, project, job.ID)
	require.NoError(t, err)
	require.Equal(t, usage{Calls: 1, InputTokens: 5}, u)

	pr := Progress{Phase: PhaseAnalyzing, Message: "moved"}
	for _, c := range []struct {
		project uuid.UUID
		changed bool
	}{{other, false}, {project, true}} {
		require.NoError(t, postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
			ok, err := jobSetProgress(ctx, tx, c.project, job.ID, 1, pr, now)
			require.NoError(t, err)
			require.Equal(t, c.changed, ok, "progress")
			ok, err = jobCheckpoint(ctx, tx, c.project, job.ID, 1, 0, Proposal{Types: []Type{}}, pr, now)
			require.NoError(t, err)
			require.Equal(t, c.changed, ok, "checkpoint")
			require.NoError(t, jobSetResult(ctx, tx, c.project, job.ID, []Type{{TypeName: "T"}}, []Relationship{}, pr, now))
			return jobSetPack(ctx, tx, c.project, job.ID, pack, now)
		}))
		var proposals, types int
		var packID *uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `SELECT jsonb_array_length(batch_proposals), coalesce(jsonb_array_length(discovered_types), 0), template_pack_id
			FROM discovery_jobs WHERE id = $1`, job.ID).Scan(&proposals, &types, &packID))
		if c.changed {
			require.Equal(t, 1, proposals)
			require.Equal(t, 1, types)
			require.Equal(t, &pack, packID)
		} else {
			require.Zero(t, proposals, "another project's id changes nothing")
			require.Zero(t, types)
			require.Nil(t, packID)
		}
	}
}
