package discovery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/templatepack"
	"github.com/graphmill/graphmill/internal/typename"
)

// Merging of proposals. Every rule below is deterministic: the same
// proposals (and the same embeddings) give the same list, whatever order
// the ties come in.
//
//   - Names are normalised (NameKey): split at case changes, spaces,
//     '_', '-', '.', '/'; lower-cased; the last word reduced to the stem
//     its plurals share (typename.Key); joined without separators.
//     "Software_Projects", "software project" and "SoftwareProject" are
//     all "softwareproject"; "Movies" and "Movie" both "movy".
//   - Candidates whose keys are near-duplicates are merged: string
//     similarity of the keys (1 - Levenshtein distance / longer length) at
//     least nameSimilarityMin (0.9: "Organisation"/"Organization" merge,
//     "Contract"/"Contact" do not); or, when MergeOptions.Embed is set, key
//     similarity at least nameSimilarityEmbedMin (0.7) and cosine
//     similarity of the "name: description" embeddings at least
//     descriptionCosineMin (0.85); or descriptions alone at least
//     descriptionCosineSameMin (0.95).
//   - A candidate corresponds to an installed type (MatchesExistingType)
//     when its key equals the installed type's, they are listed as
//     synonyms (synonymSets: Company and Organization, People and
//     Person, ...), or they are near-duplicates by the rule above; exact
//     key first, then synonym, then the most similar. Candidates that
//     correspond to one installed type are merged, and two that
//     correspond to different installed types never are.
//   - The kept name is the installed type's name, else the spelling most
//     candidates used (ties: the ordinally smallest).
//   - Properties are unioned by normalised name (case and separators;
//     spelling: the installed type's, else the most used). Types are
//     reconciled: equal types stay; integer and number give number; two
//     arrays give an array of the reconciled item types; any other
//     conflict gives string; no type at all gives string. Only type,
//     description and items are kept of a property's schema.
//   - A property is required when every merged candidate requires it
//     (not when the only candidate that lists it does).
//   - Instances are de-duplicated by (case-folded name, document); of
//     duplicates the smallest (name, quote) is kept. Documents is the
//     union of the instances' documents and the Documents the candidates
//     carry (a list merged before carries them, its examples being
//     capped); Frequency is its size, or the largest Frequency a
//     candidate came with if that is more.
//   - Examples: at most ExamplesMax, taken round-robin over documents
//     (documents with more instances first, then by id) and preferring
//     names not taken yet, then sorted by document, name and quote.
//   - Confidence is the mean of the candidates' confidences weighted by
//     their document counts (at least 1 each), rounded to 2 decimals.
//   - Merged types below MinConfidence are dropped; the rest are ordered
//     by frequency (descending), then name.
const (
	nameSimilarityMin        = 0.9
	nameSimilarityEmbedMin   = 0.7
	descriptionCosineMin     = 0.85
	descriptionCosineSameMin = 0.95
)

// Proposal is one batch's answer: Type.ExampleInstances holds ALL
// instances found (uncapped), Frequency 0. Instances naming a document
// that is not in DocumentIDs are dropped (no check when DocumentIDs is
// empty, as for a list merged before and refined).
type Proposal struct {
	DocumentIDs []uuid.UUID
	Types       []Type
}

// MergeOptions tunes Merge.
type MergeOptions struct {
	// MinConfidence drops merged types whose combined confidence is below
	// it.
	MinConfidence float64
	// Existing are the project's installed object types.
	Existing []templatepack.ObjectType
	// Embed embeds texts (one vector per text, in order); nil: names only,
	// no similarity of descriptions.
	Embed func(ctx context.Context, texts []string) ([][]float32, error)
}

// synonymSets are type names (normalised keys) that name the same kind of
// thing: a candidate corresponds to an installed type listed with it.
func synonymSets() [][]string {
	return [][]string{
		{"person", "individual", "human"},
		{"organization", "organisation", "company", "corporation", "business", "institution", "org", "enterprise", "firm"},
		{"location", "place"},
		{"event", "occurrence", "happening"},
		{"topic", "subject", "theme"},
		{"application", "app"},
		{"technology", "tech"},
	}
}

// candidate is one proposed type with its filtered instances.
type candidate struct {
	t         Type
	instances []Instance
	docs      int // documents among its instances, or its Frequency
}

// group is the candidates of one name key.
type group struct {
	key   string
	cands []candidate
	text  string // "name: description" to embed
	exist int    // index of the matched installed type, -1 for none
}

// Merge merges the proposals of all batches into one list of types by the
// rules of this file's comment. Embed errors are returned.
func Merge(ctx context.Context, proposals []Proposal, opt MergeOptions) ([]Type, error) {
	byKey := map[string]*group{}
	for _, p := range proposals {
		allowed := map[uuid.UUID]bool{}
		for _, id := range p.DocumentIDs {
			allowed[id] = true
		}
		for _, t := range p.Types {
			key := NameKey(t.TypeName)
			if key == "" {
				continue
			}
			var ins []Instance
			for _, in := range t.ExampleInstances {
				if strings.TrimSpace(in.Name) == "" || (len(allowed) > 0 && !allowed[in.DocumentID]) {
					continue
				}
				ins = append(ins, in)
			}
			c := candidate{t: t, instances: ins, docs: max(t.Frequency, len(documentsOf(ins, t.Documents)))}
			g := byKey[key]
			if g == nil {
				g = &group{key: key, exist: -1}
				byKey[key] = g
			}
			g.cands = append(g.cands, c)
		}
	}
	groups := make([]*group, 0, len(byKey))
	for _, g := range byKey {
		g.text = keptName(g.cands) + ": " + bestDescription(g.cands)
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b *group) int { return strings.Compare(a.key, b.key) })

	var vecs, existVecs [][]float32
	if opt.Embed != nil && len(groups) > 0 {
		texts := make([]string, 0, len(groups)+len(opt.Existing))
		for _, g := range groups {
			texts = append(texts, g.text)
		}
		for _, e := range opt.Existing {
			texts = append(texts, e.Name+": "+e.Description)
		}
		vs, err := opt.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("embed type descriptions: %w", err)
		}
		if len(vs) != len(texts) {
			return nil, fmt.Errorf("embed type descriptions: %d vectors for %d texts", len(vs), len(texts))
		}
		vecs, existVecs = vs[:len(groups)], vs[len(groups):]
	}
	vec := func(vs [][]float32, i int) []float32 {
		if vs == nil {
			return nil
		}
		return vs[i]
	}
	for i, g := range groups {
		g.exist = matchExisting(g.key, vec(vecs, i), opt.Existing, existVecs)
	}

	// Union the groups: those matching one installed type, then the
	// near-duplicates, never two matching different installed types.
	parent := make([]int, len(groups))
	exist := make([]int, len(groups)) // per root
	for i, g := range groups {
		parent[i], exist[i] = i, g.exist
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(i, j int) {
		ri, rj := find(i), find(j)
		if ri == rj || (exist[ri] >= 0 && exist[rj] >= 0 && exist[ri] != exist[rj]) {
			return
		}
		lo, hi := min(ri, rj), max(ri, rj)
		parent[hi] = lo
		exist[lo] = max(exist[ri], exist[rj])
	}
	for i := range groups {
		for j := i + 1; j < len(groups); j++ {
			if groups[i].exist >= 0 && groups[i].exist == groups[j].exist {
				union(i, j)
			}
		}
	}
	for i := range groups {
		for j := i + 1; j < len(groups); j++ {
			if similar(groups[i].key, groups[j].key, vec(vecs, i), vec(vecs, j)) {
				union(i, j)
			}
		}
	}
	clusters := map[int][]candidate{}
	var roots []int
	for i, g := range groups {
		r := find(i)
		if _, ok := clusters[r]; !ok {
			roots = append(roots, r)
		}
		clusters[r] = append(clusters[r], g.cands...)
	}

	out := make([]Type, 0, len(roots))
	for _, r := range roots {
		var ex *templatepack.ObjectType
		if exist[r] >= 0 {
			ex = &opt.Existing[exist[r]]
		}
		t := mergeCluster(clusters[r], ex)
		if t.Confidence < opt.MinConfidence {
			continue
		}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b Type) int {
		if c := cmp.Compare(b.Frequency, a.Frequency); c != 0 {
			return c
		}
		return strings.Compare(a.TypeName, b.TypeName)
	})
	return out, nil
}

// mergeCluster merges the candidates of one cluster; ex is the installed
// type they correspond to, if any.
func mergeCluster(cands []candidate, ex *templatepack.ObjectType) Type {
	name := keptName(cands)
	t := Type{TypeName: name, Description: bestDescription(cands)}
	if ex != nil {
		t.TypeName, t.MatchesExistingType = ex.Name, ex.Name
		if t.Description == "" {
			t.Description = ex.Description
		}
	}
	t.Properties, t.RequiredProperties = mergeProperties(cands, ex)

	// Instances, de-duplicated by (folded name, document).
	type ikey struct {
		name string
		doc  uuid.UUID
	}
	seen := map[ikey]int{}
	var ins []Instance
	given := 0
	var wsum, csum float64
	for _, c := range cands {
		given = max(given, c.t.Frequency)
		w := float64(max(1, c.docs))
		wsum += w
		csum += w * clamp01(c.t.Confidence)
		for _, in := range c.instances {
			k := ikey{foldName(in.Name), in.DocumentID}
			if i, ok := seen[k]; ok {
				if instanceLess(in, ins[i]) {
					ins[i] = in
				}
				continue
			}
			seen[k] = len(ins)
			ins = append(ins, in)
		}
	}
	var carried []uuid.UUID
	for _, c := range cands {
		carried = append(carried, c.t.Documents...)
	}
	docs := documentsOf(ins, carried)
	t.Documents = sortedDocuments(docs)
	t.Frequency = max(given, len(docs))
	t.ExampleInstances = pickExamples(ins)
	if wsum > 0 {
		t.Confidence = math.Round(csum/wsum*100) / 100
	}
	return t
}

func instanceLess(a, b Instance) bool {
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Quote < b.Quote
}

func clamp01(f float64) float64 { return min(1, max(0, f)) }

// documentsOf is the set of documents of instances, with carried (the
// documents a candidate merged before came with).
func documentsOf(ins []Instance, carried []uuid.UUID) map[uuid.UUID]bool {
	out := map[uuid.UUID]bool{}
	for _, d := range carried {
		out[d] = true
	}
	for _, in := range ins {
		out[in.DocumentID] = true
	}
	return out
}

// pickExamples takes at most ExamplesMax instances round-robin over their
// documents (more instances first, then by id), distinct names first,
// and sorts them by document, name and quote.
func pickExamples(ins []Instance) []Instance {
	byDoc := map[uuid.UUID][]Instance{}
	var docs []uuid.UUID
	for _, in := range ins {
		if _, ok := byDoc[in.DocumentID]; !ok {
			docs = append(docs, in.DocumentID)
		}
		byDoc[in.DocumentID] = append(byDoc[in.DocumentID], in)
	}
	for _, d := range docs {
		slices.SortFunc(byDoc[d], func(a, b Instance) int {
			return cmp.Or(strings.Compare(foldName(a.Name), foldName(b.Name)), strings.Compare(a.Name, b.Name), strings.Compare(a.Quote, b.Quote))
		})
	}
	slices.SortFunc(docs, func(a, b uuid.UUID) int {
		return cmp.Or(cmp.Compare(len(byDoc[b]), len(byDoc[a])), strings.Compare(a.String(), b.String()))
	})
	out := []Instance{}
	used := map[Instance]bool{}
	names := map[string]bool{}
	for _, distinct := range []bool{true, false} {
		for progress := true; progress && len(out) < ExamplesMax; {
			progress = false
			for _, d := range docs {
				if len(out) == ExamplesMax {
					break
				}
				for _, in := range byDoc[d] {
					if used[in] || (distinct && names[foldName(in.Name)]) {
						continue
					}
					used[in], names[foldName(in.Name)] = true, true
					out = append(out, in)
					progress = true
					break
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Instance) int {
		return cmp.Or(strings.Compare(a.DocumentID.String(), b.DocumentID.String()), strings.Compare(a.Name, b.Name), strings.Compare(a.Quote, b.Quote))
	})
	return out
}

// keptName is the spelling most candidates used (ties: the ordinally
// smallest).
func keptName(cands []candidate) string {
	counts := map[string]int{}
	for _, c := range cands {
		counts[strings.TrimSpace(c.t.TypeName)]++
	}
	return mostUsed(counts)
}

// mostUsed is the key with the highest count, ties to the smallest.
func mostUsed(counts map[string]int) string {
	best, n := "", 0
	for s, c := range counts {
		if c > n || (c == n && s < best) {
			best, n = s, c
		}
	}
	return best
}

// bestDescription is the description of the most confident candidate
// (ties: the longest, then the smallest).
func bestDescription(cands []candidate) string {
	best, conf := "", -1.0
	for _, c := range cands {
		d := strings.TrimSpace(c.t.Description)
		if d == "" {
			continue
		}
		if c.t.Confidence > conf || (c.t.Confidence == conf && (len(d) > len(best) || (len(d) == len(best) && d < best))) {
			best, conf = d, c.t.Confidence
		}
	}
	return best
}

// mergeProperties unions the candidates' properties and reconciles their
// types; required are those every candidate requires (a property that
// some candidates lack is optional, however many of the others require
// it).
func mergeProperties(cands []candidate, ex *templatepack.ObjectType) (map[string]any, []string) {
	type prop struct {
		spellings map[string]int
		types     []map[string]any
		descs     []candidate // description carriers, confidence from the type
		req       int
	}
	exSpelling := map[string]string{}
	if ex != nil {
		if ps, ok := ex.Schema["properties"].(map[string]any); ok {
			for n := range ps {
				exSpelling[PropertyKey(n)] = n
			}
		}
	}
	props := map[string]*prop{}
	for _, c := range cands {
		required := map[string]bool{}
		for _, r := range c.t.RequiredProperties {
			required[PropertyKey(r)] = true
		}
		for n, v := range c.t.Properties {
			k := PropertyKey(n)
			if k == "" {
				continue
			}
			p := props[k]
			if p == nil {
				p = &prop{spellings: map[string]int{}}
				props[k] = p
			}
			p.spellings[n]++
			if required[k] {
				p.req++
			}
			s, _ := v.(map[string]any)
			p.types = append(p.types, s)
			d, _ := s["description"].(string)
			p.descs = append(p.descs, candidate{t: Type{Description: d, Confidence: c.t.Confidence}})
		}
	}
	out := map[string]any{}
	required := []string{}
	for k, p := range props {
		name := exSpelling[k]
		if name == "" {
			name = mostUsed(p.spellings)
		}
		schema := reconcile(p.types)
		if d := bestDescription(p.descs); d != "" {
			schema["description"] = d
		}
		out[name] = schema
		if p.req == len(cands) {
			required = append(required, name)
		}
	}
	slices.Sort(required)
	return out, required
}

// reconcile merges property schemas into {type, items?}.
func reconcile(schemas []map[string]any) map[string]any {
	var types []string
	var items []map[string]any
	for _, s := range schemas {
		t := schemaTypeOf(s)
		if t == "" {
			continue
		}
		types = append(types, t)
		if t == "array" {
			it, _ := s["items"].(map[string]any)
			items = append(items, it)
		}
	}
	t := reconcileTypes(types)
	out := map[string]any{"type": t}
	if t == "array" {
		out["items"] = reconcile(items)
	}
	return out
}

// reconcileTypes: one type stays; integer with number is number; any
// other mix, or none, is string.
func reconcileTypes(types []string) string {
	set := map[string]bool{}
	for _, t := range types {
		set[t] = true
	}
	switch {
	case len(set) == 1:
		for t := range set {
			return t
		}
	case len(set) == 2 && set["integer"] && set["number"]:
		return "number"
	}
	return "string"
}

// schemaTypeOf is a schema's type: the string, or the first non-null of a
// list; "" when absent or not a JSON Schema type.
func schemaTypeOf(s map[string]any) string {
	var t string
	switch v := s["type"].(type) {
	case string:
		t = v
	case []any:
		for _, x := range v {
			if str, ok := x.(string); ok && str != "null" {
				t = str
				break
			}
		}
	case []string:
		for _, str := range v {
			if str != "null" {
				t = str
				break
			}
		}
	}
	switch t {
	case "string", "number", "integer", "boolean", "array", "object":
		return t
	}
	return ""
}

// matchExisting returns the index of the installed type the key (and
// embedding) corresponds to, or -1: equal key first, then synonyms, then
// the most similar near-duplicate (ties: the first).
func matchExisting(key string, v []float32, existing []templatepack.ObjectType, existVecs [][]float32) int {
	for i, e := range existing {
		if NameKey(e.Name) == key {
			return i
		}
	}
	for i, e := range existing {
		if synonyms(NameKey(e.Name), key) {
			return i
		}
	}
	best, bestSim := -1, 0.0
	for i, e := range existing {
		var ev []float32
		if existVecs != nil {
			ev = existVecs[i]
		}
		ek := NameKey(e.Name)
		if ek == "" || !similar(key, ek, v, ev) {
			continue
		}
		if s := stringSimilarity(key, ek); s > bestSim {
			best, bestSim = i, s
		}
	}
	return best
}

// synonyms reports whether two name keys are listed in one synonym set
// (its words compared by their keys too).
func synonyms(a, b string) bool {
	for _, set := range synonymSets() {
		in := func(k string) bool { return slices.ContainsFunc(set, func(w string) bool { return NameKey(w) == k }) }
		if in(a) && in(b) {
			return true
		}
	}
	return false
}

// similar reports whether two name keys (with their embeddings, nil when
// none) are near-duplicates.
func similar(a, b string, va, vb []float32) bool {
	s := stringSimilarity(a, b)
	if s >= nameSimilarityMin {
		return true
	}
	if va == nil || vb == nil {
		return false
	}
	c := cosine(va, vb)
	return (s >= nameSimilarityEmbedMin && c >= descriptionCosineMin) || c >= descriptionCosineSameMin
}

// stringSimilarity is 1 - Levenshtein distance / the longer length, on
// runes.
func stringSimilarity(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	n := max(len(ra), len(rb))
	if n == 0 {
		return 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[len(rb)])/float64(n)
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// foldName is a name lower-cased with whitespace collapsed.
func foldName(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// NameKey is the normalised form of a type name (typename.Key):
// "Software_Projects", "software project" and "SoftwareProject" give
// "softwareproject".
func NameKey(name string) string { return typename.Key(name) }

// PropertyKey is the normalised form of a property or relation name
// (typename.PropertyKey): "first_name" and "firstName" give "firstname".
func PropertyKey(name string) string { return typename.PropertyKey(name) }

// MergeRelationships maps the relationships' ends onto types and merges
// them:
//
//   - An end resolves to a merged type (types; the caller may append the
//     installed object types as Type values with only TypeName set so that
//     relationships to installed types discovery did not find are kept)
//     or to an end type of an installed relationship type: equal NameKey
//     first, then a synonym, then the most similar name (similarity at
//     least 0.9). Relationships with an end that resolves to nothing, or
//     without a relation type, are dropped.
//   - Relationships are de-duplicated by (source, target, PropertyKey of
//     the relation); the relation's spelling is the installed
//     relationship type's of that key when there is one, else the most
//     used (ties: the smallest).
//   - Frequency is the sum of the merged relationships' frequencies (each
//     at least 1); confidence their mean weighted by those frequencies.
//   - Cardinality: equal values stay; one_to_one with one_to_many is
//     one_to_many; any other mix, or none valid, is many_to_many.
//   - Description: the most confident (ties: the longest, then the
//     smallest).
//   - Ordered by frequency (descending), then source, relation, target.
func MergeRelationships(rels []Relationship, types []Type, existing []templatepack.RelationshipType) []Relationship {
	var names []string
	for _, t := range types {
		names = append(names, t.TypeName)
	}
	for _, r := range existing {
		for _, n := range []string{r.SourceType, r.TargetType} {
			if n != "" && n != "*" {
				names = append(names, n)
			}
		}
	}
	resolve := func(n string) string {
		k := NameKey(n)
		if k == "" {
			return ""
		}
		for _, x := range names {
			if NameKey(x) == k {
				return x
			}
		}
		for _, x := range names {
			if synonyms(NameKey(x), k) {
				return x
			}
		}
		best, bestSim := "", 0.0
		for _, x := range names {
			if s := stringSimilarity(NameKey(x), k); s >= nameSimilarityMin && s > bestSim {
				best, bestSim = x, s
			}
		}
		return best
	}
	exRel := map[string]string{}
	for _, r := range existing {
		if k := PropertyKey(r.Name); k != "" {
			if _, ok := exRel[k]; !ok {
				exRel[k] = r.Name
			}
		}
	}
	type acc struct {
		source, target string
		spellings      map[string]int
		cards          []string
		descs          []candidate
		freq           int
		wconf          float64
	}
	byKey := map[string]*acc{}
	var keys []string
	for _, r := range rels {
		src, tgt, rk := resolve(r.SourceType), resolve(r.TargetType), PropertyKey(r.RelationType)
		if src == "" || tgt == "" || rk == "" {
			continue
		}
		k := src + "\x00" + tgt + "\x00" + rk
		a := byKey[k]
		if a == nil {
			a = &acc{source: src, target: tgt, spellings: map[string]int{}}
			byKey[k] = a
			keys = append(keys, k)
		}
		w := max(1, r.Frequency)
		a.spellings[strings.TrimSpace(r.RelationType)]++
		a.cards = append(a.cards, r.Cardinality)
		a.descs = append(a.descs, candidate{t: Type{Description: r.Description, Confidence: r.Confidence}})
		a.freq += w
		a.wconf += float64(w) * clamp01(r.Confidence)
	}
	out := make([]Relationship, 0, len(keys))
	for _, k := range keys {
		a := byKey[k]
		rel := exRel[strings.SplitN(k, "\x00", 3)[2]]
		if rel == "" {
			rel = mostUsed(a.spellings)
		}
		out = append(out, Relationship{
			SourceType:   a.source,
			TargetType:   a.target,
			RelationType: rel,
			Description:  bestDescription(a.descs),
			Cardinality:  reconcileCardinality(a.cards),
			Confidence:   math.Round(a.wconf/float64(a.freq)*100) / 100,
			Frequency:    a.freq,
		})
	}
	slices.SortFunc(out, relationshipOrder)
	return out
}

// relationshipOrder orders relationships by frequency (descending), then
// source, relation, target.
func relationshipOrder(a, b Relationship) int {
	return cmp.Or(cmp.Compare(b.Frequency, a.Frequency), strings.Compare(a.SourceType, b.SourceType),
		strings.Compare(a.RelationType, b.RelationType), strings.Compare(a.TargetType, b.TargetType))
}

// reconcileCardinality: equal values stay, one_to_one with one_to_many is
// one_to_many, anything else many_to_many. Invalid values are ignored.
func reconcileCardinality(cards []string) string {
	set := map[string]bool{}
	for _, c := range cards {
		switch c {
		case OneToOne, OneToMany, ManyToMany:
			set[c] = true
		}
	}
	switch {
	case len(set) == 1:
		for c := range set {
			return c
		}
	case len(set) == 2 && set[OneToOne] && set[OneToMany]:
		return OneToMany
	}
	return ManyToMany
}

// Same reports whether two type lists are equal (as JSON, a nil slice or
// map equal to an empty one): a refinement that changed nothing.
func Same(a, b []Type) bool {
	return bytes.Equal(canonicalJSON(a), canonicalJSON(b))
}

func canonicalJSON(ts []Type) []byte {
	out := make([]Type, len(ts))
	for i, t := range ts {
		if t.Properties == nil {
			t.Properties = map[string]any{}
		}
		if t.RequiredProperties == nil {
			t.RequiredProperties = []string{}
		}
		if t.ExampleInstances == nil {
			t.ExampleInstances = []Instance{}
		}
		out[i] = t
	}
	b, err := json.Marshal(out)
	if err != nil {
		// Properties that cannot be marshalled compare by their
		// formatting.
		return fmt.Appendf(nil, "%#v", out)
	}
	return b
}
