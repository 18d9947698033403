package templatepack_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/templatepack"
	"github.com/graphmill/graphmill/internal/tenancy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type testBundle struct {
	pool    *pgxpool.Pool
	svc     *templatepack.Service
	project uuid.UUID
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	ten := tenancy.NewService(pool, nil, time.Now)
	_, err := ten.Bootstrap(ctx, "")
	require.NoError(t, err)
	svc, err := templatepack.NewService(pool, ten, time.Now)
	require.NoError(t, err)
	b := &testBundle{pool: pool, svc: svc}
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM projects`).Scan(&b.project))
	return b
}

func (b *testBundle) create(t *testing.T, in templatepack.PackInput) (templatepack.Pack, error) {
	t.Helper()
	var out templatepack.Pack
	err := postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		var err error
		out, err = b.svc.CreatePack(context.Background(), tx, b.project, in, nil)
		return err
	})
	return out, err
}

func (b *testBundle) update(t *testing.T, id uuid.UUID, in templatepack.PackInput) (templatepack.Pack, error) {
	t.Helper()
	var out templatepack.Pack
	err := postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		var err error
		out, err = b.svc.UpdatePack(context.Background(), tx, b.project, id, in, nil)
		return err
	})
	return out, err
}

func TestSeedBuiltinUpsertsTheBuiltinPack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, b.svc.SeedBuiltin(ctx))
	require.NoError(t, b.svc.SeedBuiltin(ctx), "idempotent")
	var n int
	var id uuid.UUID
	var version, source string
	var objects int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) OVER (), id, version, source, jsonb_array_length(object_types)
		FROM template_packs WHERE project_id IS NULL`).Scan(&n, &id, &version, &source, &objects))
	require.Equal(t, 1, n)
	require.Equal(t, "1.0.0", version)
	require.Equal(t, templatepack.SourceBuiltin, source)
	require.Equal(t, 7, objects)

	// A changed definition (here: an older one in the database) is
	// replaced and the version bumped, once.
	_, err := b.pool.Exec(ctx, `UPDATE template_packs SET object_types = '[]' WHERE id = $1`, id)
	require.NoError(t, err)
	require.NoError(t, b.svc.SeedBuiltin(ctx))
	require.NoError(t, b.svc.SeedBuiltin(ctx))
	var id2 uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id, version, jsonb_array_length(object_types) FROM template_packs WHERE project_id IS NULL`).
		Scan(&id2, &version, &objects))
	require.Equal(t, id, id2)
	require.Equal(t, "1.0.1", version)
	require.Equal(t, 7, objects)
}

func TestBumpVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"1.0.0": "1.0.1", "2.3.9": "2.3.10", "7": "8", "beta": "beta.1", "1.0.x": "1.0.x.1"} {
		require.Equal(t, want, templatepack.BumpVersion(in), in)
	}
}

func TestDefaultTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	types, err := b.svc.TypesFor(context.Background(), b.project)
	require.NoError(t, err)
	require.Equal(t, []string{"Person", "Organization", "Location", "Event", "Product", "Concept", "Document"}, types.ObjectNames())
	for _, o := range types.Objects {
		require.NotEmpty(t, o.Description, o.Name)
		require.NotEmpty(t, o.Examples, o.Name)
		props, _ := o.Examples[0]["properties"].(map[string]any)
		require.NoError(t, types.Validate(o.Name, props), "the example of %s is valid", o.Name)
	}
	_, ok := types.Object("person")
	require.False(t, ok, "names are case-sensitive")

	require.NoError(t, types.Validate("Person", nil))
	require.NoError(t, types.Validate("Person", map[string]any{"title": "CEO", "aliases": []string{"A"}, "extra": 1}))
	err = types.Validate("Location", map[string]any{"latitude": 123.5, "country": 7})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.Contains(t, err.Error(), "property latitude: must be at most 90")
	require.Contains(t, err.Error(), "property country: must be string, not number")
	require.NotContains(t, err.Error(), "123.5", "values are not echoed")
	err = types.Validate("Spaceship", nil)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.Contains(t, err.Error(), `unknown object type "Spaceship"`)

	for _, c := range []struct {
		rel, src, tgt string
		want          bool
	}{
		{"WORKS_FOR", "Person", "Organization", true},
		{"WORKS_FOR", "Organization", "Person", false},
		{"LOCATED_IN", "Organization", "Location", true},
		{"LOCATED_IN", "Organization", "Person", false},
		{"RELATED_TO", "Concept", "Product", true},
		{"MENTIONS", "Document", "Event", true},
		{"MENTIONS", "Person", "Event", false},
		{"HELD_IN", "Event", "Location", true},
		{"NOPE", "Person", "Person", false},
	} {
		require.Equal(t, c.want, types.AllowsRelationship(c.rel, c.src, c.tgt), "%s %s→%s", c.rel, c.src, c.tgt)
	}
	r, ok := types.Relationship("PRODUCES")
	require.True(t, ok)
	require.Equal(t, templatepack.OneToMany, r.Cardinality)
}

func widgetPack(name string) templatepack.PackInput {
	return templatepack.PackInput{
		Name:   name,
		Source: templatepack.SourceDiscovery,
		ObjectTypes: []templatepack.ObjectType{{
			Name: "Widget", Description: "A widget.",
			Schema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"size": map[string]any{"type": "integer", "minimum": 1}},
				"required":   []any{"size"},
			},
		}, {
			Name: "Person", Description: "Overrides the default Person.",
			Schema: map[string]any{"type": "object", "properties": map[string]any{"badge": map[string]any{"type": "string"}}, "required": []any{"badge"}},
		}},
		RelationshipTypes: []templatepack.RelationshipType{
			{Name: "USES", SourceType: "Person", TargetType: "Widget", Cardinality: templatepack.ManyToMany, Description: "uses"},
		},
	}
}

func TestCreateAndUpdatePack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, b.svc.SeedBuiltin(ctx))

	p, err := b.create(t, widgetPack("Widgets"))
	require.NoError(t, err)
	require.Equal(t, "1.0.0", p.Version)
	require.Equal(t, b.project, *p.ProjectID)
	require.Equal(t, templatepack.SourceDiscovery, p.Source)
	require.Len(t, p.ObjectTypes, 2)
	require.Equal(t, []map[string]any{}, p.ObjectTypes[0].Examples)

	_, err = b.create(t, widgetPack("widgets"))
	require.Equal(t, errs.Conflict, errs.CodeOf(err), "names are unique per project, case-insensitively")

	bad := widgetPack("Bad")
	bad.ObjectTypes[0].Schema = map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integr"}}}
	_, err = b.create(t, bad)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.Contains(t, err.Error(), `"Widget"`)
	bad.ObjectTypes[0].Schema = map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "file:///etc/passwd"}}}
	_, err = b.create(t, bad)
	require.Equal(t, errs.Invalid, errs.CodeOf(err), "external references are refused")
	bad = widgetPack("Bad")
	bad.RelationshipTypes[0].Cardinality = "lots"
	_, err = b.create(t, bad)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	bad = widgetPack("Bad")
	bad.ObjectTypes = append(bad.ObjectTypes, bad.ObjectTypes[0])
	_, err = b.create(t, bad)
	require.Contains(t, err.Error(), "appears twice")

	// Installed packs replace the default pack; a later pack wins on a
	// name clash.
	_, created, err := b.svc.Install(ctx, b.project, p.ID, nil)
	require.NoError(t, err)
	require.True(t, created)
	types, err := b.svc.TypesFor(ctx, b.project)
	require.NoError(t, err)
	require.Equal(t, []string{"Widget", "Person"}, types.ObjectNames())
	err = types.Validate("Widget", map[string]any{"size": 0})
	require.Contains(t, err.Error(), "property size: must be at least 1")
	err = types.Validate("Widget", map[string]any{})
	require.Contains(t, err.Error(), "missing required property size")
	require.True(t, types.AllowsRelationship("USES", "Person", "Widget"))

	var builtin uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM template_packs WHERE project_id IS NULL`).Scan(&builtin))
	_, created, err = b.svc.Install(ctx, b.project, builtin, nil)
	require.NoError(t, err)
	require.True(t, created)
	types, err = b.svc.TypesFor(ctx, b.project)
	require.NoError(t, err)
	require.Len(t, types.Objects, 8, "Widget plus the seven default types")
	require.NoError(t, types.Validate("Person", map[string]any{}), "the default Person, installed later, wins")

	// Update: the version is bumped, the types change at once.
	up := widgetPack("Widgets v2")
	up.ObjectTypes[0].Schema = map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer", "minimum": 0}}}
	p2, err := b.update(t, p.ID, up)
	require.NoError(t, err)
	require.Equal(t, "1.0.1", p2.Version)
	require.Equal(t, "Widgets v2", p2.Name)
	require.True(t, !p2.UpdatedAt.Before(p.UpdatedAt))
	types, err = b.svc.TypesFor(ctx, b.project)
	require.NoError(t, err)
	require.NoError(t, types.Validate("Widget", map[string]any{"size": 0}))
	p3, err := b.update(t, p.ID, up)
	require.NoError(t, err)
	require.Equal(t, "1.0.1", p3.Version, "an unchanged definition keeps its version")

	_, err = b.update(t, builtin, up)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	_, err = b.update(t, uuid.Must(uuid.NewV7()), up)
	require.Equal(t, errs.NotFound, errs.CodeOf(err))

	// Uninstall.
	require.NoError(t, b.svc.Uninstall(ctx, b.project, p.ID))
	require.Equal(t, errs.NotFound, errs.CodeOf(b.svc.Uninstall(ctx, b.project, p.ID)))
}

// TestPackSchemaLoopsAndCounts: a schema that refers back to itself in
// place ($ref to itself, through allOf or $defs) used to be accepted, and
// then refused every value of that property with "fails the rule "; a count
// keyword past the validator's int (maxLength 1e308) was read as 0 and
// refused every string. Both are refused when the pack is made, naming
// the problem; recursion through a property (a tree) is still accepted.
func TestPackSchemaLoopsAndCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	withProps := func(name string, props map[string]any, extra map[string]any) templatepack.PackInput {
		in := widgetPack(name)
		sch := map[string]any{"type": "object", "properties": props}
		maps.Copy(sch, extra)
		in.ObjectTypes[0].Schema = sch
		return in
	}
	ref := func(to string) map[string]any { return map[string]any{"$ref": to} }
	for i, tc := range []struct {
		props, extra map[string]any
		detail       string
	}{
		{props: map[string]any{"x": ref("#/properties/x")}, detail: "#/properties/x refers back to itself"},
		{props: map[string]any{"x": map[string]any{"allOf": []any{ref("#/properties/x")}}}, detail: "refers back to itself"},
		{props: map[string]any{"x": ref("#/$defs/a")}, extra: map[string]any{"$defs": map[string]any{"a": ref("#/$defs/b"), "b": map[string]any{"anyOf": []any{ref("#/$defs/a")}}}}, detail: "refers back to itself"},
		{props: map[string]any{"x": map[string]any{"type": "string", "maxLength": 1e308}}, detail: "maxLength must be at most 2147483647"},
		{props: map[string]any{"x": map[string]any{"type": "array", "items": map[string]any{"minItems": 1e19}}}, detail: "minItems must be at most 2147483647"},
		// A property named as a value keyword is a schema all the same.
		{props: map[string]any{"default": map[string]any{"type": "string", "maxLength": 1e308}}, detail: "maxLength must be at most 2147483647"},
		{props: map[string]any{"x": ref("#/$defs/enum")}, extra: map[string]any{"$defs": map[string]any{"enum": map[string]any{"maxItems": 1e19}}}, detail: "maxItems must be at most 2147483647"},
	} {
		_, err := b.create(t, withProps(fmt.Sprintf("Bad %d", i), tc.props, tc.extra))
		require.Equal(t, errs.Invalid, errs.CodeOf(err), "%d: %v", i, err)
		require.ErrorContains(t, err, `"Widget" is invalid`)
		require.ErrorContains(t, err, tc.detail)
	}
	// Fine: a tree (recursion one property deeper each time), a count in a
	// value, a count at the bound.
	tree := map[string]any{"$defs": map[string]any{"node": map[string]any{"type": "object", "properties": map[string]any{"child": ref("#/$defs/node")}}}}
	p, err := b.create(t, withProps("Tree", map[string]any{"root": ref("#/$defs/node"), "note": map[string]any{"type": "string", "maxLength": 2147483647, "const": map[string]any{"maxLength": 1e308}}}, tree))
	require.NoError(t, err)
	_, _, err = b.svc.Install(context.Background(), b.project, p.ID, nil)
	require.NoError(t, err)
	types, err := b.svc.TypesFor(context.Background(), b.project)
	require.NoError(t, err)
	require.NoError(t, types.Validate("Widget", map[string]any{"root": map[string]any{"child": map[string]any{"child": map[string]any{}}}}))
	require.ErrorContains(t, types.Validate("Widget", map[string]any{"root": map[string]any{"child": 1}}), "property root.child: must be object, not number")

	// A pack stored before these checks still loads: the project's types
	// do not break on it.
	_, err = b.pool.Exec(context.Background(), `UPDATE template_packs SET object_types = '[{"name":"Loop","schema":{"type":"object","properties":{"x":{"$ref":"#/properties/x"}}}}]',
		updated_at = now() WHERE id = $1`, p.ID)
	require.NoError(t, err)
	types, err = b.svc.TypesFor(context.Background(), b.project)
	require.NoError(t, err)
	require.NoError(t, types.Validate("Loop", map[string]any{}))
	require.ErrorContains(t, types.Validate("Loop", map[string]any{"x": 1}), "property x: cannot be checked: its schema refers back to itself (#/properties/x)")
}

// TestCheckTypeNameJoiners: a type name follows displayname's rule, so
// a joiner between two visible characters (Persian, an emoji sequence) is
// accepted and one out of place is refused, as are '/' and a zero-width
// space.
func TestCheckTypeNameJoiners(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"می\u200cخواهم", "👩\u200d💻 Developer", "Person"} {
		require.NoError(t, templatepack.CheckTypeName("object type", ok), "%q", ok)
	}
	for _, bad := range []string{"Person\u200d", "a/b", "Per\u200bson", "a\u200d b", "Per\nson"} {
		err := templatepack.CheckTypeName("object type", bad)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), "%q", bad)
		require.ErrorContains(t, err, "no '/', control or invisible characters", "%q", bad)
	}
}
