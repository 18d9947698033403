// Command queue benchmarks the job engine against a throwaway PostgreSQL
// cluster: throughput of no-op jobs through jobqueue beside a bare
// SKIP LOCKED claim-and-complete loop at the same batch size and worker
// count, and enqueue-to-start latency on an idle queue. Run it with
// `go run ./bench/queue`; it is bounded in jobs and time and stops by itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/migrations"
)

const (
	table = "bench_jobs"
	queue = "bench"
)

type options struct {
	jobs, workers, batch, samples, rounds int
	timeout                               time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.jobs, "jobs", 20000, "jobs per throughput round")
	flag.IntVar(&o.workers, "workers", 4, "workers (bare loop) = concurrency (jobqueue)")
	flag.IntVar(&o.batch, "batch", 10, "jobs claimed per batch")
	flag.IntVar(&o.samples, "samples", 300, "latency samples")
	flag.IntVar(&o.rounds, "rounds", 2, "throughput rounds per engine (the best counts)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	err := run(ctx, o, os.Stdout)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "graphmill-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	// The postgres user (when running as root) must pass through.
	if err := os.Chmod(dir, 0o711); err != nil { //nolint:gosec // traversal only, for the postgres user
		return err
	}
	cluster, err := postgres.NewCluster(filepath.Join(dir, "pg"), postgres.ClusterOptions{Settings: map[string]string{
		"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "100",
	}})
	if err != nil {
		return err
	}
	if err := cluster.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer scancel()
		_ = cluster.Stop(sctx)
	}()
	pool, err := postgres.Open(ctx, cluster.URL("postgres"), int32(o.workers*2+6)) //nolint:gosec // small
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := postgres.Migrate(ctx, pool, migrations.FS); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, jobqueue.CreateTableSQL(table, "")); err != nil {
		return err
	}

	fmt.Fprintf(out, "jobqueue benchmark: %d no-op jobs per round, %d workers, batch size %d, %d rounds each\n",
		o.jobs, o.workers, o.batch, o.rounds)
	var bare, engine float64
	for r := range o.rounds {
		b, err := timeRound(ctx, pool, o, bareLoop)
		if err != nil {
			return fmt.Errorf("bare loop: %w", err)
		}
		e, err := timeRound(ctx, pool, o, engineRun)
		if err != nil {
			return fmt.Errorf("jobqueue: %w", err)
		}
		fmt.Fprintf(out, "  round %d: bare loop %8.0f jobs/s   jobqueue %8.0f jobs/s\n", r+1, b, e)
		bare, engine = max(bare, b), max(engine, e)
	}
	fmt.Fprintf(out, "throughput (best round): bare SKIP LOCKED loop %.0f jobs/s, jobqueue %.0f jobs/s = %.0f%% (target >= 50%%)\n",
		bare, engine, 100*engine/bare)

	lat, err := latency(ctx, pool, o)
	if err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Fprintf(out, "enqueue-to-start latency, idle queue, %d samples: p50 %v, p90 %v, p99 %v, max %v (targets p50 < 10ms, p99 < 50ms)\n",
		len(lat), pct(0.50).Round(10*time.Microsecond), pct(0.90).Round(10*time.Microsecond),
		pct(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
	return nil
}

// timeRound fills the table with o.jobs due jobs, runs fn until all are
// completed and returns jobs per second.
func timeRound(ctx context.Context, pool *pgxpool.Pool, o options, fn func(context.Context, *pgxpool.Pool, options) error) (float64, error) {
	if _, err := pool.Exec(ctx, `TRUNCATE `+table); err != nil {
		return 0, err
	}
	now := time.Now()
	// uuid v7-like ordering is irrelevant here; ids only need to be unique.
	if _, err := pool.Exec(ctx, `INSERT INTO `+table+` (id, run_at, created_at, updated_at)
SELECT gen_random_uuid(), $1, $1, $1 FROM generate_series(1, $2)`, now, o.jobs); err != nil {
		return 0, err
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := fn(ctx, pool, o); err != nil {
		return 0, err
	}
	return float64(o.jobs) / time.Since(start).Seconds(), nil
}

// bareLoop is the floor any engine pays: claim a batch with SKIP LOCKED,
// mark it completed, repeat, on o.workers goroutines.
func bareLoop(ctx context.Context, pool *pgxpool.Pool, o options) error {
	claim := `UPDATE ` + table + ` AS j SET status = 'running', attempt = j.attempt + 1, locked_by = $2,
    locked_until = $3, heartbeat_at = $1, started_at = $1, updated_at = $1
FROM (SELECT id FROM ` + table + ` WHERE status = 'queued' AND run_at <= $1
      ORDER BY priority DESC, run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED) AS c
WHERE j.id = c.id RETURNING j.id`
	complete := `UPDATE ` + table + ` SET status = 'completed', completed_at = $1, updated_at = $1,
    locked_by = NULL, locked_until = NULL WHERE id = ANY($2) AND status = 'running' AND locked_by = $3`
	var wg sync.WaitGroup
	errc := make(chan error, o.workers)
	for w := range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me := fmt.Sprintf("bare-%d", w)
			for ctx.Err() == nil {
				now := time.Now()
				rows, err := pool.Query(ctx, claim, now, me, now.Add(time.Minute), o.batch)
				if err != nil {
					errc <- err
					return
				}
				ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
				if err != nil {
					errc <- err
					return
				}
				if len(ids) == 0 {
					return
				}
				if _, err := pool.Exec(ctx, complete, time.Now(), ids, me); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return ctx.Err()
}

// engineRun works the table through a jobqueue client with a no-op handler
// until every job is completed.
func engineRun(ctx context.Context, pool *pgxpool.Pool, o options) error {
	var done atomic.Int64
	finished := make(chan struct{})
	c, n, err := startClient(ctx, pool, jobqueue.QueueConfig{
		Name: queue, Table: table, Concurrency: o.workers, BatchSize: o.batch,
		Handler: jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
			// Counted when the handler returns; the last completion write
			// is waited for below.
			if done.Add(int64(len(jobs))) == int64(o.jobs) {
				close(finished)
			}
			return make([]error, len(jobs))
		}),
	})
	if err != nil {
		return err
	}
	defer func() { _ = n.Stop(context.WithoutCancel(ctx)) }()
	select {
	case <-finished:
	case <-ctx.Done():
	}
	// Stop waits for the batches in flight, so their completions are written.
	if err := c.Stop(ctx); err != nil {
		return err
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE status <> 'completed'`).Scan(&left); err != nil {
		return err
	}
	if left != 0 {
		return fmt.Errorf("%d jobs not completed", left)
	}
	return nil
}

func startClient(ctx context.Context, pool *pgxpool.Pool, qc jobqueue.QueueConfig) (*jobqueue.Client, *events.Notifier, error) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n := events.NewNotifier(pool, logger)
	if err := n.Start(ctx); err != nil {
		return nil, nil, err
	}
	c, err := jobqueue.NewClient(pool, jobqueue.Config{Logger: logger, Notifier: n})
	if err == nil {
		err = c.AddQueue(qc)
	}
	if err == nil {
		err = c.Start(ctx)
	}
	if err != nil {
		_ = n.Stop(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	return c, n, nil
}

// latency enqueues one job at a time on an idle queue (insert + Notify in
// one transaction, as a domain does) and measures from the start of that
// transaction until the handler starts.
func latency(ctx context.Context, pool *pgxpool.Pool, o options) ([]time.Duration, error) {
	if _, err := pool.Exec(ctx, `TRUNCATE `+table); err != nil {
		return nil, err
	}
	started := make(chan uuid.UUID, 1)
	c, n, err := startClient(ctx, pool, jobqueue.QueueConfig{
		Name: queue, Table: table, Concurrency: o.workers, BatchSize: o.batch,
		Handler: jobqueue.HandlerFunc(func(_ context.Context, jobs []jobqueue.Job) []error {
			for _, j := range jobs {
				started <- j.ID
			}
			return make([]error, len(jobs))
		}),
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = n.Stop(context.WithoutCancel(ctx)) }()
	defer func() { _ = c.Stop(context.WithoutCancel(ctx)) }()
	lat := make([]time.Duration, 0, o.samples)
	for range o.samples {
		// Let the previous job's completion land: the queue is idle again.
		time.Sleep(5 * time.Millisecond)
		id := uuid.Must(uuid.NewV7())
		t0 := time.Now()
		err := postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
			now := time.Now()
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (id, run_at, created_at, updated_at) VALUES ($1, $2, $2, $2)`, id, now); err != nil {
				return err
			}
			return jobqueue.Notify(ctx, tx, queue)
		})
		if err != nil {
			return nil, err
		}
		select {
		case got := <-started:
			if got != id {
				return nil, errors.New("started an unexpected job")
			}
			lat = append(lat, time.Since(t0))
		case <-time.After(10 * time.Second):
			return nil, errors.New("job did not start within 10s")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return lat, nil
}
