package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

func TestWithTx(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	pool := pgtest.New(t)
	_, err := pool.Exec(ctx, `CREATE TABLE things (name text PRIMARY KEY)`)
	require.NoError(t, err)
	count := func(name string) int {
		t.Helper()
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM things WHERE name = $1`, name).Scan(&n))
		return n
	}

	t.Run("CommitsOnNil", func(t *testing.T) {
		t.Parallel()
		err := postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO things VALUES ('kept')`)
			return err
		})
		require.NoError(t, err)
		require.Equal(t, 1, count("kept"))
	})

	t.Run("RollsBackOnError", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("boom")
		err := postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO things VALUES ('dropped')`); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.Equal(t, 0, count("dropped"))
	})

	t.Run("RollsBackOnPanic", func(t *testing.T) {
		t.Parallel()
		require.Panics(t, func() {
			_ = postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO things VALUES ('panicked')`); err != nil {
					return err
				}
				panic("boom")
			})
		})
		require.Equal(t, 0, count("panicked"))
	})
}

func TestIsUniqueViolation(t *testing.T) {
	t.Parallel()

	unique := &pgconn.PgError{Code: "23505", ConstraintName: "things_name_key"}
	foreign := &pgconn.PgError{Code: "23503", ConstraintName: "things_owner_fkey"}
	tests := []struct {
		name       string
		err        error
		constraint string
		unique     bool
	}{
		{name: "NamedConstraint", err: unique, constraint: "things_name_key", unique: true},
		{name: "AnyConstraint", err: unique, constraint: "", unique: true},
		{name: "OtherConstraint", err: unique, constraint: "things_other_key", unique: false},
		{name: "Wrapped", err: fmt.Errorf("insert thing: %w", unique), constraint: "things_name_key", unique: true},
		{name: "ForeignKey", err: foreign, constraint: "", unique: false},
		{name: "WrappedForeignKey", err: fmt.Errorf("insert thing: %w", foreign)},
		{name: "PlainError", err: errors.New("23505"), constraint: ""},
		{name: "Nil", err: nil, constraint: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.unique, postgres.IsUniqueViolation(tt.err, tt.constraint))
		})
	}
}

// TestIsUniqueViolationFromServer checks the helpers against errors that a
// real server returns, not only hand-built ones. Each failing statement
// runs in a savepoint of the test's transaction, which stays usable.
func TestIsUniqueViolationFromServer(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	tx := pgtest.Tx(t)
	_, err := tx.Exec(ctx, `
		CREATE TABLE owners (id int PRIMARY KEY);
		CREATE TABLE things (name text CONSTRAINT things_name_key UNIQUE, owner int REFERENCES owners (id))`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO things (name) VALUES ('a')`)
	require.NoError(t, err)
	failing := func(sql string) error {
		t.Helper()
		sp, err := tx.Begin(ctx)
		require.NoError(t, err)
		_, err = sp.Exec(ctx, sql)
		require.NoError(t, sp.Rollback(ctx))
		return err
	}

	err = failing(`INSERT INTO things (name) VALUES ('a')`)
	require.Error(t, err)
	require.True(t, postgres.IsUniqueViolation(err, "things_name_key"))
	require.True(t, postgres.IsUniqueViolation(err, ""))
	require.False(t, postgres.IsUniqueViolation(err, "owners_pkey"))

	err = failing(`INSERT INTO things (name, owner) VALUES ('b', 42)`)
	require.Error(t, err)
	require.False(t, postgres.IsUniqueViolation(err, ""))
}

// TestIsUnavailable: errors saying the database is down (refused or lost
// connections, a server shutting down) are told apart from statement
// errors and from the caller's own deadline.
func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Nothing listens on a port just released.
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, refused := pgx.Connect(ctx, "postgres://u:p@"+addr+"/db?sslmode=disable&connect_timeout=5")
	require.Error(t, refused)

	pool := pgtest.New(t)
	_, divide := pool.Exec(ctx, `SELECT 1/0`)
	require.Error(t, divide)
	tctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	_, deadline := pool.Exec(tctx, `SELECT pg_sleep(1)`)
	require.Error(t, deadline)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	var pid int
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	_, err = pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
	require.NoError(t, err)
	_, terminated := conn.Exec(ctx, `SELECT 1`)
	conn.Release()
	require.Error(t, terminated)

	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("list: %w", refused), true},
		{"connection terminated by the server", terminated, true},
		{"server shutting down", &pgconn.PgError{Code: "57P01"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"division by zero", divide, false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"the caller's deadline", deadline, false},
		{"nil", nil, false},
		{"another error", errors.New("boom"), false},
	} {
		require.Equal(t, c.want, postgres.IsUnavailable(c.err), "%s: %v", c.name, c.err)
	}
}

func TestOne(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	pool := pgtest.New(t)
	_, err := pool.Exec(ctx, `CREATE TABLE pets (name text PRIMARY KEY, legs int NOT NULL)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO pets VALUES ('cat', 4), ('bird', 2), ('dog', 4)`)
	require.NoError(t, err)
	errNoPet := errors.New("no such pet")
	type pet struct {
		Name string `db:"name"`
		Legs int    `db:"legs"`
	}

	p, err := postgres.One[pet](ctx, pool, errNoPet, `SELECT name, legs FROM pets WHERE name = $1`, "bird")
	require.NoError(t, err)
	require.Equal(t, pet{Name: "bird", Legs: 2}, p, "a struct is scanned by column name")

	legs, err := postgres.One[int](ctx, pool, errNoPet, `SELECT legs FROM pets WHERE name = $1`, "cat")
	require.NoError(t, err)
	require.Equal(t, 4, legs, "anything else is the one column's value")

	_, err = postgres.One[pet](ctx, pool, errNoPet, `SELECT name, legs FROM pets WHERE name = $1`, "fish")
	require.ErrorIs(t, err, errNoPet)
	_, err = postgres.One[int](ctx, pool, errNoPet, `SELECT legs FROM pets WHERE legs = 4`)
	require.Error(t, err, "two rows")
	require.NotErrorIs(t, err, errNoPet)
	_, err = postgres.One[int](ctx, pool, errNoPet, `SELECT legs FROM nowhere`)
	require.Error(t, err)
	require.NotErrorIs(t, err, errNoPet)
}

func TestOpenScansTimestamptzInUTC(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	pool := pgtest.New(t)
	var at time.Time
	var ats []time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT '2026-01-02 03:04:05.678+02'::timestamptz, ARRAY['2026-01-02 03:04:05+02'::timestamptz]`).Scan(&at, &ats))
	require.Same(t, time.UTC, at.Location())
	require.Equal(t, time.Date(2026, 1, 2, 1, 4, 5, 678000000, time.UTC), at)
	require.Same(t, time.UTC, ats[0].Location())
}

func TestCollectPageOf(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	pool := pgtest.New(t)
	type pet struct {
		Name string `db:"name"`
		Legs int    `db:"legs"`
	}
	page := func(limit int) string {
		return fmt.Sprintf(`SELECT name, legs, count(*) OVER () AS total
			FROM (VALUES ('cat', 4), ('bird', 2), ('dog', 4)) AS p(name, legs) ORDER BY name LIMIT %d`, limit)
	}

	rows, _ := pool.Query(ctx, page(2))
	list, total, err := postgres.CollectPageOf[pet](rows)
	require.NoError(t, err)
	require.Equal(t, []pet{{"bird", 2}, {"cat", 4}}, list, "the rows scanned by name, total aside")
	require.Equal(t, 3, total)

	rows, _ = pool.Query(ctx, page(0))
	list, total, err = postgres.CollectPageOf[pet](rows)
	require.NoError(t, err)
	require.Empty(t, list)
	require.Zero(t, total)

	rows, _ = pool.Query(ctx, `SELECT 'cat' AS name, 4 AS legs`)
	_, _, err = postgres.CollectPageOf[pet](rows)
	require.Error(t, err, "no total column")
}

// TestIsTxConflict: two transactions locking two rows in opposite orders;
// PostgreSQL rolls one back with deadlock_detected, which IsTxConflict
// recognises (and no other error).
func TestIsTxConflict(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `CREATE TABLE dl (id int PRIMARY KEY); INSERT INTO dl VALUES (1), (2)`)
	require.NoError(t, err)
	locked := make(chan struct{}, 2)
	lockBoth := func(first, second int) error {
		return postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM dl WHERE id = $1 FOR UPDATE`, first); err != nil {
				return err
			}
			locked <- struct{}{} // nobody receives: len counts the first locks taken
			for len(locked) < 2 {
				time.Sleep(5 * time.Millisecond)
			}
			_, err := tx.Exec(ctx, `SELECT 1 FROM dl WHERE id = $1 FOR UPDATE`, second)
			return err
		})
	}
	errc := make(chan error, 2)
	go func() { errc <- lockBoth(1, 2) }()
	go func() { errc <- lockBoth(2, 1) }()
	a, b := <-errc, <-errc
	require.True(t, postgres.IsTxConflict(a) != postgres.IsTxConflict(b), "one victim: %v / %v", a, b)
	require.False(t, postgres.IsTxConflict(errors.New("deadlock detected")))
	require.False(t, postgres.IsTxConflict(nil))
}

func TestQualify(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ alias, columns, want string }{
		{"o", "id", "o.id"},
		{"j", "id, project_id,status", "j.id, j.project_id, j.status"},
		{"r", "id, type,\n\tcreated_at, updated_at", "r.id, r.type, r.created_at, r.updated_at"},
	} {
		require.Equal(t, c.want, postgres.Qualify(c.alias, c.columns))
	}
}
