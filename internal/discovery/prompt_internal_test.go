package discovery

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestFromWire: an answer's instances are kept only when they name a
// document of the batch and quote it verbatim (white space folded);
// nameless types and instances are dropped, confidence is clamped,
// required properties are among the properties.
func TestFromWire(t *testing.T) {
	t.Parallel()
	a, b, stranger := uuid.New(), uuid.New(), uuid.New()
	docs := map[uuid.UUID]string{a: "# Guide\n\nAda Lovelace   maintains the\nextraction pipeline.", b: "Grace Hopper runs the job engine."}
	got, dropped := fromWire([]wireType{
		{
			TypeName: " Person ", Description: "A person.", Confidence: 1.7,
			Properties:         map[string]any{"role": map[string]any{"type": "string"}, "bad": "string", " ": map[string]any{}},
			RequiredProperties: []string{"role", "missing", "role"},
			Instances: []wireInstance{
				{Name: "Ada Lovelace", Quote: "Ada Lovelace maintains the extraction pipeline.", DocumentID: a.String()},
				{Name: "Grace Hopper", Quote: "Grace Hopper runs the job engine.", DocumentID: b.String()},
				{Name: "Alan Turing", Quote: "Alan Turing reviews security changes.", DocumentID: b.String()}, // not in b
				{Name: "Ada", Quote: "Ada Lovelace", DocumentID: stranger.String()},                           // not a document of the batch
				{Name: "Ada", Quote: "Ada Lovelace", DocumentID: "not-an-id"},
				{Name: " ", Quote: "Grace Hopper", DocumentID: b.String()},
			},
		},
		{TypeName: "  ", Description: "nameless"},
	}, docs)
	require.Equal(t, 5, dropped)
	require.Equal(t, []Type{{
		TypeName: "Person", Description: "A person.", Confidence: 1,
		Properties: map[string]any{"role": map[string]any{"type": "string"}}, RequiredProperties: []string{"role"},
		ExampleInstances: []Instance{
			{Name: "Ada Lovelace", Quote: "Ada Lovelace maintains the extraction pipeline.", DocumentID: a},
			{Name: "Grace Hopper", Quote: "Grace Hopper runs the job engine.", DocumentID: b},
		},
	}}, got)

	// Without the documents' text (a refinement), only the ids are checked.
	got, dropped = fromWire([]wireType{{TypeName: "Person", Instances: []wireInstance{
		{Name: "Ada", Quote: "anything", DocumentID: a.String()}, {Name: "Ada", Quote: "anything", DocumentID: stranger.String()},
	}}}, map[uuid.UUID]string{a: ""})
	require.Equal(t, 1, dropped)
	require.Len(t, got[0].ExampleInstances, 1)
}

// TestToWireRoundTrip: the refine call's input, read back as its answer,
// is the list it was made of.
func TestToWireRoundTrip(t *testing.T) {
	t.Parallel()
	a := uuid.New()
	ts := []Type{{
		TypeName: "Queue", Description: "A job queue.", Properties: map[string]any{}, RequiredProperties: []string{}, Confidence: 0.8,
		ExampleInstances: []Instance{{Name: "email", Quote: "the email queue", DocumentID: a}},
	}}
	got, dropped := fromWire(toWire(ts).Types, map[uuid.UUID]string{a: ""})
	require.Zero(t, dropped)
	require.Equal(t, ts, got)
}

// TestDocumentsText: the batch's documents in the contract's tags, each
// text bounded.
func TestDocumentsText(t *testing.T) {
	t.Parallel()
	a, b := uuid.MustParse("00000000-0000-0000-0000-00000000000a"), uuid.MustParse("00000000-0000-0000-0000-00000000000b")
	got := documentsText([]batchDoc{{ID: a, Name: "a.md", Text: "# A\nfirst"}, {ID: b, Name: `b "quoted".md`, Text: "0123456789"}}, 5)
	require.Equal(t, "<document id=\"00000000-0000-0000-0000-00000000000a\" name=\"a.md\">\n# A\nf\n</document>\n"+
		"<document id=\"00000000-0000-0000-0000-00000000000b\" name=\"b \\\"quoted\\\".md\">\n01234\n</document>", got)
}

// TestOptions: defaults, bounds and their messages.
func TestOptions(t *testing.T) {
	t.Parallel()
	o, err := options(StartParams{})
	require.NoError(t, err)
	require.Equal(t, Options{BatchSize: 5, MinConfidence: 0.5, IncludeRelationships: true, MaxIterations: 3}, o)
	zero, no, ten, fifty := 0.0, false, 10, 50
	o, err = options(StartParams{BatchSize: &fifty, MinConfidence: &zero, IncludeRelationships: &no, MaxIterations: &ten})
	require.NoError(t, err)
	require.Equal(t, Options{BatchSize: 50, MinConfidence: 0, IncludeRelationships: false, MaxIterations: 10}, o)
	require.Equal(t, 10+3+1, totalSteps(10, Options{MaxIterations: 3, IncludeRelationships: true}))
	for _, p := range []StartParams{{BatchSize: ptr(0)}, {BatchSize: ptr(51)}, {MaxIterations: ptr(0)}, {MaxIterations: ptr(11)}, {MinConfidence: ptr(1.01)}} {
		_, err := options(p)
		require.Error(t, err)
	}
}

func ptr[T any](v T) *T { return &v }
