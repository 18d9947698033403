package graph_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/activity"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/templatepack"
	"github.com/graphmill/graphmill/internal/tenancy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fakeQueue records the EmbedQueue calls.
type fakeQueue struct {
	mu    sync.Mutex
	calls [][]uuid.UUID
}

func (q *fakeQueue) Enqueue(_ context.Context, _ pgx.Tx, _ uuid.UUID, ids []uuid.UUID) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, slices.Clone(ids))
	return nil
}

// take returns the calls so far and forgets them.
func (q *fakeQueue) take() [][]uuid.UUID {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.calls
	q.calls = nil
	return c
}

type testBundle struct {
	pool    *pgxpool.Pool
	svc     *graph.Service
	queue   *fakeQueue
	project uuid.UUID
	chunks  []uuid.UUID
}

func setup(tb testing.TB) *testBundle {
	tb.Helper()
	ctx := context.Background()
	pool := pgtest.New(tb)
	ten := tenancy.NewService(pool, nil, time.Now)
	_, err := ten.Bootstrap(ctx, "")
	require.NoError(tb, err)
	packs, err := templatepack.NewService(pool, ten, time.Now)
	require.NoError(tb, err)
	q := &fakeQueue{}
	b := &testBundle{pool: pool, queue: q, svc: graph.NewService(graph.Config{
		Pool: pool, Types: packs, Embed: q, Activity: activity.ForgetterOf(activity.ResourceGraphObject), Now: time.Now,
	})}
	require.NoError(tb, pool.QueryRow(ctx, `SELECT id FROM projects`).Scan(&b.project))
	b.chunks = addChunks(tb, pool, b.project, 3)
	return b
}

// addChunks stores a document with n chunks in project.
func addChunks(tb testing.TB, pool *pgxpool.Pool, project uuid.UUID, n int) []uuid.UUID {
	tb.Helper()
	ctx := context.Background()
	doc := uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, sha256, content, status, created_at, updated_at)
		VALUES ($1, $2, 'a.md', 'text/markdown', 1, $3, 'x', 'parsed', now(), now())`, doc, project, doc[:])
	require.NoError(tb, err)
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
		_, err := pool.Exec(ctx, `INSERT INTO document_chunks (id, project_id, document_id, chunk_index, text, start_offset, end_offset, token_count, created_at)
			VALUES ($1, $2, $3, $4, 'text', 0, 4, 1, now())`, ids[i], project, doc, i)
		require.NoError(tb, err)
	}
	return ids
}

func (b *testBundle) apply(tb testing.TB, job *uuid.UUID, objs []graph.ObjectInput, rels []graph.RelationshipInput) (graph.ApplyResult, error) {
	tb.Helper()
	var res graph.ApplyResult
	err := postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		var err error
		res, err = b.svc.Apply(context.Background(), tx, b.project, job, objs, rels)
		return err
	})
	return res, err
}

func (b *testBundle) object(t *testing.T, id uuid.UUID) graph.Object {
	t.Helper()
	o, err := b.svc.GetObject(context.Background(), b.project, id)
	require.NoError(t, err)
	return o
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func ptr[T any](v T) *T { return &v }

func TestNormalizeKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"Ada  Lovelace!", "ada lovelace"},
		{"ada lovelace", "ada lovelace"},
		{"  ADA\tLOVELACE  ", "ada lovelace"},
		{"Ada-Lovelace", "ada lovelace"},
		{"O'Brien", "obrien"},
		{"O’Brien", "obrien"},
		{"Straße", "strasse"},
		{"STRASSE", "strasse"},
		{"Café", "café"},
		{"Cafe\u0301", "café"},
		{"ＡＢＣ１２３", "abc123"},
		{"Ωmega—Corp.", "ωmega corp"},
		{"東京 タワー", "東京 タワー"},
		{"U.S.A.", "u s a"},
		{"!!!", ""},
		{"", ""},
	} {
		require.Equal(t, c.want, graph.NormalizeKey(c.in), "%q", c.in)
	}
}

func TestApplyCreatesAndIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := ptr(uuid.Must(uuid.NewV7()))
	objs := []graph.ObjectInput{
		{
			Type: "Person", Key: "Ada Lovelace", Name: "Ada Lovelace", Description: "mathematician", Properties: map[string]any{"occupation": "mathematician"},
			Labels: []string{"scientist"}, Confidence: ptr(0.9), ChunkIDs: []uuid.UUID{b.chunks[0]},
		},
		{Type: "Organization", Key: "Analytical Engine Co", Name: "Analytical Engine Co", ChunkIDs: []uuid.UUID{b.chunks[0], b.chunks[1]}},
		{Type: "Person", Key: "ada  lovelace!", Name: "Ada King", Labels: []string{"countess"}, ChunkIDs: []uuid.UUID{b.chunks[1]}},
		{Type: "Location", Key: "London", Name: "London", Status: graph.StatusSuggested, Confidence: ptr(0.4)},
	}
	rels := []graph.RelationshipInput{
		{
			Type: "WORKS_FOR", SourceType: "Person", SourceKey: "ADA LOVELACE", TargetType: "Organization", TargetKey: "analytical engine co.",
			Confidence: ptr(0.8), ChunkIDs: []uuid.UUID{b.chunks[2]},
		},
		{Type: "LOCATED_IN", SourceType: "Organization", SourceKey: "Analytical Engine Co", TargetType: "Location", TargetKey: "london"},
		{Type: "WORKS_FOR", SourceType: "Person", SourceKey: "Grace Hopper", TargetType: "Organization", TargetKey: "Analytical Engine Co"},
		{
			Type: "WORKS_FOR", SourceType: "Person", SourceKey: "Ada Lovelace", TargetType: "Organization", TargetKey: "Analytical Engine Co",
			Properties: map[string]any{"role": "analyst"},
		},
	}
	res, err := b.apply(t, job, objs, rels)
	require.NoError(t, err)
	require.Equal(t, 3, res.ObjectsCreated, "two inputs name the same person")
	require.Equal(t, 0, res.ObjectsUpdated)
	require.Len(t, res.Objects, 4)
	require.Equal(t, res.Objects[0].ID, res.Objects[2].ID)
	require.True(t, res.Objects[0].Created)
	require.Equal(t, "Ada Lovelace", res.Objects[0].Key)
	require.Equal(t, graph.StatusSuggested, res.Objects[3].Status)
	require.Equal(t, 2, res.RelationshipsCreated)
	require.Equal(t, []int{2}, res.UnresolvedRelationships, "Grace Hopper is unknown")
	require.Equal(t, uuid.Nil, res.RelationshipIDs[2])
	require.Equal(t, res.RelationshipIDs[0], res.RelationshipIDs[3], "the same relationship twice")

	ada := b.object(t, res.Objects[0].ID)
	require.Equal(t, "Ada King", ada.Name, "the later input's name")
	require.Equal(t, "mathematician", ada.Description, "an empty description keeps the earlier one")
	require.Equal(t, []string{"scientist", "countess"}, ada.Labels)
	require.Equal(t, 0.9, *ada.Confidence)
	require.Equal(t, job, ada.ExtractionJobID)

	ctx := context.Background()
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM graph_object_provenance WHERE extraction_job_id = $1`, job))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM graph_object_provenance WHERE object_id = $1`, ada.ID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM graph_relationship_provenance WHERE relationship_id = $1 AND chunk_id = $2`,
		res.RelationshipIDs[0], b.chunks[2]))
	var props map[string]any
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT properties FROM graph_relationships WHERE id = $1`, res.RelationshipIDs[0]).Scan(&props))
	require.Equal(t, map[string]any{"role": "analyst"}, props)

	calls := b.queue.take()
	require.Len(t, calls, 1, "one EmbedQueue call per Apply")
	require.ElementsMatch(t, []uuid.UUID{res.Objects[0].ID, res.Objects[1].ID, res.Objects[3].ID}, calls[0])

	// The same input again: nothing new, nothing changed, nothing queued.
	res2, err := b.apply(t, job, objs, rels)
	require.NoError(t, err)
	require.Zero(t, res2.ObjectsCreated+res2.ObjectsUpdated+res2.RelationshipsCreated+res2.RelationshipsUpdated)
	require.Equal(t, res.RelationshipIDs, res2.RelationshipIDs)
	for i := range res.Objects {
		require.Equal(t, res.Objects[i].ID, res2.Objects[i].ID)
		require.False(t, res2.Objects[i].Created)
	}
	require.Empty(t, b.queue.take())
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM graph_objects`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM graph_relationships`))
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM graph_object_provenance`))
	require.Equal(t, ada.UpdatedAt, b.object(t, ada.ID).UpdatedAt, "not rewritten")
}

func TestApplyMergeRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job1, job2 := ptr(uuid.Must(uuid.NewV7())), ptr(uuid.Must(uuid.NewV7()))
	res, err := b.apply(t, job1, []graph.ObjectInput{
		{
			Type: "Person", Key: "Ada", Name: "Ada", Description: "first", Properties: map[string]any{"title": "Countess", "occupation": "poet"},
			Labels: []string{"a"}, Confidence: ptr(0.7),
		},
		{Type: "Person", Key: "Bob", Name: "Bob", Status: graph.StatusSuggested, Confidence: ptr(0.3)},
		{Type: "Person", Key: "Cy", Name: "Cy", Confidence: ptr(0.5)},
		{Type: "Person", Key: "Di", Name: "Di", Status: graph.StatusSuggested},
	}, nil)
	require.NoError(t, err)
	ada, bob, cy, di := res.Objects[0].ID, res.Objects[1].ID, res.Objects[2].ID, res.Objects[3].ID
	b.queue.take()

	res, err = b.apply(t, job2, []graph.ObjectInput{
		// Content changes: merged properties, unioned labels, lower
		// confidence ignored, suggested does not downgrade.
		{
			Type: "Person", Key: "ADA", Name: "Ada L.", Properties: map[string]any{"occupation": "mathematician", "nationality": "British"},
			Labels: []string{"b", "a"}, Status: graph.StatusSuggested, Confidence: ptr(0.2),
		},
		// Upgrade and higher confidence only: updated, but not re-embedded.
		{Type: "Person", Key: "bob", Name: "Bob", Confidence: ptr(0.6)},
		// Nothing changes but the job.
		{Type: "Person", Key: "cy", Name: "Cy", Confidence: ptr(0.5)},
		// Suggested stays suggested.
		{Type: "Person", Key: "di", Name: "Di", Status: graph.StatusSuggested},
	}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ObjectsCreated)
	require.Equal(t, 2, res.ObjectsUpdated)
	require.Equal(t, [][]uuid.UUID{{ada}}, b.queue.take(), "only the object whose text changed")

	o := b.object(t, ada)
	require.Equal(t, "Ada L.", o.Name)
	require.Equal(t, "first", o.Description)
	require.Equal(t, map[string]any{"title": "Countess", "occupation": "mathematician", "nationality": "British"}, o.Properties)
	require.Equal(t, []string{"a", "b"}, o.Labels)
	require.Equal(t, graph.StatusAccepted, o.Status, "never downgraded")
	require.Equal(t, 0.7, *o.Confidence, "the maximum")
	require.Equal(t, job2, o.ExtractionJobID)
	require.Equal(t, "Ada", o.Key, "the first key spelling stays")

	o = b.object(t, bob)
	require.Equal(t, graph.StatusAccepted, o.Status, "accepted upgrades a suggestion")
	require.Equal(t, 0.6, *o.Confidence)
	o = b.object(t, cy)
	require.Equal(t, job2, o.ExtractionJobID, "the job that last saw it")
	o = b.object(t, di)
	require.Equal(t, graph.StatusSuggested, o.Status)
	require.Nil(t, o.Confidence)

	// A nil job leaves the recorded job alone.
	_, err = b.apply(t, nil, []graph.ObjectInput{{Type: "Person", Key: "cy", Name: "Cy", Description: "new"}}, nil)
	require.NoError(t, err)
	o = b.object(t, cy)
	require.Equal(t, job2, o.ExtractionJobID)
	require.Equal(t, "new", o.Description)
}

func TestApplyResolvesExistingObjects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.apply(t, nil, []graph.ObjectInput{
		{Type: "Person", Key: "Ada Lovelace", Name: "Ada Lovelace"},
		{Type: "Event", Key: "Turin 1840", Name: "Turin 1840"},
		{Type: "Location", Key: "Turin", Name: "Turin"},
	}, nil)
	require.NoError(t, err)
	ada, event, turin := res.Objects[0].ID, res.Objects[1].ID, res.Objects[2].ID

	// A later batch names existing objects by key, and a new one.
	res, err = b.apply(t, nil, []graph.ObjectInput{{Type: "Organization", Key: "Royal Society", Name: "Royal Society"}}, []graph.RelationshipInput{
		{Type: "PARTICIPATED_IN", SourceType: "Person", SourceKey: "ada lovelace", TargetType: "Event", TargetKey: "TURIN-1840", Confidence: ptr(0.5)},
		{Type: "HELD_IN", SourceType: "Event", SourceKey: "Turin 1840", TargetType: "Location", TargetKey: "turin"},
		{Type: "WORKS_FOR", SourceType: "Person", SourceKey: "Ada Lovelace", TargetType: "Organization", TargetKey: "royal society"},
		{Type: "WORKS_FOR", SourceType: "Organization", SourceKey: "Ada Lovelace", TargetType: "Organization", TargetKey: "royal society"},
		{Type: "WORKS_FOR", SourceType: "Person", SourceKey: "", TargetType: "Organization", TargetKey: "royal society"},
	})
	require.NoError(t, err)
	require.Equal(t, 3, res.RelationshipsCreated)
	require.Equal(t, []int{3, 4}, res.UnresolvedRelationships, "types are part of the key; empty keys resolve to nothing")
	society := res.Objects[0].ID
	rels, total, err := b.svc.ListObjectRelationships(context.Background(), b.project, ada, graph.Both, "", 50, 0)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	ends := map[string][2]uuid.UUID{}
	for _, r := range rels {
		ends[r.Type] = [2]uuid.UUID{r.SourceID, r.TargetID}
	}
	require.Equal(t, [2]uuid.UUID{ada, event}, ends["PARTICIPATED_IN"])
	require.Equal(t, [2]uuid.UUID{ada, society}, ends["WORKS_FOR"])
	_, total, err = b.svc.ListObjectRelationships(context.Background(), b.project, turin, graph.Incoming, "", 50, 0)
	require.NoError(t, err)
	require.Equal(t, 1, total)
	_, total, err = b.svc.ListObjectRelationships(context.Background(), b.project, turin, graph.Outgoing, "", 50, 0)
	require.NoError(t, err)
	require.Zero(t, total)

	// Neighbourhoods: every listed object's relationships in one query,
	// either direction, at most per object, only the project's.
	around, err := b.svc.Neighbourhoods(context.Background(), b.project, []uuid.UUID{ada, turin, society, uuid.New()}, 1)
	require.NoError(t, err)
	require.Len(t, around, 3, "an object without relationships is absent")
	require.Len(t, around[ada], 1, "at most per relationships each")
	require.Equal(t, "HELD_IN", around[turin][0].Type)
	require.Equal(t, [2]uuid.UUID{ada, society}, [2]uuid.UUID{around[society][0].SourceID, around[society][0].TargetID})
	around, err = b.svc.Neighbourhoods(context.Background(), b.project, []uuid.UUID{ada}, 50)
	require.NoError(t, err)
	require.Len(t, around[ada], 2)
	around, err = b.svc.Neighbourhoods(context.Background(), uuid.New(), []uuid.UUID{ada}, 50)
	require.NoError(t, err)
	require.Empty(t, around, "another project sees none")
	_, err = b.svc.Neighbourhoods(context.Background(), b.project, []uuid.UUID{ada}, 0)
	require.Error(t, err)

	// Merging a relationship: properties merged, the higher confidence.
	res, err = b.apply(t, nil, nil, []graph.RelationshipInput{
		{
			Type: "PARTICIPATED_IN", SourceType: "Person", SourceKey: "Ada Lovelace", TargetType: "Event", TargetKey: "Turin 1840",
			Confidence: ptr(0.9), Properties: map[string]any{"role": "translator"},
		},
	})
	require.NoError(t, err)
	require.Equal(t, 0, res.RelationshipsCreated)
	require.Equal(t, 1, res.RelationshipsUpdated)
	r, err := b.svc.GetRelationship(context.Background(), b.project, res.RelationshipIDs[0])
	require.NoError(t, err)
	require.Equal(t, 0.9, *r.Confidence)
	require.Equal(t, map[string]any{"role": "translator"}, r.Properties)

	// Soft-deleted objects no longer resolve.
	require.NoError(t, b.svc.DeleteObject(context.Background(), b.project, turin))
	res, err = b.apply(t, nil, nil, []graph.RelationshipInput{
		{Type: "HELD_IN", SourceType: "Event", SourceKey: "Turin 1840", TargetType: "Location", TargetKey: "turin"},
	})
	require.NoError(t, err)
	require.Equal(t, []int{0}, res.UnresolvedRelationships)
}

func TestApplyRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := uuid.Must(uuid.NewV7())
	for _, c := range []struct {
		name string
		objs []graph.ObjectInput
		rels []graph.RelationshipInput
		want string
	}{
		{"NoType", []graph.ObjectInput{{Key: "a", Name: "a"}}, nil, "objects[0]: type is required"},
		{"NoName", []graph.ObjectInput{{Type: "Person"}}, nil, "objects[0]: name is required"},
		{"PunctuationKey", []graph.ObjectInput{{Type: "Person", Key: "!!", Name: "x"}}, nil, "letter or a digit"},
		{"BadStatus", []graph.ObjectInput{{Type: "Person", Name: "x", Status: "maybe"}}, nil, "status"},
		{"BadConfidence", []graph.ObjectInput{{Type: "Person", Name: "x", Confidence: ptr(1.5)}}, nil, "confidence"},
		{"ForeignChunk", []graph.ObjectInput{{Type: "Person", Name: "x", ChunkIDs: []uuid.UUID{other}}}, nil, "not chunks of the project"},
		{"RelNoType", nil, []graph.RelationshipInput{{SourceType: "Person", SourceKey: "a", TargetType: "Person", TargetKey: "b"}}, "relationships[0]: type"},
	} {
		_, err := b.apply(t, nil, c.objs, c.rels)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), c.name)
		require.Contains(t, err.Error(), c.want, c.name)
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM graph_objects`))
}

func TestStatusDeleteAndObjectsByID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	res, err := b.apply(t, nil, []graph.ObjectInput{
		{Type: "Person", Name: "A", Status: graph.StatusSuggested, ChunkIDs: []uuid.UUID{b.chunks[0]}},
		{Type: "Person", Name: "B", Status: graph.StatusSuggested},
		{Type: "Organization", Name: "C"},
	}, []graph.RelationshipInput{{Type: "WORKS_FOR", SourceType: "Person", SourceKey: "A", TargetType: "Organization", TargetKey: "C", ChunkIDs: []uuid.UUID{b.chunks[0]}}})
	require.NoError(t, err)
	a, bb, c := res.Objects[0].ID, res.Objects[1].ID, res.Objects[2].ID
	// A user's recent-activity items of the three objects (and of a free
	// resource type with one's id): deleting an object removes its item.
	user := uuid.Must(uuid.NewV7())
	_, err = b.pool.Exec(ctx, `INSERT INTO users (id, created_at, updated_at) VALUES ($1, now(), now())`, user)
	require.NoError(t, err)
	for typ, ids := range map[string][]uuid.UUID{activity.ResourceGraphObject: {a, bb, c}, "report": {a}} {
		for _, id := range ids {
			_, err = b.pool.Exec(ctx, `INSERT INTO user_activity (id, user_id, project_id, resource_type, resource_id, action_type, accessed_at)
				VALUES (gen_random_uuid(), $1, $2, $3, $4, 'view', now())`, user, b.project, typ, id.String())
			require.NoError(t, err)
		}
	}
	items := func() []string {
		rows, _ := b.pool.Query(ctx, `SELECT resource_type || '/' || resource_id FROM user_activity`)
		list, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return list
	}
	_, err = b.pool.Exec(ctx, `INSERT INTO graph_embedding_jobs (id, project_id, run_at, created_at, updated_at, object_id) VALUES ($1, $2, now(), now(), now(), $3)`,
		uuid.Must(uuid.NewV7()), b.project, a)
	require.NoError(t, err)
	b.queue.take()

	err = postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		require.Equal(t, errs.Invalid, errs.CodeOf(b.svc.SetObjectsStatus(ctx, tx, b.project, []uuid.UUID{bb}, "maybe")))
		return b.svc.SetObjectsStatus(ctx, tx, b.project, []uuid.UUID{bb, uuid.Must(uuid.NewV7())}, graph.StatusAccepted)
	})
	require.NoError(t, err)
	require.Equal(t, graph.StatusAccepted, b.object(t, bb).Status)
	require.Empty(t, b.queue.take(), "a status change is not re-embedded")

	// Only suggestions still owned by the job are deleted: bb was
	// accepted since, and the job is the objects' job (apply records it).
	job := uuid.Must(uuid.NewV7())
	_, err = b.pool.Exec(ctx, `UPDATE graph_objects SET extraction_job_id = $1 WHERE project_id = $2`, job, b.project)
	require.NoError(t, err)
	require.NoError(t, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		return b.svc.DeleteSuggestions(ctx, tx, b.project, uuid.Must(uuid.NewV7()), []uuid.UUID{a, bb})
	}))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM graph_objects WHERE id = $1`, a), "another job's suggestion stays")
	require.NoError(t, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		return b.svc.DeleteSuggestions(ctx, tx, b.project, job, []uuid.UUID{a, bb})
	}))
	require.Zero(t, b.count(t, `SELECT count(*) FROM graph_objects WHERE id = $1`, a), "hard delete")
	require.Equal(t, graph.StatusAccepted, b.object(t, bb).Status, "an accepted object stays")
	require.ElementsMatch(t, []string{"graph-object/" + bb.String(), "graph-object/" + c.String(), "report/" + a.String()}, items(),
		"the deleted suggestion's item went with it")
	require.Zero(t, b.count(t, `SELECT count(*) FROM graph_relationships`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM graph_object_provenance`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM graph_relationship_provenance`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM graph_embedding_jobs`))

	require.NoError(t, b.svc.DeleteObject(ctx, b.project, c))
	require.ElementsMatch(t, []string{"graph-object/" + bb.String(), "report/" + a.String()}, items(), "the deleted object's item went with it")
	list, err := b.svc.ObjectsByID(ctx, b.pool, []uuid.UUID{a, bb, c})
	require.NoError(t, err)
	require.Len(t, list, 1, "live objects only")
	require.Equal(t, bb, list[0].ID)
	list, err = b.svc.ObjectsByID(ctx, b.pool, nil)
	require.NoError(t, err)
	require.Empty(t, list)

	// The soft-deleted key is free again.
	res, err = b.apply(t, nil, []graph.ObjectInput{{Type: "Organization", Name: "c"}}, nil)
	require.NoError(t, err)
	require.True(t, res.Objects[0].Created)
	require.NotEqual(t, c, res.Objects[0].ID)
}

func TestApplyConcurrentBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	objs := make([]graph.ObjectInput, 200)
	for i := range objs {
		objs[i] = graph.ObjectInput{Type: "Concept", Name: fmt.Sprintf("Concept %d", i), Properties: map[string]any{"n": i}}
	}
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			mine := slices.Clone(objs)
			if w%2 == 1 {
				slices.Reverse(mine)
			}
			_, err := b.apply(t, nil, mine, nil)
			errc <- err
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	require.Equal(t, 200, b.count(t, `SELECT count(*) FROM graph_objects`))
}

func TestServiceWritesQueueEmbeddings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	o, err := b.svc.CreateObject(ctx, b.project, graph.CreateObjectParams{Type: "Person", Name: "Ada", Properties: map[string]any{"title": "Countess"}})
	require.NoError(t, err)
	require.Equal(t, [][]uuid.UUID{{o.ID}}, b.queue.take(), "created")

	_, err = b.svc.CreateObject(ctx, b.project, graph.CreateObjectParams{Type: "Person", Name: "ADA!"})
	require.Equal(t, errs.Conflict, errs.CodeOf(err))
	require.Contains(t, err.Error(), o.ID.String())
	require.Empty(t, b.queue.take())

	_, err = b.svc.UpdateObject(ctx, b.project, o.ID, graph.ObjectUpdate{Status: ptr(graph.StatusSuggested)})
	require.NoError(t, err)
	require.Empty(t, b.queue.take(), "a status change is not re-embedded")
	_, err = b.svc.UpdateObject(ctx, b.project, o.ID, graph.ObjectUpdate{Name: ptr("Ada"), Properties: map[string]any{"title": "Countess"}})
	require.NoError(t, err)
	require.Empty(t, b.queue.take(), "nothing changed")
	u, err := b.svc.UpdateObject(ctx, b.project, o.ID, graph.ObjectUpdate{Labels: []string{"x", " x ", ""}})
	require.NoError(t, err)
	require.Equal(t, []string{"x"}, u.Labels)
	require.Equal(t, [][]uuid.UUID{{o.ID}}, b.queue.take(), "labels changed")
	_, err = b.svc.UpdateObject(ctx, b.project, o.ID, graph.ObjectUpdate{Properties: map[string]any{"title": 5}})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.Empty(t, b.queue.take())
	_, err = b.svc.UpdateObject(ctx, b.project, uuid.Must(uuid.NewV7()), graph.ObjectUpdate{Name: ptr("x")})
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
}

// TestApplyLetsReferencesThrough: the objects and relationships an Apply
// updates stay locked until its transaction ends, but that lock does not
// stop other transactions from referencing them (graph embeddings,
// relationships and provenance written by other jobs check their foreign
// keys): with the stronger lock, concurrent extractions and embeddings
// deadlocked.
func TestApplyLetsReferencesThrough(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	res, err := b.apply(t, nil, []graph.ObjectInput{
		{Type: "Person", Key: "Ada", Name: "Ada"},
		{Type: "Organization", Key: "Engines", Name: "Engines"},
	}, []graph.RelationshipInput{{Type: "WORKS_FOR", SourceType: "Person", SourceKey: "Ada", TargetType: "Organization", TargetKey: "Engines"}})
	require.NoError(t, err)
	ada, engines := res.Objects[0].ID, res.Objects[1].ID
	rel := res.RelationshipIDs[0]

	// A job's Apply updates both and the relationship, and is not done yet.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = b.svc.Apply(ctx, tx, b.project, ptr(uuid.Must(uuid.NewV7())), []graph.ObjectInput{
		{Type: "Person", Key: "Ada", Name: "Ada", Description: "mathematician", ChunkIDs: []uuid.UUID{b.chunks[0]}},
		{Type: "Organization", Key: "Engines", Name: "Engines", Description: "makers of engines"},
	}, []graph.RelationshipInput{{
		Type: "WORKS_FOR", SourceType: "Person", SourceKey: "Ada", TargetType: "Organization", TargetKey: "Engines", Confidence: ptr(0.9),
	}})
	require.NoError(t, err)

	// Meanwhile other transactions reference them.
	err = postgres.WithTx(ctx, b.pool, func(other pgx.Tx) error {
		if _, err := other.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			return err
		}
		if _, err := other.Exec(ctx, `INSERT INTO graph_object_embeddings (object_id, policy_id, project_id, provider, model, dimension, embedding, text_sha256, embedded_at)
			VALUES ($1, $2, $3, 'local', 'm', 1, '{1}', '\x00', now())`, ada, uuid.Nil, b.project); err != nil {
			return fmt.Errorf("embed the object: %w", err)
		}
		if _, err := other.Exec(ctx, `INSERT INTO graph_relationships (id, project_id, type, source_id, target_id, created_at, updated_at)
			VALUES ($1, $2, 'KNOWS', $3, $4, now(), now())`, uuid.Must(uuid.NewV7()), b.project, engines, ada); err != nil {
			return fmt.Errorf("relate the objects: %w", err)
		}
		if _, err := other.Exec(ctx, `INSERT INTO graph_relationship_provenance (relationship_id, chunk_id, project_id, created_at)
			VALUES ($1, $2, $3, now())`, rel, b.chunks[1], b.project); err != nil {
			return fmt.Errorf("link the relationship: %w", err)
		}
		return nil
	})
	require.NoError(t, err, "references wait for the Apply in progress")
	require.NoError(t, tx.Commit(ctx))
}

// TestApplyCallsOfAProjectTakeTurns: a second Apply on the same project
// waits for the first one's transaction to end, even on other objects, so
// that concurrent extractions can never deadlock on each other's locked and
// newly inserted objects; an Apply on another project does not wait.
func TestApplyCallsOfAProjectTakeTurns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other := uuid.Must(uuid.NewV7())
	_, err := b.pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at)
		SELECT $1, org_id, 'other', now(), now() FROM projects WHERE id = $2`, other, b.project)
	require.NoError(t, err)

	first, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(ctx) }()
	_, err = b.svc.Apply(ctx, first, b.project, nil, []graph.ObjectInput{{Type: "Person", Key: "Ada", Name: "Ada"}}, nil)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := b.apply(t, nil, []graph.ObjectInput{{Type: "Person", Key: "Grace", Name: "Grace"}}, nil)
		done <- err
	}()
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&waiting))
		return waiting == 1
	}, 10*time.Second, 10*time.Millisecond, "the second Apply waits for the first")
	select {
	case err := <-done:
		t.Fatalf("the second Apply ended while the first was open: %v", err)
	default:
	}

	err = postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := b.svc.Apply(ctx, tx, other, nil, []graph.ObjectInput{{Type: "Person", Key: "Ada", Name: "Ada"}}, nil)
		return err
	})
	require.NoError(t, err, "another project's Apply does not wait")

	require.NoError(t, first.Commit(ctx))
	require.NoError(t, <-done)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM graph_objects WHERE project_id = $1`, b.project).Scan(&n))
	require.Equal(t, 2, n)
}

// TestDeleteSuggestionsWaitsForEmbeddingWriters: an embedding writer locks
// the objects (LockObjects), then their jobs, then writes vectors; a
// rejection deleting the same objects (which cascades to the jobs and
// vectors) waits for it and then deletes, instead of deadlocking as it did
// when the delete locked the objects and the writer the jobs first.
func TestDeleteSuggestionsWaitsForEmbeddingWriters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	res, err := b.apply(t, nil, []graph.ObjectInput{
		{Type: "Organization", Name: "first", Status: graph.StatusSuggested},
		{Type: "Organization", Name: "second", Status: graph.StatusSuggested},
	}, nil)
	require.NoError(t, err)
	ids := []uuid.UUID{res.Objects[0].ID, res.Objects[1].ID}
	job := uuid.Must(uuid.NewV7())
	_, err = b.pool.Exec(ctx, `UPDATE graph_objects SET extraction_job_id = $1 WHERE id = ANY($2)`, job, ids)
	require.NoError(t, err)
	for _, id := range ids {
		_, err = b.pool.Exec(ctx, `INSERT INTO graph_embedding_jobs (id, project_id, status, run_at, attempt, created_at, updated_at, object_id)
			VALUES ($1, $2, 'running', now(), 1, now(), now(), $3)`, uuid.Must(uuid.NewV7()), b.project, id)
		require.NoError(t, err)
	}

	// The writer: objects, then jobs (the embedding worker's order).
	writer, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = writer.Rollback(ctx) }()
	require.NoError(t, b.svc.LockObjects(ctx, writer, ids))
	_, err = writer.Exec(ctx, `SELECT id FROM graph_embedding_jobs WHERE object_id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	require.NoError(t, err)

	deleted := make(chan error, 1)
	go func() {
		deleted <- postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
			return b.svc.DeleteSuggestions(ctx, tx, b.project, job, ids)
		})
	}()
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%doomed%'`) == 1
	}, 10*time.Second, 5*time.Millisecond, "the delete waits for the writer")

	for _, id := range ids {
		_, err = writer.Exec(ctx, `INSERT INTO graph_object_embeddings (object_id, policy_id, project_id, provider, model, dimension, embedding, text_sha256, embedded_at)
			VALUES ($1, $2, $3, 'local', 'm', 1, '{1}', '\x00', now())`, id, uuid.Nil, b.project)
		require.NoError(t, err, "the writer is not blocked by the waiting delete")
	}
	require.NoError(t, writer.Commit(ctx))
	select {
	case err := <-deleted:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the delete did not finish")
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM graph_objects WHERE id = ANY($1)`, ids))
	require.Zero(t, b.count(t, `SELECT count(*) FROM graph_object_embeddings`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM graph_embedding_jobs`))
}

// TestCallEffects: a create with an agent's call key records what it
// created under the key, in its transaction (a failed create records
// nothing); the key finds it, in its project only; one key creates once.
func TestCallEffects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ada, err := b.svc.CreateObject(ctx, b.project, graph.CreateObjectParams{Type: "Person", Name: "Ada Lovelace", CallKey: "run/1"})
	require.NoError(t, err)
	org, err := b.svc.CreateObject(ctx, b.project, graph.CreateObjectParams{Type: "Organization", Name: "Engines"})
	require.NoError(t, err)
	_, err = b.svc.CreateObject(ctx, b.project, graph.CreateObjectParams{Type: "Person", Name: "Ada Lovelace", CallKey: "run/2"})
	require.Equal(t, errs.Conflict, errs.CodeOf(err))
	_, err = b.svc.CreateObject(ctx, b.project, graph.CreateObjectParams{Type: "Person", Name: "Charles Babbage", CallKey: "run/1"})
	require.Equal(t, errs.Conflict, errs.CodeOf(err), "one call creates once")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM graph_call_effects`), "failed creates record nothing")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM graph_objects WHERE name = 'Charles Babbage'`))

	got, err := b.svc.ObjectOfCall(ctx, b.project, "run/1")
	require.NoError(t, err)
	require.Equal(t, ada.ID, got.ID)
	_, err = b.svc.ObjectOfCall(ctx, b.project, "run/2")
	require.Equal(t, errs.NotFound, errs.CodeOf(err), "a key that created nothing")
	_, err = b.svc.ObjectOfCall(ctx, uuid.Must(uuid.NewV7()), "run/1")
	require.Equal(t, errs.NotFound, errs.CodeOf(err), "another project")

	rel, err := b.svc.CreateRelationship(ctx, b.project, graph.CreateRelationshipParams{Type: "WORKS_FOR", SourceID: ada.ID, TargetID: org.ID, CallKey: "run/3"})
	require.NoError(t, err)
	gotRel, err := b.svc.RelationshipOfCall(ctx, b.project, "run/3")
	require.NoError(t, err)
	require.Equal(t, rel.ID, gotRel.ID)
	_, err = b.svc.RelationshipOfCall(ctx, b.project, "run/1")
	require.Equal(t, errs.NotFound, errs.CodeOf(err), "the key created an object, not a relationship")

	require.NoError(t, b.svc.DeleteObject(ctx, b.project, ada.ID))
	_, err = b.svc.ObjectOfCall(ctx, b.project, "run/1")
	require.Equal(t, errs.NotFound, errs.CodeOf(err), "a deleted object")
}
