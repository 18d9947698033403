package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// discFinalizeSetup is a server with a completed discovery job of the
// default project and the job's finalize path.
func discFinalizeSetup(t *testing.T) (s *testServer, project, org, doc, path string) {
	t.Helper()
	s = newServer(t)
	project, org = s.defaultProject()
	doc = s.discParsed(project, "a.md", "# A\n\nAda Lovelace maintains the extraction pipeline.")
	id := s.discWait(project, s.discStart(s.admin, project, map[string]any{"document_ids": []string{doc}}), "completed").ID
	return s, project, org, doc, "/api/discovery-jobs/" + id + "/finalize"
}

// discPackType is the stored definition (as JSON text) of the object
// type name of pack.
func (s *testServer) discPackType(pack, name string) string {
	s.t.Helper()
	var def string
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(),
		`SELECT t::text FROM template_packs, jsonb_array_elements(object_types) t WHERE id = $1 AND t->>'name' = $2`, pack, name).Scan(&def))
	return def
}

func discMessage(t *testing.T, r response) string {
	t.Helper()
	var fin struct {
		Message string `json:"message"`
	}
	r.Decode(t, &fin)
	return fin.Message
}

// TestDiscoveryFinalizeUpdateKeepsPackSchema: an update only adds. The
// pack's hand-written {"type": "integer", "minimum": 1} stays although
// discovery proposes {"type": "string"} (the conflict is named in the
// message), a new property is added, a relationship type the pack has
// with other ends is widened as create widens, and the same update again
// writes no version and says so.
func TestDiscoveryFinalizeUpdateKeepsPackSchema(t *testing.T) {
	t.Parallel()
	s, project, _, _, path := discFinalizeSetup(t)
	hp := header{"X-Project-ID", project}
	own := s.graphCreatePack(project, graphPack("Own"))
	versions := func() int {
		return s.extractionCount(`SELECT count(*) FROM template_pack_versions WHERE pack_id = $1`, own)
	}
	body := map[string]any{
		"packName": "Own", "mode": "update", "existingPackId": own, "install": false,
		"includedTypes": []any{map[string]any{"type_name": "widget", "description": "", "properties": map[string]any{
			"size":  map[string]any{"type": "string", "description": "Size."},
			"color": map[string]any{"type": "string", "description": "Colour."},
		}}},
		"includedRelationships": []any{map[string]any{"source_type": "Widget", "target_type": "widget", "relation_type": "uses", "cardinality": "one_to_many"}},
	}
	msg := discMessage(t, s.must(200, "POST", path, s.admin, body, hp))
	require.Contains(t, msg, `updated template pack "Own" to version 1.0.1`)
	require.Contains(t, msg, "kept the pack's property types where discovery proposed others: Widget.size: integer, not string")
	require.JSONEq(t, `{"name": "Widget", "description": "A widget.", "examples": [], "schema": {"type": "object", "required": ["size"],
		"properties": {"size": {"type": "integer", "minimum": 1}, "color": {"type": "string", "description": "Colour."}}}}`, s.discPackType(own, "Widget"))
	var rels string
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT relationship_types::text FROM template_packs WHERE id = $1`, own).Scan(&rels))
	require.JSONEq(t, `[{"name": "USES", "sourceType": "*", "targetType": "Widget", "description": "uses", "cardinality": "many-to-many"}]`, rels,
		"USES Gadget->Widget and Widget->Widget: the source widened to any type")
	require.Equal(t, 2, versions())

	// The same update again: nothing new, no version, and the message
	// says so (and still names the conflict).
	msg = discMessage(t, s.must(200, "POST", path, s.admin, body, hp))
	require.True(t, strings.HasPrefix(msg, `nothing new: the template pack "Own" is unchanged at version 1.0.1`), msg)
	require.Contains(t, msg, "Widget.size: integer, not string")
	require.NotContains(t, msg, "updated")
	require.Equal(t, 2, versions())
}

// TestDiscoveryFinalizeUpdateRules: whose packs an update may change and
// what it refuses, each with the pack left as it was.
func TestDiscoveryFinalizeUpdateRules(t *testing.T) {
	t.Parallel()
	s, project, org, _, path := discFinalizeSetup(t)
	hp := header{"X-Project-ID", project}
	gizmo := map[string]any{"type_name": "Gizmo", "description": "A gizmo.", "properties": map[string]any{}}
	own := s.graphCreatePack(project, graphPack("Own"))
	versions := func(pack string) int {
		return s.extractionCount(`SELECT count(*) FROM template_pack_versions WHERE pack_id = $1`, pack)
	}

	// A pack of a sibling project of the organization: visible (GET 200)
	// but not this project's to change: 403 saying why, not 404.
	sib := s.graphCreatePack(s.graphNewProject(org, "sibling"), graphPack("Sibling"))
	s.must(200, "GET", "/api/template-packs/"+sib, s.admin, nil, hp)
	r := s.do("POST", path, s.admin, map[string]any{"packName": "Sibling", "mode": "update", "existingPackId": sib, "includedTypes": []any{gizmo}}, hp)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Contains(t, r.Detail(t), `template pack "Sibling" belongs to another project`)
	require.Contains(t, r.Detail(t), "mode create")
	require.Equal(t, 1, versions(sib))

	// The built-in pack: read-only (409).
	var builtin string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT id::text FROM template_packs WHERE project_id IS NULL`).Scan(&builtin))
	r = s.do("POST", path, s.admin, map[string]any{"packName": "Default", "mode": "update", "existingPackId": builtin, "includedTypes": []any{gizmo}}, hp)
	require.Equal(t, 409, r.Status, string(r.Body))

	// packName must be the pack's name in update mode.
	r = s.do("POST", path, s.admin, map[string]any{"packName": "Renamed", "mode": "update", "existingPackId": own, "includedTypes": []any{gizmo}, "install": false}, hp)
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Contains(t, r.Detail(t), `packName "Renamed" is not the name of the pack to update ("Own")`)
	require.Equal(t, 1, versions(own))

	// reextract without install: the reextraction could not use the new
	// types, so it is refused, in both modes.
	reext := s.extractionCount(`SELECT count(*) FROM object_extraction_jobs`)
	for _, b := range []map[string]any{
		{"packName": "Rx", "mode": "create", "install": false, "reextract": true, "includedTypes": []any{gizmo}},
		{"packName": "Own", "mode": "update", "existingPackId": own, "install": false, "reextract": true, "includedTypes": []any{gizmo}},
	} {
		r = s.do("POST", path, s.admin, b, hp)
		require.Equal(t, 400, r.Status, string(r.Body))
		require.Contains(t, r.Detail(t), "reextract needs install")
	}
	require.Equal(t, reext, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs`))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM template_packs WHERE name = 'Rx'`))
	require.Equal(t, 1, versions(own))

	// The right name: a new version.
	msg := discMessage(t, s.must(200, "POST", path, s.admin, map[string]any{"packName": "Own", "mode": "update", "existingPackId": own, "includedTypes": []any{gizmo}, "install": false}, hp))
	require.Contains(t, msg, `updated template pack "Own" to version 1.0.1`)
	require.Equal(t, 2, versions(own))
}

// TestDiscoveryFinalizeValidation: type names, case duplicates, example
// instances and relationship ends of a finalize.
func TestDiscoveryFinalizeValidation(t *testing.T) {
	t.Parallel()
	s, project, org, doc, path := discFinalizeSetup(t)
	hp := header{"X-Project-ID", project}
	typ := func(name string, examples ...any) map[string]any {
		return map[string]any{"type_name": name, "description": "d", "properties": map[string]any{}, "example_instances": examples}
	}
	example := func(doc, quote string) map[string]any {
		return map[string]any{"name": "Ada", "quote": quote, "document_id": doc}
	}
	foreign := s.discParsed(s.graphNewProject(org, "other"), "f.md", "# F\n\nSecret.")
	sixExamples := []any{}
	for range 6 {
		sixExamples = append(sixExamples, example(doc, "Ada Lovelace maintains the extraction pipeline."))
	}
	for _, c := range []struct {
		name   string
		types  []any
		detail string
	}{
		{"case duplicates", []any{typ("Widget"), typ("widget")}, `"Widget" and "widget" are one type`},
		{"control characters", []any{typ("a<script>\nb")}, "no '/', control or invisible characters"},
		{"slash", []any{typ("Has Space/Slash")}, "no '/'"},
		{"zero-width space", []any{typ("Wid\u200bget")}, "invisible"},
		{"any", []any{typ("*")}, "any type"},
		{"document of another project", []any{typ("Exy", example(foreign, "Secret."))}, "document_id " + foreign + " is not a document of the project"},
		{"unknown document", []any{typ("Exy", example("00000000-0000-0000-0000-000000000001", "q"))}, "is not a document of the project"},
		{"too many examples", []any{typ("Exy", sixExamples...)}, "at most 5 example_instances"},
		{"long quote", []any{typ("Exy", example(doc, strings.Repeat("q", 501)))}, "quote is longer than 500 characters"},
		{"nameless example", []any{typ("Exy", map[string]any{"name": " ", "quote": "q", "document_id": doc})}, "name must be 1 to 500 characters"},
	} {
		r := s.do("POST", path, s.admin, map[string]any{"packName": "P", "mode": "create", "install": false, "includedTypes": c.types}, hp)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Body)
		require.Contains(t, r.Detail(t), c.detail, c.name)
	}
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM template_packs WHERE project_id = $1`, project), "nothing made")

	// Examples from a document of the project outside the job are
	// accepted; relationship ends take the included or installed
	// spelling whatever their case.
	other := s.discParsed(project, "b.md", "# B\n\nGrace Hopper wrote the compiler.")
	var fin struct {
		TemplatePackID string `json:"template_pack_id"`
	}
	s.must(200, "POST", path, s.admin, map[string]any{
		"packName": "P", "mode": "create", "install": false,
		"includedTypes": []any{typ("Compiler", example(other, "Grace Hopper wrote the compiler."))},
		"includedRelationships": []any{
			map[string]any{"source_type": "PERSON", "target_type": "compiler", "relation_type": "WROTE", "cardinality": "one_to_many"},
		},
	}, hp).Decode(t, &fin)
	var rels string
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT relationship_types::text FROM template_packs WHERE id = $1`, fin.TemplatePackID).Scan(&rels))
	require.JSONEq(t, `[{"name": "WROTE", "sourceType": "Person", "targetType": "Compiler", "description": "", "cardinality": "one-to-many"}]`, rels)
	require.Contains(t, s.discPackType(fin.TemplatePackID, "Compiler"), other)
}
