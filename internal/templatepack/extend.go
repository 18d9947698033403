package templatepack

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
)

// ExtendPack merges in's types into project's pack id in the caller's
// transaction and writes the result as the pack's next version (the
// update mode of a discovery's finalize). Object types match by name,
// case-insensitively: their properties are unioned (in's property schema
// wins), in's required properties are added when they are properties of
// the result, the description is kept unless empty, examples are
// unioned; other types are appended. Relationship types match by name,
// source and target type (after the type names are matched): in's
// cardinality wins, the description is kept unless empty; others are
// appended, and a name the pack has with other endpoints is refused. The
// pack keeps its name and source; in.Description fills an empty one.
// Nothing changes (no version) when the merge adds nothing. Concurrent
// calls are serialised on the pack. Errors: invalid_argument, not_found
// (not project's pack), failed_precondition (a built-in pack).
func (s *Service) ExtendPack(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, in PackInput, by *uuid.UUID) (Pack, error) {
	if _, err := compilePack(in.ObjectTypes, in.RelationshipTypes); err != nil {
		return Pack{}, err
	}
	old, err := lockOwnPack(ctx, tx, project, id)
	if err != nil {
		return Pack{}, err
	}
	objects, rels, err := extendTypes(old, in)
	if err != nil {
		return Pack{}, err
	}
	desc := old.Description
	if desc == "" {
		desc = in.Description
	}
	p, err := s.packFrom(PackInput{Name: old.Name, Description: desc, Source: old.Source, ObjectTypes: objects, RelationshipTypes: rels})
	if err != nil {
		return Pack{}, err
	}
	return s.writeVersion(ctx, tx, old, p, by)
}

// extendTypes is old's types with in's merged in (see ExtendPack).
func extendTypes(old Pack, in PackInput) ([]ObjectType, []RelationshipType, error) {
	objects := slices.Clone(old.ObjectTypes)
	index := map[string]int{}
	for i, o := range objects {
		index[foldKey(o.Name)] = i
	}
	for _, o := range in.ObjectTypes {
		if i, ok := index[foldKey(o.Name)]; ok {
			objects[i] = mergeObject(objects[i], o)
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
		i, ok := relIndex[foldKey(r.Name)]
		if !ok {
			relIndex[foldKey(r.Name)] = len(rels)
			rels = append(rels, r)
			continue
		}
		have := rels[i]
		if have.SourceType != r.SourceType || have.TargetType != r.TargetType {
			return nil, nil, errs.Errorf(errs.Invalid,
				"relationship type %q of the pack goes from %s to %s, not from %s to %s; a relationship type name has one source and one target type",
				have.Name, have.SourceType, have.TargetType, r.SourceType, r.TargetType)
		}
		if r.Cardinality != "" {
			have.Cardinality = r.Cardinality
		}
		if have.Description == "" {
			have.Description = r.Description
		}
		rels[i] = have
	}
	return objects, rels, nil
}

// mergeObject is have with o merged in (see ExtendPack).
func mergeObject(have, o ObjectType) ObjectType {
	if have.Description == "" {
		have.Description = o.Description
	}
	schema := normalSchema(have.Schema)
	add := normalSchema(o.Schema)
	props := schemaProperties(schema)
	if props == nil {
		props = map[string]any{}
	}
	for name, v := range schemaProperties(add) {
		props[name] = v
	}
	if len(props) > 0 {
		schema["properties"] = props
	}
	required := schemaRequired(schema)
	for _, r := range schemaRequired(add) {
		if _, ok := props[r]; ok && !slices.Contains(required, r) {
			required = append(required, r)
		}
	}
	if len(required) > 0 {
		list := make([]any, len(required))
		for i, r := range required {
			list[i] = r
		}
		schema["required"] = list
	}
	have.Schema = schema
	have.Examples = unionExamples(have.Examples, o.Examples)
	return have
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
