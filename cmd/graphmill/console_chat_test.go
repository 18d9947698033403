package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/console"
	"github.com/graphmill/graphmill/internal/notification"
)

// consoleEvent is one event of a console stream.
type consoleEvent struct {
	Name string
	Data string
}

// post sends a urlencoded form with the session's CSRF token (header)
// and returns the answer whole.
func (b *consoleBrowser) post(path string, form url.Values) (int, http.Header, string) {
	b.t.Helper()
	return b.do("POST", path, form, header{console.CSRFHeader, b.csrf}, header{"HX-Request", "true"})
}

// chatTurn asks content in a console chat session and reads the events
// of the answer.
func (b *consoleBrowser) chatTurn(project, session, content string) (int, string, []consoleEvent) {
	b.t.Helper()
	status, _, body := b.post("/stream/projects/"+project+"/chat/"+session+"/messages", url.Values{"content": {content}})
	var out []consoleEvent
	for frame := range strings.SplitSeq(strings.TrimSpace(body), "\n\n") {
		var e consoleEvent
		for line := range strings.SplitSeq(frame, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				e.Name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				e.Data = v
			}
		}
		if e.Name != "" {
			out = append(out, e)
		}
	}
	return status, body, out
}

// consoleStreamFrames opens a console event stream and sends its frames
// (comments included).
func consoleStreamFrames(t *testing.T, b *consoleBrowser, path string) <-chan string {
	t.Helper()
	frames, stop := b.stream(path, "")
	t.Cleanup(stop)
	return frames
}

// nextFrame waits for the stream's next event frame (comments passed
// over), without its id line.
func nextFrame(t *testing.T, frames <-chan string) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case f := <-frames:
			// Events carry their id (replay on reconnect), which these
			// tests do not look at; events of no interest are ids alone.
			if strings.HasPrefix(f, ":") || idOnlyFrame.MatchString(f) {
				continue
			}
			if _, rest, ok := strings.Cut(f, "\n"); ok && strings.HasPrefix(f, "id: ") {
				f = rest
			}
			return f
		case <-timeout:
			t.Fatal("no event on the console stream")
			return ""
		}
	}
}

var citationLink = regexp.MustCompile(`class="citation" href="([^"]+)"`)

// TestConsoleChat: the chat pages list, create, open, rename and delete
// the caller's sessions and stream a turn's answer (the local provider)
// with its citations linked to the cited chunk; another user's session is
// not found, a token without chat:use is forbidden, unsafe requests need
// the CSRF token, bad input and a turn already running answer a clear
// message; each effect is in the service's records.
func TestConsoleChat(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	doc := consoleUpload(t, s, project, "zephyr.md", chatDocs[0].text)
	s.waitDocument(project, doc)
	hp := header{"X-Project-ID", project}

	// Signed out.
	anon := newConsoleBrowser(t, s)
	status, hdr, _ := anon.do("GET", "/projects/"+project+"/chat", nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page := b.do("GET", "/projects/"+project+"/chat", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "You have no chat in this project yet.")

	// Create: CSRF needed, a long title refused, then the session opens.
	status, _, _ = b.do("POST", "/projects/"+project+"/chat", url.Values{"title": {"Turbines"}})
	require.Equal(t, http.StatusForbidden, status)
	status, _, page = b.do("POST", "/projects/"+project+"/chat", url.Values{"csrf": {b.csrf}, "title": {strings.Repeat("x", 201)}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "chat-new", "chat-problem", "title must be at most 200 characters",
		`value="`+strings.Repeat("x", 201)+`"`)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chat_sessions`))
	status, hdr, _ = b.do("POST", "/projects/"+project+"/chat", url.Values{"csrf": {b.csrf}, "title": {"Turbines"}})
	require.Equal(t, http.StatusSeeOther, status)
	loc := hdr.Get("Location")
	require.True(t, strings.HasPrefix(loc, "/projects/"+project+"/chat/"), loc)
	session := strings.TrimPrefix(loc, "/projects/"+project+"/chat/")
	var sess chatSession
	s.must(200, "GET", "/api/chat/sessions/"+session, s.admin, nil, hp).Decode(t, &sess)
	require.Equal(t, "Turbines", sess.Title)
	status, _, page = b.do("GET", loc, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="chat-send"`)
	status, _, page = b.do("GET", "/projects/"+project+"/chat", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `href="`+loc+`"`)

	// A turn: streamed deltas, then the stored answer with its citation
	// linked to the chunk on the document's page.
	status, body, evs := b.chatTurn(project, session, "How often do quillwort bearings need lubrication?")
	require.Equal(t, 200, status, body)
	require.GreaterOrEqual(t, len(evs), 2, body)
	var streamed strings.Builder
	for _, e := range evs[:len(evs)-1] {
		require.Equal(t, console.ChatDeltaEvent, e.Name)
		var d struct{ Text string }
		require.NoError(t, json.Unmarshal([]byte(e.Data), &d))
		streamed.WriteString(d.Text)
	}
	last := evs[len(evs)-1]
	require.Equal(t, console.ChatDoneEvent, last.Name, body)
	var done struct{ HTML string }
	require.NoError(t, json.Unmarshal([]byte(last.Data), &done))
	s.must(200, "GET", "/api/chat/sessions/"+session, s.admin, nil, hp).Decode(t, &sess)
	require.Len(t, sess.Messages, 2)
	answer := sess.Messages[1]
	require.Equal(t, answer.Content, streamed.String(), "the deltas concatenate to the stored answer")
	require.NotEmpty(t, answer.Citations)
	c := answer.Citations[0]
	require.Contains(t, done.HTML, `id="msg-`+answer.ID+`"`)
	require.Contains(t, done.HTML, `href="/projects/`+project+`/documents/`+doc+`/chunks/`+c.ChunkID+`"`)
	require.Contains(t, done.HTML, `class="marker" href="#cite-`+answer.ID+`-`)
	status, _, page = b.do("GET", loc, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "How often do quillwort bearings need lubrication?")
	require.Equal(t, citationLink.FindAllStringSubmatch(done.HTML, -1), citationLink.FindAllStringSubmatch(page, -1))
	// The link leads to the chunk on the document's page.
	status, hdr, _ = b.do("GET", "/projects/"+project+"/documents/"+doc+"/chunks/"+c.ChunkID, nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/projects/"+project+"/documents/"+doc+"#chunk-"+c.ChunkID, hdr.Get("Location"))
	status, _, page = b.do("GET", "/projects/"+project+"/documents/"+doc, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="chunk-`+c.ChunkID+`"`)

	// Refusals: no CSRF token, empty content, a turn already running.
	status, _, _ = b.do("POST", "/stream/projects/"+project+"/chat/"+session+"/messages", url.Values{"content": {"again?"}})
	require.Equal(t, http.StatusForbidden, status)
	status, body, _ = b.chatTurn(project, session, "   ")
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "content must not be empty", body)
	s.extractionCount(`UPDATE chat_sessions SET turn_until = now() + interval '1 hour' WHERE id = $1 RETURNING 1`, session)
	status, body, _ = b.chatTurn(project, session, "And the grease?")
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "a question is already being answered in this chat session: wait for its answer", body)
	require.Equal(t, 2, s.extractionCount(`SELECT count(*) FROM chat_messages WHERE session_id = $1`, session))

	// Rename (bad input first), then delete.
	status, _, page = b.postForm("/projects/"+project+"/chat/"+session+"/rename", url.Values{"title": {strings.Repeat("y", 201)}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "chat-rename", "chat-problem", "title must be at most 200 characters",
		`value="`+strings.Repeat("y", 201)+`"`, `<details class="chat-manage" open>`)
	status, hdr, _ = b.do("POST", "/projects/"+project+"/chat/"+session+"/rename", url.Values{"csrf": {b.csrf}, "title": {"Bearings"}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, loc, hdr.Get("Location"))
	s.must(200, "GET", "/api/chat/sessions/"+session, s.admin, nil, hp).Decode(t, &sess)
	require.Equal(t, "Bearings", sess.Title)

	// Another user (chat:use, viewer) sees none of it; without chat:use
	// the pages are forbidden; an outsider's project is not found.
	_, bobToken := s.newMember("bob@example.com", []string{"chat:use", "admin:read"}, project, "viewer")
	bob := newConsoleBrowser(t, s)
	bob.signIn(bobToken)
	status, _, page = bob.do("GET", "/projects/"+project+"/chat", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, session)
	for _, p := range []string{loc} {
		status, _, _ = bob.do("GET", p, nil)
		require.Equal(t, http.StatusNotFound, status, p)
	}
	status, _, _ = bob.post(loc+"/delete", url.Values{})
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = bob.post(loc+"/rename", url.Values{"title": {"bob's"}})
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = bob.chatTurn(project, session, "hello")
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = bob.do("GET", "/projects/"+other+"/chat", nil)
	require.Equal(t, http.StatusNotFound, status)
	_, noChat := s.newMember("carol@example.com", []string{"admin:read", "documents:read"}, project, "viewer")
	nc := newConsoleBrowser(t, s)
	nc.signIn(noChat)
	status, _, _ = nc.do("GET", "/projects/"+project+"/chat", nil)
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = nc.post("/projects/"+project+"/chat", url.Values{})
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM chat_sessions`))

	status, hdr, _ = b.do("POST", loc+"/delete", url.Values{"csrf": {b.csrf}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/projects/"+project+"/chat", hdr.Get("Location"))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chat_sessions`))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chat_messages`))
	status, _, _ = b.do("GET", loc, nil)
	require.Equal(t, http.StatusNotFound, status)
}

// TestConsoleChunkLink: a citation's chunk link sends to the page of the
// document's chunks that holds the chunk, at the chunk; an unknown chunk,
// another document's chunk and another project's document are not found.
func TestConsoleChunkLink(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	var long strings.Builder
	for i := range 60 {
		fmt.Fprintf(&long, "## Section %d\n\n", i)
		for j := range 450 {
			fmt.Fprintf(&long, "word%d_%d ", i, j)
		}
		long.WriteString("\n\n")
	}
	doc := consoleUpload(t, s, project, "long.md", long.String())
	s.waitDocument(project, doc)
	small := consoleUpload(t, s, project, "small.md", "# Small\n\nOne chunk.")
	s.waitDocument(project, small)
	hp := header{"X-Project-ID", project}
	var chunks struct {
		Data []struct {
			ID    string `json:"id"`
			Index int    `json:"index"`
		} `json:"data"`
		Total int `json:"total"`
	}
	s.must(200, "GET", "/api/documents/"+doc+"/chunks?offset=55&limit=1", s.admin, nil, hp).Decode(t, &chunks)
	require.Greater(t, chunks.Total, 55)
	chunk := chunks.Data[0]
	require.Equal(t, 55, chunk.Index)

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, hdr, _ := b.do("GET", "/projects/"+project+"/documents/"+doc+"/chunks/"+chunk.ID, nil)
	require.Equal(t, http.StatusSeeOther, status)
	loc := hdr.Get("Location")
	require.Equal(t, "/projects/"+project+"/documents/"+doc+"?offset=50#chunk-"+chunk.ID, loc)
	status, _, page := b.do("GET", strings.Split(loc, "#")[0], nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="chunk-`+chunk.ID+`"`)
	for _, p := range []string{
		"/projects/" + project + "/documents/" + small + "/chunks/" + chunk.ID,
		"/projects/" + project + "/documents/" + doc + "/chunks/" + uuid.NewString(),
		"/projects/" + project + "/documents/" + doc + "/chunks/not-a-uuid",
		"/projects/" + other + "/documents/" + doc + "/chunks/" + chunk.ID,
	} {
		status, _, _ = b.do("GET", p, nil)
		require.Equal(t, http.StatusNotFound, status, p)
	}
	_, noDocs := s.newMember("nodocs@example.com", []string{"admin:read", "chat:use"}, project, "viewer")
	nb := newConsoleBrowser(t, s)
	nb.signIn(noDocs)
	status, _, _ = nb.do("GET", "/projects/"+project+"/documents/"+doc+"/chunks/"+chunk.ID, nil)
	require.Equal(t, http.StatusForbidden, status)
}

// TestConsoleAgents: the agent pages list the project's agents, start a
// run (editors with agents:run), show the caller's runs with their status
// live, and a run's steps and question, answered in the page (the local
// provider's planner); a viewer is forbidden to start or answer, another
// user's run is not found, unsafe requests need the CSRF token, bad input
// is answered with the service's message.
func TestConsoleAgents(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	agentID := s.agentCreate(s.admin, project, map[string]any{
		"name": "Founder finder", "description": "finds founders", "instructions": "Find who founded the company.",
		"tools": []string{"search", "graph_create_object"},
	})

	anon := newConsoleBrowser(t, s)
	status, hdr, _ := anon.do("GET", "/projects/"+project+"/agents", nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page := b.do("GET", "/projects/"+project+"/agents", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `href="/projects/`+project+`/agents/`+agentID+`"`)
	require.Contains(t, page, "finds founders")
	agentPath := "/projects/" + project + "/agents/" + agentID
	status, _, page = b.do("GET", agentPath, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="agent-start"`)
	status, _, _ = b.do("GET", "/projects/"+other+"/agents/"+agentID, nil)
	require.Equal(t, http.StatusNotFound, status, "the agent under another project")

	// The runs stream of the agent, then a start: CSRF needed, empty input
	// refused, then a run that asks a question.
	frames := consoleStreamFrames(t, b, "/stream"+agentPath)
	status, _, _ = b.do("POST", agentPath+"/runs", url.Values{"input": {"x"}})
	require.Equal(t, http.StatusForbidden, status)
	status, _, page = b.do("POST", agentPath+"/runs", url.Values{"csrf": {b.csrf}, "input": {"  "}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "input must not be empty")
	long := "Who founded Acme? " + strings.Repeat("x", 100000)
	status, _, page = b.do("POST", agentPath+"/runs", url.Values{"csrf": {b.csrf}, "input": {long}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "agent-start", "agent-start-problem",
		"input must be at most 100000 characters (it has 100018)", `required>`+long+`</textarea>`)
	// A token that may start runs (agents:run) but not read the agent's
	// page (no agents:read): the refusal as the API answers it, not the
	// page's 403.
	_, runOnly := s.newMember("runner@example.com", []string{"agents:run", "admin:read"}, project, "editor")
	ro := newConsoleBrowser(t, s)
	ro.signIn(runOnly)
	status, _, page = ro.do("POST", agentPath+"/runs", url.Values{"csrf": {ro.csrf}, "input": {"  "}})
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Contains(t, page, "input must not be empty")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM agent_runs`))
	input := "Who founded Acme?\nASK: Which name should the founder's record have?\nCALL: graph_create_object {\"type\":\"Person\",\"name\":\"Ada Lovelace\"}"
	status, hdr, _ = b.do("POST", agentPath+"/runs", url.Values{"csrf": {b.csrf}, "input": {input}})
	require.Equal(t, http.StatusSeeOther, status)
	runPath := hdr.Get("Location")
	require.True(t, strings.HasPrefix(runPath, "/projects/"+project+"/agent-runs/"), runPath)
	run := strings.TrimPrefix(runPath, "/projects/"+project+"/agent-runs/")
	require.Equal(t, "event: "+console.AgentRunsEvent+"\ndata: agent_run.status", nextFrame(t, frames))
	waiting := s.agentWait(s.admin, run, "waiting_for_input")
	status, _, page = b.do("GET", agentPath+"/runs", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="run-`+run+`"`)
	require.Contains(t, page, `data-status="waiting_for_input"`)

	status, _, page = b.do("GET", runPath, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, html.EscapeString(waiting.Question.Text))
	require.Contains(t, page, `id="answer-form"`)
	require.Contains(t, page, "tool: search")

	// Another editor sees neither the run nor its stream; a viewer may
	// read runs but not answer.
	_, eveToken := s.newMember("eve@example.com", allScopes, project, "editor")
	eve := newConsoleBrowser(t, s)
	eve.signIn(eveToken)
	for _, p := range []string{runPath, runPath + "/panel", "/stream" + runPath} {
		status, _, _ = eve.do("GET", p, nil)
		require.Equal(t, http.StatusNotFound, status, p)
	}
	status, _, _ = eve.post(runPath+"/answer", url.Values{"answer": {"Eve"}})
	require.Equal(t, http.StatusNotFound, status)
	status, _, page = eve.do("GET", agentPath, nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, run)
	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, page = viewer.do("GET", agentPath, nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, `id="agent-start"`, "no start form for a viewer")
	status, _, _ = viewer.post(agentPath+"/runs", url.Values{"input": {"x"}})
	require.Equal(t, http.StatusForbidden, status)
	_, outsiderToken := s.newUser("outsider@example.com", allScopes, "")
	outsider := newConsoleBrowser(t, s)
	outsider.signIn(outsiderToken)
	for _, p := range []string{"/projects/" + project + "/agents", agentPath, runPath, "/stream" + agentPath} {
		status, _, _ = outsider.do("GET", p, nil)
		require.Equal(t, http.StatusNotFound, status, "outsider: "+p)
	}
	status, _, _ = outsider.post(agentPath+"/runs", url.Values{"input": {"x"}})
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM agent_runs`), "the refused starts queued nothing")
	_, noAgents := s.newMember("noagents@example.com", []string{"admin:read"}, project, "editor")
	na := newConsoleBrowser(t, s)
	na.signIn(noAgents)
	status, _, _ = na.do("GET", "/projects/"+project+"/agents", nil)
	require.Equal(t, http.StatusForbidden, status)

	// The answer: CSRF needed, bad input refused, then answered in the
	// page; the run goes on to completion with the answer as a step.
	runFrames := consoleStreamFrames(t, b, "/stream"+runPath)
	status, _, _ = b.do("POST", runPath+"/answer", url.Values{"answer": {"Ada Lovelace"}})
	require.Equal(t, http.StatusForbidden, status)
	status, _, page = b.post(runPath+"/answer", url.Values{"approve": {"maybe"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "approve must be true or false", page)
	status, _, page = b.post(runPath+"/answer", url.Values{"approve": {"true"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "the run asks a question: answer it with a non-empty answer (not approve)", page)
	require.Equal(t, "waiting_for_input", s.agentRunGet(s.admin, run).Status)
	status, _, page = b.post(runPath+"/answer", url.Values{"answer": {"Ada Lovelace"}})
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="run"`)
	require.NotContains(t, page, `id="answer-form"`)
	require.Equal(t, "event: "+console.AgentRunEvent+"\ndata: agent_run.status", nextFrame(t, runFrames))
	done := s.agentWait(s.admin, run, "completed", "failed")
	require.Equal(t, "completed", done.Status, done.Error)
	require.JSONEq(t, `{"answer":"Ada Lovelace"}`, string(done.Steps[3].Output))
	status, _, page = b.do("GET", runPath+"/panel", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `data-status="completed"`)
	require.Contains(t, page, "tool: ask_user")
	require.Contains(t, page, `id="run-output"`)
	status, _, page = b.post(runPath+"/cancel", url.Values{})
	require.Equal(t, http.StatusConflict, status, page)
	require.Equal(t, "completed", s.agentRunGet(s.admin, run).Status)
}

// TestConsoleNotifications: the inbox shows the caller's notifications in
// the spec's tabs with their counts, filters unread ones, marks one read,
// all read, dismisses one (CSRF needed; another user's is not found), the
// stream passes on a new notification live, and the layout's badge counts
// the unread ones; a token without notifications:read gets no badge and
// no inbox.
func TestConsoleNotifications(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	aliceID, aliceToken := s.newMember("alice@example.com", allScopes, project, "viewer")
	bobID, bobToken := s.newMember("bob@example.com", allScopes, project, "viewer")
	pid := uuid.MustParse(project)
	first := s.notify(aliceID, notification.Params{ProjectID: &pid, Title: "Disk nearly full", Message: "90% used", Importance: notification.ImportanceImportant, Severity: notification.SeverityWarning, ActionURL: "/projects/" + project})
	second := s.notify(aliceID, notification.Params{Title: "Import done", Message: "12 documents", ActionURL: "javascript:alert(1)"})
	bobs := s.notify(bobID, notification.Params{Title: "Bob's secret", Message: "x"})

	anon := newConsoleBrowser(t, s)
	status, hdr, _ := anon.do("GET", "/notifications", nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))

	b := newConsoleBrowser(t, s)
	b.signIn(aliceToken)
	status, _, page := b.do("GET", "/", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `hx-get="/notifications/badge"`, "the layout loads the badge")
	status, _, page = b.do("GET", "/notifications/badge", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `data-unread="2"`)
	require.Contains(t, page, `sse-connect="/stream/notifications"`)

	status, _, page = b.do("GET", "/notifications", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="notification-`+first.ID+`"`)
	require.Contains(t, page, `id="notification-`+second.ID+`"`)
	require.NotContains(t, page, "Bob's secret")
	require.NotContains(t, page, "javascript:", "an action URL that is no path of the console")
	require.Contains(t, page, `href="/projects/`+project+`" class="open"`)
	tabCount := regexp.MustCompile(`data-tab="(\w+)">\s*\w+ <span class="count">(\d+)</span>`)
	counts := func(page string) map[string]string {
		out := map[string]string{}
		for _, m := range tabCount.FindAllStringSubmatch(page, -1) {
			out[m[1]] = m[2]
		}
		return out
	}
	require.Equal(t, map[string]string{"all": "2", "important": "1", "other": "1", "snoozed": "0", "cleared": "0"}, counts(page))
	status, _, page = b.do("GET", "/notifications?tab=important", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, first.ID)
	require.NotContains(t, page, second.ID)
	status, _, page = b.do("GET", "/notifications?tab=nonsense", nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "tab must be all, important, other, snoozed or cleared")

	// Live: a new notification is passed on.
	frames := consoleStreamFrames(t, b, "/stream/notifications")
	third := s.notify(aliceID, notification.Params{Title: "Run waiting", Message: "a question"})
	s.notify(bobID, notification.Params{Title: "Bob's other", Message: "y"})
	require.Equal(t, "event: "+console.NotificationsEvent+"\ndata: notification", nextFrame(t, frames))
	// Events the hub had not yet fanned out when the stream opened (the
	// notifications above) may come first: what must never come is an
	// event addressed to Bob.
	rows, err := s.pool().Query(context.Background(), `SELECT id FROM events WHERE user_id = $1`, bobID)
	require.NoError(t, err)
	bobEvents, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.NotEmpty(t, bobEvents)
	for quiet := time.After(300 * time.Millisecond); ; {
		select {
		case f := <-frames:
			for _, id := range bobEvents {
				require.False(t, strings.HasPrefix(f, fmt.Sprintf("id: %d\n", id)) || f == fmt.Sprintf("id: %d", id), "bob's notification reached alice's stream: %q", f)
			}
			continue
		case <-quiet:
		}
		break
	}

	// Mark read: CSRF needed, another user's not found, then read; the
	// unread filter leaves it out.
	status, _, _ = b.do("POST", "/notifications/"+first.ID+"/read", url.Values{})
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = b.post("/notifications/"+bobs.ID+"/read", url.Values{})
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = b.post("/notifications/not-a-uuid/read", url.Values{})
	require.Equal(t, http.StatusNotFound, status)
	status, hdr, page = b.post("/notifications/"+first.ID+"/read?tab=all&unread=true", url.Values{})
	require.Equal(t, 200, status, page)
	require.Equal(t, "notifications-changed", hdr.Get("HX-Trigger"))
	require.NotContains(t, page, first.ID, "read: not in the unread list")
	require.Contains(t, page, third.ID)
	require.True(t, notificationRead(t, s, aliceToken, first.ID))
	require.False(t, notificationRead(t, s, aliceToken, third.ID))
	require.False(t, notificationRead(t, s, bobToken, bobs.ID))
	status, _, page = b.do("GET", "/notifications/badge?count=1", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `data-unread="2"`)

	// Dismiss: to the cleared tab.
	status, _, page = b.post("/notifications/"+second.ID+"/dismiss?tab=all", url.Values{})
	require.Equal(t, 200, status, page)
	require.NotContains(t, page, second.ID)
	require.Equal(t, map[string]string{"all": "2", "important": "1", "other": "1", "snoozed": "0", "cleared": "1"}, counts(page))
	require.Equal(t, notificationCounts{All: 2, Important: 1, Other: 1, Cleared: 1}, s.notificationCounts(aliceToken))

	// Mark all read.
	status, _, _ = b.do("POST", "/notifications/mark-all-read", url.Values{})
	require.Equal(t, http.StatusForbidden, status)
	status, _, page = b.post("/notifications/mark-all-read?tab=all", url.Values{})
	require.Equal(t, 200, status, page)
	require.Zero(t, s.notificationStats(aliceToken).Unread)
	require.Equal(t, int64(2), s.notificationStats(bobToken).Unread, "bob's untouched")
	status, _, page = b.do("GET", "/notifications/badge?count=1", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `data-unread="0"`)

	// Without notifications:read: no badge, no inbox.
	_, noNotes := s.newMember("carol@example.com", []string{"admin:read"}, project, "viewer")
	nb := newConsoleBrowser(t, s)
	nb.signIn(noNotes)
	status, _, page = nb.do("GET", "/notifications/badge", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, "sse-connect")
	status, _, _ = nb.do("GET", "/notifications", nil)
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = nb.do("GET", "/stream/notifications", nil)
	require.Equal(t, http.StatusForbidden, status)
}

// notificationRead reports whether notification id of token's user is
// read.
func notificationRead(t *testing.T, s *testServer, token, id string) bool {
	t.Helper()
	for _, n := range s.notifications(token, "").Data {
		if n.ID == id {
			return n.Read
		}
	}
	t.Fatalf("no notification %s", id)
	return false
}

// TestConsoleAgentApproval: a run waiting for approval shows the tool and
// its arguments with Approve and Deny; Deny declines the call (the run
// ends without it), Approve runs it; a started run is cancelled from its
// page.
func TestConsoleAgentApproval(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	id := s.agentCreate(s.admin, project, map[string]any{
		"name": "careful", "instructions": "i",
		"tools": []string{"graph_create_object"}, "requireApprovalFor": []string{"graph_create_object"},
	})
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	start := func(input string) string {
		status, hdr, page := b.do("POST", "/projects/"+project+"/agents/"+id+"/runs", url.Values{"csrf": {b.csrf}, "input": {input}})
		require.Equal(t, http.StatusSeeOther, status, page)
		return hdr.Get("Location")
	}
	for _, approve := range []string{"false", "true"} {
		runPath := start(`CALL: graph_create_object {"type":"Person","name":"Grace Hopper"}`)
		run := strings.TrimPrefix(runPath, "/projects/"+project+"/agent-runs/")
		s.agentWait(s.admin, run, "waiting_for_input")
		status, _, page := b.do("GET", runPath, nil)
		require.Equal(t, 200, status)
		require.Contains(t, page, `data-kind="approval"`)
		require.Contains(t, page, "<code>graph_create_object</code>")
		require.Contains(t, page, "Grace Hopper")
		require.Contains(t, page, `class="approve"`)
		require.Contains(t, page, `class="deny"`)
		status, _, page = b.post(runPath+"/answer", url.Values{"answer": {"yes"}})
		require.Equal(t, http.StatusBadRequest, status)
		require.Equal(t, "the run asks for approval to run a tool: answer it with approve true or false", page)
		status, _, page = b.post(runPath+"/answer", url.Values{"approve": {approve}})
		require.Equal(t, 200, status, page)
		done := s.agentWait(s.admin, run, "completed", "failed")
		require.Equal(t, "completed", done.Status, done.Error)
		require.Equal(t, approve == "false", done.Steps[1].IsError, string(done.Steps[1].Output))
	}
	objects := s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1 AND name = 'Grace Hopper' AND deleted_at IS NULL`, project)
	require.Equal(t, 1, objects, "created once: after the approval only")

	// Cancel from the page: CSRF needed, then cancelled.
	runPath := start(`CALL: graph_create_object {"type":"Person","name":"Alan Turing"}`)
	run := strings.TrimPrefix(runPath, "/projects/"+project+"/agent-runs/")
	s.agentWait(s.admin, run, "waiting_for_input")
	status, _, _ := b.do("POST", runPath+"/cancel", url.Values{})
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, "waiting_for_input", s.agentRunGet(s.admin, run).Status)
	status, _, page := b.post(runPath+"/cancel", url.Values{})
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `data-status="cancelled"`)
	require.Equal(t, "cancelled", s.agentRunGet(s.admin, run).Status)
}
