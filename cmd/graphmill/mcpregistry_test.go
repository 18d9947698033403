package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// mcpRegLoopback lets the server reach the test's loopback fakes.
func mcpRegLoopback(c *config.Config) { c.EgressAllow = []string{"127.0.0.0/8"} }

func mcpRegWith(f func(c *config.Config)) serverOption {
	return func(c *config.Config) {
		mcpRegLoopback(c)
		f(c)
	}
}

type mcpRegServer struct {
	ID        string            `json:"id"`
	ProjectID string            `json:"projectId"`
	Name      string            `json:"name"`
	Enabled   bool              `json:"enabled"`
	Type      string            `json:"type"`
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers"`
}

type mcpRegTool struct {
	ID            string         `json:"id"`
	ServerID      string         `json:"serverId"`
	ToolName      string         `json:"toolName"`
	Enabled       bool           `json:"enabled"`
	InheritedFrom string         `json:"inheritedFrom"`
	Config        map[string]any `json:"config"`
	InputSchema   map[string]any `json:"inputSchema"`
}

func mcpRegServers(t *testing.T, s *testServer, token, query string, headers ...header) []mcpRegServer {
	t.Helper()
	var list struct {
		Data  []mcpRegServer `json:"data"`
		Total int            `json:"total"`
	}
	s.must(200, "GET", "/api/admin/mcp-servers"+query, token, nil, headers...).Decode(t, &list)
	require.Equal(t, len(list.Data), list.Total)
	return list.Data
}

func mcpRegTools(t *testing.T, s *testServer, token, serverID string) []mcpRegTool {
	t.Helper()
	var list struct {
		Data []mcpRegTool `json:"data"`
	}
	s.must(200, "GET", "/api/admin/mcp-servers/"+serverID+"/tools", token, nil).Decode(t, &list)
	return list.Data
}

func mcpRegTool1(t *testing.T, tools []mcpRegTool, name string) mcpRegTool {
	t.Helper()
	for _, tl := range tools {
		if tl.ToolName == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return mcpRegTool{}
}

func TestMCPRegServers(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	const secret = "Bearer remote-secret-4242"
	remote := mcptest.NewServer("echo", "add")
	ts := mcptest.Streamable(t, remote, "Authorization", secret)
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, nil), mcpRegLoopback)
	w := &secretWatch{s: s}
	project, _ := s.defaultProject()
	q := "?projectId=" + project

	list := mcpRegServers(t, s, s.admin, q)
	require.Len(t, list, 1)
	builtin := list[0]
	require.Equal(t, "builtin", builtin.Type)
	require.Equal(t, project, builtin.ProjectID)

	var srv mcpRegServer
	w.must(201, "POST", "/api/admin/mcp-servers"+q, s.admin, map[string]any{
		"name": "notes", "type": "http", "url": ts.URL, "headers": map[string]string{"Authorization": secret},
	}).Decode(t, &srv)
	require.Equal(t, map[string]string{"Authorization": "***"}, srv.Headers)
	require.True(t, srv.Enabled)
	require.Len(t, mcpRegServers(t, s, s.admin, "", header{"X-Project-ID", project}), 2)

	var raw string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT headers_sealed FROM mcp_servers WHERE id = $1`, srv.ID).Scan(&raw))
	require.NotContains(t, raw, "remote-secret-4242")

	// inspect persists nothing; sync twice is idempotent.
	var live struct {
		Tools []struct {
			ToolName string `json:"toolName"`
		} `json:"tools"`
	}
	w.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/inspect", s.admin, nil).Decode(t, &live)
	require.Len(t, live.Tools, 2)
	require.Empty(t, mcpRegTools(t, s, s.admin, srv.ID))
	var sync struct {
		Added, Updated, Removed int
		Tools                   []mcpRegTool `json:"tools"`
	}
	w.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/sync", s.admin, nil).Decode(t, &sync)
	require.Equal(t, 2, sync.Added)
	w.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/sync", s.admin, nil).Decode(t, &sync)
	require.Zero(t, sync.Added+sync.Removed+sync.Updated)
	tools := mcpRegTools(t, s, s.admin, srv.ID)
	require.Len(t, tools, 2)
	// The tool list is paged in memory: the window asked for, the total
	// of all; a window past the end is empty.
	var pg struct {
		Data   []mcpRegTool `json:"data"`
		Total  int          `json:"total"`
		Offset int          `json:"offset"`
	}
	w.must(200, "GET", "/api/admin/mcp-servers/"+srv.ID+"/tools?limit=1&offset=1", s.admin, nil).Decode(t, &pg)
	require.Equal(t, 2, pg.Total)
	require.Equal(t, 1, pg.Offset)
	require.Len(t, pg.Data, 1)
	require.Equal(t, tools[1].ToolName, pg.Data[0].ToolName)
	w.must(200, "GET", "/api/admin/mcp-servers/"+srv.ID+"/tools?offset=5", s.admin, nil).Decode(t, &pg)
	require.Equal(t, 2, pg.Total)
	require.Empty(t, pg.Data)

	// The Go API calls through the registry.
	svc := s.m.mcpReg
	pid := mustUUID(t, project)
	res, err := svc.CallTool(context.Background(), pid, "notes", "add", map[string]any{"a": 1, "b": 2})
	require.NoError(t, err)
	require.NotEmpty(t, res.Content)

	// Disable a tool: hidden from ListTools, refused by CallTool.
	add := mcpRegTool1(t, tools, "add")
	var changed mcpRegTool
	w.must(200, "PATCH", "/api/admin/mcp-servers/"+srv.ID+"/tools/"+add.ID, s.admin, map[string]any{"enabled": false}).Decode(t, &changed)
	require.False(t, changed.Enabled)
	refs, err := svc.ListTools(context.Background(), pid)
	require.NoError(t, err)
	require.Len(t, refs, 1)
	_, err = svc.CallTool(context.Background(), pid, srv.ID, "add", nil)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	w.must(400, "PATCH", "/api/admin/mcp-servers/"+srv.ID+"/tools/"+add.ID, s.admin, map[string]any{"enabled": true, "config": map[string]any{"api_key": "x"}})
	w.must(404, "PATCH", "/api/admin/mcp-servers/"+srv.ID+"/tools/"+builtin.ID, s.admin, map[string]any{"enabled": true})

	// PATCH is partial; disabling the server refuses calls.
	w.must(200, "PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, map[string]any{"name": "notes2"}).Decode(t, &srv)
	require.Equal(t, "notes2", srv.Name)
	require.Equal(t, ts.URL, srv.URL)
	require.Equal(t, map[string]string{"Authorization": "***"}, srv.Headers)
	w.must(200, "PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, map[string]any{"enabled": false}).Decode(t, &srv)
	require.False(t, srv.Enabled)
	_, err = svc.CallTool(context.Background(), pid, "notes2", "echo", map[string]any{"text": "x"})
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	r := w.must(409, "POST", "/api/admin/mcp-servers/"+srv.ID+"/inspect", s.admin, nil)
	require.Contains(t, r.Detail(t), "disabled")
	w.must(400, "PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, map[string]any{"type": "sse"})
	w.must(400, "PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, map[string]any{"url": "file:///etc/passwd"})
	w.must(400, "PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, map[string]any{"bogus": 1})

	// The built-in record is fixed.
	w.must(409, "PATCH", "/api/admin/mcp-servers/"+builtin.ID, s.admin, map[string]any{"enabled": false})
	w.must(409, "DELETE", "/api/admin/mcp-servers/"+builtin.ID, s.admin, nil)
	w.must(400, "POST", "/api/admin/mcp-servers/"+builtin.ID+"/sync", s.admin, nil)

	// Bad input.
	for _, body := range []map[string]any{
		{"name": "x", "type": "builtin"},
		{"name": "x", "type": "http"},
		{"name": "x", "type": "sse", "url": "ftp://example.com"},
		{"name": "x", "type": "stdio"},
		{"name": "x", "type": "carrier-pigeon"},
		{"name": "", "type": "http", "url": "https://example.com"},
	} {
		r := w.must(400, "POST", "/api/admin/mcp-servers"+q, s.admin, body)
		require.NotEmpty(t, r.Detail(t))
	}
	w.must(404, "PATCH", "/api/admin/mcp-servers/not-a-uuid", s.admin, map[string]any{"enabled": true})
	w.must(404, "DELETE", "/api/admin/mcp-servers/"+project, s.admin, nil)

	// Delete removes the server and its tools.
	w.must(204, "DELETE", "/api/admin/mcp-servers/"+srv.ID, s.admin, nil)
	w.must(404, "GET", "/api/admin/mcp-servers/"+srv.ID+"/tools", s.admin, nil)
	require.Len(t, mcpRegServers(t, s, s.admin, q), 1)
	var n int
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT count(*) FROM mcp_server_tools WHERE server_id = $1`, srv.ID).Scan(&n))
	require.Zero(t, n)

	for _, b := range w.bodies {
		require.NotContains(t, b, "remote-secret-4242")
	}
	require.NotContains(t, logs.String(), "remote-secret-4242")
}

func TestMCPRegStdioPolicy(t *testing.T) {
	t.Parallel()
	stdio := map[string]any{"name": "local", "type": "stdio", "command": "/bin/true", "env": map[string]string{"TOKEN": "stdio-secret-9"}}
	for _, policy := range []string{"superadmin", "enabled", "disabled"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, mcpRegWith(func(c *config.Config) { c.MCPStdio = policy }))
			// An organization owner who is not a superadmin, and a project admin.
			ownerID, owner := s.newUser("owner-"+policy+"@example.com", allScopes, "")
			var org struct {
				ID string `json:"id"`
			}
			s.must(201, "POST", "/api/orgs", owner, map[string]any{"name": "acme-" + policy}).Decode(t, &org)
			var proj struct {
				ID string `json:"id"`
			}
			s.must(201, "POST", "/api/projects", owner, map[string]any{"name": "p", "orgId": org.ID}).Decode(t, &proj)
			_ = ownerID
			padminID, padmin := s.newUser("padmin-"+policy+"@example.com", allScopes, "")
			s.must(200, "POST", "/api/projects/"+proj.ID+"/members", owner, map[string]any{"userId": padminID, "role": "admin"})
			q := "?projectId=" + proj.ID

			want := map[string][3]int{ // superadmin, org owner, project admin
				"superadmin": {201, 403, 403},
				"enabled":    {201, 201, 403},
				"disabled":   {403, 403, 403},
			}[policy]
			if policy == "enabled" && os.Geteuid() != 0 {
				// Children would run as this server's user: refused.
				want = [3]int{403, 403, 403}
			}
			for i, tok := range []string{s.admin, owner, padmin} {
				r := s.do("POST", "/api/admin/mcp-servers"+q, tok, stdio)
				require.Equal(t, want[i], r.Status, "%d: %s", i, r.Body)
				if r.Status == 201 {
					var srv mcpRegServer
					r.Decode(t, &srv)
					require.Equal(t, map[string]string{"TOKEN": "***"}, srv.Env)
					require.NotContains(t, string(r.Body), "stdio-secret-9")
					// Changing what it runs needs the same permission; renaming does not.
					s.must(200, "PATCH", "/api/admin/mcp-servers/"+srv.ID, padmin, map[string]any{"name": "renamed"})
					s.must(403, "PATCH", "/api/admin/mcp-servers/"+srv.ID, padmin, map[string]any{"command": "/bin/sh"})
				}
			}
			// Remote servers need only the project admin role.
			s.must(201, "POST", "/api/admin/mcp-servers"+q, padmin, map[string]any{"name": "r", "type": "sse", "url": "https://mcp.example.com/sse"})
		})
	}
}

func TestMCPRegistryOfficial(t *testing.T) {
	t.Parallel()
	remote := mcptest.Streamable(t, mcptest.NewServer("echo"), "Authorization", "Bearer notes-tok-55")
	reg := mcptest.NewRegistry(t, mcptest.SampleEntries(remote.URL))
	s := newServer(t, mcpRegWith(func(c *config.Config) { c.MCPRegistryURL = reg.URL }))
	project, _ := s.defaultProject()

	var list struct {
		Servers []struct {
			Server struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"server"`
		} `json:"servers"`
		Metadata struct {
			Count int `json:"count"`
		} `json:"metadata"`
	}
	s.must(200, "GET", "/api/admin/mcp-registry/search?q=weather", s.admin, nil).Decode(t, &list)
	require.Len(t, list.Servers, 1)
	require.Equal(t, "1.2.0", list.Servers[0].Server.Version)
	s.must(200, "GET", "/api/admin/mcp-registry/search", s.admin, nil).Decode(t, &list)
	require.Len(t, list.Servers, 4)

	var details struct {
		Server struct {
			Name     string `json:"name"`
			Packages []struct {
				Identifier string `json:"identifier"`
			} `json:"packages"`
		} `json:"server"`
		Meta map[string]any `json:"_meta"`
	}
	for _, path := range []string{"io.github.acme%2Fweather", "io.github.acme/weather"} {
		s.must(200, "GET", "/api/admin/mcp-registry/servers/"+path, s.admin, nil).Decode(t, &details)
		require.Equal(t, "io.github.acme/weather", details.Server.Name, path)
		require.Equal(t, "@acme/weather-mcp", details.Server.Packages[0].Identifier)
		require.Contains(t, details.Meta, "io.modelcontextprotocol.registry/official")
	}
	s.must(404, "GET", "/api/admin/mcp-registry/servers/io.github.acme%2Fmissing", s.admin, nil)
	s.must(400, "GET", "/api/admin/mcp-registry/servers/no-namespace", s.admin, nil)

	// Missing required variables: 400 naming each.
	q := "?projectId=" + project
	r := s.must(400, "POST", "/api/admin/mcp-registry/install"+q, s.admin, map[string]any{"serverName": "io.github.acme/boxed"})
	require.Contains(t, r.Detail(t), "BOXED_TOKEN")
	r = s.must(400, "POST", "/api/admin/mcp-registry/install"+q, s.admin, map[string]any{"serverName": "com.acme/notes", "config": map[string]any{"env": map[string]any{}}})
	require.Contains(t, r.Detail(t), "notes_token")
	s.must(404, "POST", "/api/admin/mcp-registry/install"+q, s.admin, map[string]any{"serverName": "io.github.acme/missing"})

	// A remote: created and synced.
	var inst struct {
		Server    mcpRegServer         `json:"server"`
		Sync      *struct{ Added int } `json:"sync"`
		SyncError string               `json:"syncError"`
	}
	s.must(201, "POST", "/api/admin/mcp-registry/install"+q, s.admin, map[string]any{
		"serverName": "com.acme/notes", "config": map[string]any{"env": map[string]any{"notes_token": "notes-tok-55"}},
	}).Decode(t, &inst)
	require.Empty(t, inst.SyncError)
	require.Equal(t, "http", inst.Server.Type)
	require.Equal(t, map[string]string{"Authorization": "***"}, inst.Server.Headers)
	require.Equal(t, 1, inst.Sync.Added)
	require.Len(t, mcpRegTools(t, s, s.admin, inst.Server.ID), 1)

	// An OCI package: a docker stdio record (its sync fails without an engine; the record stays).
	s.must(201, "POST", "/api/admin/mcp-registry/install"+q, s.admin, map[string]any{
		"serverName": "io.github.acme/boxed", "config": map[string]any{"env": map[string]any{"BOXED_TOKEN": "boxed-secret-1"}},
	}).Decode(t, &inst)
	require.Equal(t, "stdio", inst.Server.Type)
	require.Equal(t, "docker", inst.Server.Command)
	require.Equal(t, []string{"run", "-i", "--rm", "-e", "BOXED_TOKEN", "ghcr.io/acme/boxed:2.0.0"}, inst.Server.Args)
	require.Equal(t, map[string]string{"BOXED_TOKEN": "***"}, inst.Server.Env)

	// Registry down: 502.
	down := httptest.NewServer(nil)
	down.Close()
	s2 := newServer(t, mcpRegWith(func(c *config.Config) { c.MCPRegistryURL = down.URL }))
	r = s2.must(502, "GET", "/api/admin/mcp-registry/search?q=x", s2.admin, nil)
	require.Equal(t, "bad_gateway", r.JSON(t)["code"])
	require.Contains(t, r.Detail(t), "unreachable")
	p2, _ := s2.defaultProject()
	s2.must(502, "POST", "/api/admin/mcp-registry/install?projectId="+p2, s2.admin, map[string]any{"serverName": "com.acme/notes"})
	s2.must(502, "GET", "/api/admin/mcp-registry/servers/"+url.PathEscape("com.acme/notes"), s2.admin, nil)
}

func TestToolSettingLevels(t *testing.T) {
	t.Parallel()
	brave := mcptest.NewBrave(t, "global-key-1", "org-key-2", "project-key-3")
	s := newServer(t, mcpRegWith(func(c *config.Config) {
		c.WebSearchBaseURL, c.WebSearchAPIKey = brave.URL, "global-key-1"
	}))
	w := &secretWatch{s: s}
	project, org := s.defaultProject()
	builtin := mcpRegServers(t, s, s.admin, "?projectId="+project)[0]
	ws := func() mcpRegTool {
		t.Helper()
		var list struct {
			Data []mcpRegTool `json:"data"`
		}
		w.must(200, "GET", "/api/admin/mcp-servers/"+builtin.ID+"/tools", s.admin, nil).Decode(t, &list)
		return mcpRegTool1(t, list.Data, "web_search")
	}
	search := func() string {
		t.Helper()
		res, err := s.m.mcpReg.WebSearch(context.Background(), mustUUID(t, project), "knowledge graphs", 3)
		require.NoError(t, err)
		require.Len(t, res, 3)
		keys := brave.Keys()
		return keys[len(keys)-1]
	}

	tool := ws()
	require.Equal(t, "global", tool.InheritedFrom)
	require.True(t, tool.Enabled)
	require.Equal(t, "object", tool.InputSchema["type"])
	require.Equal(t, "global-key-1", search())

	o := "/api/admin/orgs/" + org + "/tool-settings"
	var st struct {
		ToolName string         `json:"toolName"`
		Enabled  bool           `json:"enabled"`
		Config   map[string]any `json:"config"`
	}
	w.must(200, "PUT", o+"/web_search", s.admin, map[string]any{"enabled": true, "config": map[string]any{"api_key": "org-key-2"}}).Decode(t, &st)
	require.Equal(t, map[string]any{"api_key": "***"}, st.Config)
	var orgList struct {
		Data []struct {
			ToolName string `json:"toolName"`
		} `json:"data"`
	}
	w.must(200, "GET", o, s.admin, nil).Decode(t, &orgList)
	require.Len(t, orgList.Data, 1)
	require.Equal(t, "org", ws().InheritedFrom)
	require.Equal(t, "org-key-2", search())

	w.must(200, "PATCH", "/api/admin/mcp-servers/"+builtin.ID+"/tools/"+tool.ID, s.admin, map[string]any{
		"enabled": true, "config": map[string]any{"api_key": "project-key-3"},
	}).Decode(t, &tool)
	require.Equal(t, "project", tool.InheritedFrom)
	require.Equal(t, map[string]any{"api_key": "***"}, tool.Config)
	require.Equal(t, "project-key-3", search())

	w.must(200, "PATCH", "/api/admin/mcp-servers/"+builtin.ID+"/tools/web_search", s.admin, map[string]any{"enabled": false}).Decode(t, &tool)
	require.False(t, tool.Enabled)
	_, err := s.m.mcpReg.WebSearch(context.Background(), mustUUID(t, project), "x", 1)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))

	w.must(204, "DELETE", o+"/web_search", s.admin, nil)
	w.must(404, "DELETE", o+"/web_search", s.admin, nil)
	w.must(404, "PUT", o+"/no_such_tool", s.admin, map[string]any{"enabled": true})
	w.must(400, "PUT", o+"/web_search", s.admin, map[string]any{"config": map[string]any{"api_key": 5}})
	w.must(400, "PUT", o+"/web_search", s.admin, map[string]any{"config": map[string]any{"region": "eu"}})

	var raw string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT config_sealed FROM mcp_project_tool_settings`).Scan(&raw))
	require.NotContains(t, raw, "project-key-3")
	for _, b := range w.bodies {
		for _, k := range []string{"global-key-1", "org-key-2", "project-key-3"} {
			require.NotContains(t, b, k)
		}
	}

	// No key at any level: listed as disabled.
	s2 := newServer(t, mcpRegWith(func(c *config.Config) { c.WebSearchBaseURL = brave.URL }))
	p2, _ := s2.defaultProject()
	b2 := mcpRegServers(t, s2, s2.admin, "?projectId="+p2)[0]
	var l2 struct {
		Data []mcpRegTool `json:"data"`
	}
	s2.must(200, "GET", "/api/admin/mcp-servers/"+b2.ID+"/tools", s2.admin, nil).Decode(t, &l2)
	require.False(t, mcpRegTool1(t, l2.Data, "web_search").Enabled)
	require.Equal(t, "global", mcpRegTool1(t, l2.Data, "web_search").InheritedFrom)
	_, err = s2.m.mcpReg.WebSearch(context.Background(), mustUUID(t, p2), "x", 1)
	require.ErrorIs(t, err, mcpregistry.ErrNoSearchKey)
}

func TestMCPRegAuth(t *testing.T) {
	t.Parallel()
	s := newServer(t, mcpRegLoopback)
	project, org := s.defaultProject()
	builtin := mcpRegServers(t, s, s.admin, "?projectId="+project)[0]
	var srv mcpRegServer
	s.must(201, "POST", "/api/admin/mcp-servers?projectId="+project, s.admin, map[string]any{"name": "r", "type": "http", "url": "https://mcp.example.com/mcp"}).Decode(t, &srv)

	var noScopes []string
	for _, sc := range allScopes {
		if !strings.HasPrefix(sc, "mcp:") {
			noScopes = append(noScopes, sc)
		}
	}
	memberID, noScope := s.newUser("member@example.com", noScopes, "")
	s.addMember(project, memberID, "admin")
	_, viewer := s.newMember("viewer@example.com", allScopes, project, "viewer")
	_, stranger := s.newUser("stranger@example.com", allScopes, "")

	q := "?projectId=" + project
	sp := "/api/admin/mcp-servers/" + srv.ID
	o := "/api/admin/orgs/" + org + "/tool-settings"
	cases := []struct {
		method, path string
		body         any
		tenant       bool // a stranger gets 404
		viewerOK     bool // a project viewer (org member) may
	}{
		{"GET", "/api/admin/mcp-servers" + q, nil, true, true},
		{"POST", "/api/admin/mcp-servers" + q, map[string]any{"name": "x", "type": "http", "url": "https://e.com"}, true, false},
		{"PATCH", sp, map[string]any{"enabled": true}, true, false},
		{"DELETE", sp, nil, true, false},
		{"POST", sp + "/inspect", nil, true, false},
		{"POST", sp + "/sync", nil, true, false},
		{"GET", sp + "/tools", nil, true, true},
		{"PATCH", "/api/admin/mcp-servers/" + builtin.ID + "/tools/web_search", map[string]any{"enabled": true}, true, false},
		{"GET", "/api/admin/mcp-registry/search?q=x", nil, false, true},
		{"GET", "/api/admin/mcp-registry/servers/io.github.a%2Fb", nil, false, true},
		{"GET", "/api/admin/mcp-registry/servers/io.github.a/b", nil, false, true},
		{"POST", "/api/admin/mcp-registry/install" + q, map[string]any{"serverName": "io.github.a/b"}, true, false},
		{"GET", o, nil, true, false},
		{"PUT", o + "/web_search", map[string]any{"enabled": true}, true, false},
		{"DELETE", o + "/web_search", nil, true, false},
	}
	for _, c := range cases {
		name := c.method + " " + c.path
		r := s.do(c.method, c.path, "", c.body)
		require.Equal(t, 401, r.Status, name)
		r = s.do(c.method, c.path, noScope, c.body)
		require.Equal(t, 403, r.Status, "%s: %s", name, r.Body)
		require.Contains(t, r.Detail(t), "mcp:", name)
		if c.tenant {
			r = s.do(c.method, c.path, stranger, c.body)
			require.Equal(t, 404, r.Status, "%s: %s", name, r.Body)
		}
		if !c.viewerOK {
			r = s.do(c.method, c.path, viewer, c.body)
			require.Equal(t, 403, r.Status, "%s: %s", name, r.Body)
		}
	}
	// A project-scoped token of another project cannot reach this one's server.
	var other struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": "other", "orgId": org}).Decode(t, &other)
	var tok struct {
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/projects/"+other.ID+"/tokens", s.admin, map[string]any{"name": "b", "scopes": []string{"mcp:use", "mcp:admin"}}).Decode(t, &tok)
	s.must(403, "GET", sp+"/tools", tok.Token, nil)
	s.must(404, "GET", sp+"/tools?projectId="+other.ID, s.admin, nil)
	// Viewers read; the list shows their project's servers only.
	require.Len(t, mcpRegServers(t, s, viewer, q), 2)
	require.Len(t, mcpRegServers(t, s, tok.Token, ""), 1, "the bound token's project has only its built-in record")

	var n int
	require.NoError(t, s.pool().QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM mcp_servers WHERE type <> 'builtin') + (SELECT count(*) FROM mcp_org_tool_settings) + (SELECT count(*) FROM mcp_project_tool_settings)`).Scan(&n))
	require.Equal(t, 1, n, "no refused request changed anything")
}

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	return id
}

// mcpRegStdioBinary builds the stdio test server into a directory of t that
// the unprivileged user stdio servers run as can reach.
func mcpRegStdioBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	bin, err := mcptest.BuildStdio(dir)
	require.NoError(t, err)
	return bin
}

func TestMCPRegStdioServer(t *testing.T) {
	t.Parallel()
	bin := mcpRegStdioBinary(t)
	logs := &syncBuffer{}
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, nil), mcpRegLoopback)
	w := &secretWatch{s: s}
	project, _ := s.defaultProject()
	q := "?projectId=" + project
	var srv mcpRegServer
	w.must(201, "POST", "/api/admin/mcp-servers"+q, s.admin, map[string]any{
		"name": "local", "type": "stdio", "command": bin, "args": []string{},
		"env": map[string]string{"MCPTEST_TOOLS": "echo,whoami", "API_TOKEN": "stdio-env-secret-31"},
	}).Decode(t, &srv)
	require.Equal(t, map[string]string{"MCPTEST_TOOLS": "***", "API_TOKEN": "***"}, srv.Env)

	var live struct {
		Tools []struct {
			ToolName string `json:"toolName"`
		} `json:"tools"`
	}
	w.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/inspect", s.admin, nil).Decode(t, &live)
	require.Len(t, live.Tools, 2)
	w.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/sync", s.admin, nil)
	require.Len(t, mcpRegTools(t, s, s.admin, srv.ID), 2)

	pid := mustUUID(t, project)
	res, err := s.m.mcpReg.CallTool(context.Background(), pid, "local", "echo", map[string]any{"text": "over stdio"})
	require.NoError(t, err)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "echo: over stdio")
	require.NotZero(t, s.m.mcpReg.ProcessID(mustUUID(t, srv.ID)))

	// The env is replaced with the secret kept (***); the process restarts with it.
	w.must(200, "PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, map[string]any{
		"env": map[string]string{"MCPTEST_TOOLS": "whoami", "API_TOKEN": "***"},
	}).Decode(t, &srv)
	require.Zero(t, s.m.mcpReg.ProcessID(mustUUID(t, srv.ID)), "changing what it runs stops the process")
	var sync struct{ Removed int }
	w.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/sync", s.admin, nil).Decode(t, &sync)
	require.Equal(t, 1, sync.Removed)
	res, err = s.m.mcpReg.CallTool(context.Background(), pid, "local", "whoami", nil)
	require.NoError(t, err)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "API_TOKEN")

	w.must(204, "DELETE", "/api/admin/mcp-servers/"+srv.ID, s.admin, nil)
	require.Zero(t, s.m.mcpReg.ProcessID(mustUUID(t, srv.ID)), "deleting stops the process")
	for _, b := range w.bodies {
		require.NotContains(t, b, "stdio-env-secret-31")
	}
	require.NotContains(t, logs.String(), "stdio-env-secret-31")
}

func TestProjectToolSettingDelete(t *testing.T) {
	t.Parallel()
	brave := mcptest.NewBrave(t, "global-key-7", "org-key-8", "project-key-9")
	s := newServer(t, mcpRegWith(func(c *config.Config) {
		c.WebSearchBaseURL, c.WebSearchAPIKey = brave.URL, "global-key-7"
	}))
	project, org := s.defaultProject()
	builtin := mcpRegServers(t, s, s.admin, "?projectId="+project)[0]
	s.must(200, "PUT", "/api/admin/orgs/"+org+"/tool-settings/web_search", s.admin, map[string]any{"config": map[string]any{"api_key": "org-key-8"}})
	var tool mcpRegTool
	s.must(200, "PATCH", "/api/admin/mcp-servers/"+builtin.ID+"/tools/web_search", s.admin, map[string]any{
		"enabled": true, "config": map[string]any{"api_key": "project-key-9"},
	}).Decode(t, &tool)
	require.Equal(t, "project", tool.InheritedFrom)
	settings := func() int {
		var n int
		require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT count(*) FROM mcp_project_tool_settings WHERE project_id = $1`, project).Scan(&n))
		return n
	}
	require.Equal(t, 1, settings())

	var noScopes []string
	for _, sc := range allScopes {
		if !strings.HasPrefix(sc, "mcp:") {
			noScopes = append(noScopes, sc)
		}
	}
	_, noScope := s.newMember("member@example.com", noScopes, project, "admin")
	_, viewer := s.newMember("viewer@example.com", allScopes, project, "viewer")
	_, stranger := s.newUser("stranger@example.com", allScopes, "")
	path := "/api/admin/projects/" + project + "/tool-settings/web_search"
	s.must(401, "DELETE", path, "", nil)
	r := s.must(403, "DELETE", path, noScope, nil)
	require.Contains(t, r.Detail(t), "mcp:admin")
	s.must(403, "DELETE", path, viewer, nil)
	s.must(404, "DELETE", path, stranger, nil)
	s.must(404, "DELETE", "/api/admin/projects/"+uuid.NewString()+"/tool-settings/web_search", s.admin, nil)
	require.Equal(t, 1, settings(), "no refused request removed it")

	s.must(404, "DELETE", "/api/admin/projects/"+project+"/tool-settings/no_such_tool", s.admin, nil)
	s.must(204, "DELETE", path, s.admin, nil)
	require.Zero(t, settings())
	tools := mcpRegTools(t, s, s.admin, builtin.ID)
	require.Equal(t, "org", mcpRegTool1(t, tools, "web_search").InheritedFrom)
	res, err := s.m.mcpReg.WebSearch(context.Background(), mustUUID(t, project), "graphs", 1)
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Equal(t, []string{"org-key-8"}, brave.Keys()[len(brave.Keys())-1:])
	r = s.must(404, "DELETE", path, s.admin, nil)
	require.Contains(t, r.Detail(t), "no setting")
}

func TestMCPRegistryInstallSealed(t *testing.T) {
	t.Parallel()
	remote, seen := mcptest.StreamableSeen(t, mcptest.NewServer("echo"))
	reg := mcptest.NewRegistry(t, mcptest.SecretEntries(remote.URL+"/mcp"))
	logs := &syncBuffer{}
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, nil), mcpRegWith(func(c *config.Config) { c.MCPRegistryURL = reg.URL }))
	project, _ := s.defaultProject()
	_, viewer := s.newMember("viewer@example.com", []string{"mcp:use"}, project, "viewer")
	q := "?projectId=" + project
	var inst struct {
		Server    mcpRegServer `json:"server"`
		SyncError string       `json:"syncError"`
	}
	r := s.must(201, "POST", "/api/admin/mcp-registry/install"+q, s.admin, map[string]any{
		"serverName": "com.acme/urlkey", "config": map[string]any{"env": map[string]any{"url_key": "url-secret-808"}},
	})
	r.Decode(t, &inst)
	require.Empty(t, inst.SyncError)
	require.NotContains(t, string(r.Body), "url-secret-808")
	require.Contains(t, inst.Server.URL, "key={url_key}")
	r = s.must(200, "GET", "/api/admin/mcp-servers"+q, viewer, nil)
	require.Contains(t, string(r.Body), inst.Server.ID)
	require.NotContains(t, string(r.Body), "url-secret-808")
	var row string
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT concat_ws(' ', name, command, array_to_string(args, ' '), url) FROM mcp_servers WHERE id = $1`, inst.Server.ID).Scan(&row))
	require.NotContains(t, row, "url-secret-808")
	require.NotEmpty(t, seen.Requests())
	require.Contains(t, seen.Requests()[0].URL, "key=url-secret-808", "the request carries the value")

	// The remote stopped: the connection error names the URL the request
	// went to, which holds the value. Neither the answers (to project
	// admins, and to mcp:use through mcp-servers/call) nor the log lines
	// carry it.
	remote.Close()
	for _, op := range []string{"inspect", "sync"} {
		r = s.must(502, "POST", "/api/admin/mcp-servers/"+inst.Server.ID+"/"+op, s.admin, nil)
		require.Contains(t, r.Detail(t), "cannot connect to the MCP server", op)
		require.Contains(t, r.Detail(t), "127.0.0.1", "the detail still says where: %s", r.Detail(t))
		require.NotContains(t, string(r.Body), "url-secret-808", op)
		require.NotContains(t, string(r.Body), "region=eu", "the query is left out: %s", r.Body)
	}
	cs := mcpSrvConnect(t, s, viewer, header{"X-Project-ID", project})
	res := mcpSrvCall(t, cs, "mcp-servers/call", map[string]any{"server": inst.Server.ID, "tool": "echo", "arguments": map[string]any{"text": "x"}})
	require.True(t, res.IsError)
	require.Contains(t, mcpSrvText(res), "cannot connect to the MCP server")
	require.NotContains(t, mcpSrvText(res), "url-secret-808")
	require.Contains(t, logs.String(), "cannot connect to the MCP server", "the failures are logged")
	require.NotContains(t, logs.String(), "url-secret-808")
}

func TestMCPRegURLChangeDropsHeaders(t *testing.T) {
	t.Parallel()
	a, seenA := mcptest.StreamableSeen(t, mcptest.NewServer("echo"))
	b, seenB := mcptest.StreamableSeen(t, mcptest.NewServer("echo"))
	s := newServer(t, mcpRegLoopback)
	project, _ := s.defaultProject()
	var srv mcpRegServer
	s.must(201, "POST", "/api/admin/mcp-servers?projectId="+project, s.admin, map[string]any{
		"name": "r", "type": "http", "url": a.URL, "headers": map[string]string{"Authorization": "Bearer moved-secret-1"},
	}).Decode(t, &srv)
	s.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/sync", s.admin, nil)
	require.Contains(t, seenA.Values("Authorization"), "Bearer moved-secret-1")

	r := s.must(400, "PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, map[string]any{"url": b.URL, "headers": map[string]string{"Authorization": "***"}})
	require.Contains(t, r.Detail(t), "origin")
	var moved mcpRegServer
	s.must(200, "PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, map[string]any{"url": b.URL}).Decode(t, &moved)
	require.Equal(t, b.URL, moved.URL)
	require.Empty(t, moved.Headers)
	s.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/sync", s.admin, nil)
	require.NotEmpty(t, seenB.Requests())
	require.Empty(t, seenB.Values("Authorization"), "the new host gets no stored header")
}
