package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// clusterDir returns a fresh directory for a cluster, inside a temporary
// parent that the postgres user can pass through (t.TempDir's parents are
// 0700, which PostgreSQL, run as postgres when the tests run as root, cannot
// enter), in memory when there is room (pgtest.TempRoot).
func clusterDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp(pgtest.TempRoot(), "graphmill-cluster-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(parent, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	return filepath.Join(parent, "pg")
}

func newCluster(t *testing.T, dir string) *postgres.Cluster {
	t.Helper()
	c, err := postgres.NewCluster(dir, postgres.ClusterOptions{Settings: map[string]string{
		"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
	}})
	require.NoError(t, err)
	return c
}

// stopOnCleanup stops c when the test ends, whatever happened.
func stopOnCleanup(t *testing.T, c *postgres.Cluster) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.Stop(ctx)
	})
}

func connect(t *testing.T, c *postgres.Cluster) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL(postgres.ClusterDatabase))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func urlPort(t *testing.T, c *postgres.Cluster) string {
	t.Helper()
	u, err := url.Parse(c.URL(postgres.ClusterDatabase))
	require.NoError(t, err)
	return u.Port()
}

func urlPassword(t *testing.T, c *postgres.Cluster) string {
	t.Helper()
	u, err := url.Parse(c.URL(postgres.ClusterDatabase))
	require.NoError(t, err)
	pass, ok := u.User.Password()
	require.True(t, ok)
	return pass
}

// TestClusterRestart covers a cluster's life across process restarts:
// first start initialises it, a later Cluster on the same directory finds
// the data, port and password again, and a postmaster.pid left behind by a
// crash (naming a live process that is not a postmaster) does not stop it
// from starting.
func TestClusterRestart(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := clusterDir(t)

	first := newCluster(t, dir)
	stopOnCleanup(t, first)
	require.NoError(t, first.Start(ctx))
	require.True(t, first.Started())

	// Files of DESIGN.md section 1: the password (0600) and the saved port.
	st, err := os.Stat(filepath.Join(dir, ".password"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	password := readTrimmed(t, filepath.Join(dir, ".password"))
	require.NotEmpty(t, password)
	require.Equal(t, password, urlPassword(t, first))
	port := readTrimmed(t, filepath.Join(dir, "port"))
	require.Equal(t, port, urlPort(t, first))
	require.Contains(t, first.URL("x"), "@127.0.0.1:")

	conn := connect(t, first)
	_, err = conn.Exec(ctx, `CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before restart')`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	require.NoError(t, first.Stop(ctx))
	require.NoFileExists(t, filepath.Join(dir, "data", "postmaster.pid"))
	_, err = pgx.Connect(ctx, first.URL(postgres.ClusterDatabase))
	require.Error(t, err, "the cluster still answers after Stop")
	require.NoError(t, first.Stop(ctx), "Stop of a stopped cluster")

	restarted := func(name string) {
		t.Helper()
		c := newCluster(t, dir)
		stopOnCleanup(t, c)
		require.NoError(t, c.Start(ctx), name)
		require.True(t, c.Started(), name)
		require.Equal(t, port, urlPort(t, c), name)
		require.Equal(t, password, urlPassword(t, c), name)
		require.Equal(t, password, readTrimmed(t, filepath.Join(dir, ".password")), name)
		var v string
		require.NoError(t, connect(t, c).QueryRow(ctx, `SELECT v FROM kept`).Scan(&v), name)
		require.Equal(t, "before restart", v, name)
		// The postmaster.pid now names the real postmaster.
		line1, _, _ := strings.Cut(readTrimmed(t, filepath.Join(dir, "data", "postmaster.pid")), "\n")
		pid, err := strconv.Atoi(line1)
		require.NoError(t, err, name)
		require.NotEqual(t, os.Getpid(), pid, name)
		require.NoError(t, c.Stop(ctx), name)
	}
	restarted("clean restart")

	// A crash leaves postmaster.pid behind, and its pid may have been
	// reused by an unrelated process: this test's own pid is such a one.
	stale := fmt.Sprintf("%d\n%s\n1700000000\n%s\n\n127.0.0.1\n", os.Getpid(), filepath.Join(dir, "data"), port)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "postmaster.pid"), []byte(stale), 0o600))
	restarted("restart over a stale postmaster.pid")
}

// TestClusterAdopt starts a second Cluster on a directory whose postmaster
// is running (a previous owner that died without stopping it): the second
// one adopts the running server instead of starting another.
func TestClusterAdopt(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := clusterDir(t)

	owner := newCluster(t, dir)
	stopOnCleanup(t, owner)
	require.NoError(t, owner.Start(ctx))
	require.True(t, owner.Started())
	_, err := connect(t, owner).Exec(ctx, `CREATE TABLE marker (v int); INSERT INTO marker VALUES (7)`)
	require.NoError(t, err)
	pidBefore := readTrimmed(t, filepath.Join(dir, "data", "postmaster.pid"))

	adopter := newCluster(t, dir)
	require.NoError(t, adopter.Start(ctx))
	require.False(t, adopter.Started())
	require.Equal(t, owner.URL(postgres.ClusterDatabase), adopter.URL(postgres.ClusterDatabase))
	var v int
	require.NoError(t, connect(t, adopter).QueryRow(ctx, `SELECT v FROM marker`).Scan(&v))
	require.Equal(t, 7, v)
	// Same postmaster: its pid file was neither removed nor replaced.
	require.Equal(t, pidBefore, readTrimmed(t, filepath.Join(dir, "data", "postmaster.pid")))
}
