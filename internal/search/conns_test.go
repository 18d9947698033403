package search_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/search"
)

// firstHit is a VectorSearcher that finds the first of its ids at once,
// without the database, so that a search's vector side only reads the
// hit's details (describe).
type firstHit struct{ chunks, objects []uuid.UUID }

func (f firstHit) Nearest(_ context.Context, _ uuid.UUID, target string, _ *search.QueryVectors, _ int, _ func(uuid.UUID) bool) ([]search.Hit, string, error) {
	if target == search.TargetChunks {
		return []search.Hit{{Target: "chunk", ID: f.chunks[0], Score: 1}}, "m", nil
	}
	return []search.Hit{{Target: "object", ID: f.objects[0], Score: 1}}, "m", nil
}

// TestSearchConnsBounded: the searches of one service hold at most a
// quarter of the pool's connections at once, however many run: with the
// tables they read locked, four hybrid searches over chunks and objects
// (sixteen queries: keyword and details, per target) on a pool of 20 park
// with 5 queries holding a connection (waiting on the lock) and the other
// 11 waiting for one of the service's slots, so 15 connections stay free
// for the API's other requests and the job workers. Without the bound
// all 16 queries hold a connection. Once the tables are free every search
// answers, its vector hits described.
func TestSearchConnsBounded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	url := pgtest.NewURL(t)
	pool, err := postgres.Open(ctx, url, 20) // the server's default
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	observer, err := postgres.Open(ctx, url, 2) // holds the lock and counts
	require.NoError(t, err)
	t.Cleanup(observer.Close)
	c := seedCorpus(t, pool, 20, 20, 8)
	svc := search.NewService(search.Config{Pool: pool, Vectors: firstHit{c.chunks, c.objects}})

	const searches, queries, bound = 4, 16, 5
	held := pgtest.Hold(t, observer, `LOCK TABLE document_chunks, graph_objects IN ACCESS EXCLUSIVE MODE`)
	var g errgroup.Group
	results := make([]search.Response, searches)
	for i := range searches {
		g.Go(func() error {
			var err error
			results[i], err = svc.Search(ctx, c.project, search.Request{Query: c.vocab[0]})
			return err
		})
	}
	// Every query waits, on the lock (holding a connection) or for a slot.
	var onLock, forSlot int
	require.Eventually(t, func() bool {
		onLock, forSlot = pgtest.LockWaits(t, observer), search.ConnWaits(svc)
		return onLock+forSlot == queries
	}, 30*time.Second, 5*time.Millisecond, "the searches' queries never all waited")
	require.Equal(t, bound, onLock, "queries holding a connection")
	require.Equal(t, queries-bound, forSlot, "queries waiting for a slot")
	require.Equal(t, int32(bound), pool.Stat().AcquiredConns(), "the pool's connections in use")

	require.NoError(t, held.Commit(ctx))
	require.NoError(t, g.Wait())
	for _, r := range results {
		var ids []uuid.UUID
		for _, h := range r.Data {
			ids = append(ids, h.ID)
		}
		require.Subset(t, ids, []uuid.UUID{c.chunks[0], c.objects[0]}, "the vector hits, described")
	}
	require.Zero(t, search.ConnWaits(svc))
	require.Zero(t, pool.Stat().AcquiredConns())
}
