package main

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/console"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

// consolePostForm posts a form with the session's CSRF token (field csrf).
func (b *consoleBrowser) postForm(path string, form url.Values) (int, http.Header, string) {
	b.t.Helper()
	f := url.Values{"csrf": {b.csrf}}
	for k, v := range form {
		f[k] = v
	}
	return b.do("POST", path, f)
}

// TestConsoleMCPServers: the MCP server pages with the API's rules: a
// viewer (mcp:use) lists but has no form and is forbidden to add; no
// CSRF token changes nothing; bad input is the API's 400 message with
// the form kept and the secrets not echoed; an added HTTP server's
// tools are synced and inspected, a tool disabled, the server disabled
// and deleted (the rows, through the API); the built-in server's tools
// are shown and set; another project's server is not found.
func TestConsoleMCPServers(t *testing.T) {
	t.Parallel()
	const secret = "Bearer console-secret-9876"
	remote := mcptest.NewServer("echo", "add")
	ts := mcptest.Streamable(t, remote, "Authorization", secret)
	s := newServer(t, mcpRegLoopback)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	base := "/projects/" + project + "/mcp"

	status, hdr, _ := newConsoleBrowser(t, s).do("GET", base, nil)
	require.Equal(t, http.StatusSeeOther, status, "signed out")
	require.Equal(t, "/signin", hdr.Get("Location"))

	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, page := viewer.do("GET", base, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, mcpregistry.BuiltinName)
	require.NotContains(t, page, `id="mcp-add"`, "no form for a viewer")
	status, _, _ = viewer.postForm(base, url.Values{"name": {"x"}, "type": {"http"}, "url": {ts.URL}})
	require.Equal(t, http.StatusForbidden, status)

	admin := newConsoleBrowser(t, s)
	admin.signIn(s.admin)
	status, _, page = admin.do("GET", base, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="mcp-add"`)
	status, _, _ = admin.do("POST", base, url.Values{"name": {"notes"}, "type": {"http"}, "url": {ts.URL}})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	require.Len(t, mcpRegServers(t, s, s.admin, "?projectId="+project), 1, "nothing added")

	status, _, page = admin.postForm(base, url.Values{"name": {"notes"}, "type": {"http"}, "url": {"file:///etc/passwd"}, "headers": {"Authorization: " + secret}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, `id="mcp-problem"`)
	require.Contains(t, page, "url")
	require.Contains(t, page, `value="notes"`, "the form kept")
	require.NotContains(t, page, "console-secret", "a secret is never echoed")
	status, _, page = admin.postForm(base, url.Values{"name": {"notes"}, "type": {"http"}, "url": {ts.URL}, "headers": {"no separator"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "headers line 1")
	_, padminToken := s.newMember("padmin@example.com", allScopes, project, "admin")
	padmin := newConsoleBrowser(t, s)
	padmin.signIn(padminToken)
	status, _, page = padmin.postForm(base, url.Values{"name": {"local"}, "type": {"stdio"}, "command": {"/bin/true"}, "args": {"--quiet"}})
	// stdio per GRAPHMILL_MCP_STDIO (superadmins), as the API: the form
	// again, as typed.
	requireFormAgain(t, status, page, http.StatusForbidden, "mcp-add", "mcp-problem", "only superadmins may create or change stdio MCP servers (GRAPHMILL_MCP_STDIO=superadmin)",
		`name="name" value="local"`, `<option value="stdio" selected>`, `name="command" value="/bin/true"`, `rows="2">--quiet</textarea>`)

	status, hdr, page = admin.postForm(base, url.Values{"name": {"notes"}, "type": {"http"}, "url": {ts.URL}, "headers": {"Authorization: " + secret}})
	require.Equal(t, http.StatusSeeOther, status, page)
	srvPath := hdr.Get("Location")
	serverID := strings.TrimPrefix(srvPath, base+"/")
	var srv mcpRegServer
	for _, x := range mcpRegServers(t, s, s.admin, "?projectId="+project) {
		if x.ID == serverID {
			srv = x
		}
	}
	require.Equal(t, "notes", srv.Name)
	require.Equal(t, map[string]string{"Authorization": "***"}, srv.Headers)
	status, _, page = admin.do("GET", srvPath, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "Authorization")
	require.NotContains(t, page, "console-secret")
	require.Contains(t, page, "No tool recorded yet.")

	hx := header{console.CSRFHeader, admin.csrf}
	status, _, page = admin.do("POST", srvPath+"/inspect", url.Values{}, hx)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "echo")
	require.Empty(t, mcpRegTools(t, s, s.admin, serverID), "inspect records nothing")
	status, _, page = admin.do("POST", srvPath+"/sync", url.Values{}, hx)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "Synced: 2 added")
	tools := mcpRegTools(t, s, s.admin, serverID)
	require.Len(t, tools, 2)
	var add mcpRegTool
	for _, x := range tools {
		if x.ToolName == "add" {
			add = x
		}
	}
	status, _, _ = viewer.do("POST", srvPath+"/tools/"+add.ID, url.Values{"enabled": {"false"}}, header{console.CSRFHeader, viewer.csrf})
	require.Equal(t, http.StatusForbidden, status)
	status, _, page = admin.do("POST", srvPath+"/tools/"+add.ID, url.Values{"enabled": {"false"}}, hx)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `data-status="disabled"`)
	for _, x := range mcpRegTools(t, s, s.admin, serverID) {
		require.Equal(t, x.ToolName != "add", x.Enabled, x.ToolName)
	}
	status, _, page = admin.do("POST", srvPath+"/tools/"+add.ID, url.Values{}, hx, header{"HX-Request", "true"})
	requireActionRefused(t, status, page, http.StatusBadRequest, "nothing to change: give enabled or an api_key")

	// The built-in server: its tools with their settings, set here.
	builtin := mcpRegServers(t, s, s.admin, "?projectId="+project)[0]
	require.Equal(t, "builtin", builtin.Type)
	status, _, page = admin.do("GET", base+"/"+builtin.ID, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "web_search")
	require.Contains(t, page, `placeholder="API key (write-only)"`)
	status, _, page = admin.do("POST", base+"/"+builtin.ID+"/tools/web_search", url.Values{"api_key": {"brave-key-1234"}}, hx)
	require.Equal(t, 200, status, page)
	require.NotContains(t, page, "brave-key-1234")
	eff, err := s.m.mcpReg.EffectiveSetting(context.Background(), mustUUID(t, project), "web_search")
	require.NoError(t, err)
	require.Equal(t, mcpregistry.LevelProject, eff.InheritedFrom)
	require.Equal(t, "brave-key-1234", eff.APIKey)
	status, _, page = admin.do("GET", base+"/"+builtin.ID, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "/tools/web_search/reset", "a project setting can be reset")
	status, _, _ = viewer.do("POST", base+"/"+builtin.ID+"/tools/web_search/reset", url.Values{}, header{console.CSRFHeader, viewer.csrf})
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = admin.do("POST", base+"/"+builtin.ID+"/tools/nonesuch/reset", url.Values{}, hx)
	require.Equal(t, http.StatusNotFound, status)
	status, _, page = admin.do("POST", base+"/"+builtin.ID+"/tools/web_search/reset", url.Values{}, hx)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "(global setting)")
	eff, err = s.m.mcpReg.EffectiveSetting(context.Background(), mustUUID(t, project), "web_search")
	require.NoError(t, err)
	require.Equal(t, mcpregistry.LevelGlobal, eff.InheritedFrom, "the project's setting removed")
	status, _, _ = admin.do("POST", base+"/"+builtin.ID+"/delete", url.Values{}, hx)
	require.Equal(t, http.StatusConflict, status, "the built-in server stays")

	// Disable, then delete; another project's path is not found.
	status, _, _ = admin.do("POST", "/projects/"+other+"/mcp/"+serverID+"/enabled", url.Values{"enabled": {"false"}}, hx)
	require.Equal(t, http.StatusNotFound, status)
	status, _, page = admin.do("POST", srvPath+"/enabled", url.Values{"enabled": {"false"}}, hx)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "Enable")
	require.False(t, mcpRegServers(t, s, s.admin, "?projectId="+project)[1].Enabled)
	status, _, _ = admin.do("POST", srvPath+"/delete", url.Values{}, hx)
	require.Equal(t, 200, status)
	require.Len(t, mcpRegServers(t, s, s.admin, "?projectId="+project), 1)
	status, _, _ = admin.do("GET", srvPath, nil)
	require.Equal(t, http.StatusNotFound, status)
}

// TestConsoleIntegrations: the integration pages with the API's rules: a
// viewer lists without links and is forbidden the integration's page and
// its actions; bad config is the API's 400 message; the secret is stored
// sealed and never shown; Sync now queues a sync whose end reaches the
// history, with its log; a configure without the secret keeps it.
func TestConsoleIntegrations(t *testing.T) {
	t.Parallel()
	s := integrationServer(t, notesSource{notes: map[string]string{"n1": "# One\n\nFirst note.", "n2": "# Two\n\nSecond note."}})
	s.dbURL = s.m.Config.DatabaseURL
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	base := "/projects/" + project + "/integrations"

	admin := newConsoleBrowser(t, s)
	admin.signIn(s.admin)
	status, _, page := admin.do("GET", base, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "No integration yet.")
	require.Contains(t, page, "/integrations/new?provider=notes")
	status, _, page = admin.do("GET", base+"/new?provider=notes", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `name="config.api_key" type="password"`)
	status, _, _ = admin.do("GET", base+"/new?provider=nonesuch", nil)
	require.Equal(t, http.StatusBadRequest, status)

	form := url.Values{"provider_type": {"notes"}, "name": {"kb"}, "display_name": {"Knowledge"}, "config.endpoint": {"https://notes.example.com"}, "config.api_key": {"notes-secret-5555"}}
	status, _, _ = admin.do("POST", base, form)
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	bad := url.Values{"provider_type": {"notes"}, "name": {"kb"}, "display_name": {"Knowledge"}, "config.api_key": {"notes-secret-5555"}}
	status, _, page = admin.postForm(base, bad)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, `id="integration-problem"`)
	require.Contains(t, page, "endpoint")
	require.NotContains(t, page, "notes-secret-5555")
	bad.Set("config.endpoint", "https://notes.example.com")
	bad.Set("config.sync_interval_minutes", "soon")
	bad.Set("config.max_delete_fraction", "0.3")
	status, _, page = admin.postForm(base, bad)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "sync_interval_minutes must be a whole number")
	require.Contains(t, page, `name="config.max_delete_fraction" value="0.3"`, "a field after the bad one as typed")
	s.must(200, "GET", "/api/integrations", s.admin, nil, header{"X-Project-ID", project})
	var list struct {
		Total int `json:"total"`
	}
	s.must(200, "GET", "/api/integrations", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &list)
	require.Zero(t, list.Total, "nothing created")

	status, hdr, page := admin.postForm(base, form)
	require.Equal(t, http.StatusSeeOther, status, page)
	require.Equal(t, base+"/kb", hdr.Get("Location"))
	// The name taken: the form again as typed, its secret left out.
	status, _, page = admin.postForm(base, form)
	requireFormAgain(t, status, page, http.StatusConflict, "integration-add", "integration-problem", "an integration of this name exists in the project",
		`name="name" value="kb"`, `value="Knowledge"`, `name="config.endpoint" value="https://notes.example.com"`)
	require.NotContains(t, page, "notes-secret-5555")
	var sealed string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT config_sealed FROM integrations WHERE name = 'kb'`).Scan(&sealed))
	require.NotContains(t, sealed, "notes-secret-5555")
	status, _, page = admin.do("GET", base+"/kb", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `name="config.endpoint" value="https://notes.example.com"`, "the stored value, as the form takes it")
	require.NotContains(t, page, "notes-secret-5555")
	require.NotContains(t, page, "***", "a masked secret is not put in the form")

	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, page = viewer.do("GET", base, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "Knowledge")
	require.NotContains(t, page, `href="`+base+`/kb"`)
	require.NotContains(t, page, "provider=notes")
	status, _, _ = viewer.do("GET", base+"/kb", nil)
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = viewer.do("POST", base+"/kb/sync", url.Values{}, header{console.CSRFHeader, viewer.csrf})
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = admin.do("GET", "/projects/"+other+"/integrations/kb", nil)
	require.Equal(t, http.StatusNotFound, status, "not another project's")

	hx := header{console.CSRFHeader, admin.csrf}
	status, _, page = admin.do("POST", base+"/kb/sync", url.Values{}, hx)
	require.Equal(t, 200, status, page)
	m := regexp.MustCompile(`id="sync-([0-9a-f-]{36})"`).FindStringSubmatch(page)
	require.NotNil(t, m, page)
	job := m[1]
	require.Eventually(t, func() bool {
		_, _, rows := admin.do("GET", base+"/kb/syncs", nil)
		return strings.Contains(rows, `data-status="completed"`)
	}, 20*time.Second, 50*time.Millisecond)
	var docs struct {
		Total int `json:"total"`
	}
	s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &docs)
	require.Equal(t, 2, docs.Total, "the sync stored the notes")
	status, _, page = admin.do("GET", base+"/kb/syncs/"+job, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "2 created")
	require.Contains(t, page, `id="sync-logs"`)
	require.Contains(t, page, "<td>info</td>")
	// The sync queue publishes no job.completed (a sync's end is
	// integration.sync.completed), so no job.started either: project
	// viewers are not told of its jobs by the generic job events.
	var jobEvents, syncEnds int
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT
		count(*) FILTER (WHERE type IN ('job.started', 'job.completed') AND payload->>'queue' = 'integration_sync'),
		count(*) FILTER (WHERE type = 'integration.sync.completed')
		FROM events WHERE project_id = $1`, project).Scan(&jobEvents, &syncEnds))
	require.Zero(t, jobEvents)
	require.Equal(t, 1, syncEnds)
	// A project admin who is not a superadmin: the API refuses them the
	// log (its one route is superadmin), so does the page; the counters
	// (every sync's integration.sync.completed event) stay.
	_, padminToken := s.newMember("padmin@example.com", allScopes, project, "admin")
	s.must(http.StatusForbidden, "GET", "/api/superadmin/sync-jobs/"+job+"/logs", padminToken, nil)
	padmin := newConsoleBrowser(t, s)
	padmin.signIn(padminToken)
	status, _, page = padmin.do("GET", base+"/kb/syncs/"+job, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "2 created")
	require.NotContains(t, page, `id="sync-logs"`)
	require.NotContains(t, page, "<td>info</td>")
	require.Contains(t, page, `id="sync-log-superadmin"`)
	// A second sync: the history lists both, newest first.
	status, _, page = admin.do("POST", base+"/kb/sync", url.Values{}, hx)
	require.Equal(t, 200, status, page)
	second := regexp.MustCompile(`id="sync-([0-9a-f-]{36})"`).FindStringSubmatch(page)[1]
	require.NotEqual(t, job, second)
	require.Eventually(t, func() bool {
		_, _, rows := admin.do("GET", base+"/kb/syncs", nil)
		return strings.Count(rows, `data-status="completed"`) == 2
	}, 20*time.Second, 50*time.Millisecond)
	_, _, rows := admin.do("GET", base+"/kb/syncs", nil)
	ids := regexp.MustCompile(`id="sync-([0-9a-f-]{36})"`).FindAllStringSubmatch(rows, -1)
	require.Len(t, ids, 2)
	require.Equal(t, []string{second, job}, []string{ids[0][1], ids[1][1]})
	require.Contains(t, rows, "0 / 0 / 2 / 0 / 0", "the second sync found the notes unchanged")
	status, _, _ = admin.do("GET", base+"/kb/syncs/not-a-uuid", nil)
	require.Equal(t, http.StatusNotFound, status)

	// Test the connection: the connector's answer.
	status, _, _ = viewer.do("POST", base+"/kb/test", url.Values{}, header{console.CSRFHeader, viewer.csrf})
	require.Equal(t, http.StatusForbidden, status)
	status, _, page = admin.do("POST", base+"/kb/test", url.Values{}, hx)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `data-outcome="success"`)
	require.Contains(t, page, "connected to Notes")

	// Configure: the secret left empty is kept; a bad value is the 400.
	status, _, page = admin.postForm(base+"/kb", url.Values{"display_name": {"Typed KB"}, "config.endpoint": {"https://notes.example.com"}, "config.max_delete_fraction": {"2"}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "integration-config", "integration-problem",
		"config field max_delete_fraction must be a number greater than 0 and at most 1",
		`name="display_name" value="Typed KB"`, `name="config.max_delete_fraction" value="2"`)
	// A field that does not parse: every other field still comes back as
	// typed, those after it too (else a save after fixing it drops them).
	status, _, page = admin.postForm(base+"/kb", url.Values{
		"display_name": {"Typed KB"}, "config.endpoint": {"https://notes.example.com/typed"},
		"config.sync_interval_minutes": {"soon"}, "config.max_delete_fraction": {"0.25"},
	})
	requireFormAgain(t, status, page, http.StatusBadRequest, "integration-config", "integration-problem", "sync_interval_minutes must be a whole number",
		`name="config.endpoint" value="https://notes.example.com/typed"`, `name="config.sync_interval_minutes" value="soon"`, `name="config.max_delete_fraction" value="0.25"`)
	status, _, page = admin.postForm(base+"/kb", url.Values{"display_name": {"KB"}, "config.endpoint": {"https://notes.example.com"}})
	require.Equal(t, http.StatusSeeOther, status, page)
	var in struct {
		DisplayName string         `json:"display_name"`
		Config      map[string]any `json:"config"`
	}
	s.must(200, "GET", "/api/integrations/kb", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &in)
	require.Equal(t, "KB", in.DisplayName)
	require.Equal(t, "note***", in.Config["api_key"], "the stored secret kept (the API masks all but its start)")

	// Delete: the integration goes, its documents stay.
	status, _, _ = viewer.postForm(base+"/kb/delete", url.Values{})
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = admin.do("POST", base+"/kb/delete", url.Values{})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	status, hdr, _ = admin.postForm(base+"/kb/delete", url.Values{})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, base, hdr.Get("Location"))
	s.must(404, "GET", "/api/integrations/kb", s.admin, nil, header{"X-Project-ID", project})
	s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &docs)
	require.Equal(t, 2, docs.Total, "the documents stay")
	status, _, _ = admin.postForm(base+"/kb/delete", url.Values{})
	require.Equal(t, http.StatusNotFound, status)
}

// TestConsoleDiscovery: the discovery pages with the API's rules: start
// with bad input answers the API's message; a job started on a parsed
// document completes (the local provider), its page shows the proposed
// types; finalize without a pack name is the API's 400, with every box
// ticked creates and installs a pack (the job's template_pack_id); a
// viewer reads but may not start or finalize; another project's job is
// not found.
func TestConsoleDiscovery(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	doc := s.discParsed(project, "team.md", "# Team\n\nAda Lovelace works at Analytical Engines Ltd in London. "+
		"Charles Babbage founded Analytical Engines Ltd. Ada Lovelace wrote the first program for the Analytical Engine.")
	base := "/projects/" + project + "/discovery"

	admin := newConsoleBrowser(t, s)
	admin.signIn(s.admin)
	status, _, page := admin.do("GET", base+"/new", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `value="`+doc+`"`)
	status, _, _ = admin.do("POST", base, url.Values{"document": {doc}})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	status, _, page = admin.postForm(base, url.Values{})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, `id="discovery-problem"`)
	status, _, page = admin.postForm(base, url.Values{"document": {doc}, "batch_size": {"99"}, "max_iterations": {"3"}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "discovery-start", "discovery-problem", "batch_size must be between 1 and 50, not 99",
		`value="`+doc+`" id="pick-`+doc+`" checked`, `name="batch_size" inputmode="numeric" value="99"`, `name="max_iterations" inputmode="numeric" value="3"`)
	var jobs struct {
		Total int `json:"total"`
	}
	s.must(200, "GET", "/api/discovery-jobs", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &jobs)
	require.Zero(t, jobs.Total, "nothing queued")

	status, hdr, page := admin.postForm(base, url.Values{"document": {doc}, "include_relationships": {"true"}, "max_iterations": {"1"}})
	require.Equal(t, http.StatusSeeOther, status, page)
	jobPath := hdr.Get("Location")
	id := strings.TrimPrefix(jobPath, base+"/")
	j := s.discWait(project, id, "completed")
	require.NotEmpty(t, j.DiscoveredTypes)
	status, _, page = admin.do("GET", base, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="discovery-`+id+`"`)
	status, _, page = admin.do("GET", jobPath, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="discovery-finalize"`)
	require.Contains(t, page, `value="`+j.DiscoveredTypes[0].TypeName+`"`)
	require.Contains(t, page, `sse-connect="/stream/projects/`+project+`/discovery/`+id+`"`, "the job's own stream")
	status, _, page = admin.do("GET", jobPath+"/live", nil)
	require.Equal(t, 200, status)
	require.True(t, strings.HasPrefix(strings.TrimSpace(page), `<section id="discovery-live" data-status="completed"`), page)

	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, page = viewer.do("GET", jobPath, nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, "Finalize</button>")
	status, _, _ = viewer.do("GET", base+"/new", nil)
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = viewer.postForm(jobPath+"/finalize", url.Values{"packName": {"P"}, "mode": {"create"}, "type": {j.DiscoveredTypes[0].TypeName}})
	require.Equal(t, http.StatusForbidden, status)
	for _, path := range []string{"/projects/" + other + "/discovery/" + id, "/stream/projects/" + other + "/discovery/" + id, "/stream/projects/" + project + "/discovery/not-a-uuid"} {
		status, _, _ = admin.do("GET", path, nil)
		require.Equal(t, http.StatusNotFound, status, path)
	}

	ticked := url.Values{"mode": {"create"}, "install": {"true"}}
	for _, ty := range j.DiscoveredTypes {
		ticked.Add("type", ty.TypeName)
	}
	for _, r := range j.DiscoveredRelationships {
		ticked.Add("relationship", r.SourceType+"|"+r.RelationType+"|"+r.TargetType)
	}
	ticked.Set("packName", " ")
	status, _, page = admin.postForm(jobPath+"/finalize", ticked)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "packName is required")
	ticked.Set("packName", "Team types")
	// A pack the form names that does not exist: the form again, as typed.
	ticked.Set("mode", "update")
	ticked.Set("existingPackId", "0190a0a0-0000-7000-8000-0000000000aa")
	status, _, page = admin.postForm(jobPath+"/finalize", ticked)
	requireFormAgain(t, status, page, http.StatusNotFound, "discovery-finalize", "finalize-problem", "template pack not found",
		`name="packName" value="Team types"`, `<option value="update" selected>`, `name="existingPackId" value="0190a0a0-0000-7000-8000-0000000000aa"`)
	ticked.Set("mode", "create")
	ticked.Del("existingPackId")
	ticked.Set("reextract", "true")
	ticked.Del("install")
	status, _, page = admin.postForm(jobPath+"/finalize", ticked)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, `id="finalize-problem"`)
	require.Equal(t, "", s.discGet(project, id).TemplatePackID)
	ticked.Set("install", "true")
	ticked.Del("reextract")
	status, _, page = admin.postForm(jobPath+"/finalize", ticked)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="finalized"`)
	pack := s.discGet(project, id).TemplatePackID
	require.NotEmpty(t, pack)
	require.Contains(t, page, pack)
	var installed struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/projects/"+project+"/template-packs", s.admin, nil).Decode(t, &installed)
	found := false
	for _, p := range installed.Data {
		found = found || p.ID == pack
	}
	require.True(t, found, "the pack is installed: %+v", installed)
}
