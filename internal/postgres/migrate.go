package postgres

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Migrate applies every pending migration in fsys. A session-level advisory
// lock serialises replicas that start together, so each migration runs once.
// Waiting replicas poll the lock every second (goose's default is every 5 s,
// which made every replica but the first wait 5 s or more to start) for up to
// 5 minutes.
func Migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) (applied int, err error) {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return 0, fmt.Errorf("migration locker: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(locker))
	if err != nil {
		return 0, fmt.Errorf("migration provider: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("apply migrations: %w", err)
	}
	return len(res), nil
}
