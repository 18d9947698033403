package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// connCount counts the client connections on a test server's database:
// the server's (its pool and the notifier's), the notifier's alone, the
// test pool's, and the parses waiting on a locked document.
type connCount struct{ server, notifier, test, parseWaits int }

// connWatch counts a test server's connections through its test pool,
// keeping the most seen at once.
type connWatch struct {
	s    *testServer
	most connCount
}

func (w *connWatch) count(ctx context.Context) (connCount, error) {
	var c connCount
	err := w.s.pool().QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE application_name <> $1),
		count(*) FILTER (WHERE application_name = $2),
		count(*) FILTER (WHERE application_name = $1),
		count(*) FILTER (WHERE wait_event_type = 'Lock' AND query LIKE '%FROM documents%FOR NO KEY UPDATE%')
		FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`,
		testPoolName, events.ApplicationName).Scan(&c.server, &c.notifier, &c.test, &c.parseWaits)
	w.most.server, w.most.test = max(w.most.server, c.server), max(w.most.test, c.test)
	return c, err
}

// waitParses waits until n parses wait on a locked document.
func (w *connWatch) waitParses(ctx context.Context, n int, msg string) {
	w.s.t.Helper()
	require.Eventually(w.s.t, func() bool {
		c, err := w.count(ctx)
		return err == nil && c.parseWaits == n
	}, 20*time.Second, 10*time.Millisecond, msg)
}

// requireWithin requires that the server never held more than its pool
// (maxConns) and the notifier's connection, nor the test more than its
// pool.
func (w *connWatch) requireWithin(maxConns int) {
	w.s.t.Helper()
	require.LessOrEqual(w.s.t, w.most.server, maxConns+1, "server: its pool and the notifier")
	require.LessOrEqual(w.s.t, w.most.test, int(w.s.pool().Config().MaxConns), "test: its pool")
}

// heldParse starts a server whose pool has maxConns connections, uploads
// a document and locks its row before the parse starts; it returns once
// the parse waits on the row, and the document and the lock's transaction.
func heldParse(t *testing.T, maxConns int32) (*testServer, *connWatch, string, pgx.Tx) {
	t.Helper()
	s := newServer(t, func(c *config.Config) { c.DBMaxConns = maxConns })
	ctx := context.Background()
	project, _ := s.defaultProject()
	require.NoError(t, s.m.jobs.Pause(ctx, document.QueueParsing))
	var d docBody
	s.uploadFile(s.admin, project, "held.md", "text/markdown", []byte("# Held\n\nParsed once its row is free.\n")).Decode(t, &d)
	held := pgtest.Hold(t, s.pool(), `SELECT 1 FROM documents WHERE id = $1 FOR UPDATE`, d.ID)
	require.NoError(t, s.m.jobs.Resume(ctx, document.QueueParsing))
	w := &connWatch{s: s}
	w.waitParses(ctx, 1, "the parse waits on the document")
	return s, w, d.ID, held
}

// TestConnectionBudgetWhileRowHeld: while a row a job handler needs stays
// locked (a document whose parse waits on it), the server holds at most
// its pool (GRAPHMILL_DB_MAX_CONNS) and the notifier's listening
// connection on its database, and a test polling the database through
// s.pool() as it waits holds at most that pool's connections, however
// many times it polls. The parse goes on once the row is free.
func TestConnectionBudgetWhileRowHeld(t *testing.T) {
	t.Parallel()
	const maxConns = 6
	s, w, doc, held := heldParse(t, maxConns)
	ctx := context.Background()
	for range 100 { // as a test waiting on a lock polls
		c, err := w.count(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, c.notifier, "one listening connection")
	}
	w.waitParses(ctx, 1, "the parse still waits")
	w.requireWithin(maxConns)

	require.NoError(t, held.Commit(ctx))
	project, _ := s.defaultProject()
	require.Equal(t, "parsed", s.waitDocument(project, doc).Status)
}

// TestCancelledParseLeavesNoBackend: a job cancelled while its handler's
// statement waits on a locked row ends that statement in the database too
// (the connection's backend does not stay behind, waiting, once the
// client gave up on it), while the row is still held.
func TestCancelledParseLeavesNoBackend(t *testing.T) {
	t.Parallel()
	const maxConns = 6
	s, w, doc, _ := heldParse(t, maxConns)
	ctx := context.Background()
	var job uuid.UUID
	require.NoError(t, s.pool().QueryRow(ctx, `SELECT id FROM document_parsing_jobs WHERE document_id = $1`, doc).Scan(&job))
	_, err := s.m.jobs.Cancel(ctx, s.pool(), document.QueueParsing, job)
	require.NoError(t, err)
	w.waitParses(ctx, 0, "the cancelled parse no longer waits")
	w.requireWithin(maxConns)
}
