package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/console"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/extraction"
)

// consoleOpsPages are the superadmin pages and actions, with the form of
// each action.
func consoleOpsPages() []struct {
	method, path string
} {
	return []struct{ method, path string }{
		{"GET", "/admin/queues"},
		{"GET", "/admin/queues/object_extraction"},
		{"GET", "/admin/queues/object_extraction/rows"},
		{"GET", "/admin/queues/integration_sync/jobs/00000000-0000-0000-0000-000000000001"},
		{"GET", "/stream/admin/queues/object_extraction"},
		{"GET", "/admin/users"},
		{"GET", "/admin/organizations"},
		{"GET", "/admin/audit"},
		{"POST", "/admin/queues/graph_embedding/pause"},
		{"POST", "/admin/queues/graph_embedding/resume"},
		{"POST", "/admin/queues/object_extraction/cancel"},
		{"POST", "/admin/queues/document_parsing/retry"},
		{"POST", "/admin/users"},
		{"POST", "/admin/users/00000000-0000-0000-0000-000000000001/tokens"},
	}
}

// TestConsoleOpsRefusals: signed out, every superadmin page sends the
// browser to the sign-in; a project admin who is no superadmin sees no
// administration link and is refused every page and action as the API
// refuses them (403, its detail); unsafe requests need the CSRF token.
func TestConsoleOpsRefusals(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	anon := newConsoleBrowser(t, s)
	for _, p := range consoleOpsPages() {
		var form url.Values
		if p.method == "POST" {
			form = url.Values{}
		}
		status, hdr, _ := anon.do(p.method, p.path, form)
		if p.method == "GET" {
			require.Equal(t, http.StatusSeeOther, status, p.path)
			require.Equal(t, "/signin", hdr.Get("Location"), p.path)
		} else {
			require.Equal(t, http.StatusUnauthorized, status, p.path)
		}
	}

	_, token := s.newMember("padmin@example.com", allScopes, project, "admin")
	b := newConsoleBrowser(t, s)
	b.signIn(token)
	_, _, home := b.do("GET", "/", nil)
	require.NotContains(t, home, "/admin/queues")
	apiDetail := s.must(403, "GET", "/api/superadmin/users", token, nil).Detail(t)
	for _, p := range consoleOpsPages() {
		var form url.Values
		if p.method == "POST" {
			form = url.Values{"csrf": {b.csrf}, "ids": {"00000000-0000-0000-0000-000000000001"}, "primaryEmail": {"x@example.com"}, "scopes": {"admin:read"}, "name": {"n"}}
		}
		status, _, page := b.do(p.method, p.path, form)
		require.Equal(t, http.StatusForbidden, status, p.path)
		if p.method == "GET" && !strings.HasPrefix(p.path, "/stream/") {
			require.Contains(t, page, apiDetail, p.path)
		}
	}
	require.Error(t, s.pool().QueryRow(t.Context(), `SELECT 1 FROM users WHERE primary_email = 'x@example.com'`).Scan(new(int)), "no user created")

	// The superadmin without the CSRF token: refused, nothing changed.
	a := newConsoleBrowser(t, s)
	a.signIn(s.admin)
	_, _, home = a.do("GET", "/", nil)
	require.Contains(t, home, `href="/admin/queues"`)
	for _, p := range consoleOpsPages() {
		if p.method != "POST" {
			continue
		}
		status, _, _ := a.do(p.method, p.path, url.Values{"primaryEmail": {"y@example.com"}})
		require.Equal(t, http.StatusForbidden, status, p.path)
	}
	set, err := s.m.jobs.Settings(embedding.Queue)
	require.NoError(t, err)
	require.False(t, set.Paused)
	require.Error(t, s.pool().QueryRow(t.Context(), `SELECT 1 FROM users WHERE primary_email = 'y@example.com'`).Scan(new(int)))
}

// TestConsoleOpsQueues: the queues page counts every queue's jobs and
// pauses and resumes the embedding queues (and refuses the others); a
// queue's page lists its jobs with the API's filters (bad ones answered
// with the API's detail); cancel and retry go through the API's bulk
// actions (audited), single and bulk, and answer the new rows.
func TestConsoleOpsQueues(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	require.NoError(t, s.m.jobs.Pause(t.Context(), extraction.Queue))
	j1 := s.extractionJobOf(s.extractionUpload(project, "a.md", "# A\n\nAda Lovelace."))
	j2 := s.extractionJobOf(s.extractionUpload(project, "b.md", "# B\n\nCharles Babbage."))
	j3 := s.extractionJobOf(s.extractionUpload(project, "c.md", "# C\n\nGrace Hopper."))
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)

	status, _, page := b.do("GET", "/admin/queues", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="queue-object_extraction"`)
	_, row, found := strings.Cut(page, `id="queue-object_extraction"`)
	require.True(t, found)
	row, _, _ = strings.Cut(row, "</tr>")
	require.Contains(t, row, "<td>3</td>", "three queued extraction jobs")
	require.Contains(t, row, `data-status="paused"`)
	require.Contains(t, page, `id="queue-document_parsing"`)

	// Pause and resume: the embedding queues only.
	status, hdr, _ := b.do("POST", "/admin/queues/"+embedding.Queue+"/pause", url.Values{"csrf": {b.csrf}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/admin/queues", hdr.Get("Location"))
	set, err := s.m.jobs.Settings(embedding.Queue)
	require.NoError(t, err)
	require.True(t, set.Paused)
	status, _, _ = b.do("POST", "/admin/queues/"+embedding.Queue+"/resume", url.Values{"csrf": {b.csrf}})
	require.Equal(t, http.StatusSeeOther, status)
	set, err = s.m.jobs.Settings(embedding.Queue)
	require.NoError(t, err)
	require.False(t, set.Paused)
	status, _, page = b.do("POST", "/admin/queues/"+document.QueueParsing+"/pause", url.Values{"csrf": {b.csrf}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "queues", "ops-problem", "queue document_parsing cannot be paused or resumed here")

	// The queue's page and its filters.
	status, _, page = b.do("GET", "/admin/queues/object_extraction", nil)
	require.Equal(t, 200, status, page)
	for _, j := range []string{j1, j2, j3} {
		require.Contains(t, page, `id="qjob-`+j+`"`)
	}
	require.Contains(t, page, `sse-connect="/stream/admin/queues/object_extraction"`)
	status, _, page = b.do("GET", "/admin/queues/object_extraction?status=completed", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, `id="qjob-`+j1+`"`)
	status, _, page = b.do("GET", "/admin/queues/object_extraction?status=nonsense", nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, s.must(400, "GET", "/api/superadmin/extraction-jobs?status=nonsense", s.admin, nil).Detail(t))
	status, _, _ = b.do("GET", "/admin/queues/object_extraction?projectId=nope", nil)
	require.Equal(t, http.StatusBadRequest, status)
	status, _, _ = b.do("GET", "/admin/queues/agent_run", nil)
	require.Equal(t, http.StatusNotFound, status, "no job list for this queue")

	// Cancel: no job selected, then one, then two at once.
	hx := []header{{console.CSRFHeader, b.csrf}, {"HX-Request", "true"}}
	status, _, page = b.do("POST", "/admin/queues/object_extraction/cancel", url.Values{}, hx...)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "select at least one job", page)
	status, _, page = b.do("POST", "/admin/queues/object_extraction/cancel", url.Values{"ids": {"nope"}}, hx...)
	require.Equal(t, http.StatusBadRequest, status)
	require.NotEmpty(t, page)
	status, hdr, page = b.do("POST", "/admin/queues/object_extraction/cancel", url.Values{"ids": {j1}},
		append(hx, header{"X-Request-ID", "console-cancel-1"})...)
	require.Equal(t, 200, status, page)
	require.Equal(t, "console-cancel-1", hdr.Get("X-Request-Id"))
	require.Equal(t, "console-cancel-1", s.auditRows("extraction_jobs.cancel")[0].RequestID, "the audit row names the browser's request")
	require.Contains(t, page, "cancelled 1 of 1 extraction jobs")
	require.Contains(t, page, `id="qjob-`+j1+`" data-status="cancelled"`)
	require.Equal(t, "cancelled", s.extractionGetJob(j1).Status)
	require.Equal(t, "queued", s.extractionGetJob(j2).Status)
	status, _, page = b.do("POST", "/admin/queues/object_extraction/cancel?status=queued", url.Values{"ids": {j2, j3}}, hx...)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "cancelled 2 of 2 extraction jobs")
	require.NotContains(t, page, `id="qjob-`, "the page's filter: no queued job left")
	require.Equal(t, "cancelled", s.extractionGetJob(j3).Status)
	require.Equal(t, 2, s.extractionCount(`SELECT count(*) FROM audit_events WHERE action = 'extraction_jobs.cancel'`))
	// Extraction jobs are not retried from here (the API has no such action).
	status, _, _ = b.do("POST", "/admin/queues/object_extraction/retry", url.Values{"ids": {j1}}, hx...)
	require.Equal(t, http.StatusBadRequest, status)

	// Retry a failed parsing job: parsed again.
	doc := s.extractionUpload(project, "d.md", "# D\n\nAlan Turing.")
	var parseJob string
	require.NoError(t, s.pool().QueryRow(t.Context(), `UPDATE document_parsing_jobs SET status = 'failed', error_msg = 'boom'
		WHERE document_id = $1 RETURNING id::text`, doc).Scan(&parseJob))
	status, _, page = b.do("GET", "/admin/queues/document_parsing?status=failed", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="qjob-`+parseJob+`" data-status="failed"`)
	require.Contains(t, page, "boom")
	status, _, page = b.do("POST", "/admin/queues/document_parsing/retry", url.Values{"ids": {parseJob}}, hx...)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "retried 1 of 1 document parsing jobs")
	require.Eventually(t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM document_parsing_jobs WHERE id = $1 AND status = 'completed'`, parseJob) == 1
	}, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM audit_events WHERE action = 'document_parsing_jobs.retry'`))
}

// TestConsoleOpsQueueStream: a queue's stream passes on a "queue" event
// when one of its jobs starts (job.started) and when it ends, and none
// for another queue.
func TestConsoleOpsQueueStream(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	frames := consoleStream(t, b, "/stream/admin/queues/"+document.QueueParsing)
	doc := s.extractionUpload(project, "a.md", "# A\n\nAda Lovelace.")
	s.waitDocument(project, doc)
	requireFrames(t, frames, console.QueueEvent, "job.started", "job.completed")
}

// requireFrames requires the next event frames (comments passed over)
// to be the console's SSE event name, one for each API event type of
// wants, in order.
func requireFrames(t *testing.T, frames <-chan string, name string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		require.Equal(t, "event: "+name+"\ndata: "+want, nextFrame(t, frames))
	}
}

// consoleStream opens a console event stream and returns its frames,
// after the first (": connected").
func consoleStream(t *testing.T, b *consoleBrowser, path string) <-chan string {
	t.Helper()
	frames := consoleStreamFrames(t, b, path)
	require.Equal(t, ": connected", <-frames)
	return frames
}

// TestConsoleOpsUsers: the users page searches users, creates a local
// user (a bad address answered with the API's detail) and mints a token
// shown once, which authenticates; the organizations page and the audit
// log list through the API (its filters, a bad one refused).
func TestConsoleOpsUsers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, org := s.defaultProject()
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)

	status, _, page := b.do("POST", "/admin/users", url.Values{"csrf": {b.csrf}, "primaryEmail": {"not-an-address"}, "displayName": {"Typed Name"}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "user-create", "ops-problem", "primaryEmail must be an email address",
		`<details class="create" open>`, `name="primaryEmail" value="not-an-address"`, `name="displayName" value="Typed Name"`)

	// A superadmin token that may act (admin:write) but not read the
	// pages (no admin:read): a refusal is the action's, as the API answers
	// it, not the page's 403.
	admin := s.must(200, "GET", "/api/superadmin/me", s.admin, nil).JSON(t)
	var minted struct {
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/superadmin/users/"+admin["userId"].(string)+"/tokens", s.admin, map[string]any{"name": "write only", "scopes": []string{"admin:write"}}).Decode(t, &minted)
	wo := newConsoleBrowser(t, s)
	wo.signIn(minted.Token)
	status, _, page = wo.do("POST", "/admin/users", url.Values{"csrf": {wo.csrf}, "primaryEmail": {"not-an-address"}})
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Contains(t, page, "primaryEmail must be an email address")
	status, _, page = wo.do("POST", "/admin/queues/document_parsing/pause", url.Values{"csrf": {wo.csrf}})
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Contains(t, page, "queue document_parsing cannot be paused or resumed here")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM users WHERE primary_email = 'not-an-address'`))
	status, _, page = b.do("POST", "/admin/users", url.Values{"csrf": {b.csrf}, "primaryEmail": {"ada@example.com"}, "displayName": {"Ada Lovelace"}})
	require.Equal(t, http.StatusCreated, status, page)
	require.Contains(t, page, "User ada@example.com created.")
	var userID string
	require.NoError(t, s.pool().QueryRow(t.Context(), `SELECT id::text FROM users WHERE primary_email = 'ada@example.com'`).Scan(&userID))
	require.Contains(t, page, `id="user-`+userID+`"`)

	status, _, page = b.do("GET", "/admin/users?search=lovelace", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="user-`+userID+`"`)
	require.Equal(t, 1, strings.Count(page, `<tr id="user-`))

	status, _, page = b.do("POST", "/admin/users/"+userID+"/tokens", url.Values{"csrf": {b.csrf}, "name": {"ci"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "choose at least one scope")
	status, _, page = b.do("POST", "/admin/users/"+userID+"/tokens", url.Values{"csrf": {b.csrf}, "name": {"ci typed"}, "scopes": {"admin:read"}, "expiresInDays": {"0"}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "user-"+userID, "ops-problem", "expiresInDays must be a number of days from 1 to 3650")
	_, row, _ := strings.Cut(page, `id="user-`+userID+`"`)
	row, _, _ = strings.Cut(row, "</tr>")
	for _, typed := range []string{`<details open>`, `name="name" value="ci typed"`, `<option value="admin:read" selected>`, `name="expiresInDays" value="0"`} {
		require.Contains(t, row, typed, "the user's mint form as typed")
	}
	require.NotContains(t, row, `<option value="documents:read" selected>`)
	status, _, page = b.do("POST", "/admin/users/"+userID+"/tokens", url.Values{"csrf": {b.csrf}, "name": {"ci"}, "scopes": {"admin:read", "documents:read"}, "expiresInDays": {"30"}})
	require.Equal(t, http.StatusCreated, status, page)
	_, token, found := strings.Cut(page, `<code id="minted-token">`)
	require.True(t, found, page)
	token, _, _ = strings.Cut(token, "<")
	require.True(t, strings.HasPrefix(token, "gm_"), token)
	me := s.must(200, "GET", "/api/superadmin/me", token, nil).JSON(t)
	require.Equal(t, userID, me["userId"])
	status, _, page = b.do("GET", "/admin/users", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, token, "shown once")
	status, _, _ = b.do("POST", "/admin/users/00000000-0000-0000-0000-000000000001/tokens", url.Values{"csrf": {b.csrf}, "name": {"ci"}, "scopes": {"admin:read"}})
	require.Equal(t, http.StatusNotFound, status)

	status, _, page = b.do("GET", "/admin/organizations", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="org-`+org+`"`)
	status, _, page = b.do("GET", "/admin/organizations?search=no-such-org", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, `id="org-`+org+`"`)

	s.must(200, "DELETE", "/api/superadmin/users/"+userID, s.admin, nil)
	status, _, page = b.do("GET", "/admin/audit", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `data-action="user.delete"`)
	require.Contains(t, page, userID)
	status, _, page = b.do("GET", "/admin/audit?action=project.delete", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, `data-action="user.delete"`)
	status, _, page = b.do("GET", "/admin/audit?action=nonsense", nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "action must be one of")
	status, _, _ = b.do("GET", "/admin/audit?fromDate=yesterday", nil)
	require.Equal(t, http.StatusBadRequest, status)
}

// TestConsoleJobStreamStarted: the project's extraction jobs stream
// passes on a job's start (job.started) as well as its end, so the jobs
// page shows running live; another project's jobs send nothing.
func TestConsoleJobStreamStarted(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	frames := consoleStream(t, b, "/stream/projects/"+project+"/jobs")
	otherJob := s.extractionJobOf(s.extractionUpload(other, "b.md", "# B\n\nCharles Babbage."))
	job := s.extractionJobOf(s.extractionUpload(project, "a.md", "# A\n\nAda Lovelace."))
	requireFrames(t, frames, console.JobsEvent, "job.started", "job.completed")
	require.Eventually(t, func() bool {
		return s.extractionGetJob(job).Status == "completed" && s.extractionGetJob(otherJob).Status == "completed"
	}, 20*time.Second, 20*time.Millisecond)
	// Another project's events reach the stream as ids alone (the
	// browser's replay position), never as an event the page acts on.
	for {
		select {
		case f := <-frames:
			require.NotContains(t, f, "event:", "an event for another project's job: %q", f)
		default:
			return
		}
	}
}
