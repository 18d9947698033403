package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
)

// TestWorkerProcessesJobs: graphmill worker runs the job workers and the
// ops endpoint only: a document queued in the database is parsed, chunked
// and embedded by it, and there is no public API.
func TestWorkerProcessesJobs(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewURL(t)
	cfg := testConfig(t, dbURL)
	m := &Main{Config: cfg, Logger: slog.New(slog.DiscardHandler), WorkersOnly: true}
	require.NoError(t, m.Start(context.Background()))
	t.Cleanup(func() { m.Stop(context.Background()) })
	require.Empty(t, m.APIAddr(), "no public API")
	require.Empty(t, m.AdminToken, "no bootstrap")

	res, err := http.Get("http://" + m.OpsAddr() + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Contains(t, string(body), "graphmill_db_pool_connections")

	ctx := context.Background()
	pool := m.db.pool
	org, project, doc := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	content := []byte("# Worker\n\nA worker process parses this document without any API running.")
	sum := sha256.Sum256(content)
	now := time.Now()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'w', $2, $2)`, []any{org, now}},
		{`INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'w', $3, $3)`, []any{project, org, now}},
		{`INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, sha256, content, status, created_at, updated_at)
			VALUES ($1, $2, 'w.md', 'text/markdown', $3, $4, $5, 'parsing', $6, $6)`, []any{doc, project, len(content), sum[:], content, now}},
		{
			`INSERT INTO document_parsing_jobs (id, project_id, run_at, created_at, updated_at, document_id) VALUES ($1, $2, $3, $3, $3, $4)`,
			[]any{uuid.Must(uuid.NewV7()), project, now, doc},
		},
		{`SELECT pg_notify('jobqueue_document_parsing', '')`, nil},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err, q.sql)
	}
	require.Eventually(t, func() bool {
		var status string
		var chunks, embedded int
		require.NoError(t, pool.QueryRow(ctx, `SELECT d.status, count(c.id), count(c.embedded_at) FROM documents d
			LEFT JOIN document_chunks c ON c.document_id = d.id WHERE d.id = $1 GROUP BY d.status`, doc).Scan(&status, &chunks, &embedded))
		return status == "parsed" && chunks > 0 && embedded == chunks
	}, 20*time.Second, 20*time.Millisecond)

	res, err = http.Get("http://" + m.OpsAddr() + "/metrics")
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.Contains(t, string(body), `graphmill_jobqueue_batch_duration_seconds_count{queue="document_parsing"}`)
}

func TestWorkerCommandNeedsDatabaseURL(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"worker"}, []string{"GRAPHMILL_DATA_DIR=" + t.TempDir()}, &out, &errOut)
	require.ErrorContains(t, err, "GRAPHMILL_DATABASE_URL")
}
