package vectorindex_test

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/startstop"
	"github.com/graphmill/graphmill/internal/vectorindex"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const waitFor = 10 * time.Second

// tap passes the notifier's deliveries on to the index and signals each
// resync, so that a test knows when the index listens.
type tap struct {
	n      *events.Notifier
	resync chan struct{}
}

func (t *tap) Listen(channel string, fn func(events.Notification)) func() {
	return t.n.Listen(channel, func(n events.Notification) {
		fn(n)
		if n.Resync {
			select {
			case t.resync <- struct{}{}:
			default:
			}
		}
	})
}

// testBundle is an index on a fresh database, and a second pool standing
// for another process that writes vectors.
type testBundle struct {
	tap     *tap
	pool    *pgxpool.Pool // the index's
	writer  *pgxpool.Pool // "another process"
	index   *vectorindex.Index
	project uuid.UUID
	doc     uuid.UUID
	chunkN  int
}

func setup(t *testing.T, cfg vectorindex.Config) *testBundle {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewURL(t)
	pool, err := postgres.Open(ctx, url, 8)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	writer, err := postgres.Open(ctx, url, 4)
	require.NoError(t, err)
	t.Cleanup(writer.Close)

	logger := slog.New(slog.DiscardHandler)
	n := events.NewNotifier(pool, logger)
	tp := &tap{n: n, resync: make(chan struct{}, 1)}
	ix := vectorindex.New(pool, tp, logger, cfg)
	require.NoError(t, n.Start(ctx))
	t.Cleanup(func() { require.NoError(t, n.Stop(ctx)) })
	require.NoError(t, ix.Start(ctx))
	t.Cleanup(func() { require.NoError(t, ix.Stop(ctx)) })
	select {
	case <-tp.resync:
	case <-time.After(waitFor):
		require.FailNow(t, "the index never started listening")
	}
	b := &testBundle{tap: tp, pool: pool, writer: writer, index: ix}
	b.project, b.doc = b.newProject(t)
	return b
}

func (b *testBundle) newProject(t *testing.T) (project, doc uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	org := uuid.New()
	project, doc = uuid.New(), uuid.New()
	_, err := b.writer.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, now(), now())`, org, org.String())
	require.NoError(t, err)
	_, err = b.writer.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	require.NoError(t, err)
	_, err = b.writer.Exec(ctx, `INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, sha256, content, status, created_at, updated_at)
		VALUES ($1, $2, 'd.txt', 'text/plain', 0, $3, '', 'parsed', now(), now())`, doc, project, doc[:])
	require.NoError(t, err)
	return project, doc
}

// chunk is a vector to store as a document chunk.
type chunk struct {
	id     uuid.UUID
	model  string
	vector []float32
}

// insertChunks stores chunks of b.project's document with db, embedded now.
func (b *testBundle) insertChunks(t *testing.T, db postgres.DBTX, project, doc uuid.UUID, chunks []chunk) {
	t.Helper()
	batch := &pgx.Batch{}
	for _, c := range chunks {
		b.chunkN++
		batch.Queue(`INSERT INTO document_chunks (id, project_id, document_id, chunk_index, text, start_offset, end_offset, token_count,
			embedding, embedding_model, embedding_dim, embedded_at, created_at)
			VALUES ($1, $2, $3, $4, 'text', 0, 4, 1, $5, $6, $7, clock_timestamp(), now())`,
			c.id, project, doc, b.chunkN, c.vector, c.model, len(c.vector))
	}
	require.NoError(t, db.(interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	}).SendBatch(context.Background(), batch).Close())
}

func randomVector(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func randomChunks(r *rand.Rand, n, dim int, model string) []chunk {
	out := make([]chunk, n)
	for i := range out {
		out[i] = chunk{id: uuid.New(), model: model, vector: randomVector(r, dim)}
	}
	return out
}

// bruteForce is the reference: cosine similarity computed in float64,
// best first.
func bruteForce(chunks []chunk, q []float32, k int, keep func(uuid.UUID) bool) []vectorindex.Hit {
	var hits []vectorindex.Hit
	for _, c := range chunks {
		if keep != nil && !keep(c.id) {
			continue
		}
		var dot, nc, nq float64
		for i := range q {
			dot += float64(c.vector[i]) * float64(q[i])
			nc += float64(c.vector[i]) * float64(c.vector[i])
			nq += float64(q[i]) * float64(q[i])
		}
		hits = append(hits, vectorindex.Hit{ID: c.id, Score: float32(dot / math.Sqrt(nc*nq))})
	}
	slices.SortFunc(hits, func(a, b vectorindex.Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return hits[:min(k, len(hits))]
}

func ids(hits []vectorindex.Hit) []uuid.UUID {
	out := make([]uuid.UUID, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func requireSameHits(t *testing.T, want, got []vectorindex.Hit) {
	t.Helper()
	require.Equal(t, ids(want), ids(got))
	for i := range want {
		require.InDelta(t, want[i].Score, got[i].Score, 1e-5)
	}
}

func space(model string, dim int) vectorindex.Space {
	return vectorindex.Space{Kind: vectorindex.KindChunks, Model: model, Dimension: dim}
}

func TestExactSearchEqualsBruteForce(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{})
	r := rand.New(rand.NewPCG(1, 2))
	chunks := randomChunks(r, 500, 24, "m")
	b.insertChunks(t, b.writer, b.project, b.doc, chunks)
	even := map[uuid.UUID]bool{}
	for i, c := range chunks {
		if i%2 == 0 {
			even[c.id] = true
		}
	}
	keep := func(id uuid.UUID) bool { return even[id] }
	ctx := context.Background()
	for range 20 {
		q := randomVector(r, 24)
		got, err := b.index.Search(ctx, b.project, space("m", 24), q, 10, nil)
		require.NoError(t, err)
		requireSameHits(t, bruteForce(chunks, q, 10, nil), got)

		got, err = b.index.Search(ctx, b.project, space("m", 24), q, 7, keep)
		require.NoError(t, err)
		requireSameHits(t, bruteForce(chunks, q, 7, keep), got)
	}
	// More than there are: all of them, best first.
	q := randomVector(r, 24)
	got, err := b.index.Search(ctx, b.project, space("m", 24), q, 1000, nil)
	require.NoError(t, err)
	requireSameHits(t, bruteForce(chunks, q, 1000, nil), got)
	require.Len(t, got, 500)

	_, err = b.index.Search(ctx, b.project, space("m", 24), q[:5], 10, nil)
	require.ErrorIs(t, err, vectorindex.ErrDimension)
	_, err = b.index.Search(ctx, b.project, space("m", 24), make([]float32, 24), 10, nil)
	require.ErrorIs(t, err, vectorindex.ErrZeroQuery)
	_, err = b.index.Search(ctx, b.project, vectorindex.Space{Kind: "nope", Model: "m", Dimension: 24}, q, 10, nil)
	require.ErrorIs(t, err, vectorindex.ErrKind)
}

// insertObjects stores graph objects with one vector each under policy.
func insertObjects(t *testing.T, db postgres.DBTX, project uuid.UUID, model string, policy uuid.UUID, vecs [][]float32) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	out := make([]uuid.UUID, len(vecs))
	for i, v := range vecs {
		id := uuid.New()
		out[i] = id
		_, err := db.Exec(ctx, `INSERT INTO graph_objects (id, project_id, type, key, normalized_key, name, status, created_at, updated_at)
			VALUES ($1, $2, 'Person', $3, $3, 'n', 'accepted', now(), now())`, id, project, id.String())
		require.NoError(t, err)
		insertObjectVector(t, db, project, id, policy, model, v)
	}
	return out
}

func insertObjectVector(t *testing.T, db postgres.DBTX, project, object, policy uuid.UUID, model string, v []float32) {
	t.Helper()
	_, err := db.Exec(context.Background(), `INSERT INTO graph_object_embeddings (object_id, policy_id, project_id, provider, model, dimension, embedding, text_sha256, embedded_at)
		VALUES ($1, $2, $3, 'local', $4, $5, $6, '\x00', clock_timestamp())
		ON CONFLICT (object_id, policy_id) DO UPDATE SET model = $4, dimension = $5, embedding = $6, embedded_at = clock_timestamp()`,
		object, policy, project, model, len(v), v)
	require.NoError(t, err)
}

func TestSpacesNeverMix(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	a4 := randomChunks(r, 30, 4, "a")
	b4 := randomChunks(r, 30, 4, "b")
	a8 := randomChunks(r, 30, 8, "a")
	b.insertChunks(t, b.writer, b.project, b.doc, slices.Concat(a4, b4, a8))
	objVecs := make([][]float32, 20)
	for i := range objVecs {
		objVecs[i] = randomVector(r, 4)
	}
	objects := insertObjects(t, b.writer, b.project, "a", uuid.Nil, objVecs)

	spaces, err := b.index.Spaces(ctx, b.project)
	require.NoError(t, err)
	require.Equal(t, []vectorindex.Space{
		{Kind: vectorindex.KindChunks, Model: "a", Dimension: 4},
		{Kind: vectorindex.KindChunks, Model: "a", Dimension: 8},
		{Kind: vectorindex.KindChunks, Model: "b", Dimension: 4},
		{Kind: vectorindex.KindObjects, Model: "a", Dimension: 4},
	}, spaces)

	members := map[vectorindex.Space][]uuid.UUID{
		spaces[0]: ids(bruteForce(a4, randomVector(r, 4), 100, nil)),
		spaces[1]: ids(bruteForce(a8, randomVector(r, 8), 100, nil)),
		spaces[2]: ids(bruteForce(b4, randomVector(r, 4), 100, nil)),
		spaces[3]: objects,
	}
	for sp, want := range members {
		hits, err := b.index.Search(ctx, b.project, sp, randomVector(r, sp.Dimension), 100, nil)
		require.NoError(t, err)
		require.ElementsMatch(t, want, ids(hits), sp.String())
	}

	// Another project's vectors of the same model are not seen either.
	other, otherDoc := b.newProject(t)
	b.insertChunks(t, b.writer, other, otherDoc, randomChunks(r, 5, 4, "a"))
	hits, err := b.index.Search(ctx, b.project, spaces[0], randomVector(r, 4), 100, nil)
	require.NoError(t, err)
	require.ElementsMatch(t, members[spaces[0]], ids(hits))
	otherSpaces, err := b.index.Spaces(ctx, other)
	require.NoError(t, err)
	require.Equal(t, []vectorindex.Space{spaces[0]}, otherSpaces)
}

func TestObjectsWithSeveralPoliciesHitOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{})
	ctx := context.Background()
	objects := insertObjects(t, b.writer, b.project, "m", uuid.Nil, [][]float32{{1, 0}, {0, 1}, {-1, 0}})
	// A second policy's vector of the first object, close to the query.
	insertObjectVector(t, b.writer, b.project, objects[0], uuid.New(), "m", []float32{0.1, 1})
	sp := vectorindex.Space{Kind: vectorindex.KindObjects, Model: "m", Dimension: 2}
	hits, err := b.index.Search(ctx, b.project, sp, []float32{0, 1}, 3, nil)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{objects[1], objects[0], objects[2]}, ids(hits))
	require.InDelta(t, 1/math.Sqrt(1.01), hits[1].Score, 1e-5, "the object's best vector counts")
}

func TestLoadsLazilyAndOnlyWhatIsSearched(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	b.insertChunks(t, b.writer, b.project, b.doc, slices.Concat(randomChunks(r, 10, 4, "a"), randomChunks(r, 10, 4, "b")))
	require.Equal(t, 0, b.index.Stats().Entries)
	_, loaded := b.index.EntryStats(b.project, space("a", 4))
	require.False(t, loaded)

	hits, err := b.index.Search(ctx, b.project, space("a", 4), randomVector(r, 4), 3, nil)
	require.NoError(t, err)
	require.Len(t, hits, 3)
	st, loaded := b.index.EntryStats(b.project, space("a", 4))
	require.True(t, loaded)
	require.Equal(t, 10, st.Vectors)
	_, loaded = b.index.EntryStats(b.project, space("b", 4))
	require.False(t, loaded)
	require.Equal(t, 1, b.index.Stats().Entries)

	// A space nobody has vectors in gives nothing.
	hits, err = b.index.Search(ctx, b.project, space("c", 4), randomVector(r, 4), 3, nil)
	require.NoError(t, err)
	require.Empty(t, hits)
}

func TestChangesFromAnotherProcessBecomeVisible(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	initial := randomChunks(r, 50, 8, "m")
	b.insertChunks(t, b.writer, b.project, b.doc, initial)
	sp := space("m", 8)
	search := func(q []float32) []uuid.UUID {
		hits, err := b.index.Search(ctx, b.project, sp, q, 1000, nil)
		require.NoError(t, err)
		return ids(hits)
	}
	require.Len(t, search(randomVector(r, 8)), 50)

	// Written without a notification: the loaded entry does not see it.
	silent := randomChunks(r, 1, 8, "m")
	b.insertChunks(t, b.writer, b.project, b.doc, silent)
	require.NotContains(t, search(silent[0].vector), silent[0].id)

	// Added with Changed in the writer's transaction: seen (with the silent
	// one, read by the incremental refresh).
	added := randomChunks(r, 3, 8, "m")
	require.NoError(t, pgx.BeginFunc(ctx, b.writer, func(tx pgx.Tx) error {
		b.insertChunks(t, tx, b.project, b.doc, added)
		return vectorindex.Changed(ctx, tx, b.project, vectorindex.KindChunks)
	}))
	require.Eventually(t, func() bool { return len(search(added[0].vector)) == 54 }, waitFor, 10*time.Millisecond)
	require.Equal(t, added[0].id, search(added[0].vector)[0])

	// Re-embedded with another model: it leaves this space incrementally.
	moved := initial[0]
	_, err := b.writer.Exec(ctx, `UPDATE document_chunks SET embedding_model = 'other', embedded_at = clock_timestamp() WHERE id = $1`, moved.id)
	require.NoError(t, err)
	require.NoError(t, vectorindex.Changed(ctx, b.writer, b.project, vectorindex.KindChunks))
	require.Eventually(t, func() bool { return !slices.Contains(search(moved.vector), moved.id) }, waitFor, 10*time.Millisecond)
	require.Len(t, search(moved.vector), 53)

	// Re-embedded in place: the new vector replaces the old one.
	replaced := initial[1]
	newVec := randomVector(r, 8)
	_, err = b.writer.Exec(ctx, `UPDATE document_chunks SET embedding = $2, embedded_at = clock_timestamp() WHERE id = $1`, replaced.id, newVec)
	require.NoError(t, err)
	require.NoError(t, vectorindex.Changed(ctx, b.writer, b.project, vectorindex.KindChunks))
	require.Eventually(t, func() bool { return search(newVec)[0] == replaced.id }, waitFor, 10*time.Millisecond)
	require.Len(t, search(newVec), 53)

	// Deleted with Removed: gone after a full reload.
	deleted := initial[2:12]
	require.NoError(t, pgx.BeginFunc(ctx, b.writer, func(tx pgx.Tx) error {
		for _, c := range deleted {
			if _, err := tx.Exec(ctx, `DELETE FROM document_chunks WHERE id = $1`, c.id); err != nil {
				return err
			}
		}
		return vectorindex.Removed(ctx, tx, b.project, vectorindex.KindChunks)
	}))
	require.Eventually(t, func() bool { return len(search(deleted[0].vector)) == 43 }, waitFor, 10*time.Millisecond)
	for _, c := range deleted {
		require.NotContains(t, search(c.vector), c.id)
	}
	st, _ := b.index.EntryStats(b.project, sp)
	require.Equal(t, 43, st.Vectors)
}

func TestObjectDeletionsBecomeVisible(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{})
	ctx := context.Background()
	objects := insertObjects(t, b.writer, b.project, "m", uuid.Nil, [][]float32{{1, 0}, {0, 1}, {1, 1}})
	sp := vectorindex.Space{Kind: vectorindex.KindObjects, Model: "m", Dimension: 2}
	search := func() []uuid.UUID {
		hits, err := b.index.Search(ctx, b.project, sp, []float32{1, 0}, 10, nil)
		require.NoError(t, err)
		return ids(hits)
	}
	require.Equal(t, []uuid.UUID{objects[0], objects[2], objects[1]}, search())
	require.NoError(t, pgx.BeginFunc(ctx, b.writer, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE graph_objects SET deleted_at = now() WHERE id = $1`, objects[0]); err != nil {
			return err
		}
		return vectorindex.Removed(ctx, tx, b.project, vectorindex.KindObjects)
	}))
	require.Eventually(t, func() bool { return len(search()) == 2 }, waitFor, 10*time.Millisecond)
	require.Equal(t, []uuid.UUID{objects[2], objects[1]}, search())
	spaces, err := b.index.Spaces(ctx, b.project)
	require.NoError(t, err)
	require.Equal(t, []vectorindex.Space{sp}, spaces)

	// Restored: its vector comes back, though it was not re-embedded.
	require.NoError(t, pgx.BeginFunc(ctx, b.writer, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE graph_objects SET deleted_at = NULL WHERE id = $1`, objects[0]); err != nil {
			return err
		}
		return vectorindex.Removed(ctx, tx, b.project, vectorindex.KindObjects)
	}))
	require.Eventually(t, func() bool { return len(search()) == 3 }, waitFor, 10*time.Millisecond)
	require.Equal(t, []uuid.UUID{objects[0], objects[2], objects[1]}, search())

	// An embedding deleted outright.
	require.NoError(t, pgx.BeginFunc(ctx, b.writer, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM graph_object_embeddings WHERE object_id = $1`, objects[2]); err != nil {
			return err
		}
		return vectorindex.Removed(ctx, tx, b.project, vectorindex.KindObjects)
	}))
	require.Eventually(t, func() bool { return len(search()) == 2 }, waitFor, 10*time.Millisecond)
	require.Equal(t, []uuid.UUID{objects[0], objects[1]}, search())
}

func TestReconnectedListenerReconciles(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(15, 16))
	chunks := randomChunks(r, 10, 4, "m")
	b.insertChunks(t, b.writer, b.project, b.doc, chunks)
	search := func() []uuid.UUID {
		hits, err := b.index.Search(ctx, b.project, space("m", 4), chunks[0].vector, 100, nil)
		require.NoError(t, err)
		return ids(hits)
	}
	require.Len(t, search(), 10)

	// A delete whose notification is lost (here: never sent) is not seen...
	_, err := b.writer.Exec(ctx, `DELETE FROM document_chunks WHERE id = $1`, chunks[0].id)
	require.NoError(t, err)
	require.Contains(t, search(), chunks[0].id)

	// ...until the listening connection is re-established: notifications
	// may have been lost while it was down, so entries reconcile.
	_, err = b.writer.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, events.ApplicationName)
	require.NoError(t, err)
	select {
	case <-b.tap.resync:
	case <-time.After(waitFor):
		require.FailNow(t, "the notifier never listened again")
	}
	require.NotContains(t, search(), chunks[0].id)
	require.Len(t, search(), 9)
}

func TestChangedRejectsUnknownKind(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{})
	require.ErrorIs(t, vectorindex.Changed(context.Background(), b.writer, b.project, "nope"), vectorindex.ErrKind)
}

func TestEvictsLeastRecentlyUsedWithinBudget(t *testing.T) {
	t.Parallel()
	// One space of 8-dimensional vectors holds one 1024-vector block
	// (32 KiB) and a little more: the budget fits two.
	b := setup(t, vectorindex.Config{CacheBytes: 80 << 10})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(9, 10))
	models := []string{"a", "b", "c"}
	for _, m := range models {
		b.insertChunks(t, b.writer, b.project, b.doc, randomChunks(r, 20, 8, m))
	}
	search := func(m string) {
		hits, err := b.index.Search(ctx, b.project, space(m, 8), randomVector(r, 8), 5, nil)
		require.NoError(t, err)
		require.Len(t, hits, 5)
	}
	loaded := func(m string) bool {
		_, ok := b.index.EntryStats(b.project, space(m, 8))
		return ok
	}
	search("a")
	search("b")
	search("a") // a is now more recent than b
	search("c")
	require.True(t, loaded("a"))
	require.False(t, loaded("b"), "least recently used")
	require.True(t, loaded("c"))
	st := b.index.Stats()
	require.Equal(t, 2, st.Entries)
	require.LessOrEqual(t, st.Bytes, int64(80<<10))
	search("b") // reloaded on demand
	require.True(t, loaded("b"))
	require.False(t, loaded("a"))
}

// clustered returns n vectors around c random centres, as embeddings of
// related texts are.
func clustered(r *rand.Rand, n, c, dim int, model string) []chunk {
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = randomVector(r, dim)
	}
	out := make([]chunk, n)
	for i := range out {
		ctr := centres[r.IntN(c)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = ctr[j] + float32(r.NormFloat64()*0.7)
		}
		out[i] = chunk{id: uuid.New(), model: model, vector: v}
	}
	return out
}

func TestGraphAboveThreshold(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{HNSWThreshold: 1000})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(11, 12))
	const dim = 32
	chunks := clustered(r, 3000, 30, dim, "m")
	b.insertChunks(t, b.writer, b.project, b.doc, chunks)
	sp := space("m", dim)

	// The first search scans while the graph builds.
	q := randomVector(r, dim)
	hits, err := b.index.Search(ctx, b.project, sp, q, 10, nil)
	require.NoError(t, err)
	requireSameHits(t, bruteForce(chunks, q, 10, nil), hits)
	require.Eventually(t, func() bool {
		st, _ := b.index.EntryStats(b.project, sp)
		return st.Graph
	}, waitFor, 10*time.Millisecond)

	queries := clustered(r, 100, 30, dim, "m")
	found, total := 0, 0
	for _, qc := range queries {
		hits, err := b.index.Search(ctx, b.project, sp, qc.vector, 10, nil)
		require.NoError(t, err)
		require.Len(t, hits, 10)
		got := ids(hits)
		for _, want := range bruteForce(chunks, qc.vector, 10, nil) {
			total++
			if slices.Contains(got, want.ID) {
				found++
			}
		}
	}
	recall := float64(found) / float64(total)
	t.Logf("recall@10 %.3f", recall)
	require.GreaterOrEqual(t, recall, 0.95)

	// Filters: every hit passes; a selective filter is answered exactly.
	half := map[uuid.UUID]bool{}
	few := map[uuid.UUID]bool{}
	for i, c := range chunks {
		half[c.id] = i%2 == 0
		few[c.id] = i%300 == 0
	}
	hits, err = b.index.Search(ctx, b.project, sp, q, 10, func(id uuid.UUID) bool { return half[id] })
	require.NoError(t, err)
	require.Len(t, hits, 10)
	for _, h := range hits {
		require.True(t, half[h.ID])
	}
	keepFew := func(id uuid.UUID) bool { return few[id] }
	hits, err = b.index.Search(ctx, b.project, sp, q, 10, keepFew)
	require.NoError(t, err)
	requireSameHits(t, bruteForce(chunks, q, 10, keepFew), hits)

	// A vector added later is inserted into the graph.
	added := randomChunks(r, 1, dim, "m")
	require.NoError(t, pgx.BeginFunc(ctx, b.writer, func(tx pgx.Tx) error {
		b.insertChunks(t, tx, b.project, b.doc, added)
		return vectorindex.Changed(ctx, tx, b.project, vectorindex.KindChunks)
	}))
	require.Eventually(t, func() bool {
		hits, err := b.index.Search(ctx, b.project, sp, added[0].vector, 1, nil)
		require.NoError(t, err)
		return hits[0].ID == added[0].id
	}, waitFor, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		st, _ := b.index.EntryStats(b.project, sp)
		return st.Indexed == 3001
	}, waitFor, 10*time.Millisecond, "the graph takes in the new vector")
	st, _ := b.index.EntryStats(b.project, sp)
	require.True(t, st.Graph)
	require.Equal(t, 3001, st.Vectors)
}

func TestConcurrentSearchesAndWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, vectorindex.Config{HNSWThreshold: 300, CacheBytes: 200 << 10})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(17, 18))
	const dim = 16
	b.insertChunks(t, b.writer, b.project, b.doc, randomChunks(r, 400, dim, "m"))
	b.insertChunks(t, b.writer, b.project, b.doc, randomChunks(r, 50, dim, "n"))

	stop := make(chan struct{})
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			rr := rand.New(rand.NewPCG(uint64(w), 99))
			model := []string{"m", "n"}[w%2]
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				keep := func(id uuid.UUID) bool { return id[0]%2 == 0 }
				if w >= 2 {
					keep = nil
				}
				if _, err := b.index.Search(ctx, b.project, space(model, dim), randomVector(rr, dim), 5, keep); err != nil {
					errs <- err
					return
				}
				if _, err := b.index.Spaces(ctx, b.project); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var all []chunk
	for range 10 {
		added := randomChunks(r, 30, dim, "m")
		all = append(all, added...)
		require.NoError(t, pgx.BeginFunc(ctx, b.writer, func(tx pgx.Tx) error {
			b.insertChunks(t, tx, b.project, b.doc, added)
			return vectorindex.Changed(ctx, tx, b.project, vectorindex.KindChunks)
		}))
		gone := all[0]
		all = all[1:]
		require.NoError(t, pgx.BeginFunc(ctx, b.writer, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM document_chunks WHERE id = $1`, gone.id); err != nil {
				return err
			}
			return vectorindex.Removed(ctx, tx, b.project, vectorindex.KindChunks)
		}))
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	for range 4 {
		require.NoError(t, <-errs)
	}
	require.Eventually(t, func() bool {
		hits, err := b.index.Search(ctx, b.project, space("m", dim), randomVector(r, dim), 1000, nil)
		require.NoError(t, err)
		return len(hits) == 400+len(all)
	}, waitFor, 10*time.Millisecond)
}

// TestCloseStopsGraphBuilds is deliberately not parallel: it compares the
// goroutines before and after, which parallel tests would disturb. Stop
// ends a graph build in progress and waits for it.
func TestCloseStopsGraphBuilds(t *testing.T) { //nolint:paralleltest // see above
	before := goleak.IgnoreCurrent()
	ctx := context.Background()
	url := pgtest.NewURL(t)
	pool, err := postgres.Open(ctx, url, 4)
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	n := events.NewNotifier(pool, logger)
	require.NoError(t, n.Start(ctx))
	ix := vectorindex.New(pool, n, logger, vectorindex.Config{HNSWThreshold: 100, HNSWEfConstruction: 400})
	require.NoError(t, ix.Start(ctx))
	b := &testBundle{writer: pool}
	b.project, b.doc = b.newProject(t)
	r := rand.New(rand.NewPCG(13, 14))
	b.insertChunks(t, pool, b.project, b.doc, randomChunks(r, 20000, 64, "m"))
	_, err = ix.Search(ctx, b.project, space("m", 64), randomVector(r, 64), 5, nil)
	require.NoError(t, err)

	start := time.Now()
	require.NoError(t, ix.Stop(ctx))
	require.Less(t, time.Since(start), 5*time.Second)
	_, err = ix.Search(ctx, b.project, space("m", 64), randomVector(r, 64), 5, nil)
	require.ErrorIs(t, err, vectorindex.ErrNotRunning)
	require.NoError(t, ix.Stop(ctx), "a second Stop")
	require.NoError(t, n.Stop(ctx))
	pool.Close()
	goleak.VerifyNone(t, before)
}

// The index has the start/stop shape of every long-running part: it
// answers searches only between Start and Stop, Stop before Start does
// nothing, and a second Start is refused.
func TestIndexStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, vectorindex.Config{})
	ix := vectorindex.New(b.pool, b.tap, slog.New(slog.DiscardHandler), vectorindex.Config{})
	r := rand.New(rand.NewPCG(15, 16))
	b.insertChunks(t, b.writer, b.project, b.doc, randomChunks(r, 3, 8, "m"))
	_, err := ix.Search(ctx, b.project, space("m", 8), randomVector(r, 8), 5, nil)
	require.ErrorIs(t, err, vectorindex.ErrNotRunning, "before Start")
	_, err = ix.Spaces(ctx, b.project)
	require.ErrorIs(t, err, vectorindex.ErrNotRunning, "before Start")
	require.NoError(t, ix.Stop(ctx), "Stop before Start")

	require.NoError(t, ix.Start(ctx))
	require.ErrorIs(t, ix.Start(ctx), startstop.ErrStarted)
	hits, err := ix.Search(ctx, b.project, space("m", 8), randomVector(r, 8), 5, nil)
	require.NoError(t, err)
	require.Len(t, hits, 3)
	require.Equal(t, 1, ix.Stats().Entries)

	require.NoError(t, ix.Stop(ctx))
	require.Zero(t, ix.Stats().Entries, "Stop drops the entries")
	_, err = ix.Search(ctx, b.project, space("m", 8), randomVector(r, 8), 5, nil)
	require.ErrorIs(t, err, vectorindex.ErrNotRunning, "after Stop")
	require.NoError(t, ix.Stop(ctx), "a second Stop")
}
