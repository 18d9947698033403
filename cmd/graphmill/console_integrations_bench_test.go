package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// benchIntegrationPages fills the project for BenchmarkConsolePages's
// MCP server, integration and discovery pages: one RSS integration with
// 10,000 syncs (COPY) and 10,000 discovery jobs with results over the
// documents (COPY). It returns the pages to measure and the replacements
// that name them in the report (ids to placeholders).
func benchIntegrationPages(b *testing.B, s *testServer, project string, docIDs []uuid.UUID, now time.Time) (pages, names []string) {
	b.Helper()
	pid := uuid.MustParse(project)
	in := s.must(201, "POST", "/api/integrations", s.admin, map[string]any{
		"name": "feed", "display_name": "Feed", "provider_type": "rss", "config": map[string]any{"feed_url": "https://feeds.example.com/a.xml"},
	}, header{"X-Project-ID", project}).JSON(b)
	integrationID := uuid.MustParse(in["id"].(string))
	const syncs, discoveries = 10_000, 10_000
	syncStatuses := []string{"completed", "completed", "completed", "failed", "cancelled"}
	syncRows := make([][]any, syncs)
	for i := range syncRows {
		at := now.Add(-time.Duration(syncs-i) * time.Minute)
		end := at.Add(time.Second)
		syncRows[i] = []any{uuid.Must(uuid.NewV7()), pid, syncStatuses[i%len(syncStatuses)], at, at, at, at, &end, integrationID, "scheduled", "done", 20, 20, 1, 2, 17, 0, 0}
	}
	benchCopy(b, s, "integration_sync_jobs", []string{
		"id", "project_id", "status", "run_at", "created_at", "updated_at", "started_at", "completed_at", "integration_id", "trigger_type", "phase",
		"total_items", "processed_items", "created_items", "updated_items", "unchanged_items", "deleted_items", "failed_items",
	}, syncRows)

	types, err := json.Marshal([]map[string]any{
		{
			"type_name": "Person", "description": "A person.", "properties": map[string]any{"role": map[string]any{"type": "string"}}, "required_properties": []string{},
			"example_instances": []map[string]any{{"name": "Ada Lovelace", "quote": "Ada Lovelace wrote the first program.", "document_id": docIDs[0]}}, "frequency": 3, "confidence": 0.8,
		},
		{"type_name": "Organization", "description": "A company.", "properties": map[string]any{}, "required_properties": []string{}, "example_instances": []any{}, "frequency": 2, "confidence": 0.7},
	})
	require.NoError(b, err)
	rels, err := json.Marshal([]map[string]any{
		{"source_type": "Person", "target_type": "Organization", "relation_type": "WORKS_FOR", "description": "Employment.", "cardinality": "many_to_many", "confidence": 0.6, "frequency": 2},
	})
	require.NoError(b, err)
	progress := []byte(`{"phase":"done","current_step":3,"total_steps":3,"documents_processed":5,"documents_total":5,"message":"found 2 types"}`)
	options := []byte(`{"batch_size":5,"min_confidence":0.5,"include_relationships":true,"max_iterations":3}`)
	discRows := make([][]any, discoveries)
	var lastJob uuid.UUID
	for i := range discRows {
		at := now.Add(-time.Duration(discoveries-i) * time.Minute)
		lastJob = uuid.Must(uuid.NewV7())
		docs := docIDs[i%(len(docIDs)-5) : i%(len(docIDs)-5)+5]
		discRows[i] = []any{lastJob, pid, "completed", at, at, at, at, at, docs, options, progress, types, rels}
	}
	benchCopy(b, s, "discovery_jobs", []string{
		"id", "project_id", "status", "run_at", "created_at", "updated_at", "started_at", "completed_at", "document_ids", "options", "progress",
		"discovered_types", "discovered_relationships",
	}, discRows)

	var servers struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/admin/mcp-servers?projectId="+project, s.admin, nil).Decode(b, &servers)
	builtin := servers.Data[0].ID
	base := "/projects/" + project
	pages = []string{
		base + "/mcp", base + "/mcp/" + builtin, base + "/integrations", base + "/integrations/feed", base + "/integrations/feed?offset=5000",
		base + "/discovery", base + "/discovery?offset=5000", base + "/discovery/new", base + "/discovery/new?offset=5000", base + "/discovery/" + lastJob.String(),
	}
	_, _, body := newConsoleBrowserSignedIn(b, s).do("GET", base+"/integrations/feed", nil)
	require.Contains(b, body, fmt.Sprintf("of %d", syncs), "the sync history counts them all")
	return pages, []string{"/" + builtin, "/{builtin}", "/" + lastJob.String(), "/{discovery}"}
}

// newConsoleBrowserSignedIn is a console browser signed in as the admin.
func newConsoleBrowserSignedIn(b *testing.B, s *testServer) *consoleBrowser {
	br := newConsoleBrowser(b, s)
	br.signIn(s.admin)
	return br
}
