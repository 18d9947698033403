package search

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/postgres"
)

// conns lends pool connections to the queries of one Service's searches,
// at most len(slots) at once whatever the number of searches: the pool
// also serves the API's other requests and the job workers, which would
// otherwise wait behind a burst of searches (a hybrid search runs up to
// four queries at once). A query waits for a slot, then for a connection;
// it never holds a slot while waiting for another, so searches cannot
// deadlock on the slots.
type conns struct {
	pool    *pgxpool.Pool
	slots   chan struct{}
	waiting atomic.Int32 // queries waiting for a slot
}

func newConns(pool *pgxpool.Pool, maxConns int) *conns {
	return &conns{pool: pool, slots: make(chan struct{}, maxConns)}
}

// lend runs query on one of the pool's connections once a slot is free.
func lend[T any](ctx context.Context, c *conns, query func(db postgres.DBTX) (T, error)) (T, error) {
	var zero T
	c.waiting.Add(1)
	select {
	case c.slots <- struct{}{}:
		c.waiting.Add(-1)
	case <-ctx.Done():
		c.waiting.Add(-1)
		return zero, fmt.Errorf("search: wait for a connection: %w", ctx.Err())
	}
	defer func() { <-c.slots }()
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return zero, fmt.Errorf("search: acquire a connection: %w", err)
	}
	defer conn.Release()
	return query(conn)
}
