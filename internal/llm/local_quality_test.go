package llm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// The labelled evaluation set of the local extractor: documents under
// testdata/extract and their expected entities in expected.json.

// Targets of the evaluation (issue 13): the offline extractor prefers
// precision on every document and finds at least half of the entities of
// running prose.
const qualityMinPrecision = 0.8

type labelledEntity struct {
	Name    string   `json:"name"`
	Types   []string `json:"types"`
	Aliases []string `json:"aliases"`
}

type labelledDocument struct {
	File      string           `json:"file"`
	Kind      string           `json:"kind"`
	MinRecall float64          `json:"minRecall"`
	Entities  []labelledEntity `json:"entities"`
	Optional  []labelledEntity `json:"optional"`
}

// matches reports whether an extracted object (name, type) is e.
func (e labelledEntity) matches(name, typ string) bool {
	if !slices.Contains(e.Types, typ) {
		return false
	}
	key := strings.ToLower(strings.Join(strings.Fields(name), " "))
	for _, n := range append([]string{e.Name}, e.Aliases...) {
		if strings.ToLower(n) == key {
			return true
		}
	}
	return false
}

// qualityScore is the evaluation of one document.
type qualityScore struct {
	precision, recall float64
	falsePositives    []string // "name (type)"
	missed            []string
}

func loadEvaluation(tb testing.TB) []labelledDocument {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "extract", "expected.json"))
	require.NoError(tb, err)
	var set struct {
		Documents []labelledDocument `json:"documents"`
	}
	require.NoError(tb, json.Unmarshal(b, &set))
	require.NotEmpty(tb, set.Documents)
	return set.Documents
}

// parsedText is the text of a document as the document parser yields it,
// which is what extraction reads.
func parsedText(tb testing.TB, file string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "extract", file))
	require.NoError(tb, err)
	p, err := document.Parse(context.Background(), file, "", data)
	require.NoError(tb, err)
	return p.Text
}

// defaultPackSchema is an extraction schema whose type enums are the
// built-in default pack's, as a project with no pack installed sends.
func defaultPackSchema() map[string]any {
	pack := templatepack.DefaultPack()
	var objectTypes, relTypes []any
	for _, o := range pack.ObjectTypes {
		objectTypes = append(objectTypes, o.Name)
	}
	for _, r := range pack.RelationshipTypes {
		relTypes = append(relTypes, r.Name)
	}
	return extractionSchema(objectTypes, relTypes)
}

func scoreDocument(t *testing.T, doc labelledDocument, out extractionResult) qualityScore {
	t.Helper()
	var s qualityScore
	found := make([]bool, len(doc.Entities))
	correct := 0
	for _, o := range out.Objects {
		ok := false
		for i, e := range doc.Entities {
			if e.matches(o.Name, o.Type) {
				found[i], ok = true, true
			}
		}
		ok = ok || slices.ContainsFunc(doc.Optional, func(e labelledEntity) bool { return e.matches(o.Name, o.Type) })
		if ok {
			correct++
		} else {
			s.falsePositives = append(s.falsePositives, o.Name+" ("+o.Type+")")
		}
	}
	s.precision = 1
	if len(out.Objects) > 0 {
		s.precision = float64(correct) / float64(len(out.Objects))
	}
	hits := 0
	for i, e := range doc.Entities {
		if found[i] {
			hits++
		} else {
			s.missed = append(s.missed, e.Name)
		}
	}
	s.recall = float64(hits) / float64(len(doc.Entities))
	return s
}

// TestLocalExtractorQuality runs the local extractor over the labelled
// evaluation set and reports precision and recall per document (-v).
func TestLocalExtractorQuality(t *testing.T) {
	t.Parallel()
	c := llm.NewLocal(0)
	schema := defaultPackSchema()
	for _, doc := range loadEvaluation(t) {
		t.Run(doc.File, func(t *testing.T) {
			t.Parallel()
			out, _ := extract(t, c, parsedText(t, doc.File), schema)
			s := scoreDocument(t, doc, out)
			t.Logf("%-18s %-14s objects %2d  precision %.2f  recall %.2f", doc.File, doc.Kind, len(out.Objects), s.precision, s.recall)
			t.Logf("  false positives: %v", s.falsePositives)
			t.Logf("  missed: %v", s.missed)
			require.GreaterOrEqual(t, s.precision, qualityMinPrecision, "precision of %s; false positives %v", doc.File, s.falsePositives)
			require.GreaterOrEqual(t, s.recall, doc.MinRecall, "recall of %s; missed %v", doc.File, s.missed)
		})
	}
}

// BenchmarkLocalExtractor measures the local extractor over the whole
// evaluation set (one op is every document once).
func BenchmarkLocalExtractor(b *testing.B) {
	c := llm.NewLocal(0)
	schema := defaultPackSchema()
	var texts []string
	for _, doc := range loadEvaluation(b) {
		texts = append(texts, parsedText(b, doc.File))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range texts {
			_, err := c.Generate(context.Background(), llm.LocalGenerateModel, llm.GenerateRequest{Purpose: llm.PurposeExtraction, Text: text, Schema: schema})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
