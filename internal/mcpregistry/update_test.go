package mcpregistry_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/mcpregistry"
)

// statements records the SQL a pool runs.
type statements struct {
	mu   sync.Mutex
	sqls []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	s.sqls = append(s.sqls, strings.Join(strings.Fields(d.SQL), " "))
	s.mu.Unlock()
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements run since the last take.
func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sqls
	s.sqls = nil
	return out
}

// TestUpdateServerReadsOnce: an update locks and reads the server once,
// writes it once with one clock reading, and returns the row it wrote
// (what a later read finds), secrets masked and kept.
func TestUpdateServerReadsOnce(t *testing.T) {
	t.Parallel()
	trace := &statements{}
	var clock atomic.Int64
	b := setup(t, func(c *mcpregistry.Config) {
		pc := c.Pool.Config()
		pc.ConnConfig.Tracer = trace
		pool, err := pgxpool.NewWithConfig(context.Background(), pc)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		c.Pool = pool
		c.Now = func() time.Time {
			clock.Add(1)
			return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(clock.Load()) * time.Hour)
		}
	})
	ctx := context.Background()
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{
		Name: "remote", Type: mcpregistry.TypeHTTP, URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"},
	}, superadmin)
	require.NoError(t, err)
	trace.take()
	clock.Store(0)

	got, err := b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{
		Name: ptr("renamed"), Headers: &map[string]string{"Authorization": mcpregistry.Masked, "X-Extra": "v"},
	}, superadmin)
	require.NoError(t, err)

	var reads, writes []string
	for _, q := range trace.take() {
		switch {
		case strings.HasPrefix(q, "SELECT") && strings.Contains(q, "FROM mcp_servers"):
			reads = append(reads, q)
		case strings.HasPrefix(q, "UPDATE mcp_servers"):
			writes = append(writes, q)
		}
	}
	require.Len(t, reads, 1, "the update reads the server once: %v", reads)
	require.True(t, strings.HasSuffix(reads[0], "FOR UPDATE"), "the read takes the row lock: %s", reads[0])
	require.Len(t, writes, 1)
	require.Contains(t, writes[0], "RETURNING")
	require.Equal(t, int64(1), clock.Load(), "one clock reading")

	require.Equal(t, "renamed", got.Name)
	require.Equal(t, map[string]string{"Authorization": mcpregistry.Masked, "X-Extra": mcpregistry.Masked}, got.Headers)
	require.Equal(t, time.Date(2026, 1, 2, 4, 4, 5, 0, time.UTC), got.UpdatedAt)
	stored, err := b.svc.Server(ctx, b.project, srv.ID)
	require.NoError(t, err)
	require.Equal(t, stored, got, "the update returns what it stored")
	require.Equal(t, "Bearer s3cret", mcpregistry.HeadersOf(stored)["Authorization"], "*** kept the stored header")
}
