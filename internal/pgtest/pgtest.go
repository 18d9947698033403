// Package pgtest gives tests a real PostgreSQL. Main (called from a test
// package's TestMain) uses the server GRAPHMILL_TEST_DATABASE_URL names
// (make test starts one cluster for the whole run with the withpg command)
// or, when it is unset, starts one throwaway cluster for the package; either
// way it migrates a template database of the package's own once. New clones
// that template for one test and drops the clone afterwards; Tx gives a
// test a transaction on one database shared by the package's tests, rolled
// back when the test ends.
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
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/migrations"
)

// EnvURL names an existing server to use instead of a throwaway cluster;
// its user must be allowed to create databases.
const EnvURL = "GRAPHMILL_TEST_DATABASE_URL"

type harness struct {
	baseURL string
	prefix  string // of every database this binary creates: the package and a random part
	admin   *pgxpool.Pool
	server  *Server // nil when an external server is used

	sharedOnce sync.Once
	shared     *pgxpool.Pool // the database of Tx, created on first use
	sharedErr  error
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

func start(ctx context.Context) (*harness, error) {
	h := &harness{prefix: databasePrefix(os.Args[0]), baseURL: os.Getenv(EnvURL)}
	if h.baseURL == "" {
		s, err := StartServer(ctx)
		if err != nil {
			return nil, err
		}
		h.server = s
		h.baseURL = s.URL()
	}
	admin, err := postgres.Open(ctx, h.baseURL, 4)
	if err != nil {
		h.stop(ctx)
		return nil, err
	}
	h.admin = admin
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{h.template()}.Sanitize()); err != nil {
		h.stop(ctx)
		return nil, fmt.Errorf("create template: %w", err)
	}
	tpl, err := postgres.Open(ctx, h.urlFor(h.template()), 2)
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

// nonIdent is what a database name built from a binary's name leaves out.
var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// databasePrefix names the databases of one test binary after its package
// (the binary is <package>.test), with a random part so that two binaries
// of the same package name on one server do not collide:
// "gm_jobqueue_1a2b3c4d".
func databasePrefix(binary string) string {
	name := strings.TrimSuffix(filepath.Base(binary), ".test")
	name = nonIdent.ReplaceAllString(strings.ToLower(name), "_")
	if len(name) > 24 {
		name = name[:24]
	}
	return "gm_" + name + "_" + randomHex(4)
}

func (h *harness) template() string { return h.prefix + "_template" }

func (h *harness) stop(ctx context.Context) {
	if h.shared != nil {
		h.shared.Close()
	}
	if h.admin != nil {
		// A server shared with other packages keeps nothing of this one.
		rows, err := h.admin.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, h.prefix+"_")
		if err == nil {
			names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
			for _, name := range names {
				_, _ = h.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			}
		}
		h.admin.Close()
	}
	if h.server != nil {
		h.server.Stop(ctx)
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

// Exec runs sql with args on pool (rows a migration test writes as they
// were), failing t on an error.
func Exec(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("pgtest: exec %s: %v", sql, err)
	}
}

// NewAtVersion creates a database for one test migrated up to version
// (dropped when the test ends) and returns a pool on it and the goose
// provider that migrates it further: a migration test writes rows as they
// were, then applies the migration it tests (provider.UpTo, Up, Down).
func NewAtVersion(t testing.TB, version int64) (*pgxpool.Pool, *goose.Provider) {
	t.Helper()
	ctx := context.Background()
	pool, err := postgres.Open(ctx, NewEmptyURL(t), 4)
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	t.Cleanup(pool.Close)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatalf("pgtest: migrations: %v", err)
	}
	if _, err := provider.UpTo(ctx, version); err != nil {
		t.Fatalf("pgtest: migrate up to %d: %v", version, err)
	}
	return pool, provider
}

func harnessOf(t testing.TB) *harness {
	t.Helper()
	if current == nil {
		t.Fatal("pgtest: call pgtest.Main(m) from TestMain")
	}
	return current
}

func newDatabase(t testing.TB, migrated bool) string {
	t.Helper()
	h := harnessOf(t)
	name := h.prefix + "_" + randomHex(8)
	if err := h.createDatabase(context.Background(), name, migrated); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		_, _ = h.admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return h.urlFor(name)
}

func (h *harness) createDatabase(ctx context.Context, name string, migrated bool) error {
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if migrated {
		stmt += " TEMPLATE " + pgx.Identifier{h.template()}.Sanitize()
	}
	if _, err := h.admin.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	return nil
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

// sharedMaxConns bounds the connections of the database Tx hands out: a
// test holds one for its whole life, so it is the number of Tx tests that
// run at once.
const sharedMaxConns = 16

// Tx returns a transaction on a migrated database that every test of the
// package shares, rolled back when the test ends: nothing a test writes is
// ever seen by another. It is for store tests that never need a commit:
// a test that needs its writes committed (seen by another connection, by
// LISTEN/NOTIFY, by a concurrent transaction, or by code that opens its
// own transactions on a pool) takes New instead. Tests writing unique
// values must make them unique per test (random), or they wait for each
// other on the shared database's unique indexes.
func Tx(t testing.TB) pgx.Tx {
	t.Helper()
	h := harnessOf(t)
	h.sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		name := h.prefix + "_shared"
		if h.sharedErr = h.createDatabase(ctx, name, true); h.sharedErr != nil {
			return
		}
		h.shared, h.sharedErr = postgres.Open(ctx, h.urlFor(name), sharedMaxConns)
	})
	if h.sharedErr != nil {
		t.Fatalf("pgtest: shared database: %v", h.sharedErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := h.shared.Begin(ctx)
	if err != nil {
		t.Fatalf("pgtest: begin: %v", err)
	}
	t.Cleanup(func() {
		if err := tx.Rollback(context.Background()); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			t.Errorf("pgtest: roll back: %v", err)
		}
	})
	return tx
}
