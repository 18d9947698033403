package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// chatRow is the sessions list's row of session id in page.
func chatRow(t *testing.T, page, id string) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr id="chat-` + id + `">.*?</tr>`).FindString(page)
	require.NotEmpty(t, row, "the row of session %s", id)
	return row
}

// TestConsoleChatAgent: the new-chat form offers the project's agents,
// by name after "no agent" (chosen), to a caller who may read them, and
// starts the session with the one chosen (its row's agent_id) or a plain
// one; a refused form (another project's agent, not an id, a title too
// long, a caller without agents:read posting an agent) shows the form
// again with the message and the values chosen, and stores nothing; the
// CSRF token is needed. The sessions list names each session's agent
// with a link to its page, or says "an agent" to a caller who may not
// read agents; a project without agents has no choice.
func TestConsoleChatAgent(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	empty := s.newProject(org, "empty")
	agentBody := func(name string) map[string]any {
		return map[string]any{"name": name, "instructions": "Answer briefly.", "tools": []string{}}
	}
	zeta := s.agentCreate(s.admin, project, agentBody("Zeta helper"))
	alpha := s.agentCreate(s.admin, project, agentBody("Alpha <helper>"))
	otherAgent := s.agentCreate(s.admin, other, agentBody("Elsewhere"))
	chatPath := "/projects/" + project + "/chat"
	sessions := func() int { return s.extractionCount(`SELECT count(*) FROM chat_sessions`) }

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page := b.do("GET", chatPath, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `<select name="agentId" aria-label="Agent"><option value="" selected>No agent (a plain chat)</option> `+
		`<option value="`+alpha+`">Alpha &lt;helper&gt;</option><option value="`+zeta+`">Zeta helper</option></select>`)
	status, _, page = b.do("GET", "/projects/"+empty+"/chat", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="chat-new"`)
	require.NotContains(t, page, `name="agentId"`, "no agent to choose")

	// Refused: no CSRF token; another project's agent, not an id, a title
	// too long (the agent chosen stays chosen). Nothing stored.
	status, _, _ = b.do("POST", chatPath, url.Values{"title": {"Mine"}, "agentId": {zeta}})
	require.Equal(t, http.StatusForbidden, status)
	status, _, page = b.postForm(chatPath, url.Values{"title": {"Mine"}, "agentId": {otherAgent}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "chat-new", "chat-problem",
		"agentId: no agent with id "+otherAgent+" in this project", `value="Mine"`)
	status, _, page = b.postForm(chatPath, url.Values{"title": {"Mine"}, "agentId": {"agent-7"}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "chat-new", "chat-problem", "agentId must be a UUID", `value="Mine"`)
	status, _, page = b.postForm(chatPath, url.Values{"title": {strings.Repeat("x", 201)}, "agentId": {zeta}})
	requireFormAgain(t, status, page, http.StatusBadRequest, "chat-new", "chat-problem", "title must be at most 200 characters",
		`<option value="`+zeta+`" selected>Zeta helper</option>`, `<option value="">No agent (a plain chat)</option>`)
	require.Zero(t, sessions())

	// A session with the agent chosen, and a plain one.
	status, hdr, _ := b.postForm(chatPath, url.Values{"title": {"With Zeta"}, "agentId": {zeta}})
	require.Equal(t, http.StatusSeeOther, status)
	withZeta := strings.TrimPrefix(hdr.Get("Location"), chatPath+"/")
	require.Equal(t, []string{zeta}, s.extractionIDs(`SELECT agent_id::text FROM chat_sessions WHERE id = $1`, withZeta))
	status, hdr, _ = b.postForm(chatPath, url.Values{"title": {"Plain"}, "agentId": {""}})
	require.Equal(t, http.StatusSeeOther, status)
	plain := strings.TrimPrefix(hdr.Get("Location"), chatPath+"/")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM chat_sessions WHERE id = $1 AND agent_id IS NULL`, plain))
	status, _, page = b.do("GET", chatPath+"/"+withZeta, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `With the agent <a href="/projects/`+project+`/agents/`+zeta+`">Zeta helper</a>`)

	// The list names each session's agent, linked.
	status, _, page = b.do("GET", chatPath, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "<th>Agent</th>")
	require.Contains(t, chatRow(t, page, withZeta), `<td><a href="/projects/`+project+`/agents/`+zeta+`">Zeta helper</a></td>`)
	require.Contains(t, chatRow(t, page, plain), `<td></td>`)
	require.NotContains(t, chatRow(t, page, plain), "/agents/")

	// A member without agents:read: no choice; an agent posted anyway is
	// refused (403, the form again) and nothing stored; their session
	// with an agent says "an agent", unnamed and unlinked.
	_, viewer := s.newMember("vera@example.com", []string{"chat:use", "admin:read"}, project, "viewer")
	v := newConsoleBrowser(t, s)
	v.signIn(viewer)
	status, _, page = v.do("GET", chatPath, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="chat-new"`)
	require.NotContains(t, page, `name="agentId"`)
	require.NotContains(t, page, "Zeta helper")
	before := sessions()
	status, _, page = v.postForm(chatPath, url.Values{"title": {"Sneaky"}, "agentId": {zeta}})
	requireFormAgain(t, status, page, http.StatusForbidden, "chat-new", "chat-problem",
		"agentId: a chat session with an agent needs the scope agents:read, which this token lacks", `value="Sneaky"`)
	require.Equal(t, before, sessions())
	mine := s.chatSession(viewer, project)
	s.extractionCount(`UPDATE chat_sessions SET agent_id = $1 WHERE id = $2 RETURNING 1`, zeta, mine)
	status, _, page = v.do("GET", chatPath, nil)
	require.Equal(t, 200, status, page)
	row := chatRow(t, page, mine)
	require.Contains(t, row, `<td>an agent</td>`)
	require.NotContains(t, row, "Zeta helper")
	require.NotContains(t, row, "/agents/")
}
