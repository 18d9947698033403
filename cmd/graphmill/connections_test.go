package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// TestConnectionBudgetWhileRowHeld: while a row a job handler needs stays
// locked (a document whose parse waits on it), the server holds at most
// its pool (GRAPHMILL_DB_MAX_CONNS) and the notifier's listening
// connection on its database, and a test polling the database through
// s.pool() as it waits holds at most that pool's connections, however
// many times it polls. The parse goes on once the row is free.
func TestConnectionBudgetWhileRowHeld(t *testing.T) {
	t.Parallel()
	const maxConns = 6
	s := newServer(t, func(c *config.Config) { c.DBMaxConns = maxConns })
	ctx := context.Background()
	project, _ := s.defaultProject()
	require.NoError(t, s.m.jobs.Pause(ctx, document.QueueParsing))
	var d docBody
	s.uploadFile(s.admin, project, "held.md", "text/markdown", []byte("# Held\n\nParsed once its row is free.\n")).Decode(t, &d)
	held := pgtest.Hold(t, s.pool(), `SELECT 1 FROM documents WHERE id = $1 FOR UPDATE`, d.ID)
	require.NoError(t, s.m.jobs.Resume(ctx, document.QueueParsing))

	type sample struct{ server, notifier, test, parseWaits int }
	var most sample // the most connections seen at once
	poll := func() (sample, error) {
		var x sample
		err := s.pool().QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE application_name <> $1),
			count(*) FILTER (WHERE application_name = $2),
			count(*) FILTER (WHERE application_name = $1),
			count(*) FILTER (WHERE wait_event_type = 'Lock' AND query LIKE '%FROM documents%FOR NO KEY UPDATE%')
			FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`,
			testPoolName, events.ApplicationName).Scan(&x.server, &x.notifier, &x.test, &x.parseWaits)
		most.server, most.test = max(most.server, x.server), max(most.test, x.test)
		return x, err
	}
	// Until the parse waits on the row, then a hundred times more: a test
	// waiting on a lock polls like this.
	require.Eventually(t, func() bool {
		x, err := poll()
		return err == nil && x.parseWaits == 1
	}, 20*time.Second, 10*time.Millisecond, "the parse waits on the document")
	for range 100 {
		x, err := poll()
		require.NoError(t, err)
		require.Equal(t, 1, x.parseWaits, "the parse still waits")
		require.Equal(t, 1, x.notifier, "one listening connection")
	}
	require.LessOrEqual(t, most.server, maxConns+1, "server: its pool and the notifier")
	require.LessOrEqual(t, most.test, int(s.pool().Config().MaxConns), "test: its pool")

	require.NoError(t, held.Commit(ctx))
	require.Equal(t, "parsed", s.waitDocument(project, d.ID).Status)
}
