package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

func TestExecOne(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	pool := pgtest.New(t)
	_, err := pool.Exec(ctx, `CREATE TABLE pets (name text PRIMARY KEY, legs int NOT NULL)`)
	require.NoError(t, err)

	changed, err := postgres.ExecOne(ctx, pool, "add pet", `INSERT INTO pets VALUES ($1, 4) ON CONFLICT DO NOTHING`, "cat")
	require.NoError(t, err)
	require.True(t, changed, "the row was inserted")
	changed, err = postgres.ExecOne(ctx, pool, "add pet", `INSERT INTO pets VALUES ($1, 4) ON CONFLICT DO NOTHING`, "cat")
	require.NoError(t, err)
	require.False(t, changed, "the row was there")

	changed, err = postgres.ExecOne(ctx, pool, "delete pet", `DELETE FROM pets WHERE name = $1`, "cat")
	require.NoError(t, err)
	require.True(t, changed)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pets`).Scan(&n))
	require.Zero(t, n, "the row is gone")
	changed, err = postgres.ExecOne(ctx, pool, "delete pet", `DELETE FROM pets WHERE name = $1`, "cat")
	require.NoError(t, err)
	require.False(t, changed, "nothing to delete")

	_, err = postgres.ExecOne(ctx, pool, "delete pet", `DELETE FROM nowhere`)
	require.ErrorContains(t, err, "delete pet: ")
}
