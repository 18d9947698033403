// Package postgres holds the database plumbing every domain shares: the
// connection pool, transactions, migrations and the embedded cluster that the
// default configuration runs.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DBTX is what store functions take, so that they run on the pool or inside a
// transaction alike.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Open connects a pool and waits until the database answers or ctx ends.
func Open(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	return OpenTraced(ctx, url, maxConns, nil)
}

// OpenTraced is Open with tracer on every connection of the pool (nil:
// none).
func OpenTraced(ctx context.Context, url string, maxConns int32, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	cfg.ConnConfig.Tracer = tracer
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.AfterConnect = scanInUTC
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = pool.Ping(pctx)
		cancel()
		if err == nil {
			return pool, nil
		}
		select {
		case <-ctx.Done():
			pool.Close()
			return nil, fmt.Errorf("connect to database: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// scanInUTC makes a connection return timestamptz values in UTC (pgx
// returns time.Local), so that no store converts them one by one.
func scanInUTC(_ context.Context, c *pgx.Conn) error {
	tz := &pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID, Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}}
	c.TypeMap().RegisterType(tz)
	c.TypeMap().RegisterType(&pgtype.Type{Name: "_timestamptz", OID: pgtype.TimestamptzArrayOID, Codec: &pgtype.ArrayCodec{ElementType: tz}})
	return nil
}

// WithTx runs fn in a transaction, committing when it returns nil and rolling
// back otherwise.
func WithTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// deadlockRuns is how many times WithTxRetryDeadlock runs its
// transaction at the most.
const deadlockRuns = 3

// WithTxRetryDeadlock runs fn in a transaction as WithTx does, and again
// (three runs at the most) when PostgreSQL chose it as a deadlock's
// victim or refused it with a serialization failure (IsTxConflict). It is
// for the use cases that delete a row whose dependent rows a running job
// writes (a document, an integration): the job's transactions take their
// locks in the other order until its cancel reaches it, and the deletion,
// run again, finds the job's writes committed or gone; and for a job's
// finishing transaction (its results, final status and outcome hooks),
// which commits all of them or none. fn must be safe to run again: it
// starts from the same inputs each time.
func WithTxRetryDeadlock(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	var err error
	for range deadlockRuns {
		if err = WithTx(ctx, pool, fn); !IsTxConflict(err) {
			return err
		}
	}
	return err
}

// IsTxConflict reports whether err is deadlock_detected or
// serialization_failure: the transaction lost to a concurrent one and was
// rolled back; running it again from its start is safe.
func IsTxConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// IsUniqueViolation reports whether err is a unique-constraint violation of
// the named constraint (any constraint when name is empty).
func IsUniqueViolation(err error, name string) bool {
	return isViolation(err, "23505", name)
}

// IsForeignKeyViolation reports whether err is a foreign-key violation of
// the named constraint (any constraint when name is empty): the row
// referred to is gone.
func IsForeignKeyViolation(err error, name string) bool {
	return isViolation(err, "23503", name)
}

// isViolation reports whether err is PostgreSQL's error code for the named
// constraint (any constraint when name is empty).
func isViolation(err error, code, name string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		return false
	}
	return name == "" || pgErr.ConstraintName == name
}

// IsUnavailable reports whether err says that the database could not be
// reached or went away (connection refused or lost, server shutting down or
// starting up) rather than refusing a statement: the database is down for a
// while, and the caller answers 503 or tries again later.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: the server is
		// shutting down, crashed, or cannot accept connections yet.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// IsUnstorableText reports whether PostgreSQL refused a value as text:
// SQLSTATE 22021 (character_not_in_repertoire: a NUL byte or invalid
// UTF-8 in text) or 22P05 (untranslatable_character: \u0000 in jsonb).
func IsUnstorableText(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "22021" || pgErr.Code == "22P05")
}

// Total is embedded in the row structs of paged queries; it receives the
// `count(*) OVER () AS total` column.
type Total struct {
	Total int `db:"total"`
}

// PageTotal returns the window total.
func (t Total) PageTotal() int { return t.Total }

// PageRow is a row struct that embeds Total.
type PageRow interface{ PageTotal() int }

// CollectPage collects the rows of a paged query, converting each with
// conv, and returns them with the total the window function counted (0 for
// an empty page).
func CollectPage[R PageRow, T any](rows pgx.Rows, conv func(R) T) ([]T, int, error) {
	return TryCollectPage(rows, func(r R) (T, error) { return conv(r), nil })
}

// TryCollectPage is CollectPage with a conversion that can fail; its
// first error ends the collection.
func TryCollectPage[R PageRow, T any](rows pgx.Rows, conv func(R) (T, error)) ([]T, int, error) {
	total := 0
	out, err := TryCollectAs(rows, func(r R) (T, error) {
		total = r.PageTotal()
		return conv(r)
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// CollectAs collects the rows of a query scanned by column name into R (a
// struct of db-tagged fields), converting each with conv.
func CollectAs[R, T any](rows pgx.Rows, conv func(R) T) ([]T, error) {
	return TryCollectAs(rows, func(r R) (T, error) { return conv(r), nil })
}

// TryCollectAs is CollectAs with a conversion that can fail; its first
// error ends the collection.
func TryCollectAs[R, T any](rows pgx.Rows, conv func(R) (T, error)) ([]T, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) {
		r, err := pgx.RowToStructByName[R](row)
		if err != nil {
			var zero T
			return zero, err
		}
		return conv(r)
	})
}

// TotalPastEnd returns total, the window count of a page of n rows at
// offset, or, for an empty page past the end (where the window counted
// no row, so total reads 0), what countSQL (a SELECT count(*) over the
// list's condition) counts with args.
func TotalPastEnd(ctx context.Context, db DBTX, n, offset, total int, countSQL string, args ...any) (int, error) {
	if n > 0 || offset == 0 {
		return total, nil
	}
	if err := db.QueryRow(ctx, countSQL, args...).Scan(&total); err != nil {
		return 0, fmt.Errorf("count past the end: %w", err)
	}
	return total, nil
}

// CollectPageOf collects the rows of a paged query scanned by column name
// into T (a struct of db-tagged fields), and returns them with the total
// the window function counted: the query's last column, named total (0
// for an empty page).
func CollectPageOf[T any](rows pgx.Rows) ([]T, int, error) {
	total := 0
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) {
		return pgx.RowToStructByName[T](totalRow{row, &total})
	})
	if err != nil {
		return nil, 0, err
	}
	return list, total, nil
}

// totalRow is a row without its last column, which Scan puts in total.
type totalRow struct {
	pgx.CollectableRow
	total *int
}

// FieldDescriptions implements pgx.CollectableRow.
func (r totalRow) FieldDescriptions() []pgconn.FieldDescription {
	fd := r.CollectableRow.FieldDescriptions()
	if len(fd) == 0 || fd[len(fd)-1].Name != "total" {
		return fd // the struct scan then reports the missing column
	}
	return fd[:len(fd)-1]
}

// Scan implements pgx.CollectableRow.
func (r totalRow) Scan(dest ...any) error {
	return r.CollectableRow.Scan(append(dest, r.total)...)
}

// One runs query and returns its only row: scanned by column name when T
// is a struct (of db-tagged fields), else T is the one column's value. No
// row is notFound; more than one is an error.
func One[T any](ctx context.Context, db DBTX, notFound error, query string, args ...any) (T, error) {
	var zero T
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return zero, err
	}
	scan := pgx.RowTo[T]
	if reflect.TypeFor[T]().Kind() == reflect.Struct {
		scan = pgx.RowToStructByName[T]
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return zero, notFound
	}
	if err != nil {
		return zero, err
	}
	return v, nil
}

// CollectIDSet collects the rows of a query of one uuid column as a set.
func CollectIDSet(rows pgx.Rows) (map[uuid.UUID]bool, error) {
	list, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, err
	}
	set := make(map[uuid.UUID]bool, len(list))
	for _, id := range list {
		set[id] = true
	}
	return set, nil
}

// Value is *p, or T's zero value when p is nil (a NULL column).
func Value[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Qualify qualifies each column of a comma-separated column list, as a
// query names them (spaces and line breaks allowed), with alias:
// Qualify("o", "id, name") is "o.id, o.name".
func Qualify(alias, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// NullIfEmpty stores an empty string as NULL.
func NullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
