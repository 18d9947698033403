package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/startstop"
)

// The domain services are not called by these tests: the interfaces are
// embedded unset, so a call would panic.
type (
	fakeGraph     struct{ Graph }
	fakeDocuments struct{ Documents }
	fakeSearch    struct{ Searcher }
)

type fakeRegistry struct {
	tools []RegistryTool
	calls []string
}

func (r *fakeRegistry) ListTools(context.Context, uuid.UUID) ([]RegistryTool, error) {
	return r.tools, nil
}

func (r *fakeRegistry) CallTool(_ context.Context, _ uuid.UUID, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	r.calls = append(r.calls, server+"/"+tool)
	known := server == "weather"
	for _, t := range r.tools {
		known = known || (t.Server == "weather" && t.ServerID.String() == server)
	}
	if !known {
		return nil, errs.Errorf(errs.NotFound, "no enabled server %q in this project", server)
	}
	raw, _ := json.Marshal(args)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny " + string(raw)}}}, nil
}

type fakeWeb struct {
	enabled bool
	err     error
}

func (w *fakeWeb) WebSearch(_ context.Context, _ uuid.UUID, query string, count int) ([]WebResult, error) {
	if w.err != nil {
		return nil, w.err
	}
	return []WebResult{{Title: query, URL: "https://example.com/?n=" + string(rune('0'+count))}}, nil
}

func (w *fakeWeb) WebSearchEnabled(context.Context, uuid.UUID) (bool, error) { return w.enabled, nil }

type testBundle struct {
	srv *Server
	reg *fakeRegistry
	web *fakeWeb
}

func setup(t *testing.T, withOptional bool) *testBundle {
	t.Helper()
	b := &testBundle{}
	guard := auth.NewGuard(auth.GuardConfig{})
	c := Config{
		Graph: fakeGraph{}, Documents: fakeDocuments{}, Search: fakeSearch{},
		Guard: guard, Watcher: auth.NewWatcher(auth.WatcherConfig{Guard: guard, Logger: slog.New(slog.DiscardHandler)}),
		Logger: slog.New(slog.DiscardHandler), AllowedOrigins: []string{"https://App.example.com/"}, PublicHosts: []string{"graphmill.example.com"},
		ListenAddr: "10.1.2.3:8080",
	}
	if withOptional {
		b.reg = &fakeRegistry{tools: []RegistryTool{{ServerID: uuid.New(), Server: "weather", Name: "forecast"}}}
		b.web = &fakeWeb{enabled: true}
		c.Registry, c.Web = b.reg, b.web
	}
	srv, err := New(c)
	require.NoError(t, err)
	b.srv = srv
	return b
}

// connect opens an in-memory session whose every request comes from a
// caller holding scopes with role in its project.
func (b *testBundle) connect(t *testing.T, scopes auth.Scopes, role auth.ProjectRole) *mcp.ClientSession {
	t.Helper()
	_, cs := connectAs(t, b.srv, uuid.New(), uuid.New(), scopes, role)
	return cs
}

// connectAs opens an in-memory session of srv whose every request comes
// from user holding scopes with role in project, and returns the server's
// side and the client's (both closed at clean-up).
func connectAs(t *testing.T, srv *Server, user, project uuid.UUID, scopes auth.Scopes, role auth.ProjectRole) (*mcp.ServerSession, *mcp.ClientSession) {
	t.Helper()
	c := &caller{
		principal: &auth.Principal{UserID: user, Kind: auth.KindAPIToken, Scopes: scopes, ProjectRoles: map[uuid.UUID]auth.ProjectRole{project: role}},
		project:   project,
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.mcp.Connect(withCaller(t.Context(), c), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return ss, cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	return tc.Text
}

func TestOptionalToolsNeedTheirDependencies(t *testing.T) {
	t.Parallel()
	all := auth.AllScopes
	cs := setup(t, false).connect(t, all, auth.ProjectAdmin)
	require.NotContains(t, toolNames(t, cs), ToolRegistryList)
	require.NotContains(t, toolNames(t, cs), ToolWebSearch)
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolWebSearch, Arguments: map[string]any{"query": "x"}})
	require.ErrorContains(t, err, "unknown tool")

	b := setup(t, true)
	cs = b.connect(t, all, auth.ProjectViewer)
	require.Subset(t, toolNames(t, cs), []string{ToolRegistryList, ToolRegistryCall, ToolWebSearch})
}

func TestRegistryTools(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	cs := b.connect(t, auth.Scopes(0).With(auth.MCPUse), auth.ProjectViewer)
	require.Equal(t, []string{ToolRegistryCall, ToolRegistryList}, toolNames(t, cs))

	res := call(t, cs, ToolRegistryList, map[string]any{})
	require.False(t, res.IsError, text(res))
	require.JSONEq(t, `{"tools":[{"serverId":"`+b.reg.tools[0].ServerID.String()+`","server":"weather","name":"forecast"}]}`, text(res))
	res = call(t, cs, ToolRegistryList, map[string]any{"server": "other"})
	require.JSONEq(t, `{"tools":[]}`, text(res))

	// The external result is passed through as it is.
	res = call(t, cs, ToolRegistryCall, map[string]any{"server": "weather", "tool": "forecast", "arguments": map[string]any{"city": "Paris"}})
	require.False(t, res.IsError)
	require.Equal(t, `sunny {"city":"Paris"}`, text(res))
	res = call(t, cs, ToolRegistryCall, map[string]any{"server": "gone", "tool": "forecast"})
	require.True(t, res.IsError)
	require.Equal(t, `no enabled server "gone" in this project`, text(res))
	res = call(t, cs, ToolRegistryCall, map[string]any{"server": "weather"})
	require.True(t, res.IsError, "tool is required")
	require.Equal(t, []string{"weather/forecast", "gone/forecast"}, b.reg.calls)

	// Without mcp:use the tools are hidden and refused unrun.
	cs = b.connect(t, auth.Scopes(0).With(auth.GraphRead), auth.ProjectAdmin)
	require.NotContains(t, toolNames(t, cs), ToolRegistryCall)
	res = call(t, cs, ToolRegistryCall, map[string]any{"server": "weather", "tool": "forecast"})
	require.Equal(t, "tool mcp-servers/call needs the scope mcp:use, which this token lacks", text(res))
	require.Len(t, b.reg.calls, 2)
}

func TestWebSearchFollowsTheProjectSetting(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	cs := b.connect(t, auth.Scopes(0).With(auth.SearchRead), auth.ProjectViewer)
	require.Contains(t, toolNames(t, cs), ToolWebSearch)
	res := call(t, cs, ToolWebSearch, map[string]any{"query": "graphs"})
	require.False(t, res.IsError, text(res))
	require.JSONEq(t, `{"results":[{"title":"graphs","url":"https://example.com/?n=5"}]}`, text(res), "count defaults to 5")
	res = call(t, cs, ToolWebSearch, map[string]any{"query": "graphs", "count": 21})
	require.True(t, res.IsError)

	b.web.err = errs.New(errs.BadGateway, "the web search API answered 500")
	res = call(t, cs, ToolWebSearch, map[string]any{"query": "graphs"})
	require.Equal(t, "the web search API answered 500", text(res))
	b.web.err = errors.New("dial tcp: secret internals")
	res = call(t, cs, ToolWebSearch, map[string]any{"query": "graphs"})
	require.Equal(t, "web_search: internal error", text(res), "internals are logged, not shown")

	b.web.enabled = false
	require.NotContains(t, toolNames(t, cs), ToolWebSearch)
	res = call(t, cs, ToolWebSearch, map[string]any{"query": "graphs"})
	require.Equal(t, "tool web_search is not enabled for this project", text(res))
}

func TestNullArgumentsAreNoArguments(t *testing.T) {
	t.Parallel()
	cs := setup(t, true).connect(t, auth.AllScopes, auth.ProjectViewer)
	res := call(t, cs, ToolRegistryList, json.RawMessage("null"))
	require.False(t, res.IsError, text(res))
}

func TestInputSchemasRefuseUnknownMembers(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	cs := b.connect(t, auth.AllScopes, auth.ProjectAdmin)
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, res.Tools, 14)
	for _, tool := range res.Tools {
		raw, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var s struct {
			Type                 string          `json:"type"`
			AdditionalProperties json.RawMessage `json:"additionalProperties"`
		}
		require.NoError(t, json.Unmarshal(raw, &s))
		require.Equal(t, "object", s.Type, tool.Name)
		require.JSONEq(t, `false`, string(s.AdditionalProperties), tool.Name)
		require.NotEmpty(t, tool.Description, tool.Name)
	}
	r := call(t, cs, ToolWebSearch, map[string]any{"query": "x", "extra": true})
	require.True(t, r.IsError)
	require.Contains(t, text(r), "extra")
}

func TestRoles(t *testing.T) {
	t.Parallel()
	require.True(t, roleAtLeast(auth.ProjectAdmin, auth.ProjectEditor))
	require.True(t, roleAtLeast(auth.ProjectEditor, auth.ProjectEditor))
	require.False(t, roleAtLeast(auth.ProjectViewer, auth.ProjectEditor))
	require.False(t, roleAtLeast("", auth.ProjectViewer))
}

func TestHostsAndOrigins(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	local := &net.TCPAddr{IP: net.ParseIP("192.168.1.5"), Port: 8080}
	for _, c := range []struct {
		host, origin string
		want         error
	}{
		// Hosts: the loopback names, the listen address, the address the
		// connection arrived on and GRAPHMILL_PUBLIC_HOSTS; ports are not
		// compared.
		{"localhost:3000", "", nil},
		{"LOCALHOST", "", nil},
		{"127.0.0.1:1", "", nil},
		{"127.0.0.2", "", nil},
		{"[::1]:8080", "", nil},
		{"10.1.2.3:8080", "", nil},
		{"10.1.2.3:9999", "", nil},
		{"192.168.1.5:8080", "", nil},
		{"graphmill.example.com", "", nil},
		{"GraphMill.Example.COM.:8443", "", nil},
		{"evil.example.com", "", ErrHost},
		{"localhost.evil.example.com", "", ErrHost},
		{"10.9.9.9", "", ErrHost},
		{"[::1", "", ErrHost},
		{"", "", ErrHost},
		// A refused Host is refused whatever the Origin says.
		{"evil.example.com", "http://evil.example.com", ErrHost},
		{"evil.example.com", "https://app.example.com", ErrHost},
		// Origins: none, a listed one, or the validated Host itself (same
		// host and port, a missing port being the scheme's default).
		{"graphmill.example.com", "https://app.example.com", nil},
		{"graphmill.example.com", "HTTPS://APP.EXAMPLE.COM/", nil},
		{"graphmill.example.com", "https://graphmill.example.com", nil},
		{"graphmill.example.com:443", "https://graphmill.example.com", nil},
		{"graphmill.example.com", "https://graphmill.example.com:443", nil},
		{"127.0.0.1:5000", "http://127.0.0.1:5000", nil},
		{"[::1]:5000", "http://[::1]:5000", nil},
		{"localhost:5000", "http://localhost:5000", nil},
		{"graphmill.example.com", "https://graphmill.example.com:8443", ErrOrigin},
		{"graphmill.example.com:80", "https://graphmill.example.com", ErrOrigin},
		{"127.0.0.1:5000", "http://127.0.0.1:5001", ErrOrigin},
		{"127.0.0.1:5000", "http://localhost:5000", ErrOrigin},
		{"graphmill.example.com", "https://app.example.com:8443", ErrOrigin},
		{"graphmill.example.com", "https://evil.example.com", ErrOrigin},
		{"graphmill.example.com", "null", ErrOrigin},
		{"graphmill.example.com", "file://", ErrOrigin},
	} {
		r := httptest.NewRequest("POST", "http://placeholder/api/mcp", nil)
		r.Host = c.host
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(local)))
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		require.Equal(t, c.want, b.srv.admit(r), "Host %q, Origin %q", c.host, c.origin)
	}
	for _, bad := range []Config{{AllowedOrigins: []string{"app.example.com"}}, {PublicHosts: []string{"example.com:443"}}, {PublicHosts: []string{"https://example.com"}}} {
		bad.Graph, bad.Documents, bad.Search, bad.Guard = fakeGraph{}, fakeDocuments{}, fakeSearch{}, auth.NewGuard(auth.GuardConfig{})
		bad.Watcher = auth.NewWatcher(auth.WatcherConfig{Guard: bad.Guard, Logger: slog.New(slog.DiscardHandler)})
		bad.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		_, err := New(bad)
		require.Error(t, err, "%+v", bad)
	}
}

// TestNormalizeOrigin covers both callers: GRAPHMILL_MCP_ALLOWED_ORIGINS
// (config.Validate and newHostPolicy) and the Origin header (admit).
func TestNormalizeOrigin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"https://app.example.com", "https://app.example.com"},
		{"http://localhost:3000", "http://localhost:3000"},
		{"https://App.example.com/", "https://app.example.com"},
		{"HTTPS://APP.EXAMPLE.COM/", "https://app.example.com"},
		{"https://graphmill.example.com:8443", "https://graphmill.example.com:8443"},
		{"http://[::1]:5000", "http://[::1]:5000"},
		{" https://app.example.com ", "https://app.example.com"}, // GRAPHMILL_MCP_ALLOWED_ORIGINS=a, b
	} {
		got, err := NormalizeOrigin(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	for _, bad := range []string{
		"", "app.example.com", "https://app.example.com/path", "ftp://x", "https://u@x", "https://u:p@x",
		"https://x?q=1", "https://x#f", "null", "file://", "https://", "://x", "https://x/%zz",
	} {
		_, err := NormalizeOrigin(bad)
		require.ErrorContains(t, err, "is not an origin (scheme://host[:port])", bad)
	}
}

// go-sdk's registration message about the spec's tool names is demoted to
// DEBUG (dropped at INFO); every other SDK message keeps its level.
func TestSpecToolNameMessageDemoted(t *testing.T) {
	t.Parallel()
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf bytes.Buffer
		guard := auth.NewGuard(auth.GuardConfig{})
		_, err := New(Config{
			Graph: fakeGraph{}, Documents: fakeDocuments{}, Search: fakeSearch{}, Guard: guard,
			Watcher:  auth.NewWatcher(auth.WatcherConfig{Guard: guard, Logger: slog.New(slog.DiscardHandler)}),
			Registry: &fakeRegistry{},
			Logger:   slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})),
		})
		require.NoError(t, err)
		out := buf.String()
		require.NotContains(t, out, "level=ERROR", level)
		if level == slog.LevelDebug {
			require.Contains(t, out, `level=DEBUG msg="AddTool: invalid tool name \"mcp-servers/list\"`)
			require.Contains(t, out, `level=DEBUG msg="AddTool: invalid tool name \"mcp-servers/call\"`)
		} else {
			require.Empty(t, out)
		}
	}
	var buf bytes.Buffer
	h := minLevel{Handler: specToolNames{Handler: slog.NewTextHandler(&buf, nil)}, min: slog.LevelWarn}
	log := slog.New(h).With("component", "mcp")
	log.Error(`AddTool: invalid tool name "other/tool": tool name contains invalid characters: "/"`)
	log.Error("failed to connect: boom")
	log.Info("session started")
	require.Contains(t, buf.String(), `level=ERROR msg="AddTool: invalid tool name \"other/tool\"`)
	require.Contains(t, buf.String(), `level=ERROR msg="failed to connect: boom" component=mcp`)
	require.NotContains(t, buf.String(), "session started")
}

// TestNULArgumentsRefused: a tool argument holding U+0000 (which
// PostgreSQL cannot store in text) is a tool error naming the argument,
// and the tool does not run.
func TestNULArgumentsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	cs := b.connect(t, auth.AllScopes, auth.ProjectViewer)
	res := call(t, cs, ToolRegistryCall, json.RawMessage(`{"server":"weather","tool":"forecast","arguments":{"city":"Par\u0000is"}}`))
	require.True(t, res.IsError)
	require.Equal(t, "arguments.arguments.city: must not contain the NUL character (U+0000)", text(res))
	require.Empty(t, b.reg.calls, "the tool did not run")

	res = call(t, cs, ToolRegistryCall, json.RawMessage(`{"server":"weather","tool":"forecast","arguments":{"city":"Paris"}}`))
	require.False(t, res.IsError, text(res))
	require.Equal(t, []string{"weather/forecast"}, b.reg.calls)
}

// open opens an in-memory session of a project viewer and returns the
// server's side and the client's.
func (b *testBundle) open(t *testing.T) (*mcp.ServerSession, *mcp.ClientSession) {
	t.Helper()
	return connectAs(t, b.srv, uuid.New(), uuid.New(), auth.AllScopes, auth.ProjectViewer)
}

func requireClosed(t *testing.T, ch chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	default:
		require.FailNow(t, msg)
	}
}

// The server has the start/stop shape of every long-running part: a
// session opened before Start or after Stop is closed at once; a second
// Start is refused; Stop closes every session and waits for the goroutines
// watching them until its context ends; a second Stop is harmless.
func TestServerStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, false)
	require.NoError(t, b.srv.Stop(ctx), "Stop before Start")
	early, _ := b.open(t)
	earlyEnded := make(chan struct{})
	b.srv.own(early, func() { close(earlyEnded) })
	requireClosed(t, earlyEnded, "a session opened before Start goes on")
	require.NoError(t, early.Wait())

	require.NoError(t, b.srv.Start(ctx))
	require.ErrorIs(t, b.srv.Start(ctx), startstop.ErrStarted)
	watched, watchedClient := b.open(t)
	release := make(chan struct{})
	watchedEnded := make(chan struct{})
	b.srv.own(watched, func() {
		<-release // a watcher slow to let go
		close(watchedEnded)
	})
	_, unwatchedClient := b.open(t)
	require.NotEmpty(t, toolNames(t, watchedClient))

	ended, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, b.srv.Stop(ended), context.Canceled, "the watcher is still running")
	_, err := watchedClient.ListTools(ctx, nil)
	require.Error(t, err, "the watched session is closed")
	_, err = unwatchedClient.ListTools(ctx, nil)
	require.Error(t, err, "the unwatched session is closed")
	close(release)
	require.NoError(t, b.srv.Stop(ctx))
	requireClosed(t, watchedEnded, "Stop returned before the watcher ended")

	late, _ := b.open(t)
	lateEnded := make(chan struct{})
	b.srv.own(late, func() { close(lateEnded) })
	requireClosed(t, lateEnded, "a session opened after Stop goes on")
	require.NoError(t, b.srv.Stop(ended), "a second Stop after the watchers ended")
}
