package discovery

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/templatepack"
)

// Text bounds of a request.
const (
	// documentCharsMax bounds the text of one document in a batch.
	documentCharsMax = 24000
	// callTokensDefault is the input budget assumed for a model whose
	// catalog entry gives none.
	callTokensDefault = 32000
	// relationshipCharsMax bounds the documents' text in the
	// relationships call (all documents together).
	relationshipCharsMax = 48000
	// relationshipDocMin is the least text of a document the
	// relationships call sends: with more documents than
	// relationshipCharsMax/relationshipDocMin, only the first ones go.
	relationshipDocMin = 500
	// quoteMax bounds a kept quote.
	quoteMax = 500
)

// callChars is the characters of document text one call may carry for
// a model whose input limit is inputTokens (0: unknown, callTokensDefault):
// three quarters of the limit at four characters a token, the rest
// being left to the instruction, the schema and the installed types.
func callChars(inputTokens int) int {
	if inputTokens <= 0 {
		inputTokens = callTokensDefault
	}
	return inputTokens * 3
}

// relationshipPer is the characters of each of n documents the
// relationships call sends: an equal share of relationshipCharsMax (or
// of budget, when smaller), at least relationshipDocMin.
func relationshipPer(budget, n int) int {
	return max(min(relationshipCharsMax, budget)/max(n, 1), relationshipDocMin)
}

// relationshipCount is how many documents of per characters the
// relationships call sends beside typesChars characters of types: as
// many as fit in relationshipCharsMax and what budget leaves, at least
// one.
func relationshipCount(budget, typesChars, per int) int {
	return max(min(relationshipCharsMax, budget-typesChars)/max(per, 1), 1)
}

// perDocument is the characters of each of n documents a call of budget
// characters carries: their share of the budget, at most
// documentCharsMax.
func perDocument(budget, n int) int {
	return max(min(documentCharsMax, budget/max(n, 1)), 1)
}

const systemInstruction = `You design the schema of a knowledge graph: the kinds of things (object types) and the kinds of links between them (relationship types) that a set of documents talks about. You answer only with JSON in the requested shape. You never invent facts: every instance you give is quoted verbatim from a document.`

// wireType is a type as the discovery purposes exchange it (the
// contract in internal/llm: instances, not example_instances).
type wireType struct {
	TypeName           string         `json:"type_name"`
	Description        string         `json:"description"`
	Properties         map[string]any `json:"properties"`
	RequiredProperties []string       `json:"required_properties"`
	Instances          []wireInstance `json:"instances"`
	Confidence         float64        `json:"confidence"`
}

type wireInstance struct {
	Name       string `json:"name"`
	Quote      string `json:"quote"`
	DocumentID string `json:"document_id"`
}

type wireTypes struct {
	Types []wireType `json:"types"`
}

type wireRelationships struct {
	Relationships []Relationship `json:"relationships"`
}

// toWire is ts as the refine and relationships calls send them.
func toWire(ts []Type) wireTypes {
	out := wireTypes{Types: make([]wireType, len(ts))}
	for i, t := range ts {
		w := wireType{
			TypeName: t.TypeName, Description: t.Description, Properties: t.Properties, RequiredProperties: t.RequiredProperties,
			Instances: make([]wireInstance, len(t.ExampleInstances)), Confidence: t.Confidence,
		}
		if w.Properties == nil {
			w.Properties = map[string]any{}
		}
		if w.RequiredProperties == nil {
			w.RequiredProperties = []string{}
		}
		for k, e := range t.ExampleInstances {
			w.Instances[k] = wireInstance{Name: e.Name, Quote: e.Quote, DocumentID: e.DocumentID.String()}
		}
		out.Types[i] = w
	}
	return out
}

// fromWire reads a batch answer's types: names trimmed, nameless types
// and instances dropped, confidence clamped, instances kept only when
// their document is one of docs (by id, with the text the call sent)
// and their quote is in that text (whitespace folded; a document without
// text verifies nothing); the quote is then the document's own words.
// Types left without an instance are dropped. dropped counts what was
// dropped.
func fromWire(ws []wireType, docs map[uuid.UUID]string) (out []Type, dropped int) {
	folded := map[uuid.UUID]string{}
	for _, w := range ws {
		t, ok := typeFromWire(w)
		if !ok {
			dropped++
			continue
		}
		for _, in := range w.Instances {
			id, err := uuid.Parse(strings.TrimSpace(in.DocumentID))
			name, quote := strings.TrimSpace(in.Name), fold(in.Quote)
			text, known := docs[id]
			if err != nil || !known || name == "" || quote == "" {
				dropped++
				continue
			}
			if _, ok := folded[id]; !ok {
				folded[id] = fold(text)
			}
			if !strings.Contains(folded[id], quote) {
				dropped++
				continue
			}
			t.ExampleInstances = append(t.ExampleInstances, Instance{Name: name, Quote: clip(quote, quoteMax), DocumentID: id})
		}
		if len(t.ExampleInstances) == 0 {
			dropped++
			continue
		}
		out = append(out, t)
	}
	return out, dropped
}

// typeFromWire is w without its instances: name and description
// trimmed, properties cleaned, required properties among them,
// confidence clamped; false for a nameless type.
func typeFromWire(w wireType) (Type, bool) {
	t := Type{
		TypeName: strings.TrimSpace(w.TypeName), Description: strings.TrimSpace(w.Description),
		Properties: cleanProperties(w.Properties), Confidence: min(max(w.Confidence, 0), 1), ExampleInstances: []Instance{},
		RequiredProperties: []string{},
	}
	for _, r := range w.RequiredProperties {
		if _, ok := t.Properties[r]; ok && !slices.Contains(t.RequiredProperties, r) {
			t.RequiredProperties = append(t.RequiredProperties, r)
		}
	}
	return t, t.TypeName != ""
}

// refinedFromWire reads a refine answer against prev, the list it
// refined: an instance is kept only when it is one of prev's (same
// document and quote, whitespace folded; prev's instance of the same
// name first) and is then prev's instance unchanged; types left without
// an instance are dropped. A refined type carries the Documents of every
// type of prev it took an instance of (what it absorbed), so a renamed,
// merged or split type keeps its documents. dropped counts what was
// dropped.
func refinedFromWire(ws []wireType, prev []Type) (out []Type, dropped int) {
	type ikey struct {
		doc   uuid.UUID
		quote string
	}
	type owner struct {
		t  int
		in Instance
	}
	byQuote := map[ikey][]owner{}
	for i, t := range prev {
		for _, in := range t.ExampleInstances {
			k := ikey{in.DocumentID, fold(in.Quote)}
			byQuote[k] = append(byQuote[k], owner{i, in})
		}
	}
	for _, w := range ws {
		t, ok := typeFromWire(w)
		if !ok {
			dropped++
			continue
		}
		docs := map[uuid.UUID]bool{}
		for _, in := range w.Instances {
			id, err := uuid.Parse(strings.TrimSpace(in.DocumentID))
			owners := byQuote[ikey{id, fold(in.Quote)}]
			if err != nil || len(owners) == 0 {
				dropped++
				continue
			}
			o := owners[0]
			for _, x := range owners {
				if foldName(x.in.Name) == foldName(in.Name) {
					o = x
					break
				}
			}
			if !slices.Contains(t.ExampleInstances, o.in) {
				t.ExampleInstances = append(t.ExampleInstances, o.in)
			}
			docs[id] = true
			for _, d := range prev[o.t].Documents {
				docs[d] = true
			}
		}
		if len(t.ExampleInstances) == 0 {
			dropped++
			continue
		}
		t.Documents = sortedDocuments(docs)
		t.Frequency = len(t.Documents)
		out = append(out, t)
	}
	return out, dropped
}

// lostInstances counts the instances of prev that are in no type of
// next.
func lostInstances(prev, next []Type) int {
	kept := map[Instance]bool{}
	for _, t := range next {
		for _, in := range t.ExampleInstances {
			kept[in] = true
		}
	}
	n := 0
	for _, t := range prev {
		for _, in := range t.ExampleInstances {
			if !kept[in] {
				n++
			}
		}
	}
	return n
}

// cleanProperties keeps the properties that are named JSON Schema
// objects.
func cleanProperties(in map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		k = strings.TrimSpace(k)
		if m, ok := v.(map[string]any); ok && k != "" {
			out[k] = m
		}
	}
	return out
}

// fold collapses runs of white space to one space and trims.
func fold(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// batchDoc is one document of a batch.
type batchDoc struct {
	ID   uuid.UUID
	Name string
	Text string
}

// documentsText renders docs as the discovery purposes want them, each
// text bounded to perDoc characters.
func documentsText(docs []batchDoc, perDoc int) string {
	var b strings.Builder
	for i, d := range docs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "<document id=%q name=%q>\n%s\n</document>", d.ID.String(), d.Name, clip(d.Text, perDoc))
	}
	return b.String()
}

// existingTypes describes the project's installed types for the prompts.
func existingTypes(t *templatepack.Types) string {
	var lines []string
	if t != nil {
		for _, o := range t.Objects {
			var props []string
			if p, ok := o.Schema["properties"].(map[string]any); ok {
				for k := range p {
					props = append(props, k)
				}
			}
			slices.Sort(props)
			lines = append(lines, fmt.Sprintf("%s: %s (properties: %s)", o.Name, oneLine(o.Description), strings.Join(props, ", ")))
		}
	}
	return listing("The project has no object types yet.",
		"The project already has these object types. When the documents mention things of one of them, use exactly its name (never rename it, never propose a synonym of it) and add only properties the documents show:", lines)
}

// listing is none when lines is empty, else head and a "- " line each.
func listing(none, head string, lines []string) string {
	if len(lines) == 0 {
		return none
	}
	return head + "\n- " + strings.Join(lines, "\n- ") + "\n"
}

func oneLine(s string) string { return clip(fold(s), 300) }

// discoveryPrompt is the instruction of a batch's call.
func discoveryPrompt(t *templatepack.Types) string {
	return existingTypes(t) + `
Read the documents below and propose the object types they are about: kinds of things (a Software Project, a Person, a Configuration Setting), not the things themselves. For each type give:
- type_name: a singular noun phrase in PascalCase (SoftwareProject);
- description: one sentence on what the type stands for;
- properties: the facts the documents give about such things, as a JSON Schema property map (name -> {"type": string|number|integer|boolean|array, "description"}); leave out the name itself;
- required_properties: properties every instance has;
- instances: the things of this type the documents name, each with its name, a quote copied verbatim from the document that mentions it (one sentence or line, at most 300 characters) and the document's id from its <document> tag;
- confidence: 0 to 1, how clearly the documents show the type.
Propose only types with at least one instance.`
}

// refinePrompt is the instruction of a refine call.
const refinePrompt = `Below is the merged list of candidate object types found in a project's documents, as JSON. Improve it: merge types that stand for the same kind of thing, split a type that mixes unrelated kinds, and rename types whose names are unclear. Keep every instance with its type (unchanged quotes and document ids), keep the names of the project's existing types, and keep types that need no change exactly as they are. Answer with the whole revised list in the same shape. If nothing should change, answer with the list unchanged.`

// existingRelationships describes the project's installed relationship
// types for the relationships prompt.
func existingRelationships(t *templatepack.Types) string {
	var lines []string
	if t != nil {
		for _, r := range t.Relationships {
			lines = append(lines, fmt.Sprintf("%s: %s -> %s: %s", r.Name, r.SourceType, r.TargetType, oneLine(r.Description)))
		}
	}
	return listing("The project has no relationship types yet.",
		"The project already has these relationship types. When the documents show such a link, use exactly its name (never a synonym of it):", lines)
}

// relationshipsPrompt is the instruction of the relationships call.
func relationshipsPrompt(t *templatepack.Types) string {
	return existingTypes(t) + "\n" + existingRelationships(t) + `
Below are the object types discovered in the project's documents (JSON), followed by the documents. Propose the relationship types between these types (and the project's existing types) that the documents show: source_type and target_type (type names), relation_type (UPPER_SNAKE_CASE verb phrase, e.g. DEPENDS_ON), a one-sentence description, cardinality (one_to_one, one_to_many or many_to_many) and confidence (0 to 1).`
}

// Response schemas of the three purposes.
func typesSchema() map[string]any {
	str := map[string]any{"type": "string"}
	property := objectSchema(map[string]any{
		"type":        map[string]any{"type": "string", "enum": []any{"string", "number", "integer", "boolean", "array"}},
		"description": str,
	}, "type", "description")
	instance := objectSchema(map[string]any{"name": str, "quote": str, "document_id": str}, "name", "quote", "document_id")
	typ := objectSchema(map[string]any{
		"type_name":           str,
		"description":         str,
		"properties":          map[string]any{"type": "object", "additionalProperties": property},
		"required_properties": arraySchema(str),
		"instances":           arraySchema(instance),
		"confidence":          confidenceSchema(),
	}, "type_name", "description", "properties", "required_properties", "instances", "confidence")
	return listSchema("types", typ)
}

func relationshipsSchema() map[string]any {
	str := map[string]any{"type": "string"}
	rel := objectSchema(map[string]any{
		"source_type": str, "target_type": str, "relation_type": str, "description": str,
		"cardinality": map[string]any{"type": "string", "enum": []any{OneToOne, OneToMany, ManyToMany}},
		"confidence":  confidenceSchema(),
	}, "source_type", "target_type", "relation_type", "description", "cardinality", "confidence")
	return listSchema("relationships", rel)
}

// objectSchema is the JSON Schema of an object with properties, of which
// required must be present.
func objectSchema(properties map[string]any, required ...any) map[string]any {
	return map[string]any{"type": "object", "properties": properties, "required": required}
}

// arraySchema is the JSON Schema of an array of items.
func arraySchema(items map[string]any) map[string]any {
	return map[string]any{"type": "array", "items": items}
}

// listSchema is the JSON Schema of an answer {"<field>": [item, ...]}.
func listSchema(field string, item map[string]any) map[string]any {
	return objectSchema(map[string]any{field: arraySchema(item)}, field)
}

// confidenceSchema is a confidence from 0 to 1.
func confidenceSchema() map[string]any {
	return map[string]any{"type": "number", "minimum": 0, "maximum": 1}
}

// decode reads a response into v.
func decode(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("the answer is not in the requested shape: %w", err)
	}
	return nil
}
