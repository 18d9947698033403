package integration_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// Environment of the kill drill's child process.
const (
	killEnvDB    = "INTEGRATION_KILL_DB"
	killEnvItems = "INTEGRATION_KILL_ITEMS"
	killEnvCache = "INTEGRATION_KILL_CACHE"
)

// killItems is the size of the source the kill drill syncs.
const killItems = 60

// fillKillSource puts the drill's items in src.
func fillKillSource(src *memSource, n int) {
	for i := range n {
		src.put(fmt.Sprintf("item-%03d", i), fmt.Sprintf("# Item %d\n\nThe text of item number %d.", i, i))
	}
}

// helperProcess runs the drill's child when the test binary is started as
// one: a sync worker on the parent's database, walking the source slowly,
// until it is killed.
func helperProcess() bool {
	url := os.Getenv(killEnvDB)
	if url == "" {
		return false
	}
	if err := runKillChild(url); err != nil {
		fmt.Fprintln(os.Stderr, "kill drill child:", err)
		os.Exit(2)
	}
	return true
}

func runKillChild(url string) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	n := events.NewNotifier(pool, slog.New(slog.DiscardHandler))
	if err := n.Start(ctx); err != nil {
		return err
	}
	items, err := strconv.Atoi(os.Getenv(killEnvItems))
	if err != nil {
		return err
	}
	src := newMemSource()
	fillKillSource(src, items)
	src.delay = 20 * time.Millisecond
	_, _, jobs, err := build(pool, n, src, &extractions{}, []string{"127.0.0.0/8"}, 2*time.Second, os.Getenv(killEnvCache))
	if err != nil {
		return err
	}
	if err := jobs.Start(ctx); err != nil {
		return err
	}
	select {} // until SIGKILL
}

// TestSyncKillNine: a process running a sync is killed with SIGKILL
// midway. The job keeps what the killed attempt stored; once its lease has
// expired, another worker resumes it: every item becomes exactly one
// document, the items stored before the kill are not counted again, and
// the job completes with counters that add up.
func TestSyncKillNine(t *testing.T) {
	t.Parallel()
	url := pgtest.NewURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b := setup(t, setupOpts{pool: pool, lease: 2 * time.Second})
	fillKillSource(b.src, killItems)
	b.create(t, "docs", nil)
	res, err := b.svc.Sync(context.Background(), b.project, "docs", integration.TriggerManual, integration.SyncOptions{})
	require.NoError(t, err)
	require.True(t, res.Success)

	child := exec.Command(os.Args[0], "-test.run=^$") //nolint:gosec // the test binary itself
	child.Env = append(os.Environ(), killEnvDB+"="+url, killEnvItems+"="+strconv.Itoa(killItems), killEnvCache+"="+t.TempDir())
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	require.Eventually(t, func() bool { return b.job(t, res.JobID).Created >= killItems/3 }, time.Minute, 10*time.Millisecond)
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	before := b.job(t, res.JobID)
	require.Equal(t, "running", before.Status, "killed mid-sync")
	require.Less(t, before.Created, killItems)
	stored := count(t, pool, `SELECT count(*) FROM documents WHERE datasource_id IS NOT NULL`)
	require.Equal(t, before.Created, stored, "counters and documents commit together")

	b.startWorkers(t)
	r := b.wait(t, res.JobID)
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: killItems, Processed: killItems, Created: killItems}, r)
	require.Equal(t, killItems, count(t, pool, `SELECT count(*) FROM documents WHERE datasource_id IS NOT NULL`))
	require.Equal(t, killItems, count(t, pool, `SELECT count(DISTINCT external_id) FROM documents`))
	require.Equal(t, killItems, count(t, pool, `SELECT count(*) FROM document_parsing_jobs`), "one parse per document")
	var attempts, retries int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT attempt, retry_count FROM integration_sync_jobs WHERE id = $1`, res.JobID).
		Scan(&attempts, &retries))
	require.Equal(t, 2, attempts)
	require.Equal(t, 1, retries, "the expired lease counted one failure")
	t.Logf("sync kill -9 drill: %d items; killed after %d stored; resumed and completed", killItems, before.Created)
}
