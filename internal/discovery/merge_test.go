package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/templatepack"
)

var docs = []uuid.UUID{
	uuid.MustParse("00000000-0000-0000-0000-000000000001"),
	uuid.MustParse("00000000-0000-0000-0000-000000000002"),
	uuid.MustParse("00000000-0000-0000-0000-000000000003"),
	uuid.MustParse("00000000-0000-0000-0000-000000000004"),
}

func inst(name string, doc int) discovery.Instance {
	return discovery.Instance{Name: name, Quote: "About " + name + ".", DocumentID: docs[doc]}
}

func typ(name string, conf float64, ins ...discovery.Instance) discovery.Type {
	return discovery.Type{TypeName: name, Description: name + " things", Confidence: conf, ExampleInstances: ins}
}

func merge(t *testing.T, opt discovery.MergeOptions, ps ...discovery.Proposal) []discovery.Type {
	t.Helper()
	out, err := discovery.Merge(context.Background(), ps, opt)
	require.NoError(t, err)
	return out
}

func names(ts []discovery.Type) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.TypeName)
	}
	return out
}

func TestNameKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "softwareproject", discovery.NameKey("Software_Projects"))
	require.Equal(t, "person", discovery.NameKey("People"))
	require.Equal(t, "worksfor", discovery.PropertyKey("WORKS_FOR"))
}

func TestMergeNormalisedNames(t *testing.T) {
	t.Parallel()
	out := merge(t, discovery.MergeOptions{},
		discovery.Proposal{DocumentIDs: docs[:1], Types: []discovery.Type{typ("Software_Projects", 0.8, inst("Graphmill", 0))}},
		discovery.Proposal{DocumentIDs: docs[1:2], Types: []discovery.Type{typ("SoftwareProject", 0.8, inst("Goose", 1))}},
		discovery.Proposal{DocumentIDs: docs[2:3], Types: []discovery.Type{typ("SoftwareProject", 0.8, inst("River", 2))}},
		discovery.Proposal{DocumentIDs: docs[3:4], Types: []discovery.Type{typ("software project", 0.8, inst("Huma", 3))}},
	)
	require.Equal(t, []string{"SoftwareProject"}, names(out), "one type, the most used spelling")
	require.Equal(t, 4, out[0].Frequency)
	require.Len(t, out[0].ExampleInstances, 4)
}

func TestMergeNearDuplicates(t *testing.T) {
	t.Parallel()
	out := merge(t, discovery.MergeOptions{}, discovery.Proposal{Types: []discovery.Type{
		typ("Organisation", 0.8, inst("Acme", 0)),
		typ("Organization", 0.8, inst("Globex", 1)),
		typ("Contract", 0.8, inst("Lease", 0)),
		typ("Contact", 0.8, inst("Alice", 0)),
	}})
	// Organisation/Organization (similarity 0.92) merge; Contract/Contact
	// (0.875) do not. The tie of spellings goes to the smallest.
	require.Equal(t, []string{"Organisation", "Contact", "Contract"}, names(out))
	require.Equal(t, 2, out[0].Frequency)
}

// embedder gives every text the vector of its entry in vs (texts not
// listed get a vector of their own).
func embedder(vs map[string][]float32) func(context.Context, []string) ([][]float32, error) {
	return func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, tx := range texts {
			v, ok := vs[tx]
			if !ok {
				v = make([]float32, 8)
				v[i%8] = 1
				v[(i+3)%8] = 0.5
			}
			out[i] = v
		}
		return out, nil
	}
}

func TestMergeEmbeddings(t *testing.T) {
	t.Parallel()
	a := typ("Organisation Unit", 0.8, inst("Sales", 0))
	b := typ("Organizational Unit", 0.8, inst("Legal", 1))
	c := typ("Writer", 0.8, inst("Ann", 0))
	d := typ("Novelist", 0.8, inst("Bo", 1))
	p := discovery.Proposal{Types: []discovery.Type{a, b, c, d}}

	// Names alone: "organisationunit"/"organizationalunit" (0.84) stay apart.
	require.Len(t, merge(t, discovery.MergeOptions{}, p), 4)

	close1 := []float32{1, 0.1, 0, 0}
	close2 := []float32{1, 0.2, 0, 0}
	far := []float32{0, 0, 1, 0}
	text := func(x discovery.Type) string { return x.TypeName + ": " + x.Description }

	// Similar names and similar descriptions: merged.
	out := merge(t, discovery.MergeOptions{Embed: embedder(map[string][]float32{text(a): close1, text(b): close2, text(c): far, text(d): {0, 0, 0, 1}})}, p)
	require.Equal(t, []string{"Organisation Unit", "Novelist", "Writer"}, names(out))
	require.Equal(t, 2, out[0].Frequency)

	// Similar names, different descriptions: apart.
	out = merge(t, discovery.MergeOptions{Embed: embedder(map[string][]float32{text(a): close1, text(b): far})}, p)
	require.Len(t, out, 4)

	// Different names, near-identical descriptions (cosine >= 0.95): merged.
	out = merge(t, discovery.MergeOptions{Embed: embedder(map[string][]float32{text(c): close1, text(d): {1, 0.09, 0, 0}})}, p)
	require.Len(t, out, 3)
	require.Contains(t, names(out), "Novelist")
	require.NotContains(t, names(out), "Writer")

	_, err := discovery.Merge(context.Background(), []discovery.Proposal{p}, discovery.MergeOptions{Embed: func(context.Context, []string) ([][]float32, error) {
		return nil, errors.New("provider down")
	}})
	require.ErrorContains(t, err, "provider down")
	_, err = discovery.Merge(context.Background(), []discovery.Proposal{p}, discovery.MergeOptions{Embed: func(context.Context, []string) ([][]float32, error) {
		return [][]float32{{1}}, nil
	}})
	require.ErrorContains(t, err, "1 vectors for 4 texts")
}

func TestMergeExistingTypes(t *testing.T) {
	t.Parallel()
	existing := []templatepack.ObjectType{
		{Name: "Organization", Description: "An organization", Schema: map[string]any{"properties": map[string]any{"legalName": map[string]any{"type": "string"}}}},
		{Name: "Person"},
		{Name: "Contract"},
		{Name: "Contracts Draft"},
	}
	company := typ("Company", 0.8, inst("Acme", 0))
	company.Properties = map[string]any{"legal_name": map[string]any{"type": "string"}}
	out := merge(t, discovery.MergeOptions{Existing: existing}, discovery.Proposal{Types: []discovery.Type{
		company,
		typ("organisations", 0.8, inst("Globex", 1)),
		typ("People", 0.8, inst("Ann", 2)),
		typ("contract", 0.8, inst("Lease", 0)),
		typ("Contract Draft", 0.8, inst("Draft 1", 0)),
		typ("Tool", 0.8, inst("Hammer", 0)),
	}})
	byName := map[string]discovery.Type{}
	for _, x := range out {
		byName[x.TypeName] = x
	}
	require.Equal(t, []string{"Organization", "Contract", "Contracts Draft", "Person", "Tool"}, names(out))
	require.Equal(t, "Organization", byName["Organization"].MatchesExistingType, "synonym and near-duplicate map to the installed name")
	require.Equal(t, 2, byName["Organization"].Frequency)
	require.Contains(t, byName["Organization"].Properties, "legalName", "the installed spelling of a property")
	require.Equal(t, "Person", byName["Person"].MatchesExistingType)
	require.Equal(t, "Contract", byName["Contract"].MatchesExistingType)
	require.Equal(t, "Contracts Draft", byName["Contracts Draft"].MatchesExistingType, "two installed types are never merged")
	require.Empty(t, byName["Tool"].MatchesExistingType)
}

func TestMergeProperties(t *testing.T) {
	t.Parallel()
	str := map[string]any{"type": "string"}
	a := typ("Project", 0.8, inst("Graphmill", 0))
	a.Properties = map[string]any{
		"stars":      map[string]any{"type": "integer", "description": "Stars"},
		"version":    map[string]any{"type": "number"},
		"tags":       map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
		"first_name": str, "license": str,
		"archived": map[string]any{"type": []any{"null", "boolean"}},
	}
	a.RequiredProperties = []string{"stars", "first_name", "license"}
	// Same names, other types (and spellings).
	b := typ("Projects", 0.9, inst("Goose", 1))
	b.Properties = map[string]any{"version": str, "firstName": str, "homepage": str, "archived": map[string]any{"type": "boolean"}}
	b.Properties["stars"] = map[string]any{"type": "number", "description": "GitHub stars"}
	b.Properties["tags"] = map[string]any{"type": "array", "items": map[string]any{"type": "number"}}
	b.RequiredProperties = []string{"stars", "homepage"}
	out := merge(t, discovery.MergeOptions{}, discovery.Proposal{Types: []discovery.Type{a, b}})
	require.Len(t, out, 1)
	require.Equal(t, map[string]any{
		"stars":     map[string]any{"type": "number", "description": "GitHub stars"},
		"version":   map[string]any{"type": "string"},
		"tags":      map[string]any{"type": "array", "items": map[string]any{"type": "number"}},
		"firstName": map[string]any{"type": "string"}, // a tie of spellings: the smallest
		"license":   map[string]any{"type": "string"},
		"homepage":  map[string]any{"type": "string"},
		"archived":  map[string]any{"type": "boolean"},
	}, out[0].Properties)
	// stars: required by both; license and homepage: by the only one that
	// has them, so optional (the other lacks them); firstName: required
	// by one of two.
	require.Equal(t, []string{"stars"}, out[0].RequiredProperties)
}

// TestMergeRequiredByEveryCandidate: a property is required only when
// every merged candidate requires it; one candidate listing it as
// required while two others lack it leaves it optional.
func TestMergeRequiredByEveryCandidate(t *testing.T) {
	t.Parallel()
	ship := func(doc int, props map[string]any, req ...string) discovery.Proposal {
		ty := typ("Ship", 0.9, inst(fmt.Sprintf("S%d", doc), doc))
		ty.Properties, ty.RequiredProperties = props, req
		return discovery.Proposal{DocumentIDs: docs[doc : doc+1], Types: []discovery.Type{ty}}
	}
	str := map[string]any{"type": "string"}
	out := merge(t, discovery.MergeOptions{},
		ship(0, map[string]any{"email": str, "name": str}, "email", "name"),
		ship(1, map[string]any{"name": str}, "name"),
		ship(2, map[string]any{"name": str}, "name"))
	require.Len(t, out, 1)
	require.Equal(t, 3, out[0].Frequency)
	require.Equal(t, map[string]any{"email": str, "name": str}, out[0].Properties)
	require.Equal(t, []string{"name"}, out[0].RequiredProperties)

	one := merge(t, discovery.MergeOptions{}, ship(0, map[string]any{"email": str}, "email"))
	require.Equal(t, []string{"email"}, one[0].RequiredProperties, "the only candidate requires it")
}

// TestMergePlurals: a plural and its singular are one type however the
// plural is formed; words that are not plurals of one another stay apart.
func TestMergePlurals(t *testing.T) {
	t.Parallel()
	for singular, plural := range map[string]string{
		"Movie": "Movies", "Cookie": "Cookies", "House": "Houses", "Cause": "Causes", "Clause": "Clauses",
		"Warehouse": "Warehouses", "Status": "Statuses", "Address": "Addresses", "Process": "Processes", "Analysis": "Analyses",
	} {
		p := [2]string{singular, plural}
		out := merge(t, discovery.MergeOptions{},
			discovery.Proposal{DocumentIDs: docs[:1], Types: []discovery.Type{typ(p[0], 0.8, inst("A", 0))}},
			discovery.Proposal{DocumentIDs: docs[1:2], Types: []discovery.Type{typ(p[1], 0.8, inst("B", 1))}},
			discovery.Proposal{DocumentIDs: docs[2:3], Types: []discovery.Type{typ(p[0], 0.8, inst("C", 2))}},
		)
		require.Equal(t, []string{p[0]}, names(out), "%s / %s", p[0], p[1])
		require.Equal(t, 3, out[0].Frequency, p[0])
	}
	for _, p := range [][2]string{{"Bus", "Business"}, {"News", "New"}, {"Series", "Serie"}, {"Plane", "Plan"}, {"Status", "State"}} {
		out := merge(t, discovery.MergeOptions{},
			discovery.Proposal{DocumentIDs: docs[:1], Types: []discovery.Type{typ(p[0], 0.8, inst("A", 0))}},
			discovery.Proposal{DocumentIDs: docs[1:2], Types: []discovery.Type{typ(p[1], 0.8, inst("B", 1))}},
		)
		require.Len(t, out, 2, "%s / %s", p[0], p[1])
	}
	// The synonym table still applies to keys that changed form.
	out := merge(t, discovery.MergeOptions{Existing: []templatepack.ObjectType{{Name: "Organization"}}},
		discovery.Proposal{DocumentIDs: docs[:1], Types: []discovery.Type{typ("Enterprises", 0.8, inst("Acme", 0))}})
	require.Equal(t, "Organization", out[0].MatchesExistingType)
}

func TestMergeInstancesAndExamples(t *testing.T) {
	t.Parallel()
	var ins []discovery.Instance
	for d := range 4 {
		for n := range 3 {
			ins = append(ins, inst(fmt.Sprintf("Item %d-%d", d, n), d))
		}
	}
	ins = append(ins, discovery.Instance{Name: "item 0-0", Quote: "Again item 0-0.", DocumentID: docs[0]}, discovery.Instance{Name: " ", DocumentID: docs[0]})
	out := merge(t, discovery.MergeOptions{},
		discovery.Proposal{DocumentIDs: docs[:2], Types: []discovery.Type{typ("Item", 0.8, ins...)}},
		discovery.Proposal{DocumentIDs: docs[2:], Types: []discovery.Type{typ("Item", 0.8, ins...)}},
	)
	require.Len(t, out, 1)
	require.Equal(t, 4, out[0].Frequency, "instances outside a proposal's documents are dropped, documents counted once")
	ex := out[0].ExampleInstances
	require.Len(t, ex, discovery.ExamplesMax)
	perDoc := map[uuid.UUID]int{}
	for _, e := range ex {
		perDoc[e.DocumentID]++
	}
	require.Len(t, perDoc, 4, "examples spread over all documents")
	require.True(t, slices.IsSortedFunc(ex, func(a, b discovery.Instance) int {
		if c := slices.Compare(a.DocumentID[:], b.DocumentID[:]); c != 0 {
			return c
		}
		return 0
	}))
	// The duplicate "item 0-0" is folded into "Item 0-0" (smaller name).
	require.Equal(t, discovery.Instance{Name: "Item 0-0", Quote: "About Item 0-0.", DocumentID: docs[0]}, ex[0])

	// Distinct names first: one name in two documents and two names in one.
	out = merge(t, discovery.MergeOptions{}, discovery.Proposal{Types: []discovery.Type{typ("Tool", 0.8,
		inst("Hammer", 0), inst("Hammer", 1), inst("Saw", 1))}})
	require.Equal(t, 2, out[0].Frequency)
	require.Len(t, out[0].ExampleInstances, 3, "duplicates across documents fill up when there are fewer than the cap")
}

func TestMergeConfidenceFilterOrder(t *testing.T) {
	t.Parallel()
	out := merge(t, discovery.MergeOptions{MinConfidence: 0.5}, discovery.Proposal{Types: []discovery.Type{
		// Weighted by documents: (3*0.9 + 1*0.1) / 4 = 0.7.
		typ("Tool", 0.9, inst("A", 0), inst("B", 1), inst("C", 2)),
		typ("Tools", 0.1, inst("D", 3)),
		typ("Widget", 0.45, inst("W", 0)),
		typ("Beta", 0.6, inst("X", 0)),
		typ("Alpha", 0.6, inst("Y", 1)),
	}})
	require.Equal(t, []string{"Tool", "Alpha", "Beta"}, names(out), "frequency desc, then name; Widget below 0.5 dropped")
	require.InDelta(t, 0.7, out[0].Confidence, 1e-9)
	require.Equal(t, 4, out[0].Frequency)
}

func TestMergeDeterministicAndIdempotent(t *testing.T) {
	t.Parallel()
	a := discovery.Proposal{DocumentIDs: docs[:2], Types: []discovery.Type{
		typ("Person", 0.7, inst("Ann", 0), inst("Bo", 1)),
		typ("Company", 0.6, inst("Acme", 0)),
	}}
	b := discovery.Proposal{DocumentIDs: docs[2:], Types: []discovery.Type{
		typ("people", 0.9, inst("Cy", 2), inst("Di", 3), inst("Ed", 3), inst("Flo", 2)),
		typ("Companies", 0.8, inst("Globex", 3)),
	}}
	first := merge(t, discovery.MergeOptions{}, a, b)
	second := merge(t, discovery.MergeOptions{}, b, a)
	require.True(t, discovery.Same(first, second), "order of proposals does not matter")
	require.Equal(t, first, second)

	again := merge(t, discovery.MergeOptions{}, discovery.Proposal{Types: first})
	require.True(t, discovery.Same(first, again), "merging a merged list changes nothing")
	require.Equal(t, 4, again[0].Frequency, "frequency kept although examples are capped")
}

func TestSame(t *testing.T) {
	t.Parallel()
	a := []discovery.Type{{TypeName: "Person", Properties: map[string]any{"age": map[string]any{"type": "integer"}}}}
	b := []discovery.Type{{TypeName: "Person", Properties: map[string]any{"age": map[string]any{"type": "integer"}}, RequiredProperties: []string{}, ExampleInstances: []discovery.Instance{}}}
	require.True(t, discovery.Same(a, b))
	require.True(t, discovery.Same(nil, []discovery.Type{}))
	c := []discovery.Type{{TypeName: "Person", Properties: map[string]any{"age": map[string]any{"type": "number"}}}}
	require.False(t, discovery.Same(a, c))
	require.False(t, discovery.Same(a, nil))
	d := []discovery.Type{{TypeName: "Person", Properties: a[0].Properties, Frequency: 1}}
	require.False(t, discovery.Same(a, d))
}

func TestMergeRelationships(t *testing.T) {
	t.Parallel()
	types := []discovery.Type{{TypeName: "Person"}, {TypeName: "Organization"}, {TypeName: "SoftwareProject"}}
	existing := []templatepack.RelationshipType{
		{Name: "WORKS_FOR", SourceType: "Person", TargetType: "Organization"},
		{Name: "LOCATED_IN", SourceType: "Organization", TargetType: "Location"},
		{Name: "TAGGED", SourceType: "*", TargetType: "*"},
	}
	rels := []discovery.Relationship{
		{SourceType: "people", TargetType: "Company", RelationType: "works for", Cardinality: discovery.OneToOne, Confidence: 0.8, Description: "short"},
		{SourceType: "Person", TargetType: "organisation", RelationType: "WORKS_FOR", Cardinality: discovery.OneToMany, Confidence: 0.4, Frequency: 3, Description: "longer one"},
		{SourceType: "Organization", TargetType: "Locations", RelationType: "locatedIn", Cardinality: "bogus", Confidence: 0.7},
		{SourceType: "Person", TargetType: "software_projects", RelationType: "maintains", Cardinality: discovery.ManyToMany, Confidence: 0.6},
		{SourceType: "Person", TargetType: "SoftwareProject", RelationType: "Maintains", Cardinality: discovery.OneToOne, Confidence: 0.6},
		{SourceType: "Person", TargetType: "Spaceship", RelationType: "flies", Confidence: 0.9},
		{SourceType: "Person", TargetType: "Person", RelationType: " ", Confidence: 0.9},
	}
	out := discovery.MergeRelationships(rels, types, existing)
	require.Equal(t, []discovery.Relationship{
		{SourceType: "Person", TargetType: "Organization", RelationType: "WORKS_FOR", Description: "short", Cardinality: discovery.OneToMany, Confidence: 0.5, Frequency: 4},
		{SourceType: "Person", TargetType: "SoftwareProject", RelationType: "Maintains", Cardinality: discovery.ManyToMany, Confidence: 0.6, Frequency: 2},
		{SourceType: "Organization", TargetType: "Location", RelationType: "LOCATED_IN", Cardinality: discovery.ManyToMany, Confidence: 0.7, Frequency: 1},
	}, out)
	require.Equal(t, out, discovery.MergeRelationships(slices.Concat(rels[3:], rels[:3]), types, existing), "stable whatever the input order")
	require.Empty(t, discovery.MergeRelationships(rels[5:], types, nil))
}

// BenchmarkMerge merges 100 batch proposals of 20 types with 10
// instances each: 80 base names in five spellings (the plural merges
// with the name, the others stay apart), so 400 name groups to compare.
func BenchmarkMerge(b *testing.B) {
	spellings := []func(string) string{
		func(s string) string { return s },
		func(s string) string { return s + "s" },
		func(s string) string { return "the_" + s },
		func(s string) string { return s + " Item" },
		func(s string) string { return s + "Record" },
	}
	var ps []discovery.Proposal
	for batch := range 100 {
		doc := uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "doc %d", batch))
		p := discovery.Proposal{DocumentIDs: []uuid.UUID{doc}}
		for k := range 20 {
			base := fmt.Sprintf("Kind%c%c", 'A'+rune((batch+k)%80/8), 'a'+rune((batch+k)%8))
			tp := discovery.Type{
				TypeName: spellings[batch%5](base), Description: "About " + base, Confidence: 0.7,
				Properties: map[string]any{"size": map[string]any{"type": "integer"}, "label": map[string]any{"type": "string"}},
			}
			for i := range 10 {
				tp.ExampleInstances = append(tp.ExampleInstances, discovery.Instance{Name: fmt.Sprintf("%s %d", base, i), Quote: "q", DocumentID: doc})
			}
			p.Types = append(p.Types, tp)
		}
		ps = append(ps, p)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := discovery.Merge(context.Background(), ps, discovery.MergeOptions{MinConfidence: 0.5}); err != nil {
			b.Fatal(err)
		}
	}
}
