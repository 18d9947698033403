package mcpregistry_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/secrets"
)

// stdioBin is the stdio MCP test server, built once by TestMain.
var stdioBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stdioBin, err = mcptest.BuildStdio(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := pgtest.Run(m)
	_ = os.RemoveAll(dir)
	if code == 0 {
		// Every stdio process watcher, reaper and client session is gone.
		if err := goleak.Find(goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const testKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// bundle is one test's service over a fresh database.
type bundle struct {
	svc     *mcpregistry.Service
	pool    *pgxpool.Pool
	project uuid.UUID
	org     uuid.UUID
}

type option func(*mcpregistry.Config)

// setup is setupUnstarted, started.
func setup(t *testing.T, opts ...option) *bundle {
	t.Helper()
	b := setupUnstarted(t, opts...)
	require.NoError(t, b.svc.Start(context.Background()))
	return b
}

// setupUnstarted builds a service (stopped at clean-up) over a fresh
// database with one organization and project.
func setupUnstarted(t *testing.T, opts ...option) *bundle {
	t.Helper()
	pool := pgtest.New(t)
	ctx := context.Background()
	b := &bundle{pool: pool, project: uuid.Must(uuid.NewV7()), org: uuid.Must(uuid.NewV7())}
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, b.org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, b.project, b.org)
	require.NoError(t, err)
	box, err := secrets.New(testKey)
	require.NoError(t, err)
	guard, err := egress.New([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	cfg := mcpregistry.Config{
		Pool: pool, Box: box, Egress: guard, Builtin: []mcpregistry.BuiltinTool{mcpregistry.WebSearchBuiltin()},
		CallTimeout: 10 * time.Second, StartTimeout: 20 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	b.svc, err = mcpregistry.NewService(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.svc.Stop(context.Background())) })
	return b
}
