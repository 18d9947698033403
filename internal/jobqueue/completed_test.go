package jobqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// PublishCompletedFunc announces every job of the batch that ended and
// belongs to a project, one job.completed each, dated by its clock; a job
// that will run again and a job without a project are not announced.
func TestPublishCompletedFunc(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	project := b.project(t)
	done, failed, retried, orphan := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	outcomes := []jobqueue.Outcome{
		{Job: jobqueue.Job{ID: done, ProjectID: &project}, Status: jobqueue.StatusCompleted},
		{Job: jobqueue.Job{ID: failed, ProjectID: &project}, Status: jobqueue.StatusFailed, Err: errors.New("boom")},
		{Job: jobqueue.Job{ID: retried, ProjectID: &project}, Status: jobqueue.StatusQueued, Err: errors.New("again")},
		{Job: jobqueue.Job{ID: orphan}, Status: jobqueue.StatusCompleted},
	}
	require.NoError(t, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		return jobqueue.PublishCompletedFunc("q", func() time.Time { return at })(ctx, tx, outcomes)
	}))

	rows, err := b.pool.Query(ctx, `SELECT project_id, payload, created_at FROM events WHERE type = 'job.completed' ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	type completed struct {
		Queue  string    `json:"queue"`
		JobID  uuid.UUID `json:"jobId"`
		Status string    `json:"status"`
		Error  string    `json:"error"`
	}
	var got []completed
	for rows.Next() {
		var p uuid.UUID
		var raw []byte
		var created time.Time
		require.NoError(t, rows.Scan(&p, &raw, &created))
		require.Equal(t, project, p)
		require.True(t, at.Equal(created), "created_at %s", created)
		var c completed
		require.NoError(t, json.Unmarshal(raw, &c))
		got = append(got, c)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []completed{
		{Queue: "q", JobID: done, Status: "completed"},
		{Queue: "q", JobID: failed, Status: "failed", Error: "boom"},
	}, got)
}
