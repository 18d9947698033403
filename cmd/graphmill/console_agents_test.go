package main

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// consoleAgent is an agent definition as the API answers it, every field
// the console's edit form sets.
type consoleAgent struct {
	Name                 string   `json:"name"`
	Description          string   `json:"description"`
	Instructions         string   `json:"instructions"`
	Model                string   `json:"model"`
	Tools                []string `json:"tools"`
	RequireApprovalFor   []string `json:"requireApprovalFor"`
	MaxSteps             int      `json:"maxSteps"`
	Schedule             string   `json:"schedule"`
	TriggerIntegrationID string   `json:"triggerIntegrationId"`
}

// TestConsoleAgentEdit: the agent page's edit form changes the stored
// agent as the API's PATCH does (every field, a schedule and a trigger
// integration set, then removed); the form is shown with the agent's
// values to those who may change it only; a change needs the CSRF token
// and the write rule; bad input (the service's checks, the API's bounds)
// shows the form again with the values typed and the message, the agent
// unchanged; a caller who may change the agent but not read its page
// gets the refusal's error page.
func TestConsoleAgentEdit(t *testing.T) {
	t.Parallel()
	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	site := s.createIntegration(project, "site", "web", map[string]any{"start_urls": []string{"http://127.0.0.1:9/"}})
	agentID := s.agentCreate(s.admin, project, map[string]any{
		"name": "Founder finder", "description": "finds founders", "instructions": "Find who founded the company.",
		"tools": []string{"search", "graph_create_object"},
	})
	s.agentCreate(s.admin, project, map[string]any{"name": "Taken", "instructions": "x", "tools": []string{"search"}})
	agentPath := "/projects/" + project + "/agents/" + agentID
	stored := func() consoleAgent {
		var a consoleAgent
		s.must(200, "GET", "/api/agents/"+agentID, s.admin, nil).Decode(t, &a)
		return a
	}

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page := b.do("GET", agentPath, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="agent-edit"`)
	require.Contains(t, page, `name="name" value="Founder finder"`)
	require.Contains(t, page, ">\nsearch\ngraph_create_object</textarea>")
	require.Contains(t, page, `name="maxSteps" value="10"`)

	form := url.Values{
		"name": {"Founder finder 2"}, "description": {"finds founders, & more"}, "instructions": {"Find who founded it."},
		"model": {"local/heuristic-v1"}, "tools": {"search\n graph_create_object \n\n"}, "requireApprovalFor": {"graph_create_object"},
		"maxSteps": {"3"}, "schedule": {"@daily"}, "triggerIntegrationId": {site.id},
	}
	with := func(k, v string) url.Values {
		f := url.Values{"csrf": {b.csrf}}
		for kk, vv := range form {
			f[kk] = vv
		}
		f.Set(k, v)
		return f
	}

	// Without the CSRF token: refused, nothing changed.
	before := stored()
	status, _, _ = b.do("POST", agentPath, form)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, before, stored())

	status, hdr, page := b.do("POST", agentPath, with("csrf", b.csrf))
	require.Equal(t, http.StatusSeeOther, status, page)
	require.Equal(t, agentPath, hdr.Get("Location"))
	want := consoleAgent{
		Name: "Founder finder 2", Description: "finds founders, & more", Instructions: "Find who founded it.", Model: "local/heuristic-v1",
		Tools: []string{"search", "graph_create_object"}, RequireApprovalFor: []string{"graph_create_object"}, MaxSteps: 3,
		Schedule: "@daily", TriggerIntegrationID: site.id,
	}
	require.Equal(t, want, stored())
	status, _, page = b.do("GET", agentPath, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `name="schedule" value="@daily"`)
	require.Contains(t, page, `name="triggerIntegrationId" value="`+site.id+`"`)

	// Bad input: the form again, as typed, with the message; the agent
	// as it was.
	unknown := uuid.NewString()
	for _, c := range []struct {
		field, value string
		status       int
		msg          string
	}{
		{"maxSteps", "many", http.StatusBadRequest, "maxSteps must be a whole number"},
		{"maxSteps", "99", http.StatusBadRequest, "maxSteps must be between 1 and 50"},
		{"name", " ", http.StatusBadRequest, "name must be 1 to 200 characters"},
		{"instructions", " ", http.StatusBadRequest, "instructions must not be empty"},
		{"description", strings.Repeat("d", 2001), http.StatusBadRequest, "description must be at most 2000 characters (it has 2001)"},
		{"instructions", strings.Repeat("i", 100001), http.StatusBadRequest, "instructions must be at most 100000 characters (it has 100001)"},
		{"model", strings.Repeat("m", 201), http.StatusBadRequest, "model must be at most 200 characters (it has 201)"},
		{"tools", "graph_create_object\n" + strings.Repeat("search\n", 100), http.StatusBadRequest, "tools must name at most 100 tools"},
		{"tools", "search\ngraph_create_object\nno_such_tool", http.StatusBadRequest, `tools: "no_such_tool" is not a tool you may use in this project`},
		{"requireApprovalFor", "search\nask_user", http.StatusBadRequest, `requireApprovalFor: "ask_user" is not one of the agent's tools`},
		{"model", "no-such-model", http.StatusBadRequest, `model: "no-such-model" is not a model this project's provider offers`},
		{"schedule", "every day", http.StatusBadRequest, "schedule must be a cron expression"},
		{"triggerIntegrationId", "nope", http.StatusBadRequest, "triggerIntegrationId must be an integration's id (a UUID) or empty"},
		{"triggerIntegrationId", unknown, http.StatusBadRequest, "triggerIntegrationId: no integration with id " + unknown + " in this project"},
		{"name", "Taken", http.StatusConflict, "an agent of this name already exists in the project"},
	} {
		status, _, page := b.do("POST", agentPath, with(c.field, c.value))
		require.Equal(t, c.status, status, "%s=%q: %s", c.field, c.value, page)
		require.Contains(t, page, `id="agent-edit"`, c.field)
		require.Contains(t, page, `role="alert" id="agent-edit-problem">`, c.field)
		require.Contains(t, html.UnescapeString(page), c.msg, c.field)
		require.Contains(t, page, html.EscapeString(c.value), "%s: the value typed", c.field)
		require.Contains(t, page, `<details class="agent-edit" open>`, c.field)
		require.NotContains(t, page, "<title>Error", c.field)
		require.Equal(t, want, stored(), "%s=%q", c.field, c.value)
	}

	// Emptied: no model (the project's default), no schedule, no trigger,
	// no approval.
	empty := with("model", "")
	for _, k := range []string{"schedule", "triggerIntegrationId", "requireApprovalFor", "description"} {
		empty.Set(k, "")
	}
	status, _, page = b.do("POST", agentPath, empty)
	require.Equal(t, http.StatusSeeOther, status, page)
	want.Model, want.Schedule, want.TriggerIntegrationID, want.RequireApprovalFor, want.Description = "", "", "", []string{}, ""
	require.Equal(t, want, stored())

	// Another editor saves the form as a browser sends it (textareas
	// with CRLF line ends) with only maxSteps changed: the instructions
	// are the same, so the agent's owner (whom its schedule runs as)
	// stays the one who last changed them.
	require.Equal(t, 1, s.extractionCount(`UPDATE agents SET instructions = 'Line one.'||chr(10)||'Line two.' WHERE id = $1 RETURNING 1`, agentID))
	want.Instructions = "Line one.\nLine two."
	owner := s.agentGet(s.admin, agentID).OwnerID
	require.NotEmpty(t, owner)
	_, eveToken := s.newMember("eve@example.com", allScopes, project, "editor")
	eve := newConsoleBrowser(t, s)
	eve.signIn(eveToken)
	status, _, page = eve.do("GET", agentPath, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "required>\nLine one.\nLine two.</textarea>", "a leading newline the parser drops: the text as stored")
	typed := with("maxSteps", "5")
	typed.Set("csrf", eve.csrf)
	typed.Set("instructions", "Line one.\r\nLine two.")
	typed.Set("description", "")
	for _, k := range []string{"model", "schedule", "triggerIntegrationId", "requireApprovalFor"} {
		typed.Set(k, "")
	}
	status, _, page = eve.do("POST", agentPath, typed)
	require.Equal(t, http.StatusSeeOther, status, page)
	want.MaxSteps = 5
	require.Equal(t, want, stored())
	require.Equal(t, owner, s.agentGet(s.admin, agentID).OwnerID, "not a change of the instructions")

	// The agent under another project, an unknown agent: not found.
	for _, p := range []string{"/projects/" + other + "/agents/" + agentID, "/projects/" + project + "/agents/" + uuid.NewString()} {
		status, _, _ = b.do("POST", p, with("maxSteps", "4"))
		require.Equal(t, http.StatusNotFound, status, p)
	}

	// A viewer reads the page without the form and may not change it.
	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, page = viewer.do("GET", agentPath, nil)
	require.Equal(t, 200, status, page)
	require.NotContains(t, page, `id="agent-edit"`)
	status, _, page = viewer.do("POST", agentPath, url.Values{"csrf": {viewer.csrf}, "maxSteps": {"4"}, "name": {"x"}, "instructions": {"y"}})
	require.Equal(t, http.StatusForbidden, status, page)
	require.Equal(t, want, stored())

	// May change agents (agents:run) but not read them (no agents:read):
	// the refusal's error page, as the API answers.
	_, runOnly := s.newMember("runner@example.com", []string{"agents:run", "admin:read", "search:read"}, project, "editor")
	ro := newConsoleBrowser(t, s)
	ro.signIn(runOnly)
	status, _, page = ro.do("POST", agentPath, url.Values{"csrf": {ro.csrf}, "name": {"x"}, "instructions": {"y"}, "tools": {"search"}, "maxSteps": {"99"}})
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Contains(t, page, "maxSteps must be between 1 and 50")
	require.NotContains(t, page, `id="agent-edit"`)
	require.Equal(t, want, stored())
}

// browserForm is what a browser submits of the form with id on page when
// the user changes nothing: each field's value as its HTML parser reads
// it (CR LF and a lone CR become LF; a textarea's first newline is
// dropped; a text input's line breaks are stripped), its line ends sent
// as CR LF.
func browserForm(t *testing.T, page, id string) url.Values {
	t.Helper()
	at := strings.Index(page, `id="`+id+`"`)
	require.GreaterOrEqual(t, at, 0, "form %s", id)
	start := strings.LastIndex(page[:at], "<form")
	require.GreaterOrEqual(t, start, 0, "form %s", id)
	body := page[start : start+strings.Index(page[start:], "</form>")]
	parsed := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(html.UnescapeString(s), "\r\n", "\n"), "\r", "\n")
	}
	sent := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	form := url.Values{}
	for _, m := range regexp.MustCompile(`(?s)<textarea[^>]*name="([^"]+)"[^>]*>(.*?)</textarea>`).FindAllStringSubmatch(body, -1) {
		form.Set(m[1], sent(strings.TrimPrefix(parsed(m[2]), "\n")))
	}
	for _, m := range regexp.MustCompile(`<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		form.Set(m[1], strings.NewReplacer("\n", "", "\r", "").Replace(html.UnescapeString(m[2])))
	}
	return form
}

// TestConsoleAgentEditKeepsStoredLineEnds: an agent whose description
// and instructions the API stored with CR LF (or CR) line ends, and whose
// name holds one because it was stored before names refused them
// (displayname.Check), saved from its console page as a browser sends the
// form back with only maxSteps changed, keeps them, and so its owner
// (whom its schedule and trigger runs act as).
func TestConsoleAgentEditKeepsStoredLineEnds(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	agentID := s.agentCreate(s.admin, project, map[string]any{
		"name": "Windows notes", "description": "one\r\ntwo", "instructions": "Line one.\r\nLine two.\rLine three.",
		"tools": []string{"search"},
	})
	_, err := s.pool().Exec(context.Background(), `UPDATE agents SET name = 'Windows'||chr(13)||chr(10)||'notes' WHERE id = $1`, agentID)
	require.NoError(t, err)
	agentPath := "/projects/" + project + "/agents/" + agentID
	var before consoleAgent
	s.must(200, "GET", "/api/agents/"+agentID, s.admin, nil).Decode(t, &before)
	owner := s.agentGet(s.admin, agentID).OwnerID

	_, eveToken := s.newMember("eve@example.com", allScopes, project, "editor")
	eve := newConsoleBrowser(t, s)
	eve.signIn(eveToken)
	status, _, page := eve.do("GET", agentPath, nil)
	require.Equal(t, 200, status, page)
	form := browserForm(t, page, "agent-edit")
	require.Equal(t, eve.csrf, form.Get("csrf"))
	form.Set("maxSteps", "4")
	status, _, page = eve.do("POST", agentPath, form)
	require.Equal(t, http.StatusSeeOther, status, page)

	var after consoleAgent
	s.must(200, "GET", "/api/agents/"+agentID, s.admin, nil).Decode(t, &after)
	require.Equal(t, 4, after.MaxSteps)
	after.MaxSteps = before.MaxSteps
	require.Equal(t, before, after, "only maxSteps changed")
	require.Equal(t, owner, s.agentGet(s.admin, agentID).OwnerID, "the instructions did not change")
}

// TestConsoleAgentEditRefusesStaleForm: a form opened before someone
// else changed the agent is refused on save (409, the agent as the other
// left it, the form again with what was typed and the message); saved
// again from that page, it applies.
func TestConsoleAgentEditRefusesStaleForm(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	agentID := s.agentCreate(s.admin, project, map[string]any{
		"name": "Digest", "instructions": "Summarise the week.", "tools": []string{"search"},
	})
	agentPath := "/projects/" + project + "/agents/" + agentID
	_, eveToken := s.newMember("eve@example.com", allScopes, project, "editor")
	eve := newConsoleBrowser(t, s)
	eve.signIn(eveToken)
	status, _, page := eve.do("GET", agentPath, nil)
	require.Equal(t, 200, status, page)
	form := browserForm(t, page, "agent-edit")
	require.NotEmpty(t, form.Get("updatedAt"))

	// Meanwhile the admin changes the instructions over the API.
	s.must(200, "PATCH", "/api/agents/"+agentID, s.admin, map[string]any{"instructions": "Summarise the month."})
	stored := func() consoleAgent {
		var a consoleAgent
		s.must(200, "GET", "/api/agents/"+agentID, s.admin, nil).Decode(t, &a)
		return a
	}
	theirs := stored()

	form.Set("maxSteps", "7")
	status, _, page = eve.do("POST", agentPath, form)
	require.Equal(t, http.StatusConflict, status, page)
	require.Contains(t, html.UnescapeString(page), "the agent was changed by someone else after you opened it")
	require.Contains(t, page, `<details class="agent-edit" open>`)
	require.Contains(t, page, `name="maxSteps" value="7"`, "what eve typed")
	require.Contains(t, page, "Summarise the month.", "the agent as it is now, above the form")
	require.Equal(t, theirs, stored(), "nothing of eve's applied")

	// Saved again from the refusal's page: eve's values replace theirs.
	again := browserForm(t, page, "agent-edit")
	require.NotEqual(t, form.Get("updatedAt"), again.Get("updatedAt"))
	status, _, page = eve.do("POST", agentPath, again)
	require.Equal(t, http.StatusSeeOther, status, page)
	after := stored()
	require.Equal(t, 7, after.MaxSteps)
	require.Equal(t, "Summarise the week.", after.Instructions)

	// A malformed updatedAt is bad input, not a silent overwrite.
	again.Set("updatedAt", "yesterday")
	status, _, page = eve.do("POST", agentPath, again)
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Contains(t, page, "updatedAt must be the agent")
}
