package templatepack

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/typename"
)

// Extended is what ExtendPack did.
type Extended struct {
	// Pack is the pack after the merge.
	Pack Pack
	// Changed is false when the merge added nothing: no version was
	// written and Pack is the pack as it was.
	Changed bool
	// Conflicts are the properties the input gave another type than the
	// pack has ("Widget.size: integer, not string"); the pack's schema is
	// kept.
	Conflicts []string
}

// ExtendPack merges in's types into project's pack id in the caller's
// transaction and writes the result as the pack's next version (the
// update mode of a discovery's finalize). It only adds: object types
// match by name, case-insensitively; a matched type keeps its property
// schemas (a property of in matches one of the pack by
// typename.PropertyKey; differing types are reported in
// Extended.Conflicts), gains in's other properties and those of in's
// required properties that it gained, keeps its description unless
// empty and unions the examples; other types are appended. Relationship
// types match by name, case-insensitively (ends mapped to the pack's
// type names): a match is widened to cover in's ends too
// (RelationshipType.Widen); others are appended. The pack keeps its name
// and source; in.Description fills an empty one. Nothing changes (no
// version) when the merge adds nothing. Concurrent calls are serialised
// on the pack. Errors: invalid_argument, not_found (not project's pack),
// failed_precondition (a built-in pack).
func (s *Service) ExtendPack(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, in PackInput, by *uuid.UUID) (Extended, error) {
	if _, err := compilePack(in.ObjectTypes, in.RelationshipTypes, true); err != nil {
		return Extended{}, err
	}
	old, err := lockOwnPack(ctx, tx, project, id)
	if err != nil {
		return Extended{}, err
	}
	objects, rels, conflicts := extendTypes(old, in)
	desc := old.Description
	if desc == "" {
		desc = in.Description
	}
	p, err := s.packFrom(PackInput{Name: old.Name, Description: desc, Source: old.Source, ObjectTypes: objects, RelationshipTypes: rels})
	if err != nil {
		return Extended{}, err
	}
	out, err := s.writeVersion(ctx, tx, old, p, by)
	if err != nil {
		return Extended{}, err
	}
	return Extended{Pack: out, Changed: out.Version != old.Version, Conflicts: conflicts}, nil
}

// extendTypes is old's types with in's merged in, and the property type
// conflicts (see ExtendPack).
func extendTypes(old Pack, in PackInput) ([]ObjectType, []RelationshipType, []string) {
	objects := slices.Clone(old.ObjectTypes)
	index := map[string]int{}
	for i, o := range objects {
		index[foldKey(o.Name)] = i
	}
	conflicts := []string{}
	for _, o := range in.ObjectTypes {
		if i, ok := index[foldKey(o.Name)]; ok {
			var c []string
			objects[i], c = mergeObject(objects[i], o)
			conflicts = append(conflicts, c...)
			continue
		}
		index[foldKey(o.Name)] = len(objects)
		o.Schema = normalSchema(o.Schema)
		o.Examples = unionExamples(nil, o.Examples)
		objects = append(objects, o)
	}
	// in's relationships name the types as they are now called.
	typeName := func(name string) string {
		if i, ok := index[foldKey(name)]; ok {
			return objects[i].Name
		}
		return name
	}

	rels := slices.Clone(old.RelationshipTypes)
	relIndex := map[string]int{}
	for i, r := range rels {
		relIndex[foldKey(r.Name)] = i
	}
	for _, r := range in.RelationshipTypes {
		r.SourceType, r.TargetType = typeName(r.SourceType), typeName(r.TargetType)
		if i, ok := relIndex[foldKey(r.Name)]; ok {
			rels[i] = rels[i].Widen(r)
			continue
		}
		relIndex[foldKey(r.Name)] = len(rels)
		rels = append(rels, r)
	}
	return objects, rels, conflicts
}

// Widen is relationship type r, of the same name as o, covering o too: a
// pack has one relationship type per name, with one source and one
// target type, so a differing end becomes any type (Any), a differing
// cardinality many-to-many, and an empty description o's. r keeps its
// name.
func (r RelationshipType) Widen(o RelationshipType) RelationshipType {
	if r.SourceType != o.SourceType {
		r.SourceType = Any
	}
	if r.TargetType != o.TargetType {
		r.TargetType = Any
	}
	if r.Cardinality != o.Cardinality {
		r.Cardinality = ManyToMany
	}
	if r.Description == "" {
		r.Description = o.Description
	}
	return r
}

// mergeObject is have with o merged in, and the properties o gives
// another type (see ExtendPack).
func mergeObject(have, o ObjectType) (ObjectType, []string) {
	if have.Description == "" {
		have.Description = o.Description
	}
	schema := normalSchema(have.Schema)
	add := normalSchema(o.Schema)
	props := schemaProperties(schema)
	if props == nil {
		props = map[string]any{}
	}
	byKey := map[string]string{}
	for name := range props {
		byKey[propertyKey(name)] = name
	}
	var conflicts []string
	added := map[string]bool{}
	newProps := schemaProperties(add)
	for _, name := range slices.Sorted(maps.Keys(newProps)) {
		v := newProps[name]
		if kept, ok := byKey[propertyKey(name)]; ok {
			if c := typeConflict(props[kept], v); c != "" {
				conflicts = append(conflicts, have.Name+"."+kept+": "+c)
			}
			continue
		}
		props[name], byKey[propertyKey(name)], added[name] = v, name, true
	}
	if len(props) > 0 {
		schema["properties"] = props
	}
	required := schemaRequired(schema)
	for _, r := range schemaRequired(add) {
		if added[r] && !slices.Contains(required, r) {
			required = append(required, r)
		}
	}
	setRequired(schema, required)
	have.Schema = schema
	have.Examples = unionExamples(have.Examples, o.Examples)
	return have, conflicts
}

// propertyKey matches property names across spellings
// (typename.PropertyKey; the name itself when that is empty).
func propertyKey(name string) string {
	if k := typename.PropertyKey(name); k != "" {
		return k
	}
	return name
}

// typeConflict describes how property schema proposed gives another
// "type" than kept ("integer, not string"); "" when either has none or
// they agree.
func typeConflict(kept, proposed any) string {
	k, _ := kept.(map[string]any)
	p, _ := proposed.(map[string]any)
	kt, okK := k["type"]
	pt, okP := p["type"]
	if !okK || !okP || jsonEqual(kt, pt) {
		return ""
	}
	return fmt.Sprintf("%s, not %s", typeText(kt), typeText(pt))
}

// typeText is a JSON Schema "type" value as text: "string", or
// "[string,null]" for a list.
func typeText(t any) string {
	if s, ok := t.(string); ok {
		return s
	}
	b, _ := json.Marshal(t)
	return string(b)
}

// unionExamples is have followed by the examples of more that are not
// in it.
func unionExamples(have, more []map[string]any) []map[string]any {
	out := slices.Clone(have)
	if out == nil {
		out = []map[string]any{}
	}
	for _, e := range more {
		if !slices.ContainsFunc(out, func(h map[string]any) bool { return jsonEqual(h, e) }) {
			out = append(out, e)
		}
	}
	return out
}

// lockOwnPack locks project's pack id for a change and returns it.
// Errors: not_found (no pack of project), failed_precondition (built-in).
func lockOwnPack(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) (Pack, error) {
	old, err := packGetForUpdate(ctx, tx, id)
	if err != nil {
		return Pack{}, err
	}
	if old.ProjectID == nil {
		return Pack{}, ErrBuiltinReadOnly
	}
	if *old.ProjectID != project {
		return Pack{}, ErrNotFound
	}
	return old, nil
}

// writeVersion stores p as the next version of old (same id), with its
// changelog, and returns it; when p changes nothing it returns old and
// writes nothing.
func (s *Service) writeVersion(ctx context.Context, tx pgx.Tx, old, p Pack, by *uuid.UUID) (Pack, error) {
	log := diffPacks(old, p)
	if log.Empty() {
		return old, nil
	}
	p.ID, p.ProjectID, p.Version, p.CreatedAt, p.UpdatedAt = old.ID, old.ProjectID, BumpVersion(old.Version), old.CreatedAt, s.now().UTC()
	if err := packUpdate(ctx, tx, p); err != nil {
		return Pack{}, err
	}
	if err := versionInsert(ctx, tx, p, log, by); err != nil {
		return Pack{}, err
	}
	return packGet(ctx, tx, p.ID)
}
