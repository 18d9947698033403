// Package pgtest gives tests a real PostgreSQL: Main (called from a test
// package's TestMain) starts one throwaway cluster for the package, or uses
// GRAPHMILL_TEST_DATABASE_URL, and migrates a template database once; New
// clones that template for one test and drops the clone afterwards.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/migrations"
)

// EnvURL names an existing server to use instead of a throwaway cluster;
// its user must be allowed to create databases.
const EnvURL = "GRAPHMILL_TEST_DATABASE_URL"

type harness struct {
	baseURL  string
	template string
	admin    *pgxpool.Pool
	cluster  *postgres.Cluster
}

// current is the harness of this test binary. TestMain cannot hand state
// to tests any other way.
var current *harness //nolint:gochecknoglobals // set once by Main before any test runs

// Main runs the package's tests against a fresh database server and exits.
func Main(m *testing.M) {
	os.Exit(run(m))
}

// Run is Main without the exit, for packages whose TestMain has its own
// set-up and clean-up around the tests; it returns the exit code.
func Run(m *testing.M) int { return run(m) }

func run(m *testing.M) int {
	ctx := context.Background()
	h, err := start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	current = h
	code := m.Run()
	h.stop(ctx)
	return code
}

// Cluster returns the throwaway cluster of this test binary (nil when an
// external server is used), for tests that stop and restart it.
func Cluster() *postgres.Cluster { return current.cluster }

func start(ctx context.Context) (*harness, error) {
	h := &harness{template: fmt.Sprintf("template_graphmill_%d_%s", os.Getpid(), randomHex(4))}
	h.baseURL = os.Getenv(EnvURL)
	if h.baseURL == "" {
		reapOrphans(ctx)
		dir, err := os.MkdirTemp("", dirPrefix)
		if err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return nil, fmt.Errorf("write owner: %w", err)
		}
		// The postgres user (when running as root) must pass through.
		if err := os.Chmod(dir, 0o711); err != nil { //nolint:gosec // traversal only, for the postgres user
			return nil, fmt.Errorf("chmod temp dir: %w", err)
		}
		c, err := postgres.NewCluster(filepath.Join(dir, "pg"), postgres.ClusterOptions{Settings: map[string]string{
			"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "300",
		}})
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		if err := c.Start(ctx); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		h.cluster = c
		h.baseURL = c.URL("postgres")
	}
	admin, err := postgres.Open(ctx, h.baseURL, 4)
	if err != nil {
		h.stop(ctx)
		return nil, err
	}
	h.admin = admin
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{h.template}.Sanitize()); err != nil {
		h.stop(ctx)
		return nil, fmt.Errorf("create template: %w", err)
	}
	tpl, err := postgres.Open(ctx, h.urlFor(h.template), 2)
	if err != nil {
		h.stop(ctx)
		return nil, err
	}
	_, err = postgres.Migrate(ctx, tpl, migrations.FS)
	tpl.Close()
	if err != nil {
		h.stop(ctx)
		return nil, err
	}
	return h, nil
}

const (
	dirPrefix = "graphmill-pgtest-"
	ownerFile = "owner.pid"
)

// reapOrphans stops and removes the clusters of test binaries that died
// without cleaning up (killed by a timeout or a signal): nothing else would
// ever stop them.
func reapOrphans(ctx context.Context) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
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
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_ = c.Stop(sctx)
			cancel()
		}
		_ = os.RemoveAll(dir)
	}
}

func (h *harness) stop(ctx context.Context) {
	if h.admin != nil {
		_, _ = h.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{h.template}.Sanitize()+" WITH (FORCE)")
		h.admin.Close()
	}
	if h.cluster != nil {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		_ = h.cluster.Stop(sctx)
		cancel()
		_ = os.RemoveAll(filepath.Dir(h.cluster.Dir))
	}
}

func (h *harness) urlFor(db string) string {
	u, err := url.Parse(h.baseURL)
	if err != nil {
		panic(fmt.Sprintf("pgtest: bad base url: %v", err))
	}
	u.Path = "/" + db
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewURL creates a migrated database for one test and returns its URL; it
// is dropped when the test ends.
func NewURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, true)
}

// NewEmptyURL creates an empty database (no migrations applied) for one test
// and returns its URL; it is dropped when the test ends. Migration tests
// start from it.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, false)
}

func newDatabase(t testing.TB, migrated bool) string {
	t.Helper()
	if current == nil {
		t.Fatal("pgtest: call pgtest.Main(m) from TestMain")
	}
	ctx := context.Background()
	name := "test_" + randomHex(8)
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if migrated {
		stmt += " TEMPLATE " + pgx.Identifier{current.template}.Sanitize()
	}
	if _, err := current.admin.Exec(ctx, stmt); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		_, _ = current.admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return current.urlFor(name)
}

// New returns a pool on a fresh migrated database for one test.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := postgres.Open(ctx, NewURL(t), 10)
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
