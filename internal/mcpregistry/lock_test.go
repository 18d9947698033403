package mcpregistry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// TestSyncDuringDelete: a server's deletion locks the server's row, then
// (its cascade) its tools'; a sync running meanwhile refreshes a known
// tool, then adds a new one, whose reference to the server waits for the
// deletion. The sync locks the server first, so it waits for the
// deletion, then answers not_found (it was a deadlock's victim before,
// an internal error).
func TestSyncDuringDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ts := mcptest.Streamable(t, mcptest.NewServer("echo", "add"), "", "")
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "remote", Type: mcpregistry.TypeHTTP, URL: ts.URL}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)
	// echo is new to the next sync, which refreshes add first.
	_, err = b.pool.Exec(ctx, `DELETE FROM mcp_server_tools WHERE server_id = $1 AND tool_name = 'echo'`, srv.ID)
	require.NoError(t, err)

	// The deletion: the server's row, then (its cascade) the tools'.
	del := pgtest.Hold(t, b.pool, `SELECT 1 FROM mcp_servers WHERE id = $1 FOR UPDATE`, srv.ID)
	synced := make(chan error, 1)
	go func() {
		_, err := b.svc.Sync(ctx, b.project, srv.ID)
		synced <- err
	}()
	require.Eventually(t, func() bool { return pgtest.LockWaits(t, b.pool) == 1 }, 10*time.Second, 10*time.Millisecond, "the sync waits for the server's row")
	_, err = del.Exec(ctx, `DELETE FROM mcp_servers WHERE id = $1`, srv.ID)
	require.NoError(t, err, "the sync gave way")
	require.NoError(t, del.Commit(ctx))

	require.ErrorIs(t, <-synced, mcpregistry.ErrServerNotFound)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM mcp_server_tools WHERE server_id = $1`, srv.ID).Scan(&n))
	require.Zero(t, n, "the sync wrote no tool of the deleted server")
}
