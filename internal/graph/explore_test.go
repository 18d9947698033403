package graph_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
)

// TestExploreReads: an object's neighbours in both directions with the
// other end; its provenance chunks in document order; the types present;
// the counts; a deleted object leaves them all; bad pages and unknown
// objects are refused.
func TestExploreReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	res, err := b.apply(t, ptr(uuid.Must(uuid.NewV7())), []graph.ObjectInput{
		{Type: "Person", Key: "Ada", Name: "Ada", ChunkIDs: []uuid.UUID{b.chunks[2], b.chunks[0]}},
		{Type: "Organization", Key: "Engine Co", Name: "Engine Co"},
		{Type: "Location", Key: "London", Name: "London"},
		{Type: "Person", Key: "Bob", Name: "Bob"},
	}, []graph.RelationshipInput{
		{Type: "WORKS_FOR", SourceType: "Person", SourceKey: "Ada", TargetType: "Organization", TargetKey: "Engine Co"},
		{Type: "VISITED", SourceType: "Person", SourceKey: "Bob", TargetType: "Person", TargetKey: "Ada"},
		{Type: "LOCATED_IN", SourceType: "Organization", SourceKey: "Engine Co", TargetType: "Location", TargetKey: "London"},
	})
	require.NoError(t, err)
	ada, engine, london, bob := res.Objects[0].ID, res.Objects[1].ID, res.Objects[2].ID, res.Objects[3].ID

	ns, total, err := b.svc.Neighbours(ctx, b.project, ada, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	got := map[string]graph.Neighbour{}
	for _, n := range ns {
		got[n.Relationship.Type] = n
	}
	require.True(t, got["WORKS_FOR"].Outgoing)
	require.Equal(t, graph.ObjectRef{ID: engine, Type: "Organization", Name: "Engine Co", Status: graph.StatusAccepted}, got["WORKS_FOR"].Other)
	require.False(t, got["VISITED"].Outgoing)
	require.Equal(t, bob, got["VISITED"].Other.ID)
	page, total, err := b.svc.Neighbours(ctx, b.project, ada, 1, 1)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, page, 1)
	require.Equal(t, ns[1].Relationship.ID, page[0].Relationship.ID)
	page, total, err = b.svc.Neighbours(ctx, b.project, ada, 10, 5)
	require.NoError(t, err)
	require.Empty(t, page)
	require.Equal(t, 2, total, "the real total on an empty page past the end")

	prov, total, err := b.svc.ObjectProvenance(ctx, b.project, ada, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []uuid.UUID{b.chunks[0], b.chunks[2]}, []uuid.UUID{prov[0].ChunkID, prov[1].ChunkID}, "in document order")
	require.Equal(t, "a.md", prov[0].Filename)
	prov, total, err = b.svc.ObjectProvenance(ctx, b.project, ada, 10, 5)
	require.NoError(t, err)
	require.Empty(t, prov)
	require.Equal(t, 2, total, "the real total on an empty page past the end")
	prov, _, err = b.svc.ObjectProvenance(ctx, b.project, ada, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 2, prov[1].ChunkIndex)
	require.Equal(t, "text", prov[1].Text)
	prov, total, err = b.svc.ObjectProvenance(ctx, b.project, london, 10, 0)
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, prov)

	types, err := b.svc.ObjectTypes(ctx, b.project)
	require.NoError(t, err)
	require.Equal(t, []string{"Location", "Organization", "Person"}, types)
	c, err := b.svc.Count(ctx, b.project)
	require.NoError(t, err)
	require.Equal(t, graph.Counts{Objects: 4, Relationships: 3}, c)

	// Another project sees none of it.
	other := uuid.Must(uuid.NewV7())
	types, err = b.svc.ObjectTypes(ctx, other)
	require.NoError(t, err)
	require.Empty(t, types)
	_, _, err = b.svc.Neighbours(ctx, other, ada, 10, 0)
	require.ErrorIs(t, err, graph.ErrObjectNotFound)

	// London deleted: gone from the types, the counts and Engine Co's
	// neighbours.
	require.NoError(t, b.svc.DeleteObject(ctx, b.project, london))
	types, err = b.svc.ObjectTypes(ctx, b.project)
	require.NoError(t, err)
	require.Equal(t, []string{"Organization", "Person"}, types)
	c, err = b.svc.Count(ctx, b.project)
	require.NoError(t, err)
	require.Equal(t, graph.Counts{Objects: 3, Relationships: 2}, c)
	ns, total, err = b.svc.Neighbours(ctx, b.project, engine, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, ada, ns[0].Other.ID)
	_, _, err = b.svc.ObjectProvenance(ctx, b.project, london, 10, 0)
	require.ErrorIs(t, err, graph.ErrObjectNotFound)

	_, _, err = b.svc.Neighbours(ctx, b.project, ada, 0, 0)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	_, _, err = b.svc.ObjectProvenance(ctx, b.project, ada, 10, -1)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
}
