package extraction

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// systemInstruction is the system instruction of every extraction call.
const systemInstruction = "You build a knowledge graph from documents. You extract only what the text states, " +
	"use only the object and relationship types you are given, and answer with JSON matching the response schema."

// nameMax bounds object names and keys (the graph's columns).
const nameMax = 500

// responseSchema is the JSON Schema of an extraction response, built from
// the project's types: object and relationship type names as enums, each
// object's type-specific facts in an open "properties" object. It is the
// shape the local provider answers with (see internal/llm/local_extract.go).
func responseSchema(t *templatepack.Types) map[string]any {
	objTypes := make([]any, 0, len(t.Objects))
	for _, o := range t.Objects {
		objTypes = append(objTypes, o.Name)
	}
	relTypes := make([]any, 0, len(t.Relationships))
	for _, r := range t.Relationships {
		relTypes = append(relTypes, r.Name)
	}
	confidence := map[string]any{"type": "number", "minimum": 0, "maximum": 1, "description": "How sure you are that this is stated in the text, 0 to 1."}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"objects": arrayOf(map[string]any{
				"type":        map[string]any{"type": "string", "enum": objTypes},
				"name":        map[string]any{"type": "string", "description": "The name as the text gives it."},
				"key":         map[string]any{"type": "string", "description": "A stable identifier: the canonical full name, the same for every mention."},
				"description": map[string]any{"type": "string", "description": "One sentence on what the text says about it."},
				"properties":  map[string]any{"type": "object", "description": "Facts of the type's listed properties."},
				"confidence":  confidence,
			}, "type", "name", "confidence"),
			"relationships": arrayOf(map[string]any{
				"type":        map[string]any{"type": "string", "enum": relTypes},
				"source":      map[string]any{"type": "string", "description": "Name (or key) of the source object, one of the objects extracted."},
				"target":      map[string]any{"type": "string", "description": "Name (or key) of the target object, one of the objects extracted."},
				"description": map[string]any{"type": "string"},
				"confidence":  confidence,
			}, "type", "source", "target", "confidence"),
		},
		"required": []any{"objects", "relationships"},
	}
}

// arrayOf is the schema of an array of objects with properties, of which
// required must be present.
func arrayOf(properties map[string]any, required ...any) map[string]any {
	return map[string]any{
		"type":  "array",
		"items": map[string]any{"type": "object", "properties": properties, "required": required},
	}
}

// buildPrompt writes the instructions of an extraction call: the types
// with their descriptions and properties, and the rules.
func buildPrompt(t *templatepack.Types, filename string) string {
	var b strings.Builder
	b.WriteString("Extract the objects (entities) and the relationships between them that the text states")
	if filename != "" {
		fmt.Fprintf(&b, " (an excerpt of the document %q)", filename)
	}
	b.WriteString(".\n\nObject types:\n")
	for _, o := range t.Objects {
		fmt.Fprintf(&b, "- %s: %s", o.Name, oneLine(o.Description))
		if props := describeProperties(o.Schema); props != "" {
			b.WriteString(" Properties: ")
			b.WriteString(props)
		}
		b.WriteString("\n")
	}
	if len(t.Relationships) > 0 {
		b.WriteString("\nRelationship types (source type -> target type; * means any type):\n")
		for _, r := range t.Relationships {
			fmt.Fprintf(&b, "- %s (%s -> %s): %s\n", r.Name, r.SourceType, r.TargetType, oneLine(r.Description))
		}
	}
	b.WriteString(`
Rules:
- Use only the types listed. Put facts about an object in "properties", under the listed property names and with their types; leave out what the text does not say.
- "key" identifies the object: its canonical full name, the same wherever it is mentioned.
- A relationship's "source" and "target" are the names of objects in your "objects" list, in the direction the type gives.
- "confidence" is between 0 and 1: how sure you are that the text states it.
- Do not add facts the text does not support.
`)
	return b.String()
}

// describeProperties lists a schema's properties as "name (type, required):
// description", sorted by name.
func describeProperties(schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return ""
	}
	required := llm.SchemaRequired(schema)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		typ := "any"
		switch v := p["type"].(type) {
		case string:
			typ = v
			if v == "array" {
				if items, ok := p["items"].(map[string]any); ok {
					if it, ok := items["type"].(string); ok {
						typ = "array of " + it
					}
				}
			}
		case []any:
			var ts []string
			for _, x := range v {
				if s, ok := x.(string); ok {
					ts = append(ts, s)
				}
			}
			typ = strings.Join(ts, " or ")
		}
		if slices.Contains(required, n) {
			typ += ", required"
		}
		part := n + " (" + typ + ")"
		if d, ok := p["description"].(string); ok && d != "" {
			part += ": " + oneLine(d)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ") + "."
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// chunk is a document chunk to extract from.
type chunk = document.ChunkText

// window is a run of consecutive chunks extracted with one call.
type window struct {
	chunks []chunk
	tokens int
}

// makeWindows groups chunks in order into windows of at most budget
// tokens of text; a chunk larger than the budget is a window of its own.
func makeWindows(chunks []chunk, budget int) []window {
	var out []window
	var cur window
	for _, c := range chunks {
		if len(cur.chunks) > 0 && cur.tokens+c.Tokens > budget {
			out = append(out, cur)
			cur = window{}
		}
		cur.chunks = append(cur.chunks, c)
		cur.tokens += c.Tokens
	}
	if len(cur.chunks) > 0 {
		out = append(out, cur)
	}
	return out
}

// text joins the window's chunks.
func (w window) text() string {
	parts := make([]string, len(w.chunks))
	for i, c := range w.chunks {
		parts[i] = c.Text
	}
	return strings.Join(parts, "\n\n")
}

// textBudget is the tokens of chunk text a window may hold: the model's
// input budget (InputBudgetDefault when unknown), capped at capTokens,
// less the prompt's overhead; never under a quarter of the cap.
func textBudget(inputLimit, capTokens int, system, prompt string, schema map[string]any) int {
	budget := inputLimit
	if budget <= 0 {
		budget = InputBudgetDefault
	}
	budget = min(budget, capTokens)
	raw, _ := json.Marshal(schema)
	overhead := int(llm.EstimateTokens(system)+llm.EstimateTokens(prompt)) + len(raw)/4 + 64
	return max(budget-overhead, capTokens/4)
}

// rawObject and rawRelationship are the response's entries.
type rawObject struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Key         string         `json:"key"`
	Description string         `json:"description"`
	Properties  map[string]any `json:"properties"`
	Confidence  *float64       `json:"confidence"`
}

type rawRelationship struct {
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Target      string   `json:"target"`
	Description string   `json:"description"`
	Confidence  *float64 `json:"confidence"`
}

type rawOutput struct {
	Objects       []json.RawMessage `json:"objects"`
	Relationships []json.RawMessage `json:"relationships"`
}

// parseOutput decodes a response. Entries that do not decode are counted
// in bad rather than failing the whole response.
func parseOutput(raw []byte) (objs []rawObject, rels []rawRelationship, bad int, err error) {
	var out rawOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, 0, fmt.Errorf("the response is not an object with objects and relationships lists: %w", err)
	}
	objs, badObjs := decodeEach[rawObject](out.Objects)
	rels, badRels := decodeEach[rawRelationship](out.Relationships)
	return objs, rels, badObjs + badRels, nil
}

// decodeEach decodes each message into a T and counts those that do not
// decode (they are left out).
func decodeEach[T any](msgs []json.RawMessage) (list []T, bad int) {
	for _, m := range msgs {
		var v T
		if json.Unmarshal(m, &v) != nil {
			bad++
			continue
		}
		list = append(list, v)
	}
	return list, bad
}

// clipRunes cuts s to at most n runes.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// repairProperties makes props valid for typ when it can: valid props are
// kept as they are; otherwise the required properties are kept and each
// other property is added back (in name order) while the result stays
// valid. ok is false when even the required properties are not valid (the
// object must be dropped); dropped lists the properties left out.
func repairProperties(t *templatepack.Types, typ string, props map[string]any) (fixed map[string]any, dropped []string, firstErr error, ok bool) {
	if props == nil {
		props = map[string]any{}
	}
	firstErr = t.Validate(typ, props)
	if firstErr == nil {
		return props, nil, nil, true
	}
	ot, _ := t.Object(typ)
	required := llm.SchemaRequired(ot.Schema)
	fixed = map[string]any{}
	names := make([]string, 0, len(props))
	for n, v := range props {
		if slices.Contains(required, n) {
			fixed[n] = v
		} else {
			names = append(names, n)
		}
	}
	if t.Validate(typ, fixed) != nil {
		return nil, nil, firstErr, false
	}
	slices.Sort(names)
	for _, n := range names {
		fixed[n] = props[n]
		if t.Validate(typ, fixed) != nil {
			delete(fixed, n)
			dropped = append(dropped, n)
		}
	}
	return fixed, dropped, firstErr, true
}
