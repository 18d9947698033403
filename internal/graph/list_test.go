package graph_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
)

// TestRelationshipFilterParseEnds reads a relationship list's ends as the
// API and the MCP tool give them: empty is any end, a malformed one is
// invalid_argument naming it, and the filter is left as it was then.
func TestRelationshipFilterParseEnds(t *testing.T) {
	t.Parallel()
	src, tgt := uuid.New(), uuid.New()
	f := graph.RelationshipFilter{Type: "WORKS_FOR", Limit: 5}
	require.NoError(t, f.ParseEnds(src.String(), ""))
	require.Equal(t, graph.RelationshipFilter{Type: "WORKS_FOR", SourceID: &src, Limit: 5}, f)
	require.NoError(t, f.ParseEnds("", tgt.String()))
	require.Equal(t, graph.RelationshipFilter{Type: "WORKS_FOR", TargetID: &tgt, Limit: 5}, f)
	for raw, msg := range map[[2]string]string{
		{"nope", tgt.String()}: "sourceId must be a UUID",
		{src.String(), "42"}:   "targetId must be a UUID",
	} {
		g := graph.RelationshipFilter{Offset: 3}
		err := g.ParseEnds(raw[0], raw[1])
		require.Equal(t, errs.Invalid, errs.CodeOf(err), raw)
		require.EqualError(t, err, msg, raw)
		require.Equal(t, graph.RelationshipFilter{Offset: 3}, g, raw)
	}
}

// TestListObjectsFilters pages a project's live objects newest first with
// each filter, and counts the matches past the end of the list too.
func TestListObjectsFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	inputs := []graph.ObjectInput{
		{Type: "Person", Name: "Ada Lovelace", Labels: []string{"math"}},
		{Type: "Organization", Name: "Analytical Society", Description: "Where Ada met the others."},
		{Type: "Person", Name: "Charles Babbage", Status: graph.StatusSuggested},
		{Type: "Person", Name: "Mary Somerville", Labels: []string{"math"}},
		{Type: "Organization", Name: "Royal Society"},
	}
	ids := make([]uuid.UUID, len(inputs))
	for i, in := range inputs {
		res, err := b.apply(t, nil, []graph.ObjectInput{in}, nil)
		require.NoError(t, err)
		ids[i] = res.Objects[0].ID
	}
	// Apply stamps each batch with the time it runs; the same time for
	// two objects orders them by id, which grows, so the order is newest
	// first either way.
	require.NoError(t, b.svc.DeleteObject(ctx, b.project, ids[3]))

	list := func(f graph.ObjectFilter) ([]uuid.UUID, int) {
		t.Helper()
		if f.Limit == 0 {
			f.Limit = 10
		}
		objs, total, err := b.svc.ListObjects(ctx, b.project, f)
		require.NoError(t, err)
		out := []uuid.UUID{}
		for _, o := range objs {
			out = append(out, o.ID)
		}
		return out, total
	}
	cases := []struct {
		name  string
		f     graph.ObjectFilter
		want  []uuid.UUID
		total int
	}{
		{"all live, newest first", graph.ObjectFilter{}, []uuid.UUID{ids[4], ids[2], ids[1], ids[0]}, 4},
		{"a page", graph.ObjectFilter{Limit: 2, Offset: 1}, []uuid.UUID{ids[2], ids[1]}, 4},
		{"past the end", graph.ObjectFilter{Offset: 4}, []uuid.UUID{}, 4},
		{"type", graph.ObjectFilter{Type: "Person"}, []uuid.UUID{ids[2], ids[0]}, 2},
		{"type, a page", graph.ObjectFilter{Type: "Organization", Limit: 1}, []uuid.UUID{ids[4]}, 2},
		{"status", graph.ObjectFilter{Status: graph.StatusSuggested}, []uuid.UUID{ids[2]}, 1},
		{"label", graph.ObjectFilter{Label: "math"}, []uuid.UUID{ids[0]}, 1},
		{"text, name or description", graph.ObjectFilter{Query: "ADA"}, []uuid.UUID{ids[1], ids[0]}, 2},
		{"text, a page", graph.ObjectFilter{Query: "society", Limit: 1, Offset: 1}, []uuid.UUID{ids[1]}, 2},
		{"text past the end", graph.ObjectFilter{Query: "society", Offset: 2}, []uuid.UUID{}, 2},
		{"text, wildcards are literal", graph.ObjectFilter{Query: "%"}, []uuid.UUID{}, 0},
		{"type and text", graph.ObjectFilter{Type: "Person", Query: "a"}, []uuid.UUID{ids[2], ids[0]}, 2},
	}
	for _, c := range cases {
		got, total := list(c.f)
		require.Equal(t, c.want, got, c.name)
		require.Equal(t, c.total, total, c.name)
	}
}
