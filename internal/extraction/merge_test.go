package extraction

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/graph"
)

// found is one object of a response, in the window it came from.
type found struct {
	window int
	obj    rawObject
	chunks []uuid.UUID
}

// conf returns a pointer to v, for the confidences of inputs and wants.
func conf(v float64) *float64 { return &v }

// logged returns the messages of the entries l keeps for the write.
func logged(l *jobLog) []string {
	out := make([]string, len(l.deferred))
	for i, r := range l.deferred {
		out[i] = r.message
	}
	return out
}

// TestAddObject: addObject validates each object of the responses and
// merges an object seen again (same type, same normalized key) into the
// first one: chunks are the union, the highest confidence wins, a
// property or description already set is kept, one not yet set is added.
func TestAddObject(t *testing.T) {
	t.Parallel()
	types := defaultTypes(t)
	c1, c2, c3 := uuid.New(), uuid.New(), uuid.New()
	tests := []struct {
		name  string
		found []found
		want  []graph.ObjectInput
		logs  []string // substrings of the validation entries, in order
	}{{
		name: "a new object is taken as is, trimmed, its confidence clamped",
		found: []found{{0, rawObject{
			Type: " Person ", Name: "  Ada\n Lovelace ", Description: " Mathematician. ",
			Properties: map[string]any{"occupation": "mathematician"}, Confidence: conf(1.7),
		}, []uuid.UUID{c1}}},
		want: []graph.ObjectInput{{
			Type: "Person", Key: "Ada Lovelace", Name: "Ada Lovelace", Description: "Mathematician.",
			Properties: map[string]any{"occupation": "mathematician"}, Confidence: conf(1), ChunkIDs: []uuid.UUID{c1},
		}},
	}, {
		name: "a name falls back to the key, a key to the name, a negative confidence is 0",
		found: []found{
			{0, rawObject{Type: "Organization", Key: "ACME Corp", Confidence: conf(-0.5)}, []uuid.UUID{c1}},
			{0, rawObject{Type: "Location", Name: "London"}, []uuid.UUID{c1}},
		},
		want: []graph.ObjectInput{
			{Type: "Organization", Key: "ACME Corp", Name: "ACME Corp", Properties: map[string]any{}, Confidence: conf(0), ChunkIDs: []uuid.UUID{c1}},
			{Type: "Location", Key: "London", Name: "London", Properties: map[string]any{}, ChunkIDs: []uuid.UUID{c1}},
		},
	}, {
		name: "seen again in a later window: merged into the first",
		found: []found{
			{0, rawObject{
				Type: "Person", Name: "Ada Lovelace", Properties: map[string]any{"occupation": "mathematician"}, Confidence: conf(0.4),
			}, []uuid.UUID{c1, c2}},
			{1, rawObject{
				Type: "Person", Name: "ada  LOVELACE", Description: "Wrote the first program.",
				Properties: map[string]any{"occupation": "writer", "nationality": "British"}, Confidence: conf(0.9),
			}, []uuid.UUID{c2, c3}},
			{2, rawObject{Type: "Person", Name: "Ada Lovelace", Description: "Ignored: one is set.", Confidence: conf(0.2)}, []uuid.UUID{c1}},
		},
		want: []graph.ObjectInput{{
			Type: "Person", Key: "Ada Lovelace", Name: "Ada Lovelace", Description: "Wrote the first program.",
			Properties: map[string]any{"occupation": "mathematician", "nationality": "British"},
			Confidence: conf(0.9), ChunkIDs: []uuid.UUID{c1, c2, c3},
		}},
	}, {
		name: "a confidence given later replaces none",
		found: []found{
			{0, rawObject{Type: "Concept", Name: "Recursion"}, []uuid.UUID{c1}},
			{1, rawObject{Type: "Concept", Name: "recursion", Confidence: conf(0.3)}, nil},
		},
		want: []graph.ObjectInput{{
			Type: "Concept", Key: "Recursion", Name: "Recursion", Properties: map[string]any{}, Confidence: conf(0.3), ChunkIDs: []uuid.UUID{c1},
		}},
	}, {
		name: "the same key under two types is two objects",
		found: []found{
			{0, rawObject{Type: "Organization", Name: "Mercury"}, []uuid.UUID{c1}},
			{0, rawObject{Type: "Product", Name: "Mercury"}, []uuid.UUID{c2}},
		},
		want: []graph.ObjectInput{
			{Type: "Organization", Key: "Mercury", Name: "Mercury", Properties: map[string]any{}, ChunkIDs: []uuid.UUID{c1}},
			{Type: "Product", Key: "Mercury", Name: "Mercury", Properties: map[string]any{}, ChunkIDs: []uuid.UUID{c2}},
		},
	}, {
		name: "unknown types and objects without a usable name or key are dropped",
		found: []found{
			{0, rawObject{Type: "Spaceship", Name: "Enterprise"}, []uuid.UUID{c1}},
			{1, rawObject{Type: "Person", Name: " ", Key: "--"}, []uuid.UUID{c1}},
		},
		logs: []string{`dropped "Enterprise": unknown object type "Spaceship"`, `dropped an object of type "Person" without a usable name or key`},
	}, {
		name: "an invalid optional property is dropped from the object, which is kept",
		found: []found{{0, rawObject{
			Type: "Location", Name: "Atlantis", Properties: map[string]any{"latitude": 200.0, "country": "nowhere"},
		}, []uuid.UUID{c1}}},
		want: []graph.ObjectInput{{
			Type: "Location", Key: "Atlantis", Name: "Atlantis", Properties: map[string]any{"country": "nowhere"}, ChunkIDs: []uuid.UUID{c1},
		}},
		logs: []string{`repaired Location "Atlantis": dropped invalid properties latitude`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s *Service
			l, res := &jobLog{}, newResult()
			for _, f := range tt.found {
				s.addObject(l, types, res, f.obj, f.chunks, f.window)
			}
			got := make([]graph.ObjectInput, len(res.objects))
			for i, c := range res.objects {
				require.Equal(t, i, c.index)
				got[i] = c.in
			}
			if tt.want == nil {
				tt.want = []graph.ObjectInput{}
			}
			require.Equal(t, tt.want, got)
			msgs := logged(l)
			require.Len(t, msgs, len(tt.logs), "entries: %q", msgs)
			for i, want := range tt.logs {
				require.Contains(t, msgs[i], want)
				require.Equal(t, OpValidation, l.deferred[i].operation)
				require.Equal(t, LevelWarn, l.deferred[i].level)
				require.Equal(t, tt.found[i].window, l.deferred[i].metadata["window"])
			}
		})
	}
}

// TestAddObjectIndexesNameAndKey: a relationship finds an object by its
// name or by its key, normalized, and each object is listed once per
// name.
func TestAddObjectIndexesNameAndKey(t *testing.T) {
	t.Parallel()
	types := defaultTypes(t)
	var s *Service
	l, res := &jobLog{}, newResult()
	s.addObject(l, types, res, rawObject{Type: "Organization", Name: "International Business Machines", Key: "IBM"}, nil, 0)
	s.addObject(l, types, res, rawObject{Type: "Product", Name: "ibm"}, nil, 0)
	s.addObject(l, types, res, rawObject{Type: "Product", Name: "IBM"}, nil, 1)
	require.Len(t, res.objects, 2)
	org, product := res.objects[0], res.objects[1]
	require.Equal(t, []*candidate{org}, res.byName[graph.NormalizeKey("International Business Machines")])
	require.Equal(t, []*candidate{org, product}, res.byName["ibm"])
	require.Len(t, res.byName, 2)
	require.Empty(t, l.deferred)
}

// TestResolveRelationships: each relationship of the responses gets its
// endpoints among the job's objects (by name or key, the first pair the
// type allows); one seen again (same type and endpoints) is merged.
func TestResolveRelationships(t *testing.T) {
	t.Parallel()
	types := defaultTypes(t)
	c1, c2, c3 := uuid.New(), uuid.New(), uuid.New()
	objects := []rawObject{
		{Type: "Person", Name: "Ada Lovelace", Key: "ada"},
		{Type: "Person", Name: "Charles Babbage"},
		{Type: "Organization", Name: "Mercury"},
		{Type: "Product", Name: "Mercury"},
		{Type: "Location", Name: "London"},
	}
	tests := []struct {
		name    string
		pending []pendingRel
		want    []graph.RelationshipInput
		logs    []string
	}{{
		name: "endpoints by name or key, description and clamped confidence kept",
		pending: []pendingRel{{raw: rawRelationship{
			Type: "LOCATED_IN", Source: "ADA", Target: " london", Description: " Lived there. ", Confidence: conf(3),
		}, chunks: []uuid.UUID{c1}}},
		want: []graph.RelationshipInput{{
			Type: "LOCATED_IN", SourceType: "Person", SourceKey: "ada", TargetType: "Location", TargetKey: "London",
			Properties: map[string]any{"description": "Lived there."}, Confidence: conf(1), ChunkIDs: []uuid.UUID{c1},
		}},
	}, {
		name: "an ambiguous name takes the endpoint the type allows",
		pending: []pendingRel{
			{raw: rawRelationship{Type: "WORKS_FOR", Source: "Charles Babbage", Target: "Mercury"}, chunks: []uuid.UUID{c1}},
			{raw: rawRelationship{Type: "PRODUCES", Source: "Mercury", Target: "Mercury"}, chunks: []uuid.UUID{c2}},
		},
		want: []graph.RelationshipInput{{
			Type: "WORKS_FOR", SourceType: "Person", SourceKey: "Charles Babbage", TargetType: "Organization", TargetKey: "Mercury",
			Properties: map[string]any{}, ChunkIDs: []uuid.UUID{c1},
		}, {
			Type: "PRODUCES", SourceType: "Organization", SourceKey: "Mercury", TargetType: "Product", TargetKey: "Mercury",
			Properties: map[string]any{}, ChunkIDs: []uuid.UUID{c2},
		}},
	}, {
		name: "seen again: chunks merged, the highest confidence kept, the first description kept",
		pending: []pendingRel{
			{raw: rawRelationship{Type: "RELATED_TO", Source: "Ada Lovelace", Target: "Charles Babbage", Description: "Worked together.", Confidence: conf(0.5)}, chunks: []uuid.UUID{c1, c2}},
			{raw: rawRelationship{Type: "RELATED_TO", Source: "ada", Target: "charles babbage", Description: "Friends.", Confidence: conf(0.8)}, chunks: []uuid.UUID{c2, c3}, window: 1},
			{raw: rawRelationship{Type: "RELATED_TO", Source: "Ada Lovelace", Target: "Charles Babbage", Confidence: conf(0.1)}, chunks: []uuid.UUID{c1}, window: 2},
			{raw: rawRelationship{Type: "RELATED_TO", Source: "Charles Babbage", Target: "Ada Lovelace"}, chunks: []uuid.UUID{c3}, window: 2},
		},
		want: []graph.RelationshipInput{{
			Type: "RELATED_TO", SourceType: "Person", SourceKey: "ada", TargetType: "Person", TargetKey: "Charles Babbage",
			Properties: map[string]any{"description": "Worked together."}, Confidence: conf(0.8), ChunkIDs: []uuid.UUID{c1, c2, c3},
		}, {
			Type: "RELATED_TO", SourceType: "Person", SourceKey: "Charles Babbage", TargetType: "Person", TargetKey: "ada",
			Properties: map[string]any{}, ChunkIDs: []uuid.UUID{c3},
		}},
	}, {
		name: "unknown types, missing endpoints, disallowed pairs and self-loops are dropped",
		pending: []pendingRel{
			{raw: rawRelationship{Type: "LOVES", Source: "Ada Lovelace", Target: "Charles Babbage"}},
			{raw: rawRelationship{Type: "WORKS_FOR", Source: "Ada Lovelace", Target: "Analytical Society"}, window: 1},
			{raw: rawRelationship{Type: "WORKS_FOR", Source: "London", Target: "Charles Babbage"}, window: 2},
			{raw: rawRelationship{Type: "RELATED_TO", Source: "London", Target: "london"}, window: 3},
		},
		logs: []string{
			`dropped a relationship of unknown type "LOVES"`,
			`dropped WORKS_FOR "Ada Lovelace" -> "Analytical Society": an endpoint is not among the objects extracted`,
			`dropped WORKS_FOR "London" -> "Charles Babbage": the type does not allow these endpoints`,
			`dropped RELATED_TO "London" -> "london": the type does not allow these endpoints`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s *Service
			l, res := &jobLog{}, newResult()
			for _, o := range objects {
				s.addObject(l, types, res, o, nil, 0)
			}
			require.Empty(t, l.deferred)
			res.pending = tt.pending
			s.resolveRelationships(l, types, res)
			if tt.want == nil {
				tt.want = []graph.RelationshipInput{}
			}
			got := res.rels
			if got == nil {
				got = []graph.RelationshipInput{}
			}
			require.Equal(t, tt.want, got)
			msgs := logged(l)
			require.Len(t, msgs, len(tt.logs), "entries: %q", msgs)
			for i, want := range tt.logs {
				require.True(t, strings.HasPrefix(msgs[i], want), "entry %d: %q", i, msgs[i])
				require.Equal(t, OpValidation, l.deferred[i].operation)
				require.Equal(t, tt.pending[i].window, l.deferred[i].metadata["window"])
			}
		})
	}
}
