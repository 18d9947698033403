package search_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/search"
	"github.com/graphmill/graphmill/internal/vectorindex"
)

// resolvingEmbedders embeds queries with the local embedder after reading
// what the provider service reads to resolve a model (the project's
// organisation and provider policies), on the same pool.
type resolvingEmbedders struct {
	pool *pgxpool.Pool
	emb  llm.Embedder
}

func (r resolvingEmbedders) QueryEmbedder(ctx context.Context, project uuid.UUID, model string) (llm.Embedder, bool, error) {
	var org uuid.UUID
	if err := r.pool.QueryRow(ctx, `SELECT org_id FROM projects WHERE id = $1`, project).Scan(&org); err != nil {
		return nil, false, err
	}
	if _, err := r.pool.Exec(ctx, `SELECT * FROM project_provider_policies WHERE project_id = $1`, project); err != nil {
		return nil, false, err
	}
	return r.emb, model == r.emb.Model(), nil
}

// latencies are measured durations.
type latencies []time.Duration

// pct is the p-th percentile in milliseconds.
func (l latencies) pct(p float64) float64 {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
}

// connsForm is one way of running searches: its service and what was
// measured of it.
type connsForm struct {
	name      string
	svc       *search.Service
	solo      latencies     // one search at a time
	loaded    latencies     // searches among concurrent searchers
	probe     latencies     // SELECT 1 on the pool meanwhile
	acquire   latencies     // its wait for a connection
	searches  int           // searches run by the concurrent searchers
	loadedFor time.Duration // their wall time
}

// BenchmarkSearchConns compares, in one run, hybrid search over a project
// of 20,000 chunks and 5,000 graph objects (768-dimension local
// embeddings, in the vector index) on a pool of 20 connections, the
// server's default, with the service's searches allowed the whole pool
// (as before the bound) or a share of it: one search's latency alone,
// and with 32 concurrent searchers their throughput and the latency of a
// SELECT 1 on the same pool (what a job worker or another request
// waits). The forms take turns, so that the machine's load weighs on
// each alike.
//
//	go test ./internal/search -run '^$' -bench SearchConns -benchtime 1x -timeout 30m -v
func BenchmarkSearchConns(b *testing.B) {
	const (
		poolSize  = 20
		searchers = 32
		rounds    = 5
		soloN     = 40 // searches alone per round
		eachN     = 6  // searches per concurrent searcher per round
	)
	ctx := context.Background()
	pool, err := postgres.Open(ctx, pgtest.NewURL(b), poolSize)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	start := time.Now()
	c := seedCorpus(b, pool, 20_000, 5_000, 768)
	b.Logf("seeded 20,000 chunks and 5,000 objects in %v", time.Since(start))

	logger := slog.New(slog.DiscardHandler)
	notifier := events.NewNotifier(pool, logger)
	require.NoError(b, notifier.Start(ctx))
	b.Cleanup(func() { require.NoError(b, notifier.Stop(ctx)) })
	index := vectorindex.New(pool, notifier, logger, vectorindex.Config{})
	require.NoError(b, index.Start(ctx))
	b.Cleanup(func() { require.NoError(b, index.Stop(ctx)) })
	vectors := search.IndexVectors{Index: index, Embedders: resolvingEmbedders{pool, llm.NewLocalEmbedder(768)}}

	forms := []*connsForm{}
	for _, k := range []int{poolSize, 10, 5, 4, 2} {
		name := fmt.Sprintf("share %d/%d", k, poolSize)
		if k == poolSize {
			name = "parallel (whole pool, as before)"
		}
		forms = append(forms, &connsForm{name: name, svc: search.NewService(search.Config{Pool: pool, Vectors: vectors, MaxConns: k})})
	}

	rng := rand.New(rand.NewPCG(3, 4))
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = c.vocab[rng.IntN(100)] + " " + c.vocab[rng.IntN(1000)]
	}
	start = time.Now()
	_, err = forms[0].svc.Search(ctx, c.project, search.Request{Query: "warm up"})
	require.NoError(b, err)
	chunkSpace := vectorindex.Space{Kind: vectorindex.KindChunks, Model: llm.LocalEmbedModel, Dimension: 768}
	require.Eventually(b, func() bool {
		st, ok := index.EntryStats(c.project, chunkSpace)
		return ok && st.Graph && st.Indexed == st.Vectors
	}, 10*time.Minute, 100*time.Millisecond, "the chunks' HNSW graph was never built")
	b.Logf("first search and the chunks' HNSW graph: %v", time.Since(start))

	search := func(f *connsForm, i int) (time.Duration, error) {
		t0 := time.Now()
		res, err := f.svc.Search(ctx, c.project, search.Request{Query: queries[i%len(queries)]})
		if err == nil && len(res.Data) == 0 {
			err = fmt.Errorf("no hits for %q", queries[i%len(queries)])
		}
		return time.Since(t0), err
	}
	b.ResetTimer()
	// Alone: the forms take turns search by search. Under load: round by
	// round, each round starting with the next form.
	for i := range rounds * soloN {
		for _, f := range forms {
			d, err := search(f, i)
			require.NoError(b, err)
			f.solo = append(f.solo, d)
		}
	}
	for round := range rounds {
		for j := range forms {
			f := forms[(round+j)%len(forms)]
			probe, acquire, loaded, n, took := connsLoad(ctx, b, pool, searchers, func(s, i int) (time.Duration, error) { return search(f, s*eachN+i) }, eachN)
			f.probe, f.acquire, f.loaded = append(f.probe, probe...), append(f.acquire, acquire...), append(f.loaded, loaded...)
			f.searches, f.loadedFor = f.searches+n, f.loadedFor+took
		}
	}
	b.StopTimer()
	b.Logf("%-32s %9s %6s | %6s %8s %6s | %11s %6s %6s | %11s %6s", "ms", "alone p50", "p95",
		"32: s/s", "srch p50", "p95", "SELECT1 p50", "p95", "max", "acquire p50", "p95")
	for _, f := range forms {
		b.Logf("%-32s %9.1f %6.1f | %6.1f %8.1f %6.1f | %11.2f %6.2f %6.2f | %11.2f %6.2f", f.name,
			f.solo.pct(0.5), f.solo.pct(0.95),
			float64(f.searches)/f.loadedFor.Seconds(), f.loaded.pct(0.5), f.loaded.pct(0.95),
			f.probe.pct(0.5), f.probe.pct(0.95), f.probe.pct(1), f.acquire.pct(0.5), f.acquire.pct(0.95))
	}
}

// connsLoad runs searchers goroutines of each searches (search(s, i)) at
// once while another times a SELECT 1 on pool every 5 ms; it returns the
// probe's latencies (whole, and acquiring its connection), the searches', the number of searches and their
// wall time.
func connsLoad(ctx context.Context, b *testing.B, pool *pgxpool.Pool, searchers int, search func(s, i int) (time.Duration, error), each int) (probe, acquire, loaded latencies, n int, took time.Duration) {
	b.Helper()
	stop := make(chan struct{})
	probed := make(chan [2]latencies)
	go func() {
		var l, a latencies
		for {
			select {
			case <-stop:
				probed <- [2]latencies{l, a}
				return
			case <-time.After(5 * time.Millisecond):
			}
			t0 := time.Now()
			conn, err := pool.Acquire(ctx)
			if err != nil {
				b.Error(err)
				continue
			}
			acquired := time.Since(t0)
			var one int
			if err := conn.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
				b.Error(err)
			}
			conn.Release()
			l = append(l, time.Since(t0))
			a = append(a, acquired)
		}
	}()
	var mu sync.Mutex
	var g errgroup.Group
	start := time.Now()
	for s := range searchers {
		g.Go(func() error {
			for i := range each {
				d, err := search(s, i)
				if err != nil {
					return err
				}
				mu.Lock()
				loaded = append(loaded, d)
				mu.Unlock()
			}
			return nil
		})
	}
	require.NoError(b, g.Wait())
	took = time.Since(start)
	close(stop)
	p := <-probed
	return p[0], p[1], loaded, searchers * each, took
}
