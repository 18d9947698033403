package discovery

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/templatepack"
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

	// A document without text verifies nothing: its instances are
	// dropped, and a type left without an instance with them.
	got, dropped = fromWire([]wireType{
		{TypeName: "Person", Instances: []wireInstance{{Name: "Ada", Quote: "anything", DocumentID: a.String()}}},
		{TypeName: "Spaceship", Confidence: 0.95, Instances: []wireInstance{{Name: "Enterprise", Quote: "The Enterprise docked at noon.", DocumentID: b.String()}}},
	}, map[uuid.UUID]string{a: "", b: docs[b]})
	require.Equal(t, 4, dropped, "two instances and the two types they leave empty")
	require.Empty(t, got)
}

// TestRefinedFromWire: a refine answer keeps only instances of the list
// it refined (by document and quote, whitespace folded), as they were;
// a fabricated instance is dropped, a type left without one too; a
// renamed, merged or split type carries the documents of every type it
// took an instance of, so its frequency is not only its examples'.
func TestRefinedFromWire(t *testing.T) {
	t.Parallel()
	d := make([]uuid.UUID, 8)
	for i := range d {
		d[i] = uuid.New()
	}
	person := Type{
		TypeName: "Person", Confidence: 0.9, Frequency: 7, Documents: d[:7],
		ExampleInstances: []Instance{{Name: "Ada", Quote: "Ada maintains part 0.", DocumentID: d[0]}, {Name: "Grace", Quote: "Grace maintains part 1.", DocumentID: d[1]}},
	}
	project := Type{
		TypeName: "Project", Confidence: 0.8, Frequency: 2, Documents: []uuid.UUID{d[6], d[7]},
		ExampleInstances: []Instance{{Name: "Graphmill", Quote: "Graphmill is a server.", DocumentID: d[7]}},
	}
	prev := []Type{person, project}
	got, dropped := refinedFromWire([]wireType{
		{TypeName: "Human", Confidence: 0.9, Instances: []wireInstance{
			{Name: "Ada L.", Quote: " Ada  maintains part 0. ", DocumentID: d[0].String()},
			{Name: "Mallory", Quote: "Mallory approved the wire transfer.", DocumentID: d[0].String()}, // in no document
			{Name: "Graphmill", Quote: "Graphmill is a server.", DocumentID: d[7].String()},            // Project merged in
		}},
		{TypeName: "Engineer", Confidence: 0.9, Instances: []wireInstance{{Name: "Grace", Quote: "Grace maintains part 1.", DocumentID: d[1].String()}}}, // split off Person
		{TypeName: "Ghost", Confidence: 0.9, Instances: []wireInstance{{Name: "Casper", Quote: "Casper haunts.", DocumentID: d[2].String()}}},
		{TypeName: " "},
	}, prev)
	require.Equal(t, 4, dropped, "Mallory, Casper, Ghost and the nameless type")
	require.Len(t, got, 2)
	require.Equal(t, "Human", got[0].TypeName)
	require.Equal(t, []Instance{person.ExampleInstances[0], project.ExampleInstances[0]}, got[0].ExampleInstances, "the list's instances, unchanged")
	require.Equal(t, sortedDocuments(documentsOf(nil, d)), got[0].Documents, "Person's seven documents and Project's two")
	require.Equal(t, 8, got[0].Frequency)
	require.Equal(t, "Engineer", got[1].TypeName)
	require.Equal(t, 7, got[1].Frequency, "a type split off Person carries Person's documents")
	require.Zero(t, lostInstances(prev, got))
	require.Equal(t, 1, lostInstances(prev, got[:1]), "Grace is lost without Engineer")
	require.Equal(t, 3, lostInstances(prev, nil))
}

// TestToWireRoundTrip: the refine call's input, read back as its answer,
// is the list it was made of.
func TestToWireRoundTrip(t *testing.T) {
	t.Parallel()
	a := uuid.New()
	ts := []Type{{
		TypeName: "Queue", Description: "A job queue.", Properties: map[string]any{}, RequiredProperties: []string{}, Confidence: 0.8,
		ExampleInstances: []Instance{{Name: "email", Quote: "the email queue", DocumentID: a}}, Documents: []uuid.UUID{a}, Frequency: 1,
	}}
	got, dropped := refinedFromWire(toWire(ts).Types, ts)
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

// TestRelationshipsPromptSeedsInstalled: the relationships call names
// the installed relationship types (name, ends, description) so their
// names are reused.
func TestRelationshipsPromptSeedsInstalled(t *testing.T) {
	t.Parallel()
	p := relationshipsPrompt(&templatepack.Types{
		Objects:       []templatepack.ObjectType{{Name: "Person", Description: "A person."}},
		Relationships: []templatepack.RelationshipType{{Name: "WORKS_FOR", SourceType: "Person", TargetType: "Organization", Description: "Employment\n of a person."}},
	})
	require.Contains(t, p, "- WORKS_FOR: Person -> Organization: Employment of a person.\n")
	require.Contains(t, p, "use exactly its name")
	require.Contains(t, relationshipsPrompt(&templatepack.Types{}), "The project has no relationship types yet.")
}

// TestCallBudget: a call carries at most three quarters of the model's
// input limit in characters (32,000 tokens when unknown), shared
// equally by its documents, each at most documentCharsMax.
func TestCallBudget(t *testing.T) {
	t.Parallel()
	require.Equal(t, 96000, callChars(0))
	require.Equal(t, 3*1048576, callChars(1048576))
	require.Equal(t, 24000, perDocument(callChars(0), 2))
	require.Equal(t, 1920, perDocument(callChars(0), 50), "50 documents share the budget")
	require.LessOrEqual(t, 50*perDocument(callChars(0), 50), callChars(0))
	require.Equal(t, 24000, perDocument(callChars(1048576), 50))
}

// TestRelationshipDocuments: the relationships call of a job of 500
// documents carries at most relationshipCharsMax characters of them
// (not 500 x 500), the documents holding instances first, from the
// clipped texts kept when the batches read them.
func TestRelationshipDocuments(t *testing.T) {
	t.Parallel()
	ids := make([]uuid.UUID, DocumentsMax)
	for i := range ids {
		ids[i] = uuid.New()
	}
	budget := callChars(0)
	r := &run{w: work{DocumentIDs: ids}, relPer: relationshipPer(budget, len(ids)), docs: map[uuid.UUID]string{}}
	require.Equal(t, relationshipDocMin, r.relPer)
	for i, id := range ids {
		r.docs[id] = strings.Repeat("x", r.relPer)
		if i == 7 {
			r.docs[id] = "" // deleted or without text
		}
	}
	types := []Type{
		{TypeName: "Person", Documents: []uuid.UUID{ids[499], ids[7]}},
		{TypeName: "Queue", ExampleInstances: []Instance{{Name: "email", Quote: "q", DocumentID: ids[250]}}},
	}
	n := relationshipCount(budget, 2000, r.relPer)
	require.Equal(t, relationshipCharsMax/relationshipDocMin, n)
	docs, err := r.relationshipDocuments(t.Context(), types, n)
	require.NoError(t, err)
	require.Len(t, docs, n)
	require.Equal(t, []uuid.UUID{ids[250], ids[499], ids[0]}, []uuid.UUID{docs[0].ID, docs[1].ID, docs[2].ID}, "documents with instances first, in the job's order")
	require.LessOrEqual(t, len(documentsText(docs, r.relPer)), relationshipCharsMax+n*100, "text and tags")
	total := 0
	for _, d := range docs {
		require.NotEqual(t, ids[7], d.ID, "no empty document")
		total += len(d.Text)
	}
	require.LessOrEqual(t, total, relationshipCharsMax)

	// Few documents share the cap; a small budget lowers it.
	require.Equal(t, relationshipCharsMax/4, relationshipPer(budget, 4))
	require.Equal(t, 1, relationshipCount(budget, budget, relationshipDocMin), "at least one document")
}
