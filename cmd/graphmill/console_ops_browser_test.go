package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// TestConsoleBrowserOps drives the superadmin pages in chromium
// (testdata/console-browser/ops.mjs): the queues, a sync job seen live
// going pending -> completed (no job.started for sync jobs; the queue
// paused, then resumed, the feed answering only when the test lets it,
// its running seen in the database), another sync job
// cancelled and a failed parsing job retried from the browser, the sync
// job's log, a user created and a token minted for them, the
// organizations and the audit log. A non-superadmin's refusals are
// TestConsoleOpsRefusals'.
func TestConsoleBrowserOps(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	feed := rssFeed([4]string{"item-1", "Orbit 1.0 released", "Mon, 02 Nov 2026 10:00:00 +0000", "Maria Gonzalez released Orbit."})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write([]byte(feed))
	}))
	t.Cleanup(site.Close)
	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	project, _ := s.defaultProject()
	require.NoError(t, s.m.jobs.Pause(t.Context(), integration.Queue))
	startSync := func(name string) string {
		in := s.createIntegration(project, name, "rss", map[string]any{"feed_url": site.URL + "/feed.xml"})
		var res struct {
			JobID string `json:"job_id"`
		}
		s.must(200, "POST", "/api/integrations/"+in.name+"/sync", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &res)
		require.NotEmpty(t, res.JobID)
		return res.JobID
	}
	var liveJob, spareJob, parseJob string

	out, shots := runConsoleScript(t, s, "ops.mjs", project, nil, func(name string) string {
		switch name {
		case "fixtures":
			liveJob, spareJob = startSync("live"), startSync("spare")
			doc := s.extractionUpload(project, "a.md", "# A\n\nAda Lovelace.")
			s.waitDocument(project, doc)
			require.NoError(t, s.pool().QueryRow(t.Context(), `UPDATE document_parsing_jobs SET status = 'failed', error_msg = 'boom'
				WHERE document_id = $1 RETURNING id::text`, doc).Scan(&parseJob))
			return liveJob + " " + spareJob + " " + parseJob
		case "resume":
			require.NoError(t, s.m.jobs.Resume(t.Context(), integration.Queue))
			return "ok"
		case "running":
			require.Eventually(t, func() bool {
				return s.extractionCount(`SELECT count(*) FROM integration_sync_jobs WHERE id = $1 AND status = 'running'`, liveJob) == 1
			}, 20*time.Second, 20*time.Millisecond)
			return "ok"
		case "release":
			close(release)
			return "ok"
		}
		t.Errorf("unknown step %q", name)
		return ""
	})

	var report struct {
		Pages          []string `json:"pages"`
		CSP            []string `json:"csp"`
		Errors         []string `json:"errors"`
		SyncQueueState string   `json:"syncQueueState"`
		CancelMessage  string   `json:"cancelMessage"`
		Seen           []string `json:"seen"`
		NotReloaded    bool     `json:"notReloaded"`
		JobLog         []string `json:"jobLog"`
		RetryMessage   string   `json:"retryMessage"`
		CreateMessage  string   `json:"createMessage"`
		Token          string   `json:"token"`
		Orgs           []string `json:"orgs"`
		Audit          []string `json:"audit"`
		AuditFiltered  []string `json:"auditFiltered"`
	}
	require.NoError(t, json.Unmarshal(out, &report), "report: %s", out)
	require.Empty(t, report.CSP)
	require.Empty(t, report.Errors)
	require.Equal(t, "paused", report.SyncQueueState)
	require.Equal(t, "cancelled 1 of 1 sync jobs (only pending and running jobs can be cancelled)", report.CancelMessage)
	require.Equal(t, []string{"pending", "completed"}, report.Seen, "the live job's statuses, as the page showed them (no job.started for sync jobs)")
	require.True(t, report.NotReloaded, "the queue page was reloaded")
	require.NotEmpty(t, report.JobLog)
	require.Equal(t, "retried 1 of 1 document parsing jobs (only failed jobs can be retried)", report.RetryMessage)
	require.Equal(t, "User grace@example.com created.", report.CreateMessage)
	require.Contains(t, report.Orgs, tenancy.DefaultOrgName)
	require.Contains(t, report.Audit, "sync_jobs.cancel")
	require.Contains(t, report.Audit, "document_parsing_jobs.retry")
	require.Equal(t, []string{"sync_jobs.cancel"}, report.AuditFiltered)
	require.Equal(t, []string{"queues", "queue", "queue-running", "queue-completed", "queue-job", "queue-parsing", "users", "users-token", "organizations", "audit"}, report.Pages)
	requireScreenshots(t, shots, report.Pages)

	// The server's state.
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM integration_sync_jobs WHERE id = $1 AND status = 'completed'`, liveJob))
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM integration_sync_jobs WHERE id = $1 AND status = 'cancelled'`, spareJob))
	require.Eventually(t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM document_parsing_jobs WHERE id = $1 AND status = 'completed'`, parseJob) == 1
	}, 30*time.Second, 20*time.Millisecond)
	var grace string
	require.NoError(t, s.pool().QueryRow(t.Context(), `SELECT id::text FROM users WHERE primary_email = 'grace@example.com' AND display_name = 'Grace Hopper'`).Scan(&grace))
	require.True(t, strings.HasPrefix(report.Token, "gm_"))
	require.Equal(t, grace, s.must(200, "GET", "/api/superadmin/me", report.Token, nil).JSON(t)["userId"], "the minted token is Grace's")
}
