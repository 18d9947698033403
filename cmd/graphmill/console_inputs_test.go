package main

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/notification"
)

// TestConsoleUnstorableText: a NUL or invalid UTF-8 in a console form
// field or query is the API's 400 naming the field, and nothing is
// stored: chat title and question, graph search and type, an agent run's
// input, an integration's display name.
func TestConsoleUnstorableText(t *testing.T) {
	t.Parallel()
	s := integrationServer(t, notesSource{notes: map[string]string{"n1": "# One\n\nFirst note."}})
	project, _ := s.defaultProject()
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)

	for _, title := range []string{"a\x00b", "a\xffb"} {
		status, _, page := b.do("POST", "/projects/"+project+"/chat", url.Values{"csrf": {b.csrf}, "title": {title}})
		require.Equal(t, http.StatusBadRequest, status, page)
		require.Contains(t, page, "form.title: must be valid UTF-8 without the NUL character")
	}
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chat_sessions`))

	status, hdr, _ := b.do("POST", "/projects/"+project+"/chat", url.Values{"csrf": {b.csrf}, "title": {"ok"}})
	require.Equal(t, http.StatusSeeOther, status)
	session := strings.TrimPrefix(hdr.Get("Location"), "/projects/"+project+"/chat/")
	status, body, _ := b.chatTurn(project, session, "hello\x00there")
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Equal(t, "form.content: must be valid UTF-8 without the NUL character (U+0000)", body)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chat_messages WHERE session_id = $1`, session))

	for q, field := range map[string]string{"q=%FF": "query.q", "type=%FF": "query.type", "q=ok&sort%FF=x": "query (a parameter name)"} {
		status, _, page := b.do("GET", "/projects/"+project+"/graph?"+q, nil)
		require.Equal(t, http.StatusBadRequest, status, q)
		require.Contains(t, page, field+": must be valid UTF-8 without the NUL character", q)
	}

	agentID := s.agentCreate(s.admin, project, map[string]any{"name": "n", "instructions": "i", "tools": []string{"search"}})
	status, _, page := b.do("POST", "/projects/"+project+"/agents/"+agentID+"/runs", url.Values{"csrf": {b.csrf}, "input": {"a\x00b"}})
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Contains(t, page, "form.input: must be valid UTF-8 without the NUL character")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM agent_runs`))

	form := url.Values{"provider_type": {"notes"}, "name": {"kb"}, "display_name": {"Know\x00ledge"}, "config.endpoint": {"https://notes.example.com"}, "config.api_key": {"notes-secret-5555"}}
	status, _, page = b.postForm("/projects/"+project+"/integrations", form)
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Contains(t, page, "form.display_name: must be valid UTF-8 without the NUL character")
	require.NotContains(t, page, "notes-secret-5555", "no value echoed")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM integrations`))
}

// TestConsoleInputBounds: the services bound a chat question (ContentMax)
// and an agent run's input and answer (100,000 characters) as the API's
// schema does, so the console's forms are refused the same (400, nothing
// stored); a form body beyond console.FormMax is 413.
func TestConsoleInputBounds(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)

	status, hdr, _ := b.do("POST", "/projects/"+project+"/chat", url.Values{"csrf": {b.csrf}, "title": {"big"}})
	require.Equal(t, http.StatusSeeOther, status)
	session := strings.TrimPrefix(hdr.Get("Location"), "/projects/"+project+"/chat/")
	big := strings.Repeat("é", 20001)
	status, body, _ := b.chatTurn(project, session, big)
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Equal(t, "content must be at most 20000 characters (it has 20001)", body)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chat_messages WHERE session_id = $1`, session))
	status, _, page := b.do("POST", "/projects/"+project+"/chat", url.Values{"csrf": {b.csrf}, "title": {"new"}, "content": {big}})
	require.Less(t, status, 500, page)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chat_messages WHERE length(content) > 20000`))

	agentID := s.agentCreate(s.admin, project, map[string]any{"name": "n", "instructions": "i", "tools": []string{"search"}})
	status, _, page = b.do("POST", "/projects/"+project+"/agents/"+agentID+"/runs", url.Values{"csrf": {b.csrf}, "input": {strings.Repeat("y", 100001)}})
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Contains(t, page, "input must be at most 100000 characters (it has 100001)")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM agent_runs`))
	// A run that asks a question (the local planner's ASK): a too long
	// answer is refused and the run still waits.
	run := s.agentStart(s.admin, agentID, "Who founded Acme?\nASK: Which name?")
	s.agentWait(s.admin, run.ID, "waiting_for_input")
	status, _, page = b.post("/projects/"+project+"/agent-runs/"+run.ID+"/answer", url.Values{"answer": {strings.Repeat("y", 100001)}})
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Contains(t, page, "answer must be at most 100000 characters")
	require.Equal(t, "waiting_for_input", s.agentWait(s.admin, run.ID, "waiting_for_input").Status)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM agent_run_questions WHERE answer IS NOT NULL`))

	status, _, page = b.post("/projects/"+project+"/agents/"+agentID+"/runs", url.Values{"input": {strings.Repeat("y", 1<<20)}})
	require.Equal(t, http.StatusRequestEntityTooLarge, status, page)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM agent_runs`), "the question's run alone")
}

// TestConsoleObjectProvenanceNeedsDocuments: an object's page shows the
// chunks' text and documents' names only to a caller with the API's
// documents:read rule (GET /api/documents/{id}/chunks); graph:read alone
// sees how many chunks there are. The type crumb's link is encoded: a
// type "R&D #1" opens the list of that type.
func TestConsoleObjectProvenanceNeedsDocuments(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	doc := consoleExtracted(t, s, project, "orbit.md")
	obj, _ := consoleBusiestObject(t, s, project)
	object := "/projects/" + project + "/graph/objects/" + obj.ID

	_, graphOnly := s.newMember("graphonly@example.com", []string{"admin:read", "graph:read"}, project, "viewer")
	r := s.do("GET", "/api/documents/"+doc+"/chunks", graphOnly, nil, header{"X-Project-ID", project})
	require.Equal(t, http.StatusForbidden, r.Status)
	g := newConsoleBrowser(t, s)
	g.signIn(graphOnly)
	status, _, page := g.do("GET", object, nil)
	require.Equal(t, http.StatusOK, status, page)
	require.NotContains(t, page, `id="provenance"`)
	require.NotContains(t, page, "<blockquote>")
	require.NotContains(t, page, "orbit.md")
	require.Regexp(t, `id="provenance-count"[^>]*>Extracted from [1-9][0-9]* chunks; reading them needs documents:read.`, page)

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page = b.do("GET", object, nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `<ul id="provenance"`)
	require.Contains(t, page, "orbit.md, chunk ")

	require.Equal(t, 1, s.extractionCount(`UPDATE graph_objects SET type = 'R&D #1' WHERE id = $1 RETURNING 1`, obj.ID))
	_, _, page = b.do("GET", object, nil)
	crumb := regexp.MustCompile(`<p class="crumbs"><a href="[^"]*">Graph</a> / <a href="([^"]*)">`).FindStringSubmatch(page)
	require.NotNil(t, crumb, page)
	u, err := url.Parse(html.UnescapeString(crumb[1]))
	require.NoError(t, err)
	require.Equal(t, "R&D #1", u.Query().Get("type"))
	status, _, page = b.do("GET", u.String(), nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `id="object-`+obj.ID+`"`, "the crumb's list holds the object")
}

// TestConsoleNotificationActionsChecked: mark-all-read with a bad tab is
// refused before anything is marked; an action URL a browser would read
// as another site ("/\t/evil.example") is not drawn as a link.
func TestConsoleNotificationActionsChecked(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	aliceID, aliceToken := s.newMember("alice@example.com", allScopes, project, "viewer")
	pid := uuid.MustParse(project)
	n := s.notify(aliceID, notification.Params{ProjectID: &pid, Title: "t", Message: "m", ActionURL: "/\t/evil.example/x"})
	b := newConsoleBrowser(t, s)
	b.signIn(aliceToken)
	status, _, page := b.do("GET", "/notifications", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `id="notification-`+n.ID+`"`)
	require.NotContains(t, page, "evil.example")

	status, _, body := b.post("/notifications/mark-all-read?tab=bogus", url.Values{})
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Equal(t, notification.ErrBadTab.Error(), body)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM notifications WHERE id = $1 AND read_at IS NULL`, n.ID), "nothing marked")
	status, _, _ = b.post("/notifications/mark-all-read?tab=important", url.Values{})
	require.Equal(t, http.StatusOK, status)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM notifications WHERE id = $1 AND read_at IS NULL`, n.ID))
}

// TestConsoleDiscoveryNaNConfidence: min_confidence "NaN" (which the
// form's ParseFloat takes) is the service's 400, and no job is queued.
func TestConsoleDiscoveryNaNConfidence(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	doc := s.discParsed(project, "team.md", "# Team\n\nAda Lovelace works at Analytical Engines Ltd in London.")
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	for _, v := range []string{"NaN", "+Inf", "-Inf"} {
		status, _, page := b.postForm("/projects/"+project+"/discovery", url.Values{"document": {doc}, "min_confidence": {v}})
		require.Equal(t, http.StatusBadRequest, status, v)
		require.Contains(t, page, "min_confidence must be between 0 and 1", v)
	}
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM discovery_jobs`))
}
