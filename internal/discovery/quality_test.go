package discovery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// The labelled set of schema discovery: documents under testdata/quality
// and the types and instances expected of them in expected.json.

// Floors of the local provider's discovery with Merge over the set
// (measured: see the test's log and docs/decisions.md).
const (
	qualityTypePrecisionMin     = 0.85
	qualityTypeRecallMin        = 0.8
	qualityInstancePrecisionMin = 0.85
	qualityInstanceRecallMin    = 0.75
	qualityExamplePrecisionMin  = 0.85
	qualityRelationPrecisionMin = 0.7
)

type labelType struct {
	Name     string   `json:"name"`
	Aliases  []string `json:"aliases"`
	Optional bool     `json:"optional"`
}

type labelDocument struct {
	File      string              `json:"file"`
	Instances map[string][]string `json:"instances"`
	Optional  map[string][]string `json:"optional"`
}

type labelSet struct {
	Types         []labelType     `json:"types"`
	Documents     []labelDocument `json:"documents"`
	Relationships [][2]string     `json:"relationships"`
}

// typeOf is the label type a discovered type name is, or nil.
func (s labelSet) typeOf(name string) *labelType {
	key := discovery.NameKey(name)
	for i, lt := range s.Types {
		if slices.ContainsFunc(append([]string{lt.Name}, lt.Aliases...), func(n string) bool { return discovery.NameKey(n) == key }) {
			return &s.Types[i]
		}
	}
	return nil
}

// listed reports whether name is listed for the label type in the
// document (required or, with optional, optional instances).
func (d labelDocument) listed(typ, name string, optional bool) bool {
	fold := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
	match := func(n string) bool { return fold(n) == fold(name) }
	return slices.ContainsFunc(d.Instances[typ], match) || (optional && slices.ContainsFunc(d.Optional[typ], match))
}

type qualityDoc struct {
	id    uuid.UUID
	label labelDocument
	text  string
}

// wireType is a discovery response's type (the contract of
// llm.PurposeDiscovery).
type wireType struct {
	TypeName           string         `json:"type_name"`
	Description        string         `json:"description"`
	Properties         map[string]any `json:"properties"`
	RequiredProperties []string       `json:"required_properties"`
	Instances          []struct {
		Name       string `json:"name"`
		Quote      string `json:"quote"`
		DocumentID string `json:"document_id"`
	} `json:"instances"`
	Confidence float64 `json:"confidence"`
}

func loadQualitySet(t testing.TB) (labelSet, []qualityDoc) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "quality", "expected.json"))
	require.NoError(t, err)
	var set labelSet
	require.NoError(t, json.Unmarshal(b, &set))
	var docs []qualityDoc
	for _, d := range set.Documents {
		data, err := os.ReadFile(filepath.Join("testdata", "quality", d.File))
		require.NoError(t, err)
		p, err := document.Parse(context.Background(), d.File, "", data)
		require.NoError(t, err)
		docs = append(docs, qualityDoc{id: uuid.NewSHA1(uuid.NameSpaceURL, []byte(d.File)), label: d, text: p.Text})
	}
	return set, docs
}

// discoverBatch asks the local provider for one batch's proposal and
// checks the quotes and document ids of its instances.
func discoverBatch(t testing.TB, c llm.Client, batch []qualityDoc) discovery.Proposal {
	t.Helper()
	var text strings.Builder
	byID := map[uuid.UUID]qualityDoc{}
	p := discovery.Proposal{}
	for _, d := range batch {
		fmt.Fprintf(&text, "<document id=\"%s\" name=\"%s\">\n%s\n</document>\n", d.id, html.EscapeString(d.label.File), d.text)
		byID[d.id] = d
		p.DocumentIDs = append(p.DocumentIDs, d.id)
	}
	res, err := c.Generate(context.Background(), "", llm.GenerateRequest{Purpose: llm.PurposeDiscovery, Text: text.String()})
	require.NoError(t, err)
	var out struct {
		Types []wireType `json:"types"`
	}
	require.NoError(t, json.Unmarshal(res.JSON, &out))
	for _, wt := range out.Types {
		typ := discovery.Type{TypeName: wt.TypeName, Description: wt.Description, Properties: wt.Properties, RequiredProperties: wt.RequiredProperties, Confidence: wt.Confidence}
		for _, in := range wt.Instances {
			id, err := uuid.Parse(in.DocumentID)
			require.NoError(t, err, "document_id of %s", in.Name)
			d, ok := byID[id]
			require.True(t, ok, "%s names a document of the batch", in.Name)
			require.Contains(t, d.text, in.Quote, "the quote of %s (%s) is verbatim from %s", in.Name, wt.TypeName, d.label.File)
			typ.ExampleInstances = append(typ.ExampleInstances, discovery.Instance{Name: in.Name, Quote: in.Quote, DocumentID: id})
		}
		p.Types = append(p.Types, typ)
	}
	return p
}

type ratio struct{ hit, total int }

func (r ratio) value() float64 {
	if r.total == 0 {
		return 1
	}
	return float64(r.hit) / float64(r.total)
}

func (r ratio) String() string { return fmt.Sprintf("%.2f (%d/%d)", r.value(), r.hit, r.total) }

// TestLocalDiscoveryQuality runs the local provider's discovery over the
// labelled set in batches of two documents, merges the proposals as a job
// does (the default pack installed, min_confidence 0.5), by names alone
// and with the local embedder's vectors of the descriptions, and
// measures: types (precision over the merged types, recall over the
// required label types), instances (over every instance proposed, before
// the examples are capped; per document too) and the merged types'
// example instances. Every quote must be verbatim from its document.
func TestLocalDiscoveryQuality(t *testing.T) {
	t.Parallel()
	set, docs := loadQualitySet(t)
	c := llm.NewLocal(0)
	var proposals []discovery.Proposal
	for b := range slices.Chunk(docs, 2) {
		proposals = append(proposals, discoverBatch(t, c, b))
	}
	docByID := map[uuid.UUID]labelDocument{}
	for _, d := range docs {
		docByID[d.id] = d.label
	}
	logInstanceQuality(t, set, docByID, proposals)

	for _, embed := range []bool{false, true} {
		t.Run(fmt.Sprintf("embeddings=%v", embed), func(t *testing.T) {
			t.Parallel()
			opt := discovery.MergeOptions{MinConfidence: 0.5, Existing: templatepack.DefaultPack().ObjectTypes}
			if embed {
				opt.Embed = llm.NewLocalEmbedder(0).Embed
			}
			merged, err := discovery.Merge(context.Background(), proposals, opt)
			require.NoError(t, err)
			again, err := discovery.Merge(context.Background(), proposals, opt)
			require.NoError(t, err)
			require.True(t, discovery.Same(merged, again), "deterministic")
			checkMergedQuality(t, set, docByID, merged)
			checkRelationshipQuality(t, set, c, docs, merged)
		})
	}
}

// logInstanceQuality measures the instances proposed, by (label type,
// document, folded name), over the set and per document.
func logInstanceQuality(t *testing.T, set labelSet, docByID map[uuid.UUID]labelDocument, proposals []discovery.Proposal) {
	t.Helper()
	instP, instR := ratio{}, ratio{}
	perDocP, perDocR := map[string]*ratio{}, map[string]*ratio{}
	for _, d := range set.Documents {
		perDocP[d.File], perDocR[d.File] = &ratio{}, &ratio{}
	}
	found := map[string]bool{}
	var wrong []string
	seen := map[string]bool{}
	for _, p := range proposals {
		for _, pt := range p.Types {
			lt := set.typeOf(pt.TypeName)
			for _, in := range pt.ExampleInstances {
				k := pt.TypeName + "\x00" + in.DocumentID.String() + "\x00" + strings.ToLower(in.Name)
				if seen[k] {
					continue
				}
				seen[k] = true
				d := docByID[in.DocumentID]
				instP.total++
				perDocP[d.File].total++
				if lt == nil || !d.listed(lt.Name, in.Name, true) {
					wrong = append(wrong, fmt.Sprintf("%s (%s, %s)", in.Name, pt.TypeName, d.File))
					continue
				}
				instP.hit++
				perDocP[d.File].hit++
				found[lt.Name+"\x00"+d.File+"\x00"+strings.ToLower(in.Name)] = true
			}
		}
	}
	var missed []string
	for _, d := range set.Documents {
		for typ, names := range d.Instances {
			for _, n := range names {
				instR.total++
				perDocR[d.File].total++
				if found[typ+"\x00"+d.File+"\x00"+strings.ToLower(n)] {
					instR.hit++
					perDocR[d.File].hit++
				} else {
					missed = append(missed, fmt.Sprintf("%s (%s, %s)", n, typ, d.File))
				}
			}
		}
	}
	slices.Sort(missed)
	for _, d := range set.Documents {
		t.Logf("%-16s instances: precision %s recall %s", d.File, perDocP[d.File], perDocR[d.File])
	}
	t.Logf("instances: precision %s recall %s", instP, instR)
	t.Logf("  wrong: %v", wrong)
	t.Logf("  missed: %v", missed)
	require.GreaterOrEqual(t, instP.value(), qualityInstancePrecisionMin, "instance precision; wrong %v", wrong)
	require.GreaterOrEqual(t, instR.value(), qualityInstanceRecallMin, "instance recall; missed %v", missed)
}

// checkMergedQuality measures the merged types and their examples.
func checkMergedQuality(t *testing.T, set labelSet, docByID map[uuid.UUID]labelDocument, merged []discovery.Type) {
	t.Helper()
	var typeP, typeR, exP ratio
	matched := map[string]bool{}
	var wrongTypes, missedTypes, wrongExamples []string
	for _, mt := range merged {
		t.Logf("type %-22s frequency %d confidence %.2f matches %q properties %d examples %d", mt.TypeName, mt.Frequency, mt.Confidence, mt.MatchesExistingType, len(mt.Properties), len(mt.ExampleInstances))
		require.LessOrEqual(t, len(mt.ExampleInstances), discovery.ExamplesMax)
		lt := set.typeOf(mt.TypeName)
		typeP.total++
		if lt == nil {
			wrongTypes = append(wrongTypes, mt.TypeName)
		} else {
			typeP.hit++
			matched[lt.Name] = true
		}
		for _, in := range mt.ExampleInstances {
			exP.total++
			d := docByID[in.DocumentID]
			if lt != nil && d.listed(lt.Name, in.Name, true) {
				exP.hit++
			} else {
				wrongExamples = append(wrongExamples, fmt.Sprintf("%s (%s, %s)", in.Name, mt.TypeName, d.File))
			}
		}
	}
	for _, lt := range set.Types {
		if lt.Optional {
			continue
		}
		typeR.total++
		if matched[lt.Name] {
			typeR.hit++
		} else {
			missedTypes = append(missedTypes, lt.Name)
		}
	}
	t.Logf("types: precision %s recall %s; not expected %v; missed %v", typeP, typeR, wrongTypes, missedTypes)
	t.Logf("examples: precision %s; wrong %v", exP, wrongExamples)
	require.GreaterOrEqual(t, typeP.value(), qualityTypePrecisionMin, "type precision; not expected %v", wrongTypes)
	require.GreaterOrEqual(t, typeR.value(), qualityTypeRecallMin, "type recall; missed %v", missedTypes)
	require.GreaterOrEqual(t, exP.value(), qualityExamplePrecisionMin, "example precision; wrong %v", wrongExamples)
}

// checkRelationshipQuality asks the local provider for the relationships
// between the merged types over all documents, merges them as a job does
// and measures the share whose type pair is a labelled one.
func checkRelationshipQuality(t *testing.T, set labelSet, c llm.Client, docs []qualityDoc, merged []discovery.Type) {
	t.Helper()
	// The wire's instances are discovery.Instance's JSON.
	type wire struct {
		TypeName  string               `json:"type_name"`
		Instances []discovery.Instance `json:"instances"`
	}
	var in struct {
		Types []wire `json:"types"`
	}
	for _, mt := range merged {
		in.Types = append(in.Types, wire{TypeName: mt.TypeName, Instances: mt.ExampleInstances})
	}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var text strings.Builder
	text.Write(b)
	text.WriteString("\n\n")
	for _, d := range docs {
		fmt.Fprintf(&text, "<document id=\"%s\" name=\"%s\">\n%s\n</document>\n", d.id, html.EscapeString(d.label.File), d.text)
	}
	res, err := c.Generate(context.Background(), "", llm.GenerateRequest{Purpose: llm.PurposeDiscoveryRelationships, Text: text.String()})
	require.NoError(t, err)
	var out struct {
		Relationships []discovery.Relationship `json:"relationships"`
	}
	require.NoError(t, json.Unmarshal(res.JSON, &out))
	rels := discovery.MergeRelationships(out.Relationships, merged, nil)
	var p ratio
	var wrong []string
	for _, r := range rels {
		t.Logf("relationship %s -%s-> %s %s confidence %.2f", r.SourceType, r.RelationType, r.TargetType, r.Cardinality, r.Confidence)
		require.Contains(t, []string{discovery.OneToOne, discovery.OneToMany, discovery.ManyToMany}, r.Cardinality)
		p.total++
		a, b := set.typeOf(r.SourceType), set.typeOf(r.TargetType)
		if a != nil && b != nil && slices.ContainsFunc(set.Relationships, func(pair [2]string) bool {
			return (pair[0] == a.Name && pair[1] == b.Name) || (pair[0] == b.Name && pair[1] == a.Name)
		}) {
			p.hit++
			continue
		}
		wrong = append(wrong, r.SourceType+" "+r.RelationType+" "+r.TargetType)
	}
	t.Logf("relationships: plausible %s; not %v", p, wrong)
	require.NotEmpty(t, rels)
	require.GreaterOrEqual(t, p.value(), qualityRelationPrecisionMin, "relationship precision; not plausible %v", wrong)
}

// BenchmarkLocalDiscovery is the local provider's discovery of the whole
// labelled set (one op: every batch of two documents once, then Merge).
func BenchmarkLocalDiscovery(b *testing.B) {
	_, docs := loadQualitySet(b)
	c := llm.NewLocal(0)
	b.ReportAllocs()
	for b.Loop() {
		var ps []discovery.Proposal
		for batch := range slices.Chunk(docs, 2) {
			ps = append(ps, discoverBatch(b, c, batch))
		}
		if _, err := discovery.Merge(context.Background(), ps, discovery.MergeOptions{MinConfidence: 0.5}); err != nil {
			b.Fatal(err)
		}
	}
}
