package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/graphmill/graphmill/internal/postgres"
)

// Server is a throwaway PostgreSQL cluster owned by this process: in a
// temporary directory that holds the owner's pid, so that a later run stops
// and removes it should this process die without calling Stop.
type Server struct {
	cluster *postgres.Cluster
	dir     string
}

const (
	dirPrefix = "graphmill-pgtest-"
	ownerFile = "owner.pid"
)

// serverSettings tune a throwaway cluster for tests: nothing is kept across
// a crash, and one cluster serves the parallel tests of several packages.
var serverSettings = map[string]string{ //nolint:gochecknoglobals // constant table
	"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "600",
}

// StartServer initialises and starts a throwaway cluster (fsync off), after
// stopping the clusters of earlier runs whose owner died. The cluster lives
// in memory (/dev/shm) when that has room: on a virtual disk, creating a
// database costs ten times as much even with fsync off.
func StartServer(ctx context.Context) (*Server, error) {
	reapOrphans(ctx)
	dir, err := os.MkdirTemp(TempRoot(), dirPrefix)
	if err != nil {
		dir, err = os.MkdirTemp("", dirPrefix)
	}
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("write owner: %w", err)
	}
	// The postgres user (when running as root) must pass through.
	if err := os.Chmod(dir, 0o711); err != nil { //nolint:gosec // traversal only, for the postgres user
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("chmod temp dir: %w", err)
	}
	c, err := postgres.NewCluster(filepath.Join(dir, "pg"), postgres.ClusterOptions{Settings: serverSettings})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		stopCluster(ctx, c)
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &Server{cluster: c, dir: dir}, nil
}

// URL is the server's URL (its maintenance database, as a superuser that
// creates databases).
func (s *Server) URL() string { return s.cluster.URL("postgres") }

// TempDir creates a temporary directory inside the server's directory
// (removed with it by Stop, or by a later run should this process die):
// withpg hands it to the tests as TMPDIR, so that their files are in memory
// too when the cluster is. It is world-writable and sticky like /tmp, since
// the postgres user must reach the clusters tests start in it.
func (s *Server) TempDir() (string, error) {
	dir := filepath.Join(s.dir, "tmp")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil { //nolint:gosec // a /tmp of the test run
		return "", fmt.Errorf("chmod %s: %w", dir, err)
	}
	return dir, nil
}

// Stop stops the cluster and removes its directory.
func (s *Server) Stop(ctx context.Context) {
	stopCluster(ctx, s.cluster)
	_ = os.RemoveAll(s.dir)
}

func stopCluster(ctx context.Context, c *postgres.Cluster) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_ = c.Stop(sctx)
}

// memoryDir is a RAM-backed file system on Linux, and memoryMin the room it
// must have for a test cluster (a migrated database is about 10 MB; the
// parallel tests of a package hold dozens at once). Containers often mount
// a /dev/shm of 64 MB, which is too small.
const (
	memoryDir  = "/dev/shm"
	memoryMin  = 2 << 30
	tmpfsMagic = 0x01021994
)

// TempRoot is where throwaway clusters go: memoryDir when it is a tmpfs
// with at least memoryMin free, else the system's temporary directory.
func TempRoot() string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(memoryDir, &st); err == nil && st.Type == tmpfsMagic && st.Bsize > 0 && st.Bavail >= memoryMin/uint64(st.Bsize) {
		return memoryDir
	}
	return os.TempDir()
}

// reapOrphans stops and removes the clusters of test binaries that died
// without cleaning up (killed by a timeout or a signal): nothing else would
// ever stop them.
func reapOrphans(ctx context.Context) {
	var dirs []string
	for _, root := range []string{memoryDir, os.TempDir()} {
		found, _ := filepath.Glob(filepath.Join(root, dirPrefix+"*"))
		dirs = append(dirs, found...)
	}
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM) {
			continue
		}
		if c, err := postgres.NewCluster(filepath.Join(dir, "pg"), postgres.ClusterOptions{}); err == nil {
			stopCluster(ctx, c)
		}
		_ = os.RemoveAll(dir)
	}
}
