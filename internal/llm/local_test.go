package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
)

const sampleText = `Dr. Alice Johnson works for Acme Corp in Berlin. In 2023, Acme Corp hosted the Graph Summit in Paris.
Johnson met Bob Smith, CEO of Globex Inc, at the Graph Summit. Kubernetes and PostgreSQL power the Acme platform.
Acme Corp is headquartered in Berlin.`

type extractionResult struct {
	Objects []struct {
		Type        string         `json:"type"`
		Name        string         `json:"name"`
		Key         string         `json:"key"`
		Description string         `json:"description"`
		Properties  map[string]any `json:"properties"`
		Confidence  float64        `json:"confidence"`
	} `json:"objects"`
	Relationships []struct {
		Type        string  `json:"type"`
		Source      string  `json:"source"`
		Target      string  `json:"target"`
		Description string  `json:"description"`
		Confidence  float64 `json:"confidence"`
	} `json:"relationships"`
}

// extractionSchema is the shape of an extraction schema with type enums.
func extractionSchema(objectTypes, relTypes []any) map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"objects": map[string]any{"type": "array", "items": map[string]any{
				"type":       "object",
				"properties": map[string]any{"type": map[string]any{"type": "string", "enum": objectTypes}},
			}},
			"relationships": map[string]any{"type": "array", "items": map[string]any{
				"type":       "object",
				"properties": map[string]any{"type": map[string]any{"type": "string", "enum": relTypes}},
			}},
		},
	}
}

func extract(t *testing.T, c llm.Client, text string, schema map[string]any) (extractionResult, *llm.GenerateResult) {
	t.Helper()
	res, err := c.Generate(context.Background(), llm.LocalGenerateModel, llm.GenerateRequest{
		Purpose: llm.PurposeExtraction, Prompt: "Extract.", Text: text, Schema: schema,
	})
	require.NoError(t, err)
	var out extractionResult
	require.NoError(t, json.Unmarshal(res.JSON, &out))
	return out, res
}

func TestLocalExtraction(t *testing.T) {
	t.Parallel()
	c := llm.NewLocal(0)
	schema := extractionSchema(
		[]any{"Person", "Organization", "Location", "Event"},
		[]any{"WORKS_FOR", "LOCATED_IN", "HELD_IN", "ORGANIZED", "PARTICIPATED_IN", "KNOWS"},
	)
	out, res := extract(t, c, sampleText, schema)
	require.Equal(t, llm.LocalGenerateModel, res.Model)

	type obj struct{ Type, Name, Key string }
	var objects []obj
	names := map[string]bool{}
	for _, o := range out.Objects {
		objects = append(objects, obj{o.Type, o.Name, o.Key})
		names[o.Name] = true
		require.GreaterOrEqual(t, o.Confidence, 0.5, o.Name)
		require.LessOrEqual(t, o.Confidence, 0.9, o.Name)
		require.NotNil(t, o.Properties)
		require.NotEmpty(t, o.Description)
	}
	require.Equal(t, []obj{
		{"Person", "Alice Johnson", "alice johnson"}, // honorific stripped; "Johnson" later is the same person
		{"Organization", "Acme Corp", "acme corp"},   // suffix; "Acme" later is the same organization
		{"Location", "Berlin", "berlin"},
		{"Event", "Graph Summit", "graph summit"},
		{"Location", "Paris", "paris"},
		{"Person", "Bob Smith", "bob smith"},
		{"Organization", "Globex Inc", "globex inc"},
	}, objects, "PostgreSQL is a Concept, not allowed; Kubernetes opens a sentence and is never repeated")

	type rel struct{ Type, Source, Target string }
	rels := map[rel]float64{}
	for _, r := range out.Relationships {
		require.Contains(t, []string{"WORKS_FOR", "LOCATED_IN", "HELD_IN", "ORGANIZED", "PARTICIPATED_IN", "KNOWS"}, r.Type)
		require.True(t, names[r.Source], "source %q is an object", r.Source)
		require.True(t, names[r.Target], "target %q is an object", r.Target)
		rels[rel{r.Type, r.Source, r.Target}] = r.Confidence
	}
	for _, want := range []rel{
		{"WORKS_FOR", "Alice Johnson", "Acme Corp"},
		{"LOCATED_IN", "Acme Corp", "Berlin"},
		{"ORGANIZED", "Acme Corp", "Graph Summit"}, // "hosted"
		{"HELD_IN", "Graph Summit", "Paris"},
		{"KNOWS", "Alice Johnson", "Bob Smith"},
		{"WORKS_FOR", "Bob Smith", "Globex Inc"}, // "CEO of"
		{"PARTICIPATED_IN", "Bob Smith", "Graph Summit"},
	} {
		require.Contains(t, rels, want)
	}
	require.InDelta(t, 0.8, rels[rel{"LOCATED_IN", "Acme Corp", "Berlin"}], 1e-9, "two sentences (+0.1), adjacent (+0.05), a cue (+0.15)")
	require.Greater(t, rels[rel{"WORKS_FOR", "Bob Smith", "Globex Inc"}], rels[rel{"WORKS_FOR", "Alice Johnson", "Globex Inc"}],
		"the CEO cue belongs to the adjacent pair")

	// Usage is estimated: one token per four characters.
	require.Equal(t, llm.EstimateTokens("Extract.")+llm.EstimateTokens(sampleText), res.Usage.InputText)
	require.Equal(t, llm.EstimateTokens(string(res.JSON)), res.Usage.Output)
}

func TestLocalExtractionDeterministic(t *testing.T) {
	t.Parallel()
	schema := extractionSchema([]any{"Person", "Organization", "Location", "Event", "Concept"}, nil)
	req := llm.GenerateRequest{Purpose: llm.PurposeExtraction, Text: sampleText, Schema: schema}
	first, err := llm.NewLocal(0).Generate(context.Background(), "", req)
	require.NoError(t, err)
	for range 5 {
		again, err := llm.NewLocal(64).Generate(context.Background(), llm.LocalGenerateModel, req)
		require.NoError(t, err)
		require.Equal(t, string(first.JSON), string(again.JSON))
	}
	disc := req
	disc.Purpose = llm.PurposeDiscovery
	a, err := llm.NewLocal(0).Generate(context.Background(), "", disc)
	require.NoError(t, err)
	b, err := llm.NewLocal(0).Generate(context.Background(), "", disc)
	require.NoError(t, err)
	require.Equal(t, string(a.JSON), string(b.JSON))
}

func TestLocalExtractionTypeMapping(t *testing.T) {
	t.Parallel()
	c := llm.NewLocal(0)

	// No enum: the analysis's own classes, any relationship type.
	out, _ := extract(t, c, sampleText, nil)
	types := map[string]string{}
	for _, o := range out.Objects {
		types[o.Name] = o.Type
	}
	require.Equal(t, "Concept", types["PostgreSQL"])
	require.Equal(t, "Event", types["Graph Summit"])
	relTypes := map[string]bool{}
	for _, r := range out.Relationships {
		relTypes[r.Type] = true
	}
	require.True(t, relTypes["HEADQUARTERED_IN"], "cue-specific types when unconstrained: %v", relTypes)

	// Other names for the classes; classes without one are skipped, and
	// without an allowed relationship type none is emitted.
	out, _ = extract(t, c, sampleText, extractionSchema([]any{"Employee", "Company", "City"}, []any{"EMPLOYED_BY"}))
	types = map[string]string{}
	for _, o := range out.Objects {
		types[o.Name] = o.Type
	}
	require.Equal(t, map[string]string{
		"Alice Johnson": "Employee", "Bob Smith": "Employee",
		"Acme Corp": "Company", "Globex Inc": "Company",
		"Berlin": "City", "Paris": "City",
	}, types)
	for _, r := range out.Relationships {
		require.Equal(t, "EMPLOYED_BY", r.Type)
		require.Equal(t, "Employee", types[r.Source])
		require.Equal(t, "Company", types[r.Target])
	}
	require.NotEmpty(t, out.Relationships)

	// RELATED_TO is the fallback when allowed.
	out, _ = extract(t, c, "Globex Inc and Initech Corp signed a deal.", extractionSchema([]any{"Organization"}, []any{"RELATED_TO"}))
	require.Len(t, out.Relationships, 1)
	require.Equal(t, "RELATED_TO", out.Relationships[0].Type)

	// An empty enum allows nothing; empty text finds nothing.
	out, _ = extract(t, c, sampleText, extractionSchema([]any{}, nil))
	require.Empty(t, out.Objects)
	require.Empty(t, out.Relationships)
	res, err := c.Generate(context.Background(), "", llm.GenerateRequest{Purpose: llm.PurposeExtraction})
	require.NoError(t, err)
	require.JSONEq(t, `{"objects":[],"relationships":[]}`, string(res.JSON))
}

func TestLocalExtractionHeuristics(t *testing.T) {
	t.Parallel()
	c := llm.NewLocal(0)
	cases := []struct {
		text string
		want map[string]string // name -> type
		rel  [3]string
	}{
		{"Marie Curie was born in Warsaw.", map[string]string{"Marie Curie": "Person", "Warsaw": "Location"}, [3]string{"BORN_IN", "Marie Curie", "Warsaw"}},
		{"The University of Cambridge is in England.", map[string]string{"University of Cambridge": "Organization", "England": "Location"}, [3]string{"LOCATED_IN", "University of Cambridge", "England"}},
		{"Prof. Hinton joined Google in 2013.", map[string]string{"Hinton": "Person", "Google": "Organization"}, [3]string{"WORKS_FOR", "Hinton", "Google"}},
		{"IBM acquired Red Hat Inc in 2019.", map[string]string{"IBM": "Organization", "Red Hat Inc": "Organization"}, [3]string{"ACQUIRED", "IBM", "Red Hat Inc"}},
		{"The U.S. Department of Energy funds the World Energy Summit 2024.", map[string]string{"U.S": "Location", "Department of Energy": "Organization", "World Energy Summit 2024": "Event"}, [3]string{}},
		{"Research shows that research helps. Tokyo is large.", map[string]string{"Tokyo": "Location"}, [3]string{}},
		// A title and an affiliation split into a person, an organization
		// and the relationship between them.
		{"Professor Kenji Abernathy of Northgate University taught chemistry.", map[string]string{"Kenji Abernathy": "Person", "Northgate University": "Organization"}, [3]string{"WORKS_FOR", "Kenji Abernathy", "Northgate University"}},
		{"It was reviewed by Helga Marsh of Corvane Security Group.", map[string]string{"Helga Marsh": "Person", "Corvane Security Group": "Organization"}, [3]string{"WORKS_FOR", "Helga Marsh", "Corvane Security Group"}},
		// "for" joins an institution's name, not two names.
		{"Alice Novak led the leg from Lisbon for Northwind Labs.", map[string]string{"Alice Novak": "Person", "Lisbon": "Location", "Northwind Labs": "Organization"}, [3]string{}},
		{"She joined the Institute for Advanced Study.", map[string]string{"Institute for Advanced Study": "Organization"}, [3]string{}},
		// People without a known first name are people by what is said of them.
		{"Elias Thornbury was born in 1931. His father repaired clocks.", map[string]string{"Elias Thornbury": "Person"}, [3]string{}},
		{"Imogen Calloway met a client. Later Calloway wrote the patent.", map[string]string{"Imogen Calloway": "Person"}, [3]string{}},
		// Keywords, constants, identifiers, headings and common words are
		// not names.
		{"The ZEROIZE command sets TRUE when the value is NULL. TokenModule DEFINITIONS ::= BEGIN SEQUENCE OF END", map[string]string{}, [3]string{}},
		{"Set QUILL_DATA_DIR in the environment. The body is a TransferRequest with an accountId. See CONTRIBUTING.md and the Authorization header.", map[string]string{}, [3]string{}},
		{"Installation\n\nUsage\n\nField | Type | Description\n\nReturns one account. Version 3.2 is current. Data Model: Secure Token Module.", map[string]string{}, [3]string{}},
	}
	for _, tc := range cases {
		out, _ := extract(t, c, tc.text, nil)
		got := map[string]string{}
		for _, o := range out.Objects {
			got[o.Name] = o.Type
		}
		require.Equal(t, tc.want, got, tc.text)
		if tc.rel[0] != "" {
			found := false
			for _, r := range out.Relationships {
				found = found || (r.Type == tc.rel[0] && r.Source == tc.rel[1] && r.Target == tc.rel[2])
			}
			require.True(t, found, "%s: want %v in %+v", tc.text, tc.rel, out.Relationships)
		}
	}
}

func TestLocalGenericInstance(t *testing.T) {
	t.Parallel()
	schema := map[string]any{
		"type":     "object",
		"required": []any{"status", "items", "count", "at", "flags", "note"},
		"properties": map[string]any{
			"status": map[string]any{"type": "string", "enum": []any{"ok", "error"}},
			"items":  map[string]any{"type": "array", "minItems": 2.0, "items": map[string]any{"$ref": "#/$defs/item"}},
			"count":  map[string]any{"type": []any{"null", "integer"}, "minimum": 3.0},
			"at":     map[string]any{"type": "string", "format": "date-time"},
			"flags":  map[string]any{"allOf": []any{map[string]any{"type": "object", "required": []any{"on"}, "properties": map[string]any{"on": map[string]any{"type": "boolean"}}}}},
			"note":   map[string]any{"anyOf": []any{map[string]any{"type": "string", "minLength": 3.0}, map[string]any{"type": "null"}}},
			"extra":  map[string]any{"type": "string"},
		},
		"$defs": map[string]any{"item": map[string]any{"type": "object", "required": []any{"score"}, "properties": map[string]any{"score": map[string]any{"type": "number", "exclusiveMinimum": 0.0}}}},
	}
	res, err := llm.NewLocal(0).Generate(context.Background(), "", llm.GenerateRequest{Schema: schema, Prompt: "anything"})
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"ok","items":[{"score":0.5},{"score":0.5}],"count":3,"at":"1970-01-01T00:00:00Z","flags":{"on":false},"note":"xxx"}`, string(res.JSON))

	res, err = llm.NewLocal(0).Generate(context.Background(), "", llm.GenerateRequest{})
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(res.JSON))
}

func TestLocalEmbedAndModels(t *testing.T) {
	t.Parallel()
	c := llm.NewLocal(32)
	require.Equal(t, llm.ProviderLocal, c.Provider())
	res, err := c.Embed(context.Background(), "", []string{"graph databases", "graph database"}, 0)
	require.NoError(t, err)
	require.Equal(t, llm.LocalEmbedModel, res.Model)
	require.Len(t, res.Vectors, 2)
	require.Len(t, res.Vectors[0], 32)
	want, err := llm.NewLocalEmbedder(32).Embed(context.Background(), []string{"graph databases"})
	require.NoError(t, err)
	require.Equal(t, want[0], res.Vectors[0], "the local embedder's vectors")
	require.Equal(t, llm.EstimateTokens("graph databases")+llm.EstimateTokens("graph database"), res.Usage.InputText)

	res, err = c.Embed(context.Background(), llm.LocalEmbedModel, []string{"x"}, 8)
	require.NoError(t, err)
	require.Len(t, res.Vectors[0], 8)

	_, err = c.Embed(context.Background(), "text-embedding-005", []string{"x"}, 0)
	requireKind(t, err, llm.ErrorInvalid, 0)
	_, err = c.Generate(context.Background(), "gemini-2.5-flash", llm.GenerateRequest{})
	requireKind(t, err, llm.ErrorInvalid, 0)

	ms, err := c.ListModels(context.Background())
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, llm.ModelInfo{Name: "local/feature-hash-v1", DisplayName: ms[0].DisplayName, Type: llm.ModelTypeEmbedding, Dimension: 32}, ms[0])
	require.Equal(t, llm.ModelInfo{Name: "local/heuristic-v1", DisplayName: ms[1].DisplayName, Type: llm.ModelTypeGenerative}, ms[1])

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Embed(ctx, "", []string{"x"}, 0)
	require.ErrorIs(t, err, context.Canceled)
	_, err = c.Generate(ctx, "", llm.GenerateRequest{})
	require.ErrorIs(t, err, context.Canceled)
}
