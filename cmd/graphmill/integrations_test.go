package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// notesSource is a connector of the test: notes held in memory.
type notesSource struct{ notes map[string]string }

func (notesSource) Descriptor() connector.Descriptor {
	return connector.Descriptor{
		Name: "notes", DisplayName: "Notes", Description: "Notes in memory.", Category: "test", AuthType: "api_key",
		RequiredFields: []connector.Field{{Name: "endpoint", Type: connector.TypeURL, Target: true}},
		OptionalFields: []connector.Field{{Name: "api_key", Type: connector.TypeString, Secret: true}},
	}
}

func (notesSource) Validate(connector.Config) error { return nil }

func (notesSource) Test(context.Context, connector.Env, connector.Config) error { return nil }

func (n notesSource) Walk(ctx context.Context, _ connector.Env, _ connector.Config, _ connector.Options, w connector.Walker) error {
	for id, text := range n.notes {
		if err := w.Item(ctx, connector.Item{ExternalID: id, Title: id, Filename: id + ".md", MimeType: "text/markdown", Content: []byte(text)}); err != nil {
			return err
		}
	}
	return nil
}

// TestIntegrationsAPI: the integration routes as the spec gives them:
// available integrations, create (201, masked config, 400 naming the
// field, 409 on a taken name), the full view for project admins only,
// the public view and the list without config, a masked secret sent
// back kept, sync queueing a job whose documents appear with their
// datasourceId, and delete (documents kept, detached).
func TestIntegrationsAPI(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, pgtest.NewURL(t))
	m := &Main{Config: cfg, Logger: slog.New(slog.DiscardHandler), Now: (&clock{}).Now,
		Connectors: []connector.Connector{notesSource{notes: map[string]string{"n1": "# One\n\nfirst note", "n2": "# Two\n\nsecond note"}}}}
	require.NoError(t, m.Start(context.Background()))
	t.Cleanup(func() { m.Stop(context.Background()) })
	admin := m.AdminToken
	if admin == "" {
		admin = cfg.BootstrapToken
	}
	s := &testServer{t: t, m: m, base: "http://" + m.APIAddr(), admin: admin, client: &http.Client{Timeout: 30 * time.Second}}
	project, _ := s.defaultProject()
	inProject := header{"X-Project-ID", project}

	var avail []map[string]any
	s.must(200, "GET", "/api/integrations/available", s.admin, nil).Decode(t, &avail)
	require.Len(t, avail, 1)
	require.Equal(t, "notes", avail[0]["name"])
	require.Equal(t, []any{"endpoint"}, avail[0]["required_fields"])
	require.Equal(t, []any{"api_key", "sync_interval_minutes", "max_delete_fraction"}, avail[0]["optional_fields"])

	body := map[string]any{"name": "kb", "display_name": "Knowledge", "provider_type": "notes",
		"config": map[string]any{"endpoint": "https://notes.test", "api_key": "key-SECRET-0001"}}
	r := s.must(400, "POST", "/api/integrations", s.admin, map[string]any{"name": "kb", "display_name": "K", "provider_type": "notes",
		"config": map[string]any{"api_key": "x"}}, inProject)
	require.Contains(t, r.Detail(t), "config field endpoint is required")
	r = s.must(400, "POST", "/api/integrations", s.admin, map[string]any{"name": "kb", "display_name": "K", "provider_type": "notes",
		"config": map[string]any{"endpoint": "https://notes.test", "colour": "red"}}, inProject)
	require.Contains(t, r.Detail(t), `"colour" is not a field of notes`)
	r = s.must(201, "POST", "/api/integrations", s.admin, body, inProject)
	require.NotContains(t, string(r.Body), "SECRET")
	var created map[string]any
	r.Decode(t, &created)
	require.Equal(t, "key-***", created["config"].(map[string]any)["api_key"])
	require.Equal(t, project, created["project_id"])
	require.Equal(t, "active", created["status"])
	s.must(409, "POST", "/api/integrations", s.admin, body, inProject)

	// A viewer with integrations:read sees the list and the public view,
	// never the config; the full view needs write and project admin.
	_, viewer := s.newMember("viewer@example.com", []string{"integrations:read", "integrations:write"}, project, "viewer")
	r = s.must(200, "GET", "/api/integrations", viewer, nil, inProject)
	require.NotContains(t, string(r.Body), "config")
	require.Equal(t, float64(1), r.JSON(t)["total"])
	r = s.must(200, "GET", "/api/integrations/kb/public", viewer, nil, inProject)
	require.NotContains(t, string(r.Body), "config")
	s.must(403, "GET", "/api/integrations/kb", viewer, nil, inProject)
	s.must(403, "POST", "/api/integrations/kb/sync", viewer, nil, inProject)
	s.must(404, "GET", "/api/integrations/nope/public", viewer, nil, inProject)
	_, outsider := s.newUser("outsider@example.com", []string{"integrations:read"}, "")
	s.must(404, "GET", "/api/integrations/kb/public", outsider, nil, inProject)

	// The masked secret sent back is kept; a new endpoint needs it again.
	full := s.must(200, "GET", "/api/integrations/kb", s.admin, nil, inProject).JSON(t)
	r = s.must(400, "PUT", "/api/integrations/kb", s.admin, map[string]any{"config": map[string]any{"endpoint": "https://evil.test", "api_key": "key-***"}}, inProject)
	require.Contains(t, r.Detail(t), "requires api_key again")
	s.must(200, "PUT", "/api/integrations/kb", s.admin, map[string]any{"display_name": "KB", "config": full["config"]}, inProject)
	s.must(400, "PUT", "/api/integrations/kb", s.admin, map[string]any{"status": "paused"}, inProject)

	// Sync: a job; its documents appear with their datasourceId.
	var res struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
		JobID   string `json:"job_id"`
	}
	s.must(200, "POST", "/api/integrations/kb/sync", s.admin, map[string]any{"full_sync": false, "batchSize": 10}, inProject).Decode(t, &res)
	require.True(t, res.Success)
	require.NotEmpty(t, res.JobID)
	s.must(400, "POST", "/api/integrations/kb/sync", s.admin, map[string]any{"batchSize": -1}, inProject)
	var docs struct {
		Data []map[string]any `json:"data"`
	}
	require.Eventually(t, func() bool {
		s.must(200, "GET", "/api/documents", s.admin, nil, inProject).Decode(t, &docs)
		return len(docs.Data) == 2
	}, 30*time.Second, 50*time.Millisecond)
	for _, d := range docs.Data {
		require.Equal(t, created["id"], d["datasourceId"])
		require.Contains(t, []any{"n1", "n2"}, d["externalId"])
	}
	test := s.must(200, "POST", "/api/integrations/kb/test", s.admin, nil, inProject).JSON(t)
	require.Equal(t, true, test["success"])

	// Delete: gone, its documents stay, detached.
	s.must(204, "DELETE", "/api/integrations/kb", s.admin, nil, inProject)
	s.must(404, "GET", "/api/integrations/kb", s.admin, nil, inProject)
	docs.Data = nil
	s.must(200, "GET", "/api/documents", s.admin, nil, inProject).Decode(t, &docs)
	require.Len(t, docs.Data, 2)
	for _, d := range docs.Data {
		require.Nil(t, d["datasourceId"])
	}
	raw, _ := json.Marshal(docs)
	require.NotContains(t, string(raw), "SECRET")
}
