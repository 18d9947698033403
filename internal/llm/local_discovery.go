package llm

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/graphmill/graphmill/internal/typename"
)

// The local provider's schema discovery: the three discovery purposes in
// the wire shapes written on PurposeDiscovery. Everything is ordered by
// document and position, so the same request gives the same bytes.
//
// PurposeDiscovery proposes, per batch, the types these detectors find in
// each <document> (instances quote the document verbatim: the sentence,
// table row or list line they were found in, at most quoteMax bytes of it):
//
//   - Named entities (analyse): Person, Organization, Location, Event and
//     Concept, with the properties of classProperties; confidence 0.5,
//     +0.1 per further distinct name, +0.02 per further mention, at most
//     0.9.
//   - Tables (rows of cells separated by '|', a header row first): one
//     type per table, named by the header of the first column, or by the
//     heading before the table (three words at most) when that header is
//     generic (Name, Title, ID, ...); "Environment Variable" when most
//     first cells are UPPER_SNAKE names and the document speaks of the
//     environment. The other columns are its properties (integer, number
//     or boolean when every value of the column is one, else string;
//     required when no value is empty), the first cells its instances (a
//     command line without its options); confidence 0.6, +0.05 per
//     further row, at most 0.85.
//   - Definition lists (two or more consecutive lines "Term: definition"
//     or "Term - definition", bullets allowed, a definition of three words
//     or more): a type named by the heading before them ("Term" when there
//     is none or it is Glossary, Definitions, ...), property definition;
//     confidence 0.55, +0.05 per further term, at most 0.8.
//   - Name lists (three or more consecutive bullet lines of one to four
//     words, capitalised, without punctuation) under a heading of at most
//     three words that is a plural ("Sponsors", "Supported formats"): a
//     type named by the heading's singular; confidence 0.55, +0.05 per
//     item, at most 0.75.
//   - Patterns (patternTypes): HTTP endpoints ("GET /v3/accounts/{id}",
//     Endpoint, properties method and path), source files
//     ("internal/auth/rule.go", by the extensions of programming
//     languages; Source File, properties path and language) and HTTP
//     headers ("X-Request-ID", "the Retry-After header"; HTTP Header);
//     confidence 0.6, +0.05 per further one, at most 0.85.
//   - UPPER_SNAKE names in prose: Error Code when it starts with ERR;
//     else Environment Variable when a table lists it as one or the
//     sentence speaks of the environment or variables; else Error Code
//     when it speaks of an error or a code; else Environment Variable when
//     the name shares its first part with one (of a sentence or a table)
//     that is; an all-caps word listed with one ("RATE_LIMITED or
//     INTERNAL") is of its kind; confidence as patterns.
//
// Entities come last: a Concept whose name a structural type has in the
// same document is left to it.
//
// An instance is listed once per document (by case-folded name), at most
// instancesPerDocumentMax per type and document.
//
// PurposeDiscoveryRefine returns the candidate list unchanged: the local
// provider has nothing to add to its own merge, so a job's iterations
// stop after the first.
//
// PurposeDiscoveryRelationships: the instances of each given type (those
// listed, and those the detectors above find in the documents for a type
// of the same normalised name or, for entity classes, a synonym) are
// looked up, as written, in every sentence (a table row is one); two
// instances of different types in one sentence are a co-occurrence. The
// relation is relRules' for two entity classes (cue words between the
// mentions choose it; none in table rows), else the first relation verb
// between the mentions outside tables (USES, CONTAINS, ...), else
// RELATED_TO; the source is the first mentioned unless the rule swaps
// them, and for RELATED_TO the type given first. Cardinality comes from
// the instance pairs seen: one_to_one when no instance is paired with
// two others, one_to_many when only sources are (one source, several
// targets), else many_to_many (the vocabulary has no many_to_one; a
// RELATED_TO seen many to one is turned round to one_to_many). Ordered
// by confidence (descending), then source, relation and target.
// Confidence 0.5, +0.1 per further sentence, +0.15 with a cue word, at
// most 0.9 (0.7 for RELATED_TO).

const (
	quoteMax                = 300
	instancesPerDocumentMax = 20
)

type discoveryProperty struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

type discoveryInstance struct {
	Name       string `json:"name"`
	Quote      string `json:"quote"`
	DocumentID string `json:"document_id"`
}

type discoveryType struct {
	TypeName           string                       `json:"type_name"`
	Description        string                       `json:"description"`
	Properties         map[string]discoveryProperty `json:"properties"`
	RequiredProperties []string                     `json:"required_properties"`
	Instances          []discoveryInstance          `json:"instances"`
	Confidence         float64                      `json:"confidence"`
}

type discoveryTypes struct {
	Types []discoveryType `json:"types"`
}

type discoveryRelationship struct {
	SourceType   string  `json:"source_type"`
	TargetType   string  `json:"target_type"`
	RelationType string  `json:"relation_type"`
	Description  string  `json:"description"`
	Cardinality  string  `json:"cardinality"`
	Confidence   float64 `json:"confidence"`
}

type discoveryRelationships struct {
	Relationships []discoveryRelationship `json:"relationships"`
}

// sourceDocument is one <document> block of a discovery request (its
// name attribute is not used).
type sourceDocument struct {
	id, text string
}

// parseDocuments reads the <document id="..." name="...">...</document>
// blocks of text (attribute values quoted with HTML entities or Go
// escapes); text without any is one document without an id.
func parseDocuments(text string) []sourceDocument {
	var out []sourceDocument
	rest := text
	for {
		i := strings.Index(rest, "<document")
		if i < 0 {
			break
		}
		attrs, n, ok := parseTag(rest[i+len("<document"):])
		if !ok {
			rest = rest[i+len("<document"):]
			continue
		}
		body := rest[i+len("<document")+n:]
		body = strings.TrimPrefix(strings.TrimPrefix(body, "\r"), "\n")
		end := strings.Index(body, "</document>")
		last := end < 0
		if last {
			end = len(body)
		}
		out = append(out, sourceDocument{
			id:   attrs["id"],
			text: strings.TrimSuffix(strings.TrimSuffix(body[:end], "\n"), "\r"),
		})
		if last {
			break
		}
		rest = body[end+len("</document>"):]
	}
	if len(out) == 0 && strings.TrimSpace(text) != "" {
		out = []sourceDocument{{text: text}}
	}
	return out
}

// parseTag reads the attributes of a tag from just after its name to its
// '>': name="value" pairs separated by spaces. n is the length read.
func parseTag(s string) (attrs map[string]string, n int, ok bool) {
	attrs = map[string]string{}
	i := 0
	for {
		for i < len(s) && asciiSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return nil, 0, false
		}
		if s[i] == '>' {
			return attrs, i + 1, true
		}
		j := i
		for j < len(s) && (isWordRune(rune(s[j])) || s[j] == '-' || s[j] == '_') && s[j] < utf8.RuneSelf {
			j++
		}
		if j == i || j+1 >= len(s) || s[j] != '=' || s[j+1] != '"' {
			return nil, 0, false
		}
		name := s[i:j]
		k, escaped := j+2, false
		for k < len(s) && s[k] != '"' {
			if s[k] == '\\' {
				escaped = true
				k++
			}
			k++
		}
		if k >= len(s) {
			return nil, 0, false
		}
		raw := s[j+2 : k]
		v := html.UnescapeString(raw)
		if escaped {
			if u, err := strconv.Unquote(`"` + raw + `"`); err == nil {
				v = u
			}
		}
		attrs[name] = v
		i = k + 1
	}
}

// quoteAt is the sentence s of text, verbatim without surrounding space,
// or at most quoteMax bytes of it around offset at, cut at spaces.
func quoteAt(text string, s span, at int) string {
	lo, hi := s.start, s.end
	for lo < hi && asciiSpace(text[lo]) {
		lo++
	}
	for hi > lo && asciiSpace(text[hi-1]) {
		hi--
	}
	if hi-lo <= quoteMax {
		return text[lo:hi]
	}
	from := max(lo, min(at, hi)-quoteMax/3)
	to := min(hi, from+quoteMax)
	if from > lo {
		if k := strings.IndexByte(text[from:to], ' '); k >= 0 && from+k+1 < to {
			from += k + 1
		}
	}
	if to < hi {
		if k := strings.LastIndexByte(text[from:to], ' '); k > 0 {
			to = from + k
		}
	}
	for from < to && !utf8.RuneStart(text[from]) {
		from++
	}
	for to > from && to < len(text) && !utf8.RuneStart(text[to]) {
		to--
	}
	return strings.TrimSpace(text[from:to])
}

func asciiSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}

// sentenceAt is the index of the sentence containing offset p (the last
// one starting at or before it).
func sentenceAt(sentences []span, p int) int {
	i, _ := slices.BinarySearchFunc(sentences, p, func(s span, p int) int {
		if s.start <= p {
			return -1
		}
		return 1
	})
	return max(0, i-1)
}

// typeBuilder gathers one proposed type.
type typeBuilder struct {
	t                 discoveryType
	seen              map[string]bool // document id and folded name
	perDoc            map[string]int
	base, step, limit float64
	extra             float64
}

// proposal gathers the types of one discovery response.
type proposal struct {
	byKey map[string]*typeBuilder
	list  []*typeBuilder
}

func newProposal() *proposal { return &proposal{byKey: map[string]*typeBuilder{}} }

// typ returns the builder of the type name, making it with the given
// description, properties and confidence rule; the properties of a
// later call are added to it (a property's first type wins).
func (p *proposal) typ(name, desc string, props map[string]discoveryProperty, required []string, base, step, limit float64) *typeBuilder {
	key := typename.Key(name)
	b := p.byKey[key]
	if b == nil {
		b = &typeBuilder{
			t:    discoveryType{TypeName: name, Description: desc, Properties: map[string]discoveryProperty{}, RequiredProperties: []string{}, Instances: []discoveryInstance{}},
			seen: map[string]bool{}, perDoc: map[string]int{},
			base: base, step: step, limit: limit,
		}
		b.t.RequiredProperties = append(b.t.RequiredProperties, required...)
		p.byKey[key] = b
		p.list = append(p.list, b)
	}
	for n, pr := range props {
		if _, ok := b.t.Properties[n]; !ok {
			b.t.Properties[n] = pr
		}
	}
	return b
}

// add lists an instance unless its document has it or is full.
func (b *typeBuilder) add(doc sourceDocument, name, quote string) bool {
	name = strings.TrimSpace(name)
	k := doc.id + "\x00" + strings.ToLower(name)
	if name == "" || quote == "" || b.seen[k] || b.perDoc[doc.id] >= instancesPerDocumentMax {
		return false
	}
	b.seen[k] = true
	b.perDoc[doc.id]++
	b.t.Instances = append(b.t.Instances, discoveryInstance{Name: name, Quote: quote, DocumentID: doc.id})
	return true
}

func (p *proposal) output() discoveryTypes {
	out := discoveryTypes{Types: []discoveryType{}}
	for _, b := range p.list {
		if len(b.t.Instances) == 0 {
			continue
		}
		b.t.Confidence = round2(min(b.limit, b.base+b.step*float64(len(b.t.Instances)-1)+b.extra))
		slices.Sort(b.t.RequiredProperties)
		out.Types = append(out.Types, b.t)
	}
	slices.SortStableFunc(out.Types, func(a, b discoveryType) int { return strings.Compare(a.TypeName, b.TypeName) })
	return out
}

// discover is the PurposeDiscovery response for the documents of text.
func discover(text string, lex *lexicon) discoveryTypes {
	p := newProposal()
	for _, doc := range parseDocuments(text) {
		p.document(doc, lex)
	}
	return p.output()
}

// document runs every detector over one document: the structural ones
// first, then the entities (a Concept whose name a structural type has
// in this document, a header or a field, is left to it).
func (p *proposal) document(doc sourceDocument, lex *lexicon) {
	a := analyse(doc.text, lex)
	lines := textLines(doc.text)
	envPrefixes := map[string]bool{}
	mentionsEnv := strings.Contains(strings.ToLower(doc.text), "environment")
	for _, tb := range findTables(lines) {
		p.table(doc, tb, lines, mentionsEnv, envPrefixes)
	}
	p.definitionLists(doc, lines)
	p.nameLists(doc, lines)
	p.patterns(doc, a)
	p.upperSnake(doc, a, envPrefixes)
	structural := slices.Clone(p.list)
	for _, e := range a.entities {
		k := doc.id + "\x00" + strings.ToLower(e.name)
		if e.class == classConcept && slices.ContainsFunc(structural, func(b *typeBuilder) bool { return b.seen[k] }) {
			continue
		}
		desc, props := classProperties(e.class)
		b := p.typ(e.class, desc, props, nil, 0.5, 0.1, 0.9)
		m := e.mentions[0]
		if b.add(doc, e.name, quoteAt(doc.text, a.sentences[m.sentence], m.start)) {
			b.extra += 0.02 * float64(len(e.mentions)-1)
		}
	}
}

// line is one line of a document, without its line break.
type line struct {
	text  string
	start int
}

func textLines(text string) []line {
	var out []line
	start := 0
	for start <= len(text) {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		out = append(out, line{text: strings.TrimRight(text[start:end], "\r"), start: start})
		start = end + 1
	}
	return out
}

// verbatim is the line without surrounding space, as it is in the text.
func (l line) verbatim() string { return strings.TrimSpace(l.text) }

// headingBefore is the text of the nearest line before line i that is a
// block of its own (blank or no line around it), of at most eight words,
// without sentence punctuation at the end (a final colon dropped); "" if
// the block before is not one.
func headingBefore(lines []line, i int) string {
	j := i - 1
	for j >= 0 && strings.TrimSpace(lines[j].text) == "" {
		j--
	}
	// Skip the paragraph lines right before (a lead-in sentence).
	for j >= 0 && strings.TrimSpace(lines[j].text) != "" {
		if j == 0 || strings.TrimSpace(lines[j-1].text) == "" {
			break
		}
		j--
	}
	for ; j >= 0; j-- {
		t := strings.TrimSpace(lines[j].text)
		if t == "" {
			continue
		}
		single := (j == 0 || strings.TrimSpace(lines[j-1].text) == "") && (j+1 >= len(lines) || strings.TrimSpace(lines[j+1].text) == "")
		t = strings.TrimSuffix(strings.TrimLeft(t, "# "), ":")
		if single && t != "" && len(strings.Fields(t)) <= 8 && !strings.ContainsAny(t[len(t)-1:], ".!?;,\"”)") && !strings.Contains(t, "|") {
			return t
		}
		if single {
			// A one-line paragraph that is a sentence: look further up.
			continue
		}
		return ""
	}
	return ""
}

// titleType turns a phrase into a type name: each word capitalised, the
// last singular ("team members" gives "Team Member").
func titleType(phrase string) string {
	words := strings.FieldsFunc(phrase, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' })
	if len(words) == 0 {
		return ""
	}
	last := strings.ToLower(words[len(words)-1])
	if s := typename.Singular(last); s != last {
		words[len(words)-1] = s
	}
	for i, w := range words {
		r, size := utf8.DecodeRuneInString(w)
		words[i] = string(unicode.ToUpper(r)) + w[size:]
	}
	return strings.Join(words, " ")
}

// headingType is the type a heading names: titleType of a heading of
// at most three words, else "".
func headingType(h string) string {
	if len(strings.Fields(h)) > 3 {
		return ""
	}
	return titleType(h)
}

// propertyName is a header as a snake_case property name.
func propertyName(h string) string {
	return strings.Join(typename.Words(h), "_")
}

// table is a run of lines of '|'-separated cells: header first.
type table struct {
	header []string
	rows   [][]string
	lines  []int // line index of each row
	first  int   // line index of the header
}

// cells splits a table line, or returns nil.
func cells(l string) []string {
	t := strings.TrimSpace(l)
	if !strings.Contains(t, "|") {
		return nil
	}
	piped := strings.HasPrefix(t, "|")
	t = strings.TrimSuffix(strings.TrimPrefix(t, "|"), "|")
	var cs []string
	if piped {
		cs = strings.Split(t, "|")
	} else {
		cs = strings.Split(t, " | ")
	}
	if len(cs) < 2 {
		return nil
	}
	for i := range cs {
		cs[i] = strings.Trim(strings.TrimSpace(cs[i]), "`")
	}
	return cs
}

var tableRule = regexp.MustCompile(`^:?-{2,}:?$`)

func separatorRow(cs []string) bool {
	for _, c := range cs {
		if !tableRule.MatchString(c) {
			return false
		}
	}
	return true
}

func findTables(lines []line) []table {
	var out []table
	for i := 0; i < len(lines); {
		h := cells(lines[i].text)
		if h == nil {
			i++
			continue
		}
		tb := table{header: h, first: i}
		j := i + 1
		for ; j < len(lines); j++ {
			cs := cells(lines[j].text)
			if cs == nil {
				break
			}
			if separatorRow(cs) {
				continue
			}
			if len(cs) != len(h) {
				break
			}
			tb.rows = append(tb.rows, cs)
			tb.lines = append(tb.lines, j)
		}
		if len(tb.rows) > 0 {
			out = append(out, tb)
		}
		i = j
	}
	return out
}

// genericHeaders are first-column headers that name no type.
func genericHeader(h string) bool {
	switch strings.ToLower(strings.TrimSpace(h)) {
	case "", "name", "title", "id", "key", "item", "value", "entry", "label", "#", "no", "no.":
		return true
	}
	return false
}

var upperSnakeRe = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)

// envNames are the UPPER_SNAKE names of a cell ("A_B, A_C").
func envNames(cell string) []string {
	var out []string
	for _, part := range strings.Split(cell, ",") {
		part = strings.Trim(strings.TrimSpace(part), "`")
		if m := upperSnakeRe.FindString(part); m != "" && m == part {
			out = append(out, part)
		}
	}
	return out
}

// table proposes the type of one table. envPrefixes gets the
// environment variables it lists and their first parts.
func (p *proposal) table(doc sourceDocument, tb table, lines []line, mentionsEnv bool, envPrefixes map[string]bool) {
	env := 0
	for _, r := range tb.rows {
		if len(envNames(r[0])) > 0 {
			env++
		}
	}
	h0 := tb.header[0]
	isEnv := 2*env > len(tb.rows) && (mentionsEnv || strings.Contains(strings.ToLower(h0), "variable"))
	var name, desc string
	switch {
	case isEnv:
		name, desc = "Environment Variable", "A variable of the environment that configures the software."
	case genericHeader(h0):
		name = headingType(headingBefore(lines, tb.first))
	default:
		name = titleType(h0)
	}
	if name == "" {
		return
	}
	if desc == "" {
		desc = fmt.Sprintf("An entry of a table with the columns %s.", strings.Join(tb.header, ", "))
	}
	props := map[string]discoveryProperty{}
	var required []string
	for c := 1; c < len(tb.header); c++ {
		pn := propertyName(tb.header[c])
		if pn == "" {
			continue
		}
		var values []string
		full := true
		for _, r := range tb.rows {
			if r[c] == "" {
				full = false
				continue
			}
			values = append(values, r[c])
		}
		props[pn] = discoveryProperty{Type: columnType(values), Description: fmt.Sprintf("The %s column of the table.", tb.header[c])}
		if full {
			required = append(required, pn)
		}
	}
	b := p.typ(name, desc, props, required, 0.6, 0.05, 0.85)
	for i, r := range tb.rows {
		quote := lines[tb.lines[i]].verbatim()
		names := []string{cellName(r[0])}
		if isEnv {
			names = envNames(r[0])
			for _, n := range names {
				envPrefixes[strings.SplitN(n, "_", 2)[0]] = true
				envPrefixes[n] = true
			}
		}
		for _, n := range names {
			b.add(doc, n, quote)
		}
	}
}

var optionRe = regexp.MustCompile(` (?:--?[A-Za-z]|\[|<)`)

// cellName is a first cell as an instance name: a command line without
// its options ("tool run --flag X [--other Y]" gives "tool run").
func cellName(c string) string {
	if r, _ := utf8.DecodeRuneInString(c); !unicode.IsLower(r) {
		return c
	}
	if loc := optionRe.FindStringIndex(c); loc != nil {
		return strings.TrimSpace(c[:loc[0]])
	}
	return c
}

var (
	integerRe = regexp.MustCompile(`^-?\d+$`)
	numberRe  = regexp.MustCompile(`^-?\d+(\.\d+)?$`)
)

// columnType is integer, number or boolean when every value is one, else
// string.
func columnType(values []string) string {
	if len(values) == 0 {
		return "string"
	}
	all := func(ok func(string) bool) bool {
		return !slices.ContainsFunc(values, func(v string) bool { return !ok(v) })
	}
	switch {
	case all(integerRe.MatchString):
		return "integer"
	case all(numberRe.MatchString):
		return "number"
	case all(func(v string) bool {
		switch strings.ToLower(v) {
		case "true", "false", "yes", "no":
			return true
		}
		return false
	}):
		return "boolean"
	}
	return "string"
}

var (
	bulletRe     = regexp.MustCompile(`^\s*(?:[-*•]|\d+[.)])\s+`)
	definitionRe = regexp.MustCompile(`^([\p{L}\p{N}][^:|]{0,59}?)\s*(?::|\s[-–—]\s)\s*(\S.*)$`)
)

// glossaryHeading reports whether a heading names a list of terms.
func glossaryHeading(h string) bool {
	switch strings.ToLower(h) {
	case "", "glossary", "definitions", "terms", "terminology", "vocabulary", "key terms", "key concepts":
		return true
	}
	return false
}

// definitionLists proposes the types of runs of "Term: definition" lines.
func (p *proposal) definitionLists(doc sourceDocument, lines []line) {
	type def struct {
		term string
		line int
	}
	flush := func(run []def) {
		if len(run) < 2 {
			return
		}
		h := headingBefore(lines, run[0].line)
		name := "Term"
		if !glossaryHeading(h) {
			name = headingType(h)
		}
		if name == "" {
			return
		}
		b := p.typ(name, "A term defined in the documents.", map[string]discoveryProperty{
			"definition": {Type: "string", Description: "What the term means"},
		}, []string{"definition"}, 0.55, 0.05, 0.8)
		for _, d := range run {
			b.add(doc, d.term, lines[d.line].verbatim())
		}
	}
	var run []def
	for i, l := range lines {
		t := bulletRe.ReplaceAllString(l.text, "")
		m := definitionRe.FindStringSubmatch(strings.TrimSpace(t))
		ok := m != nil && len(strings.Fields(m[1])) <= 5 && len(strings.Fields(m[2])) >= 3 && !strings.ContainsAny(m[1], ".!?()")
		if !ok {
			flush(run)
			run = nil
			continue
		}
		run = append(run, def{strings.TrimSpace(m[1]), i})
	}
	flush(run)
}

// nameLists proposes the types of bullet lists of names under a plural
// heading.
func (p *proposal) nameLists(doc sourceDocument, lines []line) {
	flush := func(run []int) {
		if len(run) < 3 {
			return
		}
		h := headingBefore(lines, run[0])
		words := strings.Fields(h)
		if len(words) == 0 {
			return
		}
		last := strings.ToLower(words[len(words)-1])
		if typename.Singular(last) == last {
			return
		}
		name := headingType(h)
		if name == "" {
			return
		}
		b := p.typ(name, fmt.Sprintf("One of the %s listed in the documents.", strings.ToLower(h)), nil, nil, 0.55, 0.05, 0.75)
		for _, i := range run {
			b.add(doc, strings.TrimSpace(bulletRe.ReplaceAllString(lines[i].text, "")), lines[i].verbatim())
		}
	}
	var run []int
	for i, l := range lines {
		if !bulletRe.MatchString(l.text) || !nameItem(strings.TrimSpace(bulletRe.ReplaceAllString(l.text, ""))) {
			flush(run)
			run = nil
			continue
		}
		run = append(run, i)
	}
	flush(run)
}

// nameItem: one to four words, the first capitalised (or a digit), no
// punctuation but inner hyphens, dots and ampersands.
func nameItem(s string) bool {
	words := strings.Fields(s)
	if len(words) == 0 || len(words) > 4 {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s)
	if !unicode.IsUpper(r) && !unicode.IsDigit(r) {
		return false
	}
	for _, c := range s {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && !unicode.IsSpace(c) && !strings.ContainsRune("-.&'", c) {
			return false
		}
	}
	return !strings.HasSuffix(s, ".")
}

var (
	endpointRe   = regexp.MustCompile(`\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(/(?:[^\s,;()` + "`" + `"']*[^\s,;()` + "`" + `"'.:])?)`)
	sourceFileRe = regexp.MustCompile(`(?:\b|^)((?:[\w.-]+/)*[\w-]+(?:[\w.-]*[\w-])?\.(?:go|py|js|mjs|ts|tsx|jsx|java|kt|rs|c|h|cc|cpp|hpp|cs|rb|php|swift|scala|sql|sh|proto))\b`)
	headerRe     = regexp.MustCompile(`\b(X-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)\b|\b([A-Z][A-Za-z0-9]*(?:-[A-Z][A-Za-z0-9]*)*)\s+header\b`)
)

// patternType is a type whose instances a regular expression finds: the
// instance is the text of the first group that matched, or with whole,
// the whole match.
type patternType struct {
	re                *regexp.Regexp
	whole             bool
	name, description string
	props             map[string]discoveryProperty
	required          []string
}

// patternTypes are the types found by pattern: HTTP endpoints, source
// files and HTTP headers.
func patternTypes() []patternType {
	str := func(d string) discoveryProperty { return discoveryProperty{Type: "string", Description: d} }
	return []patternType{
		{
			re: endpointRe, whole: true, name: "Endpoint", description: "An HTTP endpoint of an API: a method and a path.",
			props:    map[string]discoveryProperty{"method": str("HTTP method"), "path": str("URL path, with its parameters")},
			required: []string{"method", "path"},
		},
		{
			re: sourceFileRe, name: "Source File", description: "A file of source code.",
			props:    map[string]discoveryProperty{"path": str("Path of the file in its repository"), "language": str("Programming language, by the file's extension")},
			required: []string{"path"},
		},
		{
			re: headerRe, name: "HTTP Header", description: "A header of HTTP requests or responses.",
			props: map[string]discoveryProperty{"value": str("What the header carries")},
		},
	}
}

// patterns proposes the pattern types found in a document.
func (p *proposal) patterns(doc sourceDocument, a *analysis) {
	if len(a.sentences) == 0 {
		return
	}
	for _, pt := range patternTypes() {
		ms := pt.re.FindAllStringSubmatchIndex(doc.text, -1)
		if len(ms) == 0 {
			continue
		}
		b := p.typ(pt.name, pt.description, pt.props, pt.required, 0.6, 0.05, 0.85)
		for _, m := range ms {
			start, end := m[0], m[1]
			for g := 2; !pt.whole && g < len(m); g += 2 {
				if m[g] >= 0 {
					start, end = m[g], m[g+1]
					break
				}
			}
			b.add(doc, strings.Join(strings.Fields(doc.text[start:end]), " "), quoteAt(doc.text, a.sentences[sentenceAt(a.sentences, start)], start))
		}
	}
}

// capsRe finds all-caps names of three characters or more.
var capsRe = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b`)

// upperSnake proposes Environment Variable and Error Code from
// UPPER_SNAKE names in sentences, and from the all-caps words listed with
// them ("one of RATE_LIMITED or INTERNAL").
func (p *proposal) upperSnake(doc sourceDocument, a *analysis, envPrefixes map[string]bool) {
	const (
		none = iota
		env
		code
	)
	type found struct {
		name       string
		si         int
		start, end int
		kind       int
	}
	var all [][]*found // per sentence
	for si, s := range a.sentences {
		words := sentenceWords(doc.text[s.start:s.end])
		envWords := words["environment"] || words["env"] || words["variable"] || words["variables"]
		var fs []*found
		for _, m := range capsRe.FindAllStringIndex(doc.text[s.start:s.end], -1) {
			n := doc.text[s.start+m[0] : s.start+m[1]]
			if len(n) < 3 {
				continue
			}
			fs = append(fs, &found{name: n, si: si, start: s.start + m[0], end: s.start + m[1]})
			if envWords && strings.Contains(n, "_") && !strings.HasPrefix(n, "ERR") {
				envPrefixes[strings.SplitN(n, "_", 2)[0]] = true
			}
		}
		all = append(all, fs)
	}
	for _, fs := range all {
		if len(fs) == 0 {
			continue
		}
		s := a.sentences[fs[0].si]
		words := sentenceWords(doc.text[s.start:s.end])
		for _, f := range fs {
			if !strings.Contains(f.name, "_") {
				continue
			}
			switch {
			case strings.HasPrefix(f.name, "ERR"):
				f.kind = code
			case envPrefixes[f.name]:
				f.kind = env
			case words["environment"] || words["env"] || words["variable"] || words["variables"]:
				f.kind = env
			case words["error"] || words["errors"] || words["code"] || words["codes"]:
				f.kind = code
			case envPrefixes[strings.SplitN(f.name, "_", 2)[0]]:
				f.kind = env
			}
		}
		// Coordination: "A, B or C" share the kind of any of them.
		for i := 0; i < len(fs); {
			j := i + 1
			for j < len(fs) {
				switch doc.text[fs[j-1].end:fs[j].start] {
				case ", ", " or ", " and ", ", or ", ", and ":
					j++
					continue
				}
				break
			}
			kind := none
			for _, f := range fs[i:j] {
				kind = max(kind, f.kind)
			}
			for _, f := range fs[i:j] {
				if f.kind == none {
					f.kind = kind
				}
			}
			i = j
		}
	}
	var envB, codeB *typeBuilder
	for _, fs := range all {
		for _, f := range fs {
			quote := quoteAt(doc.text, a.sentences[f.si], f.start)
			switch f.kind {
			case env:
				if envB == nil {
					envB = p.typ("Environment Variable", "A variable of the environment that configures the software.", nil, nil, 0.6, 0.05, 0.85)
				}
				envB.add(doc, f.name, quote)
			case code:
				if codeB == nil {
					codeB = p.typ("Error Code", "A code that names an error condition.", map[string]discoveryProperty{
						"meaning": {Type: "string", Description: "What the error means"},
					}, nil, 0.6, 0.05, 0.85)
				}
				codeB.add(doc, f.name, quote)
			}
		}
	}
}

// refineCandidates is the PurposeDiscoveryRefine response: the list
// unchanged.
func refineCandidates(text string) (any, error) {
	var in struct {
		Types json.RawMessage `json:"types"`
	}
	if err := json.Unmarshal([]byte(text), &in); err != nil {
		return nil, &Error{Kind: ErrorInvalid, Message: "local discovery refine: the text is not a candidate list: " + err.Error()}
	}
	if len(in.Types) == 0 || string(in.Types) == "null" {
		in.Types = json.RawMessage("[]")
	}
	return map[string]json.RawMessage{"types": in.Types}, nil
}

// relationVerb names a relationship by a verb between two mentions, ""
// for none.
func relationVerb(w string) string {
	for _, v := range [][2]string{
		{"USES", "uses use used"},
		{"CONTAINS", "contains contain includes include"},
		{"RETURNS", "returns return returned"},
		{"CREATES", "creates create created"},
		{"RUNS", "runs run ran"},
		{"OWNS", "owns own owned"},
		{"MAINTAINS", "maintains maintain maintained"},
		{"REQUIRES", "requires require required needs"},
		{"CALLS", "calls call called"},
		{"CONFIGURES", "configures configure configured sets"},
		{"HOSTS", "hosts host hosted"},
		{"FUNDS", "funds funded sponsors sponsored"},
	} {
		if slices.Contains(strings.Fields(v[1]), w) {
			return v[0]
		}
	}
	return ""
}

// typeClass is the entity class a type name stands for ("" for none).
func typeClass(name string) string {
	n := normName(name)
	for _, c := range []string{classPerson, classOrganization, classLocation, classEvent, classConcept} {
		if n == normName(c) || slices.Contains(classSynonyms(c), n) {
			return c
		}
	}
	return ""
}

// relationships is the PurposeDiscoveryRelationships response.
func relationships(text string, lex *lexicon) (discoveryRelationships, error) {
	out := discoveryRelationships{Relationships: []discoveryRelationship{}}
	dec := json.NewDecoder(strings.NewReader(text))
	var in discoveryTypes
	if err := dec.Decode(&in); err != nil {
		return out, &Error{Kind: ErrorInvalid, Message: "local discovery relationships: the text does not start with a type list: " + err.Error()}
	}
	docs := parseDocuments(strings.TrimLeft(text[dec.InputOffset():], " \r\n\t"))
	if len(in.Types) < 2 {
		return out, nil
	}
	// The names to look for, per type: the listed instances and the
	// instances the detectors find for the type.
	names := make([]map[string]bool, len(in.Types))
	typeFor := func(name string) int {
		key, class := typename.Key(name), typeClass(name)
		for i, t := range in.Types {
			if typename.Key(t.TypeName) == key {
				return i
			}
		}
		for i, t := range in.Types {
			if class != "" && typeClass(t.TypeName) == class {
				return i
			}
		}
		return -1
	}
	for i, t := range in.Types {
		names[i] = map[string]bool{}
		for _, ins := range t.Instances {
			if n := strings.TrimSpace(ins.Name); n != "" {
				names[i][n] = true
			}
		}
	}
	found := discover(text[dec.InputOffset():], lex)
	for _, t := range found.Types {
		i := typeFor(t.TypeName)
		if i < 0 {
			continue
		}
		for _, ins := range t.Instances {
			names[i][ins.Name] = true
		}
	}
	type occurrence struct {
		typ, start, end int
		name            string
	}
	type acc struct {
		src, tgt, rel string
		count         int
		cued          bool
		quote         string
		targets       map[string]map[string]bool
		sources       map[string]map[string]bool
	}
	byKey := map[string]*acc{}
	var order []*acc
	rules := relRules()
	for _, doc := range docs {
		for _, s := range relationSentences(doc.text, lex) {
			var occ []occurrence
			for ti := range in.Types {
				for n := range names[ti] {
					if at := wordIndex(doc.text[s.start:s.end], n); at >= 0 {
						occ = append(occ, occurrence{ti, s.start + at, s.start + at + len(n), n})
					}
				}
			}
			slices.SortFunc(occ, func(x, y occurrence) int {
				if x.start != y.start {
					return x.start - y.start
				}
				return strings.Compare(x.name, y.name)
			})
			row := strings.Contains(doc.text[s.start:s.end], " | ")
			seen := map[string]bool{}
			for x := 0; x < len(occ); x++ {
				for y := x + 1; y < len(occ); y++ {
					ox, oy := occ[x], occ[y]
					if ox.typ == oy.typ || oy.start < ox.end {
						continue
					}
					var between map[string]bool
					if !row {
						between = sentenceWords(doc.text[ox.end:oy.start])
					}
					src, tgt := ox, oy
					rel, cued := "", false
					cx, cy := typeClass(in.Types[ox.typ].TypeName), typeClass(in.Types[oy.typ].TypeName)
					if cx != "" && cy != "" {
						var swap bool
						rel, swap, cued, _ = pickRelationship(cx, cy, between, nil, rules)
						if swap {
							src, tgt = oy, ox
						}
					} else {
						for _, w := range strings.Fields(strings.ToLower(doc.text[ox.end:oy.start])) {
							if v := relationVerb(strings.Trim(w, ".,;:()\"'")); v != "" && !row {
								rel, cued = v, true
								break
							}
						}
					}
					if rel == "" || rel == relatedTo {
						// RELATED_TO is symmetric: one direction, by the
						// order of the types given.
						rel = relatedTo
						if src.typ > tgt.typ {
							src, tgt = tgt, src
						}
					}
					st, tt := in.Types[src.typ].TypeName, in.Types[tgt.typ].TypeName
					k := st + "\x00" + rel + "\x00" + tt
					r := byKey[k]
					if r == nil {
						r = &acc{src: st, tgt: tt, rel: rel, quote: quoteAt(doc.text, s, ox.start), targets: map[string]map[string]bool{}, sources: map[string]map[string]bool{}}
						byKey[k] = r
						order = append(order, r)
					}
					if !seen[k] {
						seen[k] = true
						r.count++
					}
					r.cued = r.cued || cued
					sn, tn := src.name, tgt.name
					if r.targets[sn] == nil {
						r.targets[sn] = map[string]bool{}
					}
					if r.sources[tn] == nil {
						r.sources[tn] = map[string]bool{}
					}
					r.targets[sn][tn] = true
					r.sources[tn][sn] = true
				}
			}
		}
	}
	for _, r := range order {
		maxT, maxS := 0, 0
		for _, ts := range r.targets {
			maxT = max(maxT, len(ts))
		}
		for _, ss := range r.sources {
			maxS = max(maxS, len(ss))
		}
		card := "many_to_many"
		switch {
		case maxT <= 1 && maxS <= 1:
			card = "one_to_one"
		case maxS <= 1:
			card = "one_to_many"
		case maxT <= 1 && r.rel == relatedTo:
			// Many sources to one target: a symmetric relation is turned
			// round rather than called many_to_many.
			r.src, r.tgt, card = r.tgt, r.src, "one_to_many"
		}
		c := 0.5 + 0.1*float64(r.count-1)
		if r.cued {
			c += 0.15
		}
		c = min(0.9, c)
		if r.rel == relatedTo {
			c = min(c, 0.7)
		}
		out.Relationships = append(out.Relationships, discoveryRelationship{
			SourceType:   r.src,
			TargetType:   r.tgt,
			RelationType: r.rel,
			Description:  fmt.Sprintf("%s %s %s: together in %d sentence(s), first %q", r.src, strings.ToLower(strings.ReplaceAll(r.rel, "_", " ")), r.tgt, r.count, truncate(r.quote, 160)),
			Cardinality:  card,
			Confidence:   round2(c),
		})
	}
	slices.SortStableFunc(out.Relationships, func(a, b discoveryRelationship) int {
		return cmp.Or(cmp.Compare(b.Confidence, a.Confidence), strings.Compare(a.SourceType, b.SourceType),
			strings.Compare(a.RelationType, b.RelationType), strings.Compare(a.TargetType, b.TargetType))
	})
	return out, nil
}

// relationSentences are the sentences of text, each table row ("a | b")
// one of its own.
func relationSentences(text string, lex *lexicon) []span {
	var out []span
	for _, s := range splitSentences(text, lex) {
		if !strings.Contains(text[s.start:s.end], " | ") {
			out = append(out, s)
			continue
		}
		start := s.start
		for start < s.end {
			end := strings.IndexByte(text[start:s.end], '\n')
			if end < 0 {
				end = s.end
			} else {
				end += start + 1
			}
			if strings.TrimSpace(text[start:end]) != "" {
				out = append(out, span{start, end})
			}
			start = end
		}
	}
	return out
}

// wordIndex is the offset of the first whole-word occurrence of w in s,
// or -1.
func wordIndex(s, w string) int {
	if w == "" {
		return -1
	}
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return -1
		}
		i += off
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(w):])
		if (i == 0 || !isWordRune(before)) && (i+len(w) == len(s) || !isWordRune(after)) {
			return i
		}
		off = i + 1
	}
}
