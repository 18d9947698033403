package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// TestWithTxRetryDeadlock: a transaction chosen as a deadlock's victim (or
// refused with a serialization failure) is run again (its writes rolled
// back first), three runs at the most; any other error ends it at once.
func TestWithTxRetryDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	_, err := pool.Exec(ctx, `CREATE TABLE runs (n int NOT NULL)`)
	require.NoError(t, err)
	deadlock := fmt.Errorf("lock: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"})
	rows := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM runs`).Scan(&n))
		return n
	}

	runs := 0
	require.NoError(t, postgres.WithTxRetryDeadlock(ctx, pool, func(tx pgx.Tx) error {
		runs++
		if _, err := tx.Exec(ctx, `INSERT INTO runs VALUES ($1)`, runs); err != nil {
			return err
		}
		if runs == 1 {
			return deadlock
		}
		return nil
	}))
	require.Equal(t, 2, runs)
	require.Equal(t, 1, rows(), "the victim's insert was rolled back")

	runs = 0
	err = postgres.WithTxRetryDeadlock(ctx, pool, func(tx pgx.Tx) error {
		runs++
		return deadlock
	})
	require.True(t, postgres.IsTxConflict(err))
	require.Equal(t, 3, runs)

	runs = 0
	serialization := fmt.Errorf("hook: %w", &pgconn.PgError{Code: "40001", Message: "could not serialize access"})
	require.NoError(t, postgres.WithTxRetryDeadlock(ctx, pool, func(tx pgx.Tx) error {
		runs++
		if runs == 1 {
			return serialization
		}
		return nil
	}))
	require.Equal(t, 2, runs, "a serialization failure runs it again too")

	runs = 0
	other := errors.New("not found")
	require.ErrorIs(t, postgres.WithTxRetryDeadlock(ctx, pool, func(tx pgx.Tx) error {
		runs++
		return other
	}), other)
	require.Equal(t, 1, runs)
	require.Equal(t, 1, rows())
}
