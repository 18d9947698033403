package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Hold begins the other side of a deadlock test on pool and runs sql (its
// first lock) in it: a transaction that defers its deadlock check
// (deadlock_timeout 30 s), so that the code under test, whose check runs
// first, is the victim of any deadlock between them. The test then starts
// the code under test, waits until it waits (LockWaits), takes its second
// lock in the transaction and commits; it is rolled back at the test's
// end unless committed.
func Hold(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatalf("pgtest: hold: begin: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `SET LOCAL deadlock_timeout = '30s'`); err != nil {
		t.Fatalf("pgtest: hold: %v", err)
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgtest: hold: first lock: %v", err)
	}
	return tx
}

// LockWaits counts the sessions of pool's database that wait for a lock.
func LockWaits(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
		t.Fatalf("pgtest: lock waits: %v", err)
	}
	return n
}
