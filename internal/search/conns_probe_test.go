package search_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/search"
)

// TestSearchConnsSmallPools: on a pool of 1, 2 or 3 connections (one
// slot), a hybrid search with both filters (six queries: two filters, two
// keyword, two details) answers: its queries take the slot in turn.
func TestSearchConnsSmallPools(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	url := pgtest.NewURL(t)
	seed, err := postgres.Open(ctx, url, 2)
	require.NoError(t, err)
	t.Cleanup(seed.Close)
	c := seedCorpus(t, seed, 20, 20, 8)
	var doc uuid.UUID
	require.NoError(t, seed.QueryRow(ctx, `SELECT id FROM documents WHERE project_id = $1`, c.project).Scan(&doc))
	for _, size := range []int32{1, 2, 3} {
		pool, err := postgres.Open(ctx, url, size)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		svc := search.NewService(search.Config{Pool: pool, Vectors: firstHit{c.chunks, c.objects}})
		for range 3 {
			r, err := svc.Search(ctx, c.project, search.Request{Query: c.vocab[0], DocumentIDs: []uuid.UUID{doc}, ObjectTypes: []string{"Concept"}})
			require.NoError(t, err, "pool of %d", size)
			require.NotEmpty(t, r.Data)
		}
		require.Zero(t, pool.Stat().AcquiredConns())
	}
}

// TestSearchConnsCancelReleases: a search given up while its queries
// wait (one on a locked table, holding the one slot, the others for the
// slot) gives every slot back: later searches answer once the table is
// free.
func TestSearchConnsCancelReleases(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	url := pgtest.NewURL(t)
	pool, err := postgres.Open(ctx, url, 4) // one slot
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	observer, err := postgres.Open(ctx, url, 2)
	require.NoError(t, err)
	t.Cleanup(observer.Close)
	c := seedCorpus(t, pool, 20, 20, 8)
	svc := search.NewService(search.Config{Pool: pool, Vectors: firstHit{c.chunks, c.objects}})

	held := pgtest.Hold(t, observer, `LOCK TABLE document_chunks, graph_objects IN ACCESS EXCLUSIVE MODE`)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := svc.Search(sctx, c.project, search.Request{Query: c.vocab[0]})
			done <- err
		}()
	}
	require.Eventually(t, func() bool {
		return pgtest.LockWaits(t, observer) == 1 && search.ConnWaits(svc) == 7
	}, 30*time.Second, 5*time.Millisecond)
	stop()
	for range 2 {
		require.ErrorIs(t, <-done, context.Canceled)
	}
	require.Zero(t, search.ConnWaits(svc))
	require.NoError(t, held.Rollback(ctx))
	for range 3 {
		_, err := svc.Search(ctx, c.project, search.Request{Query: c.vocab[0]})
		require.NoError(t, err)
	}
	require.Zero(t, pool.Stat().AcquiredConns())
}
