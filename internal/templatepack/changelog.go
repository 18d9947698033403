package templatepack

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
)

// Changelog is what a version of a pack changed from the version before
// it; the first version lists every type as added. Lists are in the
// order of the pack's definition (removed ones: of the previous one).
type Changelog struct {
	TypesAdded               []string             `json:"typesAdded"`
	TypesChanged             []TypeChange         `json:"typesChanged"`
	TypesRemoved             []string             `json:"typesRemoved"`
	RelationshipTypesAdded   []RelationshipRef    `json:"relationshipTypesAdded"`
	RelationshipTypesChanged []RelationshipChange `json:"relationshipTypesChanged"`
	RelationshipTypesRemoved []RelationshipRef    `json:"relationshipTypesRemoved"`
	PackFieldsChanged        []string             `json:"packFieldsChanged" doc:"Changed fields of the pack itself: name, description, source, objectTypeOrder, relationshipTypeOrder."`
}

// TypeChange is how an object type changed. Property lists are sorted.
type TypeChange struct {
	Name                  string   `json:"name"`
	PropertiesAdded       []string `json:"propertiesAdded"`
	PropertiesChanged     []string `json:"propertiesChanged" doc:"Properties whose JSON Schema changed."`
	PropertiesRemoved     []string `json:"propertiesRemoved"`
	RequiredAdded         []string `json:"requiredAdded"`
	RequiredRemoved       []string `json:"requiredRemoved"`
	DescriptionChanged    bool     `json:"descriptionChanged"`
	ExamplesChanged       bool     `json:"examplesChanged"`
	SchemaKeywordsChanged []string `json:"schemaKeywordsChanged" doc:"Other top-level keywords of the type's schema that changed (additionalProperties, ...)."`
}

// RelationshipRef names a relationship type with its endpoints.
type RelationshipRef struct {
	Name       string `json:"name"`
	SourceType string `json:"sourceType"`
	TargetType string `json:"targetType"`
}

// RelationshipChange is how a relationship type changed: its endpoints
// now, and the fields that changed (sourceType, targetType, cardinality,
// description).
type RelationshipChange struct {
	Name          string   `json:"name"`
	SourceType    string   `json:"sourceType"`
	TargetType    string   `json:"targetType"`
	FieldsChanged []string `json:"fieldsChanged"`
}

// Empty reports whether c records no change.
func (c Changelog) Empty() bool {
	return len(c.TypesAdded)+len(c.TypesChanged)+len(c.TypesRemoved)+len(c.RelationshipTypesAdded)+
		len(c.RelationshipTypesChanged)+len(c.RelationshipTypesRemoved)+len(c.PackFieldsChanged) == 0
}

func newChangelog() Changelog {
	return Changelog{
		TypesAdded: []string{}, TypesChanged: []TypeChange{}, TypesRemoved: []string{},
		RelationshipTypesAdded: []RelationshipRef{}, RelationshipTypesChanged: []RelationshipChange{},
		RelationshipTypesRemoved: []RelationshipRef{}, PackFieldsChanged: []string{},
	}
}

// firstChangelog is the changelog of a pack's first version: every type
// added.
func firstChangelog(p Pack) Changelog {
	return diffPacks(Pack{Name: p.Name, Description: p.Description, Source: p.Source}, p)
}

// diffPacks is the changelog from old to p. Object and relationship types
// are matched by name (case-sensitive, as types are).
func diffPacks(old, p Pack) Changelog {
	c := newChangelog()
	if old.Name != p.Name {
		c.PackFieldsChanged = append(c.PackFieldsChanged, "name")
	}
	if old.Description != p.Description {
		c.PackFieldsChanged = append(c.PackFieldsChanged, "description")
	}
	if old.Source != p.Source {
		c.PackFieldsChanged = append(c.PackFieldsChanged, "source")
	}

	diffLists(old.ObjectTypes, p.ObjectTypes, objectName,
		func(o ObjectType) { c.TypesAdded = append(c.TypesAdded, o.Name) },
		func(was, o ObjectType) {
			if tc, changed := diffObject(was, o); changed {
				c.TypesChanged = append(c.TypesChanged, tc)
			}
		},
		func(o ObjectType) { c.TypesRemoved = append(c.TypesRemoved, o.Name) })
	if !sameOrder(names(old.ObjectTypes, objectName), names(p.ObjectTypes, objectName)) {
		c.PackFieldsChanged = append(c.PackFieldsChanged, "objectTypeOrder")
	}
	diffLists(old.RelationshipTypes, p.RelationshipTypes, relName,
		func(r RelationshipType) { c.RelationshipTypesAdded = append(c.RelationshipTypesAdded, refOf(r)) },
		func(was, r RelationshipType) {
			if fields := diffRelationship(was, r); len(fields) > 0 {
				c.RelationshipTypesChanged = append(c.RelationshipTypesChanged,
					RelationshipChange{Name: r.Name, SourceType: r.SourceType, TargetType: r.TargetType, FieldsChanged: fields})
			}
		},
		func(r RelationshipType) { c.RelationshipTypesRemoved = append(c.RelationshipTypesRemoved, refOf(r)) })
	if !sameOrder(names(old.RelationshipTypes, relName), names(p.RelationshipTypes, relName)) {
		c.PackFieldsChanged = append(c.PackFieldsChanged, "relationshipTypeOrder")
	}
	return c
}

func objectName(o ObjectType) string    { return o.Name }
func relName(r RelationshipType) string { return r.Name }
func refOf(r RelationshipType) RelationshipRef {
	return RelationshipRef{Name: r.Name, SourceType: r.SourceType, TargetType: r.TargetType}
}

// diffLists matches the elements of was and now by name: it calls added
// for those only in now and changed for those in both (in now's order),
// then removed for those only in was (in was's order).
func diffLists[T any](was, now []T, name func(T) string, added func(T), changed func(was, now T), removed func(T)) {
	before := make(map[string]T, len(was))
	for _, v := range was {
		before[name(v)] = v
	}
	after := make(map[string]bool, len(now))
	for _, v := range now {
		after[name(v)] = true
		if w, ok := before[name(v)]; ok {
			changed(w, v)
		} else {
			added(v)
		}
	}
	for _, v := range was {
		if !after[name(v)] {
			removed(v)
		}
	}
}

func names[T any](list []T, name func(T) string) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = name(v)
	}
	return out
}

// sameOrder reports whether the names a and b have in common come in the
// same order in both.
func sameOrder(a, b []string) bool {
	inA, inB := map[string]bool{}, map[string]bool{}
	for _, n := range a {
		inA[n] = true
	}
	for _, n := range b {
		inB[n] = true
	}
	a = slices.DeleteFunc(slices.Clone(a), func(n string) bool { return !inB[n] })
	b = slices.DeleteFunc(slices.Clone(b), func(n string) bool { return !inA[n] })
	return slices.Equal(a, b)
}

// diffObject is how o differs from was, and whether it does.
func diffObject(was, o ObjectType) (TypeChange, bool) {
	tc := TypeChange{
		Name: o.Name, PropertiesAdded: []string{}, PropertiesChanged: []string{}, PropertiesRemoved: []string{},
		RequiredAdded: []string{}, RequiredRemoved: []string{}, SchemaKeywordsChanged: []string{},
		DescriptionChanged: was.Description != o.Description,
		ExamplesChanged:    !jsonEqual(emptyIfNil(was.Examples), emptyIfNil(o.Examples)),
	}
	ws, ns := normalSchema(was.Schema), normalSchema(o.Schema)
	wp, np := schemaProperties(ws), schemaProperties(ns)
	for name, v := range np {
		w, ok := wp[name]
		switch {
		case !ok:
			tc.PropertiesAdded = append(tc.PropertiesAdded, name)
		case !jsonEqual(w, v):
			tc.PropertiesChanged = append(tc.PropertiesChanged, name)
		}
	}
	for name := range wp {
		if _, ok := np[name]; !ok {
			tc.PropertiesRemoved = append(tc.PropertiesRemoved, name)
		}
	}
	wr, nr := schemaRequired(ws), schemaRequired(ns)
	for _, r := range nr {
		if !slices.Contains(wr, r) {
			tc.RequiredAdded = append(tc.RequiredAdded, r)
		}
	}
	for _, r := range wr {
		if !slices.Contains(nr, r) {
			tc.RequiredRemoved = append(tc.RequiredRemoved, r)
		}
	}
	for k, v := range ns {
		if k != "properties" && k != "required" && !jsonEqual(ws[k], v) {
			tc.SchemaKeywordsChanged = append(tc.SchemaKeywordsChanged, k)
		}
	}
	for k := range ws {
		if _, ok := ns[k]; !ok && k != "properties" && k != "required" {
			tc.SchemaKeywordsChanged = append(tc.SchemaKeywordsChanged, k)
		}
	}
	for _, l := range [][]string{tc.PropertiesAdded, tc.PropertiesChanged, tc.PropertiesRemoved, tc.RequiredAdded, tc.RequiredRemoved, tc.SchemaKeywordsChanged} {
		sort.Strings(l)
	}
	changed := tc.DescriptionChanged || tc.ExamplesChanged ||
		len(tc.PropertiesAdded)+len(tc.PropertiesChanged)+len(tc.PropertiesRemoved)+
			len(tc.RequiredAdded)+len(tc.RequiredRemoved)+len(tc.SchemaKeywordsChanged) > 0
	return tc, changed
}

func diffRelationship(was, r RelationshipType) []string {
	var fields []string
	for _, f := range []struct {
		name     string
		was, now string
	}{
		{"sourceType", was.SourceType, r.SourceType},
		{"targetType", was.TargetType, r.TargetType},
		{"cardinality", was.Cardinality, r.Cardinality},
		{"description", was.Description, r.Description},
	} {
		if f.was != f.now {
			fields = append(fields, f.name)
		}
	}
	return fields
}

// normalSchema is schema as JSON decodes it (maps, []any, float64), a
// copy; nil is {"type": "object"}.
func normalSchema(schema map[string]any) map[string]any {
	out := map[string]any{}
	if schema == nil {
		out["type"] = "object"
		return out
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return out // compilePack has refused such a schema before
	}
	_ = json.Unmarshal(raw, &out)
	return out
}

// schemaProperties is the properties map of a normal schema (nil: none).
func schemaProperties(schema map[string]any) map[string]any {
	p, _ := schema["properties"].(map[string]any)
	return p
}

// schemaRequired is the required list of a normal schema.
func schemaRequired(schema map[string]any) []string {
	list, _ := schema["required"].([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// setRequired sets the required list of a normal schema ([]any, as JSON
// decodes it) to names; none leaves schema without one.
func setRequired(schema map[string]any, names []string) {
	if len(names) == 0 {
		return
	}
	list := make([]any, len(names))
	for i, n := range names {
		list[i] = n
	}
	schema["required"] = list
}

func emptyIfNil(examples []map[string]any) []map[string]any {
	if examples == nil {
		return []map[string]any{}
	}
	return examples
}

// jsonEqual reports whether a and b encode to the same JSON (maps encode
// with sorted keys).
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// foldKey is the case-insensitive key of a type name.
func foldKey(name string) string { return strings.ToLower(name) }
