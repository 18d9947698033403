package templatepack_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// admin is the bootstrap user, the author of the versions the tests
// write.
func (b *testBundle) admin(t *testing.T) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT user_id FROM superadmins`).Scan(&id))
	return id
}

func (b *testBundle) createBy(t *testing.T, in templatepack.PackInput, by *uuid.UUID) templatepack.Pack {
	t.Helper()
	var out templatepack.Pack
	require.NoError(t, postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		var err error
		out, err = b.svc.CreatePack(context.Background(), tx, b.project, in, by)
		return err
	}))
	return out
}

func (b *testBundle) extend(t *testing.T, project, id uuid.UUID, in templatepack.PackInput, by *uuid.UUID) (templatepack.Extended, error) {
	t.Helper()
	var out templatepack.Extended
	err := postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		var err error
		out, err = b.svc.ExtendPack(context.Background(), tx, project, id, in, by)
		return err
	})
	return out, err
}

func (b *testBundle) versions(t *testing.T, id uuid.UUID) []templatepack.PackVersion {
	t.Helper()
	list, total, err := b.svc.ListVersions(context.Background(), &auth.Principal{UserID: b.admin(t), Superadmin: true}, id, 50, 0)
	require.NoError(t, err)
	require.Len(t, list, total)
	return list
}

func (b *testBundle) version(t *testing.T, id uuid.UUID, version string) templatepack.PackVersionDetail {
	t.Helper()
	v, err := b.svc.GetVersion(context.Background(), &auth.Principal{UserID: b.admin(t), Superadmin: true}, id, version)
	require.NoError(t, err)
	return v
}

// changelog is an empty changelog with the lists set by f.
func changelog(f func(c *templatepack.Changelog)) templatepack.Changelog {
	c := templatepack.Changelog{
		TypesAdded: []string{}, TypesChanged: []templatepack.TypeChange{}, TypesRemoved: []string{},
		RelationshipTypesAdded: []templatepack.RelationshipRef{}, RelationshipTypesChanged: []templatepack.RelationshipChange{},
		RelationshipTypesRemoved: []templatepack.RelationshipRef{}, PackFieldsChanged: []string{},
	}
	f(&c)
	return c
}

// typeChange is a TypeChange of name with empty lists, set by f.
func typeChange(name string, f func(c *templatepack.TypeChange)) templatepack.TypeChange {
	c := templatepack.TypeChange{
		Name: name, PropertiesAdded: []string{}, PropertiesChanged: []string{}, PropertiesRemoved: []string{},
		RequiredAdded: []string{}, RequiredRemoved: []string{}, SchemaKeywordsChanged: []string{},
	}
	f(&c)
	return c
}

func TestPackVersionsOnCreateAndUpdate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	user := b.admin(t)

	p := b.createBy(t, widgetPack("Widgets"), &user)
	first := changelog(func(c *templatepack.Changelog) {
		c.TypesAdded = []string{"Widget", "Person"}
		c.RelationshipTypesAdded = []templatepack.RelationshipRef{{Name: "USES", SourceType: "Person", TargetType: "Widget"}}
	})
	list := b.versions(t, p.ID)
	require.Len(t, list, 1)
	require.Equal(t, "1.0.0", list[0].Version)
	require.Equal(t, &user, list[0].CreatedBy)
	require.Equal(t, p.CreatedAt, list[0].CreatedAt)
	require.Equal(t, first, list[0].Changelog)

	// A replace: Widget's size changes, color is added and size no longer
	// required; Person goes, Gadget comes; USES changes cardinality, HOLDS
	// comes.
	up := widgetPack("Widgets v2")
	up.ObjectTypes[0].Schema = map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
		"size": map[string]any{"type": "integer", "minimum": 0}, "color": map[string]any{"type": "string"},
	}}
	up.ObjectTypes[1] = templatepack.ObjectType{Name: "Gadget", Description: "A gadget."}
	up.RelationshipTypes = []templatepack.RelationshipType{
		{Name: "HOLDS", SourceType: "Gadget", TargetType: "Widget", Cardinality: templatepack.OneToMany},
		{Name: "USES", SourceType: "Gadget", TargetType: "Widget", Cardinality: templatepack.OneToMany, Description: "uses"},
	}
	p2, err := b.update(t, p.ID, up)
	require.NoError(t, err)
	require.Equal(t, "1.0.1", p2.Version)
	list = b.versions(t, p.ID)
	require.Equal(t, []string{"1.0.1", "1.0.0"}, []string{list[0].Version, list[1].Version}, "newest first")
	require.Nil(t, list[0].CreatedBy, "update was called without an author")
	require.Equal(t, p2.UpdatedAt, list[0].CreatedAt)
	require.Equal(t, changelog(func(c *templatepack.Changelog) {
		c.TypesAdded = []string{"Gadget"}
		c.TypesChanged = []templatepack.TypeChange{typeChange("Widget", func(tc *templatepack.TypeChange) {
			tc.PropertiesAdded = []string{"color"}
			tc.PropertiesChanged = []string{"size"}
			tc.RequiredRemoved = []string{"size"}
			tc.SchemaKeywordsChanged = []string{"additionalProperties"}
		})}
		c.TypesRemoved = []string{"Person"}
		c.RelationshipTypesAdded = []templatepack.RelationshipRef{{Name: "HOLDS", SourceType: "Gadget", TargetType: "Widget"}}
		c.RelationshipTypesChanged = []templatepack.RelationshipChange{{Name: "USES", SourceType: "Gadget", TargetType: "Widget", FieldsChanged: []string{"sourceType", "cardinality"}}}
		c.PackFieldsChanged = []string{"name"}
	}), list[0].Changelog)
	require.Equal(t, first, list[1].Changelog, "the first version's changelog is kept")

	// Each version keeps its definition.
	v1 := b.version(t, p.ID, "1.0.0")
	require.Equal(t, "Widgets", v1.Name)
	require.Equal(t, []string{"Widget", "Person"}, []string{v1.ObjectTypes[0].Name, v1.ObjectTypes[1].Name})
	require.Equal(t, map[string]any{"type": "integer", "minimum": float64(1)}, v1.ObjectTypes[0].Schema["properties"].(map[string]any)["size"])
	require.Equal(t, "USES", v1.RelationshipTypes[0].Name)
	require.Equal(t, &user, v1.CreatedBy)
	v2 := b.version(t, p.ID, "1.0.1")
	require.Equal(t, "Widgets v2", v2.Name)
	require.Equal(t, p2.ObjectTypes, v2.ObjectTypes)
	require.Equal(t, p2.RelationshipTypes, v2.RelationshipTypes)

	// An identical update writes no version.
	_, err = b.update(t, p.ID, up)
	require.NoError(t, err)
	require.Len(t, b.versions(t, p.ID), 2)

	_, err = b.svc.GetVersion(ctx, &auth.Principal{UserID: user, Superadmin: true}, p.ID, "1.0.2")
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
	_, _, err = b.svc.ListVersions(ctx, &auth.Principal{UserID: user, Superadmin: true}, uuid.Must(uuid.NewV7()), 50, 0)
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
	_, _, err = b.svc.ListVersions(ctx, &auth.Principal{UserID: uuid.Must(uuid.NewV7())}, p.ID, 50, 0)
	require.Equal(t, errs.NotFound, errs.CodeOf(err), "a caller who sees no project of the organization")

	// Versions go with their pack, and only with it.
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM template_pack_versions WHERE pack_id = $1`, p.ID).Scan(&n))
	require.Equal(t, 2, n)
	_, err = b.pool.Exec(ctx, `DELETE FROM template_packs WHERE id = $1`, p.ID)
	require.NoError(t, err)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM template_pack_versions WHERE pack_id = $1`, p.ID).Scan(&n))
	require.Equal(t, 0, n)
}

func TestSeedBuiltinWritesVersions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, b.svc.SeedBuiltin(ctx))
	require.NoError(t, b.svc.SeedBuiltin(ctx))
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM template_packs WHERE project_id IS NULL`).Scan(&id))
	list := b.versions(t, id)
	require.Len(t, list, 1, "an unchanged definition writes no version")
	def := templatepack.DefaultPack()
	require.Len(t, list[0].Changelog.TypesAdded, len(def.ObjectTypes))
	require.Nil(t, list[0].CreatedBy)

	_, err := b.pool.Exec(ctx, `UPDATE template_packs SET object_types = object_types - 0 WHERE id = $1`, id)
	require.NoError(t, err)
	require.NoError(t, b.svc.SeedBuiltin(ctx))
	list = b.versions(t, id)
	require.Equal(t, []string{"1.0.1", "1.0.0"}, []string{list[0].Version, list[1].Version})
	require.Equal(t, changelog(func(c *templatepack.Changelog) {
		c.TypesAdded = []string{def.ObjectTypes[0].Name}
	}), list[0].Changelog)
}

// basePack is the pack ExtendPack tests extend: widgetPack with a Person
// of no description and no required property.
func basePack() templatepack.PackInput {
	in := widgetPack("Base")
	in.ObjectTypes[1].Description = ""
	delete(in.ObjectTypes[1].Schema, "required")
	return in
}

// TestExtendPackMerges: an extend only adds. A matched type keeps its
// property schemas (a hand-written {"type": "integer", "minimum": 1}
// is not replaced by discovery's {"type": "string"}; the differing type
// is reported), gains the new properties and their required flags; a
// relationship type of the same name with other ends is widened.
func TestExtendPackMerges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	user := b.admin(t)
	p := b.createBy(t, basePack(), &user)

	in := templatepack.PackInput{
		Name: "ignored", Description: "From discovery.", Source: templatepack.SourceManual,
		ObjectTypes: []templatepack.ObjectType{{
			Name: "widget", Description: "Another description.",
			Schema: map[string]any{"type": "object", "properties": map[string]any{
				"size":  map[string]any{"type": "string", "description": "Size."},
				"color": map[string]any{"type": "string"},
			}, "required": []any{"color", "weight"}, "additionalProperties": false},
			Examples: []map[string]any{{"name": "W1"}},
		}, {
			Name: "PERSON", Description: "A person.",
			Schema: map[string]any{"type": "object", "properties": map[string]any{
				"Badge": map[string]any{"type": "integer"},
				"email": map[string]any{"type": "string"},
			}, "required": []any{"Badge", "email"}},
		}, {
			Name: "Gadget", Description: "A gadget.",
		}},
		RelationshipTypes: []templatepack.RelationshipType{
			{Name: "uses", SourceType: "gadget", TargetType: "WIDGET", Cardinality: templatepack.OneToMany, Description: "other"},
			{Name: "HOLDS", SourceType: "Gadget", TargetType: "widget", Cardinality: templatepack.OneToOne, Description: "holds"},
		},
	}
	got, err := b.extend(t, b.project, p.ID, in, &user)
	require.NoError(t, err)
	require.True(t, got.Changed)
	require.Equal(t, []string{"Widget.size: integer, not string", "Person.badge: string, not integer"}, got.Conflicts)
	require.Equal(t, "1.0.1", got.Pack.Version)
	require.Equal(t, "Base", got.Pack.Name, "the pack keeps its name")
	require.Equal(t, templatepack.SourceDiscovery, got.Pack.Source, "and its source")
	require.Equal(t, "From discovery.", got.Pack.Description, "an empty description is filled")

	require.Equal(t, []templatepack.ObjectType{{
		Name: "Widget", Description: "A widget.",
		Schema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"size":  map[string]any{"type": "integer", "minimum": float64(1)},
				"color": map[string]any{"type": "string"},
			},
			"required": []any{"size", "color"},
		},
		Examples: []map[string]any{{"name": "W1"}},
	}, {
		Name: "Person", Description: "A person.",
		Schema: map[string]any{"type": "object", "properties": map[string]any{
			"badge": map[string]any{"type": "string"},
			"email": map[string]any{"type": "string"},
		}, "required": []any{"email"}},
		Examples: []map[string]any{},
	}, {
		Name: "Gadget", Description: "A gadget.", Schema: map[string]any{"type": "object"}, Examples: []map[string]any{},
	}}, got.Pack.ObjectTypes)
	require.Equal(t, []templatepack.RelationshipType{
		{Name: "USES", SourceType: templatepack.Any, TargetType: "Widget", Cardinality: templatepack.ManyToMany, Description: "uses"},
		{Name: "HOLDS", SourceType: "Gadget", TargetType: "Widget", Cardinality: templatepack.OneToOne, Description: "holds"},
	}, got.Pack.RelationshipTypes, "USES Person->Widget and Gadget->Widget: the source widened to any type")

	list := b.versions(t, p.ID)
	require.Len(t, list, 2)
	require.Equal(t, &user, list[0].CreatedBy)
	require.Equal(t, changelog(func(c *templatepack.Changelog) {
		c.TypesAdded = []string{"Gadget"}
		c.TypesChanged = []templatepack.TypeChange{
			typeChange("Widget", func(tc *templatepack.TypeChange) {
				tc.PropertiesAdded = []string{"color"}
				tc.RequiredAdded = []string{"color"}
				tc.ExamplesChanged = true
			}),
			typeChange("Person", func(tc *templatepack.TypeChange) {
				tc.PropertiesAdded = []string{"email"}
				tc.RequiredAdded = []string{"email"}
				tc.DescriptionChanged = true
			}),
		}
		c.RelationshipTypesAdded = []templatepack.RelationshipRef{{Name: "HOLDS", SourceType: "Gadget", TargetType: "Widget"}}
		c.RelationshipTypesChanged = []templatepack.RelationshipChange{{Name: "USES", SourceType: "*", TargetType: "Widget", FieldsChanged: []string{"sourceType"}}}
		c.PackFieldsChanged = []string{"description"}
	}), list[0].Changelog)
	v1 := b.version(t, p.ID, "1.0.0")
	require.Len(t, v1.ObjectTypes, 2, "the previous version is kept as it was")
	require.Equal(t, []any{"size"}, v1.ObjectTypes[0].Schema["required"])

	// The new types are in force for a project that installed the pack.
	_, _, err = b.svc.Install(context.Background(), b.project, p.ID, nil)
	require.NoError(t, err)
	types, err := b.svc.TypesFor(context.Background(), b.project)
	require.NoError(t, err)
	require.Equal(t, []string{"Widget", "Person", "Gadget"}, types.ObjectNames())
	require.Contains(t, types.Validate("Widget", map[string]any{"size": 1}).Error(), "missing required property color")
	require.Error(t, types.Validate("Widget", map[string]any{"size": 0, "color": "red"}), "the hand-written minimum still holds")
	require.True(t, types.AllowsRelationship("HOLDS", "Gadget", "Widget"))
	require.True(t, types.AllowsRelationship("USES", "Gadget", "Widget"))

	// The same input again changes nothing: no version, the conflicts
	// still reported.
	again, err := b.extend(t, b.project, p.ID, in, &user)
	require.NoError(t, err)
	require.False(t, again.Changed)
	require.Equal(t, "1.0.1", again.Pack.Version)
	require.Len(t, again.Conflicts, 2)
	require.Len(t, b.versions(t, p.ID), 2)
}

func TestExtendPackRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, b.svc.SeedBuiltin(ctx))
	p := b.createBy(t, basePack(), nil)
	add := func(f func(in *templatepack.PackInput)) templatepack.PackInput {
		in := templatepack.PackInput{ObjectTypes: []templatepack.ObjectType{{Name: "Gadget"}}}
		f(&in)
		return in
	}

	for name, c := range map[string]struct {
		in   templatepack.PackInput
		code errs.Code
		msg  string
	}{
		"a type name with a slash":      {add(func(in *templatepack.PackInput) { in.ObjectTypes[0].Name = "Gadget/Widget" }), errs.Invalid, "no '/'"},
		"a type name with a line break": {add(func(in *templatepack.PackInput) { in.ObjectTypes[0].Name = "Gad\nget" }), errs.Invalid, "control"},
		"a type called *":               {add(func(in *templatepack.PackInput) { in.ObjectTypes[0].Name = "*" }), errs.Invalid, "any type"},
		"bad property schema": {add(func(in *templatepack.PackInput) {
			in.ObjectTypes[0].Schema = map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integr"}}}
		}), errs.Invalid, `"Gadget"`},
		"not an object schema": {add(func(in *templatepack.PackInput) {
			in.ObjectTypes[0].Schema = map[string]any{"type": "array"}
		}), errs.Invalid, `must have "type": "object"`},
		"bad schema of a matched type": {add(func(in *templatepack.PackInput) {
			in.ObjectTypes[0].Name = "Widget"
			in.ObjectTypes[0].Schema = map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer", "minimum": "one"}}}
		}), errs.Invalid, `"Widget"`},
		"bad cardinality": {add(func(in *templatepack.PackInput) {
			in.RelationshipTypes = []templatepack.RelationshipType{{Name: "HOLDS", SourceType: "Gadget", TargetType: "Widget", Cardinality: "lots"}}
		}), errs.Invalid, "cardinality"},
		"empty name": {add(func(in *templatepack.PackInput) { in.ObjectTypes[0].Name = " " }), errs.Invalid, "names must be non-empty"},
	} {
		_, err := b.extend(t, b.project, p.ID, c.in, nil)
		require.Equal(t, c.code, errs.CodeOf(err), name)
		require.Contains(t, err.Error(), c.msg, name)
	}
	require.Len(t, b.versions(t, p.ID), 1, "nothing was written")

	in := add(func(*templatepack.PackInput) {})
	var builtin uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM template_packs WHERE project_id IS NULL`).Scan(&builtin))
	_, err := b.extend(t, b.project, builtin, in, nil)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	_, err = b.extend(t, b.project, uuid.Must(uuid.NewV7()), in, nil)
	require.Equal(t, errs.NotFound, errs.CodeOf(err))

	// A pack of another project (same organization: visible, installable)
	// is not this project's to change.
	var org uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT org_id FROM projects WHERE id = $1`, b.project).Scan(&org))
	sibling := uuid.Must(uuid.NewV7())
	_, err = b.pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'sibling', now(), now())`, sibling, org)
	require.NoError(t, err)
	_, err = b.extend(t, sibling, p.ID, in, nil)
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
	err = postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := b.svc.UpdatePack(ctx, tx, sibling, p.ID, basePack(), nil)
		return err
	})
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
	require.Len(t, b.versions(t, p.ID), 1)
}

// TestExtendPackConcurrent runs a second ExtendPack while a first one
// holds the pack: the second waits, then merges into the first's result,
// so both land as successive versions.
func TestExtendPackConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := b.createBy(t, basePack(), nil)
	only := func(name string) templatepack.PackInput {
		return templatepack.PackInput{ObjectTypes: []templatepack.ObjectType{{Name: name}}}
	}

	tx1, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx1.Rollback(ctx) }()
	_, err = b.svc.ExtendPack(ctx, tx1, b.project, p.ID, only("Alpha"), nil)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := b.extendErr(ctx, p.ID, only("Beta"))
		done <- err
	}()
	waitForLockWait(t, b.pool)
	require.NoError(t, tx1.Commit(ctx))
	require.NoError(t, <-done)

	got, err := b.svc.GetPack(ctx, &auth.Principal{UserID: b.admin(t), Superadmin: true}, p.ID)
	require.NoError(t, err)
	require.Equal(t, "1.0.2", got.Version)
	require.Equal(t, []string{"Widget", "Person", "Alpha", "Beta"}, names(got.ObjectTypes))
	list := b.versions(t, p.ID)
	require.Equal(t, []string{"1.0.2", "1.0.1", "1.0.0"}, []string{list[0].Version, list[1].Version, list[2].Version})
	require.Equal(t, []string{"Beta"}, list[0].Changelog.TypesAdded)
	require.Equal(t, []string{"Alpha"}, list[1].Changelog.TypesAdded)
	require.Equal(t, []string{"Widget", "Person", "Alpha"}, names(b.version(t, p.ID, "1.0.1").ObjectTypes))
}

func (b *testBundle) extendErr(ctx context.Context, id uuid.UUID, in templatepack.PackInput) (templatepack.Extended, error) {
	var out templatepack.Extended
	err := postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		out, err = b.svc.ExtendPack(ctx, tx, b.project, id, in, nil)
		return err
	})
	return out, err
}

// waitForLockWait returns once a session of pool's database waits for a
// lock.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n > 0
	}, 30*time.Second, 10*time.Millisecond)
}

func names(types []templatepack.ObjectType) []string {
	out := make([]string, len(types))
	for i, o := range types {
		out[i] = o.Name
	}
	return out
}

// TestMigrationBackfillsVersions applies migration 00028 over a database
// holding packs: each gets its definition as version 1.
func TestMigrationBackfillsVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, provider := pgtest.NewAtVersion(t, 27)

	org, project, pack := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO template_packs (id, project_id, name, version, source, object_types, relationship_types, created_at, updated_at)
		VALUES ($1, $2, 'Old', '1.0.3', 'manual', '[{"name":"B","schema":{"type":"object"}},{"name":"A","schema":{"type":"object"}}]',
		        '[{"name":"R","sourceType":"A","targetType":"*","cardinality":"one-to-one"}]', now(), '2026-01-02T03:04:05Z')`, pack, project)
	require.NoError(t, err)
	_, err = provider.Up(ctx)
	require.NoError(t, err)

	var number int
	var version, name string
	var created time.Time
	var log templatepack.Changelog
	var objects []templatepack.ObjectType
	require.NoError(t, pool.QueryRow(ctx, `SELECT number, version, name, created_at, changelog, object_types FROM template_pack_versions WHERE pack_id = $1`, pack).
		Scan(&number, &version, &name, &created, &log, &objects))
	require.Equal(t, 1, number)
	require.Equal(t, "1.0.3", version)
	require.Equal(t, "Old", name)
	require.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), created.UTC())
	require.Equal(t, []string{"B", "A"}, names(objects))
	require.Equal(t, changelog(func(c *templatepack.Changelog) {
		c.TypesAdded = []string{"B", "A"}
		c.RelationshipTypesAdded = []templatepack.RelationshipRef{{Name: "R", SourceType: "A", TargetType: "*"}}
	}), log)
}

// BenchmarkExtendPack extends a pack of 100 object types (10 properties
// each) by 20 types: 10 of its types with 3 more properties (one new per
// op) and every other property schema given otherwise (kept), and 10
// types added by the first op and extended by the others. Each op is a
// transaction that writes a new version.
func BenchmarkExtendPack(bb *testing.B) {
	b := setup(bb)
	ctx := context.Background()
	objectType := func(name string, props int, seed int) templatepack.ObjectType {
		p := map[string]any{}
		for i := range props {
			p["p"+strconv.Itoa(i)] = map[string]any{"type": "string", "maxLength": seed + i}
		}
		p["n"+strconv.Itoa(seed)] = map[string]any{"type": "string"}
		return templatepack.ObjectType{Name: name, Description: "Type " + name, Schema: map[string]any{"type": "object", "properties": p}}
	}
	base := templatepack.PackInput{Name: "Bench"}
	for i := range 100 {
		base.ObjectTypes = append(base.ObjectTypes, objectType("T"+strconv.Itoa(i), 10, 1))
	}
	var p templatepack.Pack
	require.NoError(bb, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		p, err = b.svc.CreatePack(ctx, tx, b.project, base, nil)
		return err
	}))
	bb.ResetTimer()
	for n := 0; bb.Loop(); n++ {
		var in templatepack.PackInput
		for i := range 10 {
			in.ObjectTypes = append(in.ObjectTypes, objectType("T"+strconv.Itoa(i*10), 12, n+2), objectType("N"+strconv.Itoa(i), 5, n+2))
		}
		require.NoError(bb, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
			_, err := b.svc.ExtendPack(ctx, tx, b.project, p.ID, in, nil)
			return err
		}))
	}
}
