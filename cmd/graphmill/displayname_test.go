package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDisplayNamesRefuseInvisibleCharacters: the names of organizations,
// projects, tokens and agents (create and update) and chat session
// titles (create and rename) refuse a control character (U+0007, a line
// feed, a tab) or an invisible one (a zero-width space, a direction
// override), as type names do (displayname.Check), through the API, the
// MCP chat_send tool and the console's forms alike; other Unicode, '/'
// included, is accepted; a title taken from a first question drops them.
func TestDisplayNamesRefuseInvisibleCharacters(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	hp := header{"X-Project-ID", project}
	agent := s.agentCreate(s.admin, project, map[string]any{"name": "a", "instructions": "i", "tools": []string{}})
	session := s.chatSession(s.admin, project)
	cs := mcpSrvConnect(t, s, mcpSrvProjectToken(s, project, allScopes))
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	const rule = "no control or invisible characters (line breaks, tabs, zero-width spaces, direction marks; a zero-width joiner only between two visible characters)"
	sessions := func() int {
		return s.extractionCount(`SELECT count(*) FROM chat_sessions WHERE project_id = $1`, project)
	}
	before := sessions()

	for _, bad := range []string{"bell\u0007", "two\nlines", "tab\tbed", "zero\u200bwidth", "bidi\u202eevil"} {
		for _, c := range []struct {
			method, path string
			body         map[string]any
			what         string
		}{
			{"POST", "/api/orgs", map[string]any{"name": bad}, "organization name"},
			{"POST", "/api/projects", map[string]any{"name": bad, "orgId": org}, "project name"},
			{"POST", "/api/projects/" + project + "/tokens", map[string]any{"name": bad, "scopes": []string{"documents:read"}}, "token name"},
			{"POST", "/api/agents", map[string]any{"name": bad, "instructions": "i", "tools": []string{}}, "agent name"},
			{"PATCH", "/api/agents/" + agent, map[string]any{"name": bad}, "agent name"},
			{"POST", "/api/chat/sessions", map[string]any{"title": bad}, "chat session title"},
			{"PATCH", "/api/chat/sessions/" + session, map[string]any{"title": bad}, "chat session title"},
		} {
			detail := s.must(400, c.method, c.path, s.admin, c.body, hp).Detail(t)
			require.Contains(t, detail, c.what, "%s %s %q", c.method, c.path, bad)
			require.Contains(t, detail, rule, "%s %s %q", c.method, c.path, bad)
		}
		require.Contains(t, mcpSrvErr(t, cs, "chat_send", map[string]any{"content": "hello", "title": bad}), rule, "%q", bad)
		status, _, page := b.do("POST", "/projects/"+project+"/chat", url.Values{"csrf": {b.csrf}, "title": {bad}})
		require.Equal(t, http.StatusBadRequest, status, "%q", bad)
		require.Contains(t, page, "no control or invisible characters", "%q", bad)
		status, _, page = b.do("POST", "/projects/"+project+"/chat/"+session+"/rename", url.Values{"csrf": {b.csrf}, "title": {bad}})
		require.Equal(t, http.StatusBadRequest, status, "%q", bad)
		require.Contains(t, page, "no control or invisible characters", "%q", bad)
	}
	require.Equal(t, before, sessions(), "no session stored by a refused title")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM orgs WHERE name ~ '[[:cntrl:]]'`))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM agents WHERE name ~ '[[:cntrl:]]'`))

	good := "Zoë — R&D / Ünïcode 日本 (2)"
	s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": good})
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": good, "orgId": org})
	s.must(201, "POST", "/api/projects/"+project+"/tokens", s.admin, map[string]any{"name": good, "scopes": []string{"documents:read"}})
	s.must(201, "POST", "/api/agents", s.admin, map[string]any{"name": good, "instructions": "i", "tools": []string{}}, hp)
	s.must(200, "PATCH", "/api/agents/"+agent, s.admin, map[string]any{"name": good + " 2"}, hp)
	s.must(201, "POST", "/api/chat/sessions", s.admin, map[string]any{"title": good}, hp)
	var renamed chatSession
	s.must(200, "PATCH", "/api/chat/sessions/"+session, s.admin, map[string]any{"title": good}, hp).Decode(t, &renamed)
	require.Equal(t, good, renamed.Title)

	untitled := s.chatSession(s.admin, project)
	s.chatAsk(s.admin, project, untitled, "Ring\u0007 the\tbell\u200b twice")
	var got chatSession
	s.must(200, "GET", "/api/chat/sessions/"+untitled, s.admin, nil, hp).Decode(t, &got)
	require.Equal(t, "Ring the bell twice", got.Title)
	require.False(t, strings.ContainsAny(got.Title, "\u0007\t\u200b"))
}

// TestDisplayNamesAcceptJoiners: a name that needs a zero-width joiner
// or non-joiner between two visible characters (an emoji sequence, a
// Persian word, Sinhala) is accepted for every kind of name, as typed;
// a joiner out of place (at the end, before a space) is still refused.
func TestDisplayNamesAcceptJoiners(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	hp := header{"X-Project-ID", project}
	for i, name := range []string{"👩\u200d💻 Dev", "می\u200cخواهم", "ශ්\u200dරී ලංකා"} {
		var o struct{ Name string }
		s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": name}).Decode(t, &o)
		require.Equal(t, name, o.Name)
		s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": name, "orgId": org})
		s.must(201, "POST", "/api/projects/"+project+"/tokens", s.admin, map[string]any{"name": name, "scopes": []string{"documents:read"}})
		var a consoleAgent
		s.must(201, "POST", "/api/agents", s.admin, map[string]any{"name": name + strings.Repeat("!", i), "instructions": "i", "tools": []string{}}, hp).Decode(t, &a)
		require.Equal(t, name+strings.Repeat("!", i), a.Name)
		var c chatSession
		s.must(201, "POST", "/api/chat/sessions", s.admin, map[string]any{"title": name}, hp).Decode(t, &c)
		require.Equal(t, name, c.Title)
	}
	for _, bad := range []string{"Dev\u200d", "a\u200c b"} {
		require.Contains(t, s.must(400, "POST", "/api/orgs", s.admin, map[string]any{"name": bad}).Detail(t), "a zero-width joiner only between two visible characters")
		require.Contains(t, s.must(400, "POST", "/api/agents", s.admin, map[string]any{"name": bad, "instructions": "i", "tools": []string{}}, hp).Detail(t), "agent name")
	}
}

// TestAgentStoredNameUpdatable: an agent whose name was stored before
// names refused control characters is updated by a PATCH that leaves the
// name as it is (not given, or given back unchanged, as a client sending
// the whole definition does); a new name is checked.
func TestAgentStoredNameUpdatable(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	agent := s.agentCreate(s.admin, project, map[string]any{"name": "old", "instructions": "i", "tools": []string{}})
	_, err := s.pool().Exec(context.Background(), `UPDATE agents SET name = 'old'||chr(7)||'name' WHERE id = $1`, agent)
	require.NoError(t, err)

	var a consoleAgent
	s.must(200, "PATCH", "/api/agents/"+agent, s.admin, map[string]any{"instructions": "new", "maxSteps": 3}, hp).Decode(t, &a)
	require.Equal(t, "old\u0007name", a.Name)
	require.Equal(t, "new", a.Instructions)
	require.Equal(t, 3, a.MaxSteps)

	s.must(200, "PATCH", "/api/agents/"+agent, s.admin, map[string]any{"name": "old\u0007name", "instructions": "newer"}, hp).Decode(t, &a)
	require.Equal(t, "old\u0007name", a.Name)
	require.Equal(t, "newer", a.Instructions)

	detail := s.must(400, "PATCH", "/api/agents/"+agent, s.admin, map[string]any{"name": "new\u0007name", "instructions": "newest"}, hp).Detail(t)
	require.Contains(t, detail, `agent name "new\aname": no control or invisible characters`)
	s.must(200, "PATCH", "/api/agents/"+agent, s.admin, map[string]any{"name": "old name"}, hp).Decode(t, &a)
	require.Equal(t, "old name", a.Name)
	require.Equal(t, "newer", a.Instructions)
}

// TestTenancyNamesCountCharacters: organization, project, token, user,
// integration and MCP server names are at most 200 characters, not bytes: 200 of a script of three bytes
// each (600 bytes) are accepted, 201 refused.
func TestTenancyNamesCountCharacters(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	long := strings.Repeat("日", 200)
	s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": long})
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": long, "orgId": org})
	s.must(201, "POST", "/api/projects/"+project+"/tokens", s.admin, map[string]any{"name": long, "scopes": []string{"documents:read"}})
	hp := header{"X-Project-ID", project}
	s.must(201, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": "long@example.com", "displayName": long})
	s.must(201, "POST", "/api/integrations", s.admin, map[string]any{
		"name": "feed", "display_name": long, "provider_type": "rss", "config": map[string]any{"feed_url": "https://feeds.example.com/a.xml"},
	}, hp)
	s.must(201, "POST", "/api/admin/mcp-servers", s.admin, map[string]any{"name": long, "type": "http", "url": "https://mcp.example.com/mcp"}, hp)
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/api/orgs", map[string]any{"name": long + "日"}},
		{"/api/projects", map[string]any{"name": long + "日", "orgId": org}},
		{"/api/projects/" + project + "/tokens", map[string]any{"name": long + "日", "scopes": []string{"documents:read"}}},
		{"/api/superadmin/users", map[string]any{"primaryEmail": "longer@example.com", "displayName": long + "日"}},
		{"/api/integrations", map[string]any{"name": "feed2", "display_name": long + "日", "provider_type": "rss", "config": map[string]any{"feed_url": "https://feeds.example.com/b.xml"}}},
		{"/api/admin/mcp-servers", map[string]any{"name": long + "日", "type": "http", "url": "https://mcp.example.com/mcp"}},
	} {
		require.Contains(t, s.must(400, "POST", c.path, s.admin, c.body, hp).Detail(t), "200", c.path)
	}
}
