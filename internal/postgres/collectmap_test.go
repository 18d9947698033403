package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

func TestCollectMap(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	pool := pgtest.New(t)
	a, b := uuid.New(), uuid.New()

	t.Run("KeysToValues", func(t *testing.T) {
		t.Parallel()
		rows, _ := pool.Query(ctx, `SELECT * FROM (VALUES ($1::uuid, 'parsed'), ($2::uuid, 'failed')) AS v(id, status)`, a, b)
		got, err := postgres.CollectMap[uuid.UUID, string](rows)
		require.NoError(t, err)
		require.Equal(t, map[uuid.UUID]string{a: "parsed", b: "failed"}, got)
	})

	t.Run("NoRowsIsEmpty", func(t *testing.T) {
		t.Parallel()
		rows, _ := pool.Query(ctx, `SELECT $1::uuid, 1 WHERE false`, a)
		got, err := postgres.CollectMap[uuid.UUID, int](rows)
		require.NoError(t, err)
		require.Empty(t, got)
		require.NotNil(t, got)
	})

	t.Run("QueryError", func(t *testing.T) {
		t.Parallel()
		rows, _ := pool.Query(ctx, `SELECT id, n FROM no_such_table`)
		_, err := postgres.CollectMap[uuid.UUID, int](rows)
		require.ErrorContains(t, err, "no_such_table")
	})
}
