package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// integrationServer starts a server offering connectors.
func integrationServer(t *testing.T, connectors ...connector.Connector) *testServer {
	t.Helper()
	return mainServer(t, func(m *Main) { m.Connectors = connectors })
}

// mainServer starts a server whose Main set adjusts.
func mainServer(t *testing.T, set func(m *Main)) *testServer {
	t.Helper()
	cfg := testConfig(t, pgtest.NewURL(t))
	clk := &clock{}
	m := &Main{Config: cfg, Logger: slog.New(slog.DiscardHandler), Now: clk.Now}
	set(m)
	return serve(t, m, clk)
}

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
	s := integrationServer(t, notesSource{notes: map[string]string{"n1": "# One\n\nfirst note", "n2": "# Two\n\nsecond note"}})
	project, _ := s.defaultProject()
	inProject := header{"X-Project-ID", project}

	var avail []map[string]any
	s.must(200, "GET", "/api/integrations/available", s.admin, nil).Decode(t, &avail)
	names := make([]any, len(avail))
	for i, a := range avail {
		names[i] = a["name"]
	}
	require.Equal(t, []any{"clickup", "git", "notes", "rss", "s3", "web"}, names, "the built-in connectors and the test's, by name")
	notes := avail[2]
	require.Equal(t, []any{"endpoint"}, notes["required_fields"])
	require.Equal(t, []any{"api_key", "sync_interval_minutes", "max_delete_fraction"}, notes["optional_fields"])

	body := map[string]any{
		"name": "kb", "display_name": "Knowledge", "provider_type": "notes",
		"config": map[string]any{"endpoint": "https://notes.test", "api_key": "key-SECRET-0001"},
	}
	r := s.must(400, "POST", "/api/integrations", s.admin, map[string]any{
		"name": "kb", "display_name": "K", "provider_type": "notes",
		"config": map[string]any{"api_key": "x"},
	}, inProject)
	require.Contains(t, r.Detail(t), "config field endpoint is required")
	r = s.must(400, "POST", "/api/integrations", s.admin, map[string]any{
		"name": "kb", "display_name": "K", "provider_type": "notes",
		"config": map[string]any{"endpoint": "https://notes.test", "colour": "red"},
	}, inProject)
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
	s.must(404, "GET", "/api/integrations", s.admin, nil, inProject, header{"X-Org-ID", "01a20c67-3f4f-73a6-8bdc-ef22c6768706"})
	s.must(401, "GET", "/api/integrations", "", nil, inProject)

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
	r = s.must(400, "POST", "/api/integrations/kb/sync", s.admin, map[string]any{"source_types": []string{"docs"}}, inProject)
	require.Contains(t, r.Detail(t), "this integration has no source types")
	// space_ids on a source without spaces would narrow the sync: it
	// would list everything and delete nothing, silently.
	r = s.must(400, "POST", "/api/integrations/kb/sync", s.admin, map[string]any{"space_ids": []string{"s1"}}, inProject)
	require.Contains(t, r.Detail(t), "space_ids: this integration has no spaces")
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

// walkSource is a connector of the test named name whose walk is walk.
type walkSource struct {
	notesSource
	name string
	walk func(ctx context.Context, cfg connector.Config, w connector.Walker) error
}

func (s walkSource) Descriptor() connector.Descriptor {
	d := notesSource{}.Descriptor()
	d.Name = s.name
	return d
}

func (s walkSource) Walk(ctx context.Context, _ connector.Env, cfg connector.Config, _ connector.Options, w connector.Walker) error {
	return s.walk(ctx, cfg, w)
}

// blockedSource is a connector whose walk waits until its context ends.
func blockedSource() walkSource {
	return walkSource{name: "blocked", walk: func(ctx context.Context, _ connector.Config, w connector.Walker) error {
		w.Log(ctx, connector.LevelInfo, "waiting for the source", map[string]any{"page": 1})
		<-ctx.Done()
		return ctx.Err()
	}}
}

// TestSuperadminSyncJobs: the sync job list (statuses in the sync
// vocabulary, filters, stats), a job's log, bulk cancel (the running sync
// stops) and delete, each audited; superadmins only.
func TestSuperadminSyncJobs(t *testing.T) {
	t.Parallel()
	s := integrationServer(t, notesSource{notes: map[string]string{"n1": "# One\n\nfirst"}}, blockedSource())
	project, _ := s.defaultProject()
	inProject := header{"X-Project-ID", project}
	for _, p := range []string{"notes", "blocked"} {
		s.must(201, "POST", "/api/integrations", s.admin, map[string]any{
			"name": p, "display_name": p, "provider_type": p,
			"config": map[string]any{"endpoint": "https://notes.test", "api_key": "key-SECRET-0001"},
		}, inProject)
	}
	var done, running struct {
		JobID string `json:"job_id"`
	}
	s.must(200, "POST", "/api/integrations/notes/sync", s.admin, nil, inProject).Decode(t, &done)
	s.must(200, "POST", "/api/integrations/blocked/sync", s.admin, nil, inProject).Decode(t, &running)
	// The second request while one is active answers with that job.
	again := s.must(200, "POST", "/api/integrations/blocked/sync", s.admin, nil, inProject).JSON(t)
	require.Equal(t, false, again["success"])
	require.Equal(t, "a sync is already in progress", again["message"])
	require.Equal(t, running.JobID, again["job_id"])

	type page struct {
		Data  []map[string]any `json:"data"`
		Stats struct {
			Total    int            `json:"total"`
			ByStatus map[string]int `json:"byStatus"`
		} `json:"stats"`
		Meta map[string]any `json:"meta"`
	}
	var list page
	require.Eventually(t, func() bool {
		list = page{}
		s.must(200, "GET", "/api/superadmin/sync-jobs?projectId="+project, s.admin, nil).Decode(t, &list)
		return list.Stats.ByStatus["completed"] == 1 && list.Stats.ByStatus["running"] == 1
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, 2, list.Stats.Total)
	list = page{}
	s.must(200, "GET", "/api/superadmin/sync-jobs?status=running", s.admin, nil).Decode(t, &list)
	require.Len(t, list.Data, 1)
	require.Equal(t, running.JobID, list.Data[0]["id"])
	require.Equal(t, "blocked", list.Data[0]["integrationName"])
	require.Equal(t, "manual", list.Data[0]["triggerType"])
	s.must(400, "GET", "/api/superadmin/sync-jobs?status=queued", s.admin, nil)

	var logs struct {
		Logs []map[string]any `json:"logs"`
	}
	// The job shows running once claimed; its first log line follows when
	// the connector starts waiting.
	require.Eventually(t, func() bool {
		logs.Logs = nil
		s.must(200, "GET", "/api/superadmin/sync-jobs/"+running.JobID+"/logs", s.admin, nil).Decode(t, &logs)
		for _, l := range logs.Logs {
			if l["message"] == "waiting for the source" {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond)
	msgs := []any{}
	for _, l := range logs.Logs {
		msgs = append(msgs, l["message"])
		require.Contains(t, l, "timestamp")
		require.Contains(t, l, "level")
	}
	require.Contains(t, msgs, "waiting for the source")
	s.must(404, "GET", "/api/superadmin/sync-jobs/01a20c67-3f4f-73a6-8bdc-ef22c6768706/logs", s.admin, nil)

	_, plain := s.newMember("plain@example.com", []string{"admin:read", "admin:write"}, project, "admin")
	s.must(403, "GET", "/api/superadmin/sync-jobs", plain, nil)
	s.must(403, "POST", "/api/superadmin/sync-jobs/cancel", plain, map[string]any{"ids": []string{running.JobID}})

	// Cancel: the running one stops; delete: only finished ones go.
	c := s.must(200, "POST", "/api/superadmin/sync-jobs/cancel", s.admin, map[string]any{"ids": []string{running.JobID, done.JobID}}).JSON(t)
	require.Equal(t, float64(1), c["cancelledCount"])
	require.Equal(t, "cancelled 1 of 2 sync jobs (only pending and running jobs can be cancelled)", c["message"])
	require.Eventually(t, func() bool {
		list = page{}
		s.must(200, "GET", "/api/superadmin/sync-jobs?status=cancelled", s.admin, nil).Decode(t, &list)
		return len(list.Data) == 1
	}, 30*time.Second, 50*time.Millisecond)
	d := s.must(200, "POST", "/api/superadmin/sync-jobs/delete", s.admin, map[string]any{"ids": []string{running.JobID, done.JobID}}).JSON(t)
	require.Equal(t, float64(2), d["deletedCount"])
	list = page{}
	s.must(200, "GET", "/api/superadmin/sync-jobs", s.admin, nil).Decode(t, &list)
	require.Empty(t, list.Data)
	var audits struct {
		Data []map[string]any `json:"data"`
	}
	s.must(200, "GET", "/api/superadmin/audit", s.admin, nil).Decode(t, &audits)
	actions := []any{}
	for _, a := range audits.Data {
		actions = append(actions, a["action"])
	}
	require.Contains(t, actions, "sync_jobs.cancel")
	require.Contains(t, actions, "sync_jobs.delete")
	// The cancelled sync is no longer active: a new one is queued.
	again = s.must(200, "POST", "/api/integrations/blocked/sync", s.admin, nil, inProject).JSON(t)
	require.Equal(t, true, again["success"])
	require.NotEqual(t, running.JobID, again["job_id"])
}

// refusedSource is a connector whose source refuses the credentials,
// naming them in its error as a careless client library would.
func refusedSource() walkSource {
	return walkSource{name: "refused", walk: func(_ context.Context, cfg connector.Config, _ connector.Walker) error {
		return errs.Errorf(errs.Invalid, "the source refused the key %s", cfg.String("api_key"))
	}}
}

// TestFailedSyncNotifiesWithoutSecrets: a sync that gives up puts its
// integration in error, tells the project's admins, and publishes
// integration.sync.completed with status failed; the secret appears in
// none of them, nor in any response.
func TestFailedSyncNotifiesWithoutSecrets(t *testing.T) {
	t.Parallel()
	s := integrationServer(t, refusedSource())
	project, _ := s.defaultProject()
	inProject := header{"X-Project-ID", project}
	s.must(201, "POST", "/api/integrations", s.admin, map[string]any{
		"name": "r", "display_name": "R", "provider_type": "refused",
		"config": map[string]any{"endpoint": "https://notes.test", "api_key": "key-SECRET-0001"},
	}, inProject)
	s.must(200, "POST", "/api/integrations/r/sync", s.admin, nil, inProject)
	var full map[string]any
	require.Eventually(t, func() bool {
		full = s.must(200, "GET", "/api/integrations/r", s.admin, nil, inProject).JSON(t)
		return full["status"] == "error"
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "failed", full["last_sync_status"])
	var notes struct {
		Data []map[string]any `json:"data"`
	}
	require.Eventually(t, func() bool {
		notes.Data = nil
		s.must(200, "GET", "/api/notifications", s.admin, nil, inProject).Decode(t, &notes)
		return len(notes.Data) > 0
	}, 30*time.Second, 50*time.Millisecond)
	raw, _ := json.Marshal(notes)
	require.Contains(t, string(raw), "the source refused the key ***")
	require.NotContains(t, string(raw), "SECRET")
	r := s.must(200, "GET", "/api/superadmin/sync-jobs", s.admin, nil)
	require.NotContains(t, string(r.Body), "SECRET")
	var events []map[string]any
	rows, err := s.m.db.pool.Query(context.Background(), `SELECT payload FROM events WHERE type = 'integration.sync.completed'`)
	require.NoError(t, err)
	for rows.Next() {
		var p map[string]any
		require.NoError(t, rows.Scan(&p))
		events = append(events, p)
	}
	require.NoError(t, rows.Err())
	require.Len(t, events, 1)
	require.Equal(t, "failed", events[0]["status"])
	require.Equal(t, "the source refused the key ***", events[0]["error"])
}
