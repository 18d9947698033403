package templatepack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/graphmill/graphmill/internal/displayname"
	"github.com/graphmill/graphmill/internal/errs"
)

// Types are the effective object and relationship types of a project,
// with the object types' schemas compiled.
type Types struct {
	Objects       []ObjectType
	Relationships []RelationshipType

	objects map[string]int
	rels    map[string]int
	schemas map[string]*jsonschema.Schema
}

// Object returns the object type called name (case-sensitive).
func (t *Types) Object(name string) (ObjectType, bool) {
	i, ok := t.objects[name]
	if !ok {
		return ObjectType{}, false
	}
	return t.Objects[i], true
}

// Relationship returns the relationship type called name (case-sensitive).
func (t *Types) Relationship(name string) (RelationshipType, bool) {
	i, ok := t.rels[name]
	if !ok {
		return RelationshipType{}, false
	}
	return t.Relationships[i], true
}

// AllowsRelationship reports whether a relationship of type name may go
// from an object of sourceType to one of targetType.
func (t *Types) AllowsRelationship(name, sourceType, targetType string) bool {
	r, ok := t.Relationship(name)
	if !ok {
		return false
	}
	return (r.SourceType == Any || r.SourceType == sourceType) && (r.TargetType == Any || r.TargetType == targetType)
}

// ObjectNames lists the object type names in order.
func (t *Types) ObjectNames() []string {
	out := make([]string, len(t.Objects))
	for i, o := range t.Objects {
		out[i] = o.Name
	}
	return out
}

// Validate checks props (nil: none) against the schema of the object type
// typeName. Errors: invalid_argument naming the unknown type, or the
// failing properties and rules (never the offending values).
func (t *Types) Validate(typeName string, props map[string]any) error {
	sch, ok := t.schemas[typeName]
	if !ok {
		return errs.Errorf(errs.Invalid, "unknown object type %q; known types: %s", typeName, strings.Join(t.ObjectNames(), ", "))
	}
	if props == nil {
		props = map[string]any{}
	}
	doc, err := jsonValue(props)
	if err != nil {
		return errs.Errorf(errs.Invalid, "properties of %s are not JSON: %v", typeName, err)
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errs.Errorf(errs.Invalid, "properties do not match the schema of %s: %s", typeName, describe(ve))
		}
		return errs.Errorf(errs.Invalid, "properties do not match the schema of %s", typeName)
	}
	return nil
}

// jsonValue turns v into what a JSON decoder makes of it (maps, slices,
// json.Number, strings, bools), the form the validator understands.
func jsonValue(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// describeMax bounds how many failures a message lists.
const describeMax = 5

// describe lists the leaf failures of a validation error: where and which
// rule, without echoing values.
func describe(ve *jsonschema.ValidationError) string {
	var msgs []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msgs = append(msgs, location(e.InstanceLocation)+ruleText(e.ErrorKind))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(msgs)
	if len(msgs) > describeMax {
		msgs = append(msgs[:describeMax], fmt.Sprintf("and %d more", len(msgs)-describeMax))
	}
	return strings.Join(msgs, "; ")
}

func location(path []string) string {
	if len(path) == 0 {
		return ""
	}
	return "property " + strings.Join(path, ".") + ": "
}

func ruleText(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return fmt.Sprintf("must be %s, not %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Required:
		return fmt.Sprintf("missing required property %s", strings.Join(k.Missing, ", "))
	case *kind.AdditionalProperties:
		return fmt.Sprintf("properties not allowed: %s", strings.Join(k.Properties, ", "))
	case *kind.Enum:
		return "must be one of the allowed values (enum)"
	case *kind.Const:
		return "must equal the constant of the schema (const)"
	case *kind.Format:
		return fmt.Sprintf("must be a valid %s", k.Want)
	case *kind.Pattern:
		return fmt.Sprintf("must match the pattern %s", k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.Minimum:
		return fmt.Sprintf("must be at least %s", k.Want.RatString())
	case *kind.Maximum:
		return fmt.Sprintf("must be at most %s", k.Want.RatString())
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("must be greater than %s", k.Want.RatString())
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("must be less than %s", k.Want.RatString())
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.FalseSchema:
		return "is not allowed"
	case *kind.RefCycle:
		return "cannot be checked: its schema refers back to itself (" + strings.TrimPrefix(k.URL, "urn:graphmill:object-type") + "); the template pack must change"
	}
	return "fails the rule " + strings.Join(k.KeywordPath(), "/")
}

// noLoader refuses every external reference: a tenant's schema must not
// make the server read files or fetch URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not allowed (%s)", url)
}

// compileSchema compiles one object type's schema; the error names the
// type. strict (a schema being saved, not one stored) also refuses count
// keywords past countMax and schemas that loop in place (findRefLoop):
// stored packs compile as they were accepted, so a project's types keep
// loading.
func compileSchema(name string, schema map[string]any, strict bool) (*jsonschema.Schema, error) {
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	if t, _ := schema["type"].(string); t != "object" {
		return nil, errs.Errorf(errs.Invalid, "the schema of object type %q must have \"type\": \"object\"", name)
	}
	doc, err := jsonValue(schema)
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "the schema of object type %q is not JSON", name)
	}
	if strict {
		if err := checkCounts(doc); err != nil {
			return nil, errs.Errorf(errs.Invalid, "the schema of object type %q is invalid: %v", name, err)
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const url = "urn:graphmill:object-type"
	if err := c.AddResource(url, doc); err != nil {
		return nil, errs.Errorf(errs.Invalid, "the schema of object type %q is invalid: %v", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "the schema of object type %q is invalid: %v", name, err)
	}
	if !strict {
		return sch, nil
	}
	if loc := findRefLoop(sch); loc != "" {
		return nil, errs.Errorf(errs.Invalid, "the schema of object type %q is invalid: %s refers back to itself without going into a property or item, "+
			"so no value could ever be checked against it", name, strings.TrimPrefix(loc, url))
	}
	return sch, nil
}

// countKeyword reports whether k is a keyword whose value is a count (a
// non-negative integer). The validator reads counts as an int and
// silently wraps numbers past it (maxLength 1e308 became 0, refusing every
// string).
func countKeyword(k string) bool {
	switch k {
	case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maxContains", "minContains":
		return true
	}
	return false
}

// countMax bounds a count keyword.
const countMax = math.MaxInt32

// checkCounts refuses a count keyword above countMax anywhere in a schema
// document. Values (const, enum, default, examples) are data, not schemas,
// and are not looked into; the keys of a map of named schemas (properties,
// $defs, ...) are names, not keywords (a property "default" is a schema).
func checkCounts(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			switch k {
			case "const", "enum", "default", "examples":
				continue
			case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies":
				if named, ok := v[k].(map[string]any); ok {
					for _, name := range slices.Sorted(maps.Keys(named)) {
						if err := checkCounts(named[name]); err != nil {
							return err
						}
					}
					continue
				}
			}
			if n, ok := v[k].(json.Number); ok && countKeyword(k) {
				if f, err := n.Float64(); err != nil || f > countMax {
					return fmt.Errorf("%s must be at most %d", k, countMax)
				}
				continue
			}
			if err := checkCounts(v[k]); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := checkCounts(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// findRefLoop finds, among every subschema of root, one that applies
// itself to the same value again through references and in-place
// applicators only: validating a value against it never ends, which the
// validator reports as a failure of every value (an object type no
// properties can satisfy). It returns the schema's location, or "".
// A recursion through a property or an item (a tree) goes one level into
// the value each time, and is fine.
func findRefLoop(root *jsonschema.Schema) string {
	state := map[*jsonschema.Schema]int{}
	seen := map[*jsonschema.Schema]bool{}
	todo := []*jsonschema.Schema{root}
	for len(todo) > 0 {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if s == nil || seen[s] {
			continue
		}
		seen[s] = true
		if loc := refLoop(s, state); loc != "" {
			return loc
		}
		todo = append(append(todo, inPlace(s)...), deeper(s)...)
	}
	return ""
}

// refLoop follows the in-place edges from s; state: 1 while a schema is on
// the path, 2 once no loop is reachable from it.
func refLoop(s *jsonschema.Schema, state map[*jsonschema.Schema]int) string {
	if s == nil {
		return ""
	}
	switch state[s] {
	case 1:
		return s.Location
	case 2:
		return ""
	}
	state[s] = 1
	for _, n := range inPlace(s) {
		if loc := refLoop(n, state); loc != "" {
			return loc
		}
	}
	state[s] = 2
	return ""
}

// inPlace are the schemas s applies to the value it is given: $ref,
// $recursiveRef, $dynamicRef, not, allOf, anyOf, oneOf, if/then/else,
// dependentSchemas and schema dependencies.
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	out := slices.Concat([]*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else}, s.AllOf, s.AnyOf, s.OneOf)
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	for _, k := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		out = append(out, s.DependentSchemas[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
		if d, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
			out = append(out, d)
		}
	}
	return out
}

// deeper are the schemas s applies to parts of its value: properties,
// their names, items, contained items, decoded content.
func deeper(s *jsonschema.Schema) []*jsonschema.Schema {
	out := slices.Concat([]*jsonschema.Schema{s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}, s.PrefixItems)
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		out = append(out, s.Properties[k])
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	for _, v := range []any{s.AdditionalProperties, s.AdditionalItems, s.Items} {
		switch v := v.(type) {
		case *jsonschema.Schema:
			out = append(out, v)
		case []*jsonschema.Schema:
			out = append(out, v...)
		}
	}
	return out
}

// compilePack checks a pack's types and compiles their schemas, keyed by
// object type name; strict as for compileSchema.
func compilePack(objects []ObjectType, rels []RelationshipType, strict bool) (map[string]*jsonschema.Schema, error) {
	if len(objects)+len(rels) > TypesMax {
		return nil, errs.Errorf(errs.Invalid, "a template pack holds at most %d types", TypesMax)
	}
	schemas := make(map[string]*jsonschema.Schema, len(objects))
	for i, o := range objects {
		if err := CheckTypeName("object type", o.Name); err != nil {
			return nil, fmt.Errorf("objectTypes[%d]: %w", i, err)
		}
		if _, dup := schemas[o.Name]; dup {
			return nil, errs.Errorf(errs.Invalid, "object type %q appears twice", o.Name)
		}
		if utf8.RuneCountInString(o.Description) > DescriptionMax {
			return nil, errs.Errorf(errs.Invalid, "the description of object type %q is too long", o.Name)
		}
		sch, err := compileSchema(o.Name, o.Schema, strict)
		if err != nil {
			return nil, err
		}
		schemas[o.Name] = sch
	}
	seen := map[string]bool{}
	for i, r := range rels {
		if err := CheckTypeName("relationship type", r.Name); err != nil {
			return nil, fmt.Errorf("relationshipTypes[%d]: %w", i, err)
		}
		if seen[r.Name] {
			return nil, errs.Errorf(errs.Invalid, "relationship type %q appears twice", r.Name)
		}
		seen[r.Name] = true
		if r.SourceType == "" || r.TargetType == "" {
			return nil, errs.Errorf(errs.Invalid, "relationship type %q needs a sourceType and a targetType (* for any)", r.Name)
		}
		switch r.Cardinality {
		case OneToOne, OneToMany, ManyToOne, ManyToMany:
		default:
			return nil, errs.Errorf(errs.Invalid, "relationship type %q: cardinality must be one-to-one, one-to-many, many-to-one or many-to-many", r.Name)
		}
	}
	return schemas, nil
}

// CheckTypeName checks the name of an object type (what "object type")
// or relationship type (what "relationship type"): non-empty, without
// surrounding spaces, at most NameMax characters, displayname.Valid (no
// line breaks, tabs, zero-width spaces nor direction marks; a joiner
// only between visible characters) and no '/'; an object type is
// not called Any ("*"). Errors: invalid_argument.
func CheckTypeName(what, name string) error {
	if strings.TrimSpace(name) != name || name == "" {
		return errs.Errorf(errs.Invalid, "%s names must be non-empty without surrounding spaces", what)
	}
	if utf8.RuneCountInString(name) > NameMax {
		return errs.Errorf(errs.Invalid, "%s names are at most %d characters", what, NameMax)
	}
	if !displayname.Valid(name) || strings.ContainsRune(name, '/') {
		return errs.Errorf(errs.Invalid, "%s name %q: no '/', control or invisible characters", what, name)
	}
	if name == Any && what == "object type" {
		return errs.Errorf(errs.Invalid, "%s names cannot be %q (it means any type)", what, Any)
	}
	return nil
}

// compiledPack is a pack's types with their schemas compiled.
type compiledPack struct {
	objects []ObjectType
	rels    []RelationshipType
	schemas map[string]*jsonschema.Schema
}

// mergeTypes is the union of packs in order; a later pack's type replaces
// an earlier one of the same name (in the earlier one's position).
func mergeTypes(packs []*compiledPack) *Types {
	t := &Types{objects: map[string]int{}, rels: map[string]int{}, schemas: map[string]*jsonschema.Schema{}}
	for _, p := range packs {
		for _, o := range p.objects {
			t.Objects = putByName(t.Objects, t.objects, o.Name, o)
			t.schemas[o.Name] = p.schemas[o.Name]
		}
		for _, r := range p.rels {
			t.Relationships = putByName(t.Relationships, t.rels, r.Name, r)
		}
	}
	if t.Objects == nil {
		t.Objects = []ObjectType{}
	}
	if t.Relationships == nil {
		t.Relationships = []RelationshipType{}
	}
	return t
}

// putByName replaces the element called name in list (index maps names to
// positions) or appends v, and returns the list.
func putByName[T any](list []T, index map[string]int, name string, v T) []T {
	if i, ok := index[name]; ok {
		list[i] = v
		return list
	}
	index[name] = len(list)
	return append(list, v)
}
