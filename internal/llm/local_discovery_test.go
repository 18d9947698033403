package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/llm"
)

const (
	docA = "11111111-1111-1111-1111-111111111111"
	docB = "22222222-2222-2222-2222-222222222222"
)

// discoveryText is a batch of documents as discovery sends it.
func discoveryText(docs ...[2]string) string {
	var b strings.Builder
	for _, d := range docs {
		b.WriteString(`<document id="` + d[0] + `" name="doc &quot;` + d[0][:4] + `&quot;">` + "\n" + d[1] + "\n</document>\n")
	}
	return b.String()
}

type wireInstance struct {
	Name       string `json:"name"`
	Quote      string `json:"quote"`
	DocumentID string `json:"document_id"`
}

type wireType struct {
	TypeName           string                       `json:"type_name"`
	Description        string                       `json:"description"`
	Properties         map[string]map[string]string `json:"properties"`
	RequiredProperties []string                     `json:"required_properties"`
	Instances          []wireInstance               `json:"instances"`
	Confidence         float64                      `json:"confidence"`
}

func discover(t *testing.T, text string) map[string]wireType {
	t.Helper()
	res, err := llm.NewLocal(0).Generate(context.Background(), "", llm.GenerateRequest{Purpose: llm.PurposeDiscovery, Text: text})
	require.NoError(t, err)
	var out struct {
		Types []wireType `json:"types"`
	}
	require.NoError(t, json.Unmarshal(res.JSON, &out))
	byName := map[string]wireType{}
	for _, ty := range out.Types {
		require.NotContains(t, byName, ty.TypeName, "one entry per type")
		require.NotEmpty(t, ty.Instances, ty.TypeName)
		require.NotNil(t, ty.RequiredProperties)
		require.NotEmpty(t, ty.Description)
		require.True(t, ty.Confidence >= 0.5 && ty.Confidence <= 0.9, "%s confidence %v", ty.TypeName, ty.Confidence)
		byName[ty.TypeName] = ty
	}
	return byName
}

func instanceNames(ty wireType, doc string) []string {
	var out []string
	for _, in := range ty.Instances {
		if in.DocumentID == doc {
			out = append(out, in.Name)
		}
	}
	return out
}

func TestLocalDiscoveryEntities(t *testing.T) {
	t.Parallel()
	other := "Carol Diaz joined Initech Corp in Lisbon. Acme Corp and Initech Corp compete."
	types := discover(t, discoveryText([2]string{docA, sampleText}, [2]string{docB, other}))
	require.Equal(t, []string{"Alice Johnson", "Bob Smith"}, instanceNames(types["Person"], docA))
	require.Equal(t, []string{"Carol Diaz"}, instanceNames(types["Person"], docB))
	require.Equal(t, []string{"Acme Corp", "Globex Inc"}, instanceNames(types["Organization"], docA))
	require.Equal(t, []string{"Initech Corp", "Acme Corp"}, instanceNames(types["Organization"], docB), "an instance once per document, in each document")
	require.Equal(t, []string{"Berlin", "Paris"}, instanceNames(types["Location"], docA))
	require.Equal(t, []string{"Graph Summit"}, instanceNames(types["Event"], docA))
	require.Equal(t, []string{"PostgreSQL"}, instanceNames(types["Concept"], docA))
	require.Greater(t, types["Organization"].Confidence, types["Concept"].Confidence, "more names and mentions, more confidence")
	for _, ty := range types {
		for _, in := range ty.Instances {
			src := map[string]string{docA: sampleText, docB: other}[in.DocumentID]
			require.Contains(t, src, in.Quote, "verbatim quote of %s", in.Name)
			require.Contains(t, in.Quote, in.Name)
		}
		require.NotEmpty(t, ty.Properties)
	}
	require.Equal(t, "Dr. Alice Johnson works for Acme Corp in Berlin.", types["Person"].Instances[0].Quote)
}

func TestLocalDiscoveryStructure(t *testing.T) {
	t.Parallel()
	text := `Widget service

Configure it through the environment: set WIDGET_PORT and WIDGET_MODE.

variable | default | meaning
WIDGET_PORT | 8080 | listening port
WIDGET_MODE, WIDGET_DEBUG | fast | how it runs

Commands

command | what it does
widget serve --port P [--debug] | serve widgets
widget check | verify the configuration

Team members

Name | Role | Years
Ada Brook | maintainer | 4
Ben Ochoa | reviewer | 2.5

Glossary

- Sprocket: a toothed wheel that drives the chain.
- Flange - the rim that keeps the chain in place.

Supported formats

- PNG
- SVG
- WebP

Installation

- Download the archive
- Run the installer

The API answers GET /v1/widgets/{id} and POST /v1/widgets. Send the X-Request-ID header; the Retry-After header says when to retry.
Errors carry a code: ERR_NOT_FOUND, WIDGET_BUSY or TIMEOUT.
The handler lives in internal/widget/http.go and calls store.go.`
	types := discover(t, discoveryText([2]string{docA, text}))

	env := types["Environment Variable"]
	require.Equal(t, []string{"WIDGET_PORT", "WIDGET_MODE", "WIDGET_DEBUG"}, instanceNames(env, docA), "table rows (a cell of two names) and prose, once each")
	require.Equal(t, "WIDGET_PORT | 8080 | listening port", env.Instances[0].Quote, "a row quotes its line")
	require.Equal(t, map[string]string{"type": "string", "description": "The default column of the table."}, env.Properties["default"])
	require.Equal(t, []string{"default", "meaning"}, env.RequiredProperties)

	cmd := types["Command"]
	require.Equal(t, []string{"widget serve", "widget check"}, instanceNames(cmd, docA), "a command without its options")
	require.Equal(t, "widget serve --port P [--debug] | serve widgets", cmd.Instances[0].Quote)
	require.Contains(t, cmd.Properties, "what_it_does")

	// A generic first header (Name): the heading names the type.
	team := types["Team Member"]
	require.Equal(t, []string{"Ada Brook", "Ben Ochoa"}, instanceNames(team, docA))
	require.Equal(t, "string", team.Properties["role"]["type"])
	require.Equal(t, "number", team.Properties["years"]["type"], "4 and 2.5")

	require.Equal(t, []string{"Sprocket", "Flange"}, instanceNames(types["Term"], docA), "a glossary is Term")
	require.Equal(t, []string{"definition"}, types["Term"].RequiredProperties)
	require.Equal(t, "- Flange - the rim that keeps the chain in place.", types["Term"].Instances[1].Quote)

	require.Equal(t, []string{"PNG", "SVG", "WebP"}, instanceNames(types["Supported Format"], docA), "a list of names under a plural heading")
	require.NotContains(t, types, "Installation", "a list of steps is no type")

	require.Equal(t, []string{"GET /v1/widgets/{id}", "POST /v1/widgets"}, instanceNames(types["Endpoint"], docA))
	require.Equal(t, []string{"method", "path"}, types["Endpoint"].RequiredProperties)
	require.Equal(t, []string{"X-Request-ID", "Retry-After"}, instanceNames(types["HTTP Header"], docA))
	require.Equal(t, []string{"ERR_NOT_FOUND", "WIDGET_BUSY", "TIMEOUT"}, instanceNames(types["Error Code"], docA), "by its prefix, by its sentence, listed with them")
	require.Equal(t, []string{"internal/widget/http.go", "store.go"}, instanceNames(types["Source File"], docA))
	require.Equal(t, "The handler lives in internal/widget/http.go and calls store.go.", types["Source File"].Instances[0].Quote)
	for _, ty := range types {
		for _, in := range ty.Instances {
			require.Contains(t, text, in.Quote)
			require.Equal(t, docA, in.DocumentID)
		}
	}
}

func TestLocalDiscoveryDeterministic(t *testing.T) {
	t.Parallel()
	text := discoveryText([2]string{docA, sampleText}, [2]string{docB, "Carol Diaz joined Initech Corp in Lisbon."})
	for _, purpose := range []string{llm.PurposeDiscovery, llm.PurposeDiscoveryRelationships} {
		req := llm.GenerateRequest{Purpose: purpose, Text: text}
		if purpose == llm.PurposeDiscoveryRelationships {
			req.Text = `{"types": [{"type_name": "Person", "instances": []}, {"type_name": "Organization", "instances": []}, {"type_name": "Location", "instances": []}]}` + "\n\n" + text
		}
		first, err := llm.NewLocal(0).Generate(context.Background(), "", req)
		require.NoError(t, err)
		for range 3 {
			again, err := llm.NewLocal(0).Generate(context.Background(), llm.LocalGenerateModel, req)
			require.NoError(t, err)
			require.Equal(t, string(first.JSON), string(again.JSON), purpose)
		}
	}
}

func TestLocalDiscoveryRefine(t *testing.T) {
	t.Parallel()
	list := `{"types": [{"type_name": "Person", "description": "A person.", "properties": {}, "required_properties": [], "instances": [{"name": "Ann", "quote": "Ann came.", "document_id": "` + docA + `"}], "confidence": 0.7}]}`
	res, err := llm.NewLocal(0).Generate(context.Background(), "", llm.GenerateRequest{Purpose: llm.PurposeDiscoveryRefine, Text: list})
	require.NoError(t, err)
	require.JSONEq(t, list, string(res.JSON), "the list comes back unchanged")

	res, err = llm.NewLocal(0).Generate(context.Background(), "", llm.GenerateRequest{Purpose: llm.PurposeDiscoveryRefine, Text: `{}`})
	require.NoError(t, err)
	require.JSONEq(t, `{"types": []}`, string(res.JSON))

	_, err = llm.NewLocal(0).Generate(context.Background(), "", llm.GenerateRequest{Purpose: llm.PurposeDiscoveryRefine, Text: "not json"})
	var le *llm.Error
	require.True(t, errors.As(err, &le))
	require.Equal(t, llm.ErrorInvalid, le.Kind)
}

func discoverRelationships(t *testing.T, types string, docs ...[2]string) []discovery.Relationship {
	t.Helper()
	res, err := llm.NewLocal(0).Generate(context.Background(), "", llm.GenerateRequest{Purpose: llm.PurposeDiscoveryRelationships, Text: types + "\n\n" + discoveryText(docs...)})
	require.NoError(t, err)
	var out struct {
		Relationships []discovery.Relationship `json:"relationships"`
	}
	require.NoError(t, json.Unmarshal(res.JSON, &out))
	require.NotNil(t, out.Relationships)
	return out.Relationships
}

func TestLocalDiscoveryRelationships(t *testing.T) {
	t.Parallel()
	types := `{"types": [
		{"type_name": "Person", "instances": [{"name": "Ann Lee", "quote": "", "document_id": "` + docA + `"}, {"name": "Bo Chen", "quote": "", "document_id": "` + docA + `"}]},
		{"type_name": "Project", "instances": [{"name": "Widget Core", "quote": "", "document_id": "` + docA + `"}, {"name": "Widget CLI", "quote": "", "document_id": "` + docA + `"}, {"name": "Gizmo", "quote": "", "document_id": "` + docB + `"}]},
		{"type_name": "Team", "instances": [{"name": "Nobody Here", "quote": "", "document_id": "` + docA + `"}]}
	]}`
	a := "Ann Lee maintains Widget Core.\nAnn Lee maintains Widget CLI as well.\nBo Chen uses Widget CLI."
	b := "Ann Lee and Bo Chen both work on Gizmo and Widget Core."
	rels := discoverRelationships(t, types, [2]string{docA, a}, [2]string{docB, b})
	require.Len(t, rels, 3)
	byName := map[string]discovery.Relationship{}
	for _, r := range rels {
		byName[r.RelationType] = r
	}
	// Two sentences, a verb between the mentions; one person, two projects.
	require.Equal(t, discovery.Relationship{
		SourceType: "Person", TargetType: "Project", RelationType: "MAINTAINS", Cardinality: "one_to_many", Confidence: 0.75,
		Description: byName["MAINTAINS"].Description,
	}, byName["MAINTAINS"])
	require.Contains(t, byName["MAINTAINS"].Description, "2 sentence(s)")
	require.Equal(t, "one_to_one", byName["USES"].Cardinality)
	require.InDelta(t, 0.65, byName["USES"].Confidence, 1e-9)
	// No verb: RELATED_TO; two people with two projects.
	require.Equal(t, "many_to_many", byName["RELATED_TO"].Cardinality)
	require.InDelta(t, 0.5, byName["RELATED_TO"].Confidence, 1e-9)
	require.Equal(t, "MAINTAINS", rels[0].RelationType, "ordered by confidence")

	// Entity classes: instances found in the documents, rules name the
	// relation (the CEO cue between Bob Smith and Globex Inc).
	rels = discoverRelationships(t, `{"types": [{"type_name": "People"}, {"type_name": "Company"}, {"type_name": "Place"}]}`, [2]string{docA, sampleText})
	found := map[[3]string]bool{}
	for _, r := range rels {
		found[[3]string{r.SourceType, r.RelationType, r.TargetType}] = true
	}
	require.True(t, found[[3]string{"People", "WORKS_FOR", "Company"}], "%v", rels)
	require.True(t, found[[3]string{"Company", "HEADQUARTERED_IN", "Place"}], "%v", rels)

	// Table rows are sentences of their own and give no verb cue; a
	// RELATED_TO seen many to one is turned round; instances are matched
	// as written ("widget core" is not Widget Core).
	table := "Performer | Stage | Note\nThe Gannets | Quay Stage | uses the big amp\nSaltwire | Quay Stage | opens\nMaren Holt | Chapel Room | acoustic\nThe Gannets praise widget core."
	rels = discoverRelationships(t, `{"types": [
		{"type_name": "Performer", "instances": [{"name": "The Gannets"}, {"name": "Saltwire"}, {"name": "Maren Holt"}]},
		{"type_name": "Stage", "instances": [{"name": "Quay Stage"}, {"name": "Chapel Room"}]},
		{"type_name": "Project", "instances": [{"name": "Widget Core"}]}]}`, [2]string{docA, table})
	require.Len(t, rels, 1, "%v", rels)
	require.Equal(t, "Stage", rels[0].SourceType)
	require.Equal(t, "Performer", rels[0].TargetType)
	require.Equal(t, "RELATED_TO", rels[0].RelationType)
	require.Equal(t, "one_to_many", rels[0].Cardinality)
	require.InDelta(t, 0.7, rels[0].Confidence, 1e-9, "three rows")

	require.Empty(t, discoverRelationships(t, `{"types": [{"type_name": "Person"}]}`, [2]string{docA, sampleText}), "one type: nothing to relate")
	_, err := llm.NewLocal(0).Generate(context.Background(), "", llm.GenerateRequest{Purpose: llm.PurposeDiscoveryRelationships, Text: "<document>"})
	var le *llm.Error
	require.True(t, errors.As(err, &le))
	require.Equal(t, llm.ErrorInvalid, le.Kind)
}

func TestLocalDiscoveryQuotesAndLimits(t *testing.T) {
	t.Parallel()
	long := "Before the meeting, " + strings.Repeat("the committee reviewed many long and detailed reports about harbours, ", 6) +
		"and Alice Johnson of Acme Corp presented " + strings.Repeat("a very thorough summary of the findings, ", 6) + "in the end."
	types := discover(t, discoveryText([2]string{docA, long}))
	q := types["Person"].Instances[0].Quote
	require.LessOrEqual(t, len(q), 300)
	require.Contains(t, long, q, "a cut quote is still verbatim")
	require.Contains(t, q, "Alice Johnson")

	// Attributes quoted the Go way (%q), a '>' and quotes in the name.
	types = discover(t, fmt.Sprintf("<document name=%q id=%q>\n%s\n</document>\n<document id=%q name=\"plain\">\nBob Smith left.\n</document>",
		`notes "v2" > draft.md`, docA, "Alice Johnson works for Acme Corp.", docB))
	require.Equal(t, []string{"Alice Johnson"}, instanceNames(types["Person"], docA))
	require.Equal(t, "Alice Johnson works for Acme Corp.", types["Person"].Instances[0].Quote)
	require.Equal(t, []string{"Bob Smith"}, instanceNames(types["Person"], docB))

	// Without document blocks the text is one document without an id.
	types = discover(t, "Alice Johnson works for Acme Corp.")
	require.Empty(t, types["Person"].Instances[0].DocumentID)

	// At most 20 instances of a type per document.
	var rows strings.Builder
	rows.WriteString("Part | Weight\n")
	for i := range 30 {
		rows.WriteString("P" + strings.Repeat("x", i) + " | 1\n")
	}
	types = discover(t, discoveryText([2]string{docA, rows.String()}))
	require.Len(t, types["Part"].Instances, 20)
	require.Equal(t, "integer", types["Part"].Properties["weight"]["type"])
}

func TestLocalDiscoveryUnicode(t *testing.T) {
	t.Parallel()
	// A sentence ending in "à" (bytes C3 A0): no byte of it is taken for
	// space; "İ" lower-cases to another length: offsets stay right.
	text := "Ünal wrote (İİİ): Alice Johnson works for Acme Corp in Berlin, voilà"
	types := discover(t, discoveryText([2]string{docA, text}))
	q := types["Person"].Instances[0].Quote
	require.True(t, utf8.ValidString(q))
	require.Equal(t, text, q)
	rels := discoverRelationships(t, `{"types": [{"type_name": "Person"}, {"type_name": "Organization"}]}`, [2]string{docA, text})
	require.NotEmpty(t, rels)
	require.Equal(t, "WORKS_FOR", rels[0].RelationType)
}
