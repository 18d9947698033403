package postgres_test

import (
	"context"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/migrations"
)

func openEmpty(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := postgres.Open(ctx, pgtest.NewEmptyURL(t), 10)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func migrationCount(t *testing.T) int {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return len(files)
}

// TestMigrateConcurrent starts four replicas' worth of Migrate on one empty
// database at once: the advisory lock must let exactly one apply each
// migration, and the others must succeed without applying anything.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := openEmpty(t)
	want := migrationCount(t)

	const replicas = 4
	applied := make([]int, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() { applied[i], errs[i] = postgres.Migrate(ctx, pool, migrations.FS) })
	}
	wg.Wait()

	total := 0
	for i := range replicas {
		require.NoError(t, errs[i], "replica %d", i)
		total += applied[i]
	}
	require.Equal(t, want, total, "each migration applied by exactly one replica: %v", applied)

	rows, err := pool.Query(ctx, `SELECT version_id, count(*) FROM goose_db_version WHERE version_id > 0 GROUP BY version_id`)
	require.NoError(t, err)
	counts := map[int64]int{}
	for rows.Next() {
		var version int64
		var n int
		require.NoError(t, rows.Scan(&version, &n))
		counts[version] = n
	}
	require.NoError(t, rows.Err())
	require.Len(t, counts, want)
	for version, n := range counts {
		require.Equal(t, 1, n, "migration %d recorded %d times", version, n)
	}

	// The schema is really there, not only the bookkeeping.
	var exists bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('public.api_tokens') IS NOT NULL`).Scan(&exists))
	require.True(t, exists)

	again, err := postgres.Migrate(ctx, pool, migrations.FS)
	require.NoError(t, err)
	require.Zero(t, again)
}
