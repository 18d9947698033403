package jobqueue

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
)

// BenchmarkClaimBatch measures the claim path of a producer: one batch of
// ten jobs of one project claimed from a table of at least 20,000 queued
// jobs, alone (claim) and with its job.started event (announced: what a
// launched batch does beside its handler, its wait for the publish lock
// bounded).
func BenchmarkClaimBatch(b *testing.B) {
	const size = 10
	ctx := context.Background()
	pool := pgtest.New(b)
	project := uuid.New()
	now := time.Now()
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)`, project, now)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $1, 'p', $2, $2)`, project, now)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, CreateTableSQL("bench_jobs", ""))
	require.NoError(b, err)
	c, err := NewClient(pool, Config{})
	require.NoError(b, err)
	require.NoError(b, c.AddQueue(QueueConfig{
		Name: "bench", Table: "bench_jobs", BatchSize: size,
		Handler: HandlerFunc(func(_ context.Context, jobs []Job) []error { return make([]error, len(jobs)) }),
	}))
	q, err := c.queue("bench")
	require.NoError(b, err)
	for _, bc := range []struct {
		name  string
		claim func(n int) ([]Job, error)
	}{{"claim", q.claim}, {"announced", func(n int) ([]Job, error) {
		jobs, err := q.claim(n)
		if err == nil {
			q.announce(ctx, &batch{jobs: jobs})
		}
		return jobs, err
	}}} {
		b.Run(bc.name, func(b *testing.B) {
			// A fresh table of queued jobs for every run.
			_, err := pool.Exec(ctx, `TRUNCATE bench_jobs`)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, `INSERT INTO bench_jobs (id, project_id, run_at, status, created_at, updated_at)
SELECT gen_random_uuid(), $1, $2, 'queued', $2, $2 FROM generate_series(1, $3::int)`, project, now, max(20000, b.N*size))
			require.NoError(b, err)
			_, err = pool.Exec(ctx, `VACUUM ANALYZE bench_jobs`)
			require.NoError(b, err)
			b.ResetTimer()
			for range b.N {
				jobs, err := bc.claim(size)
				require.NoError(b, err)
				require.Len(b, jobs, size)
			}
		})
	}
}
