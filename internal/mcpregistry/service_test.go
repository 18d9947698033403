package mcpregistry_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
	"github.com/graphmill/graphmill/internal/startstop"
)

func resultText(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, r.Content)
	tc, ok := r.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content %T", r.Content[0])
	return tc.Text
}

func names(tools []mcpregistry.LiveTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.ToolName
	}
	return out
}

func toolByName(t *testing.T, tools []mcpregistry.Tool, name string) mcpregistry.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.ToolName == name {
			return tl
		}
	}
	t.Fatalf("no tool %s in %v", name, tools)
	return mcpregistry.Tool{}
}

func ptr[T any](v T) *T { return &v }

func TestStdioServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{
		Name: "local", Type: mcpregistry.TypeStdio, Command: stdioBin,
		Env: map[string]string{"MCPTEST_TOOLS": "echo,add,slow,whoami", "SECRET_TOKEN": "tok-stdio-123"},
	}, superadmin)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"MCPTEST_TOOLS": "***", "SECRET_TOKEN": "***"}, srv.Env)

	// Sealed at rest: the value is nowhere in the row.
	var raw string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT env_sealed FROM mcp_servers WHERE id = $1`, srv.ID).Scan(&raw))
	require.True(t, strings.HasPrefix(raw, "v1:"))
	require.NotContains(t, raw, "tok-stdio-123")
	out, _ := json.Marshal(srv)
	require.NotContains(t, string(out), "tok-stdio-123")

	live, err := b.svc.Inspect(ctx, b.project, srv.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"add", "echo", "slow", "whoami"}, names(live))
	tools, err := b.svc.Tools(ctx, b.project, srv.ID)
	require.NoError(t, err)
	require.Empty(t, tools, "inspect persists nothing")

	res, err := b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)
	require.Equal(t, 4, res.Added)
	res, err = b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)
	require.Equal(t, [3]int{0, 0, 0}, [3]int{res.Added, res.Updated, res.Removed}, "sync is idempotent")
	require.Len(t, res.Tools, 4)

	// The child runs with only PATH and the record's env, as nobody when root.
	r, err := b.svc.CallTool(ctx, b.project, "local", "whoami", nil)
	require.NoError(t, err)
	var who struct {
		UID int      `json:"uid"`
		PID int      `json:"pid"`
		Env []string `json:"env"`
	}
	require.NoError(t, json.Unmarshal([]byte(resultText(t, r)), &who))
	require.Equal(t, []string{"MCPTEST_TOOLS", "PATH", "SECRET_TOKEN"}, who.Env)
	if os.Geteuid() == 0 {
		require.Equal(t, 65534, who.UID)
	}
	require.Equal(t, who.PID, b.svc.ProcessID(srv.ID), "the process is reused")
	require.Contains(t, b.svc.Stderr(srv.ID), "mcptest stdio server starting")

	// Disable a tool: refused, and the choice survives a sync.
	echo := toolByName(t, res.Tools, "echo")
	_, err = b.svc.UpdateTool(ctx, b.project, srv.ID, echo.ID.String(), mcpregistry.ToolUpdate{Enabled: ptr(false)})
	require.NoError(t, err)
	_, err = b.svc.CallTool(ctx, b.project, srv.ID.String(), "echo", map[string]any{"text": "hi"})
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "disabled")
	refs, err := b.svc.ListTools(ctx, b.project)
	require.NoError(t, err)
	require.Len(t, refs, 3, "disabled tools are not listed")

	// Vanished tools are removed; enabled choices kept.
	_, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{
		Env: &map[string]string{"MCPTEST_TOOLS": "echo,slow,whoami", "SECRET_TOKEN": "***"},
	}, superadmin)
	require.NoError(t, err)
	res, err = b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)
	require.Equal(t, 1, res.Removed)
	require.Len(t, res.Tools, 3)
	require.False(t, toolByName(t, res.Tools, "echo").Enabled)
	r, err = b.svc.CallTool(ctx, b.project, "local", "whoami", nil)
	require.NoError(t, err)
	require.Contains(t, resultText(t, r), "SECRET_TOKEN", "*** kept the stored value")

	_, err = b.svc.UpdateTool(ctx, b.project, srv.ID, echo.ID.String(), mcpregistry.ToolUpdate{Enabled: ptr(true)})
	require.NoError(t, err)
	r, err = b.svc.CallTool(ctx, b.project, "local", "echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	require.Equal(t, "echo: hi", resultText(t, r))
	r, err = b.svc.CallTool(ctx, b.project, "local", "echo", map[string]any{"text": "fail"})
	require.NoError(t, err, "a tool error is a result")
	require.True(t, r.IsError)

	// Crash: kill the child; the next call starts it again.
	pid := b.svc.ProcessID(srv.ID)
	require.NotZero(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(t, func() bool { return b.svc.ProcessID(srv.ID) == 0 }, 10*time.Second, 20*time.Millisecond)
	r, err = b.svc.CallTool(ctx, b.project, "local", "echo", map[string]any{"text": "again"})
	require.NoError(t, err)
	require.Equal(t, "echo: again", resultText(t, r))
	require.NotEqual(t, pid, b.svc.ProcessID(srv.ID))

	// Disable the server: calls refused, process stopped.
	_, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{Enabled: ptr(false)}, superadmin)
	require.NoError(t, err)
	require.Zero(t, b.svc.ProcessID(srv.ID))
	_, err = b.svc.CallTool(ctx, b.project, "local", "echo", map[string]any{"text": "x"})
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	refs, err = b.svc.ListTools(ctx, b.project)
	require.NoError(t, err)
	require.Empty(t, refs)

	// Delete: server and tools gone.
	_, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{Enabled: ptr(true)}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.CallTool(ctx, b.project, "local", "echo", map[string]any{"text": "x"})
	require.NoError(t, err)
	require.NoError(t, b.svc.DeleteServer(ctx, b.project, srv.ID))
	require.Zero(t, b.svc.ProcessID(srv.ID))
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM mcp_server_tools WHERE server_id = $1`, srv.ID).Scan(&n))
	require.Zero(t, n)
}

func TestStdioTimeoutAndIdle(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *mcpregistry.Config) {
		c.CallTimeout = 1500 * time.Millisecond
		c.IdleTimeout = 400 * time.Millisecond
	})
	ctx := context.Background()
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{
		Name: "slowpoke", Type: mcpregistry.TypeStdio, Command: stdioBin, Env: map[string]string{"MCPTEST_TOOLS": "slow"},
	}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)
	start := time.Now()
	_, err = b.svc.CallTool(ctx, b.project, "slowpoke", "slow", map[string]any{"ms": 10000})
	require.Equal(t, errs.BadGateway, errs.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "did not answer within")
	require.Less(t, time.Since(start), 5*time.Second)
	r, err := b.svc.CallTool(ctx, b.project, "slowpoke", "slow", map[string]any{"ms": 10})
	require.NoError(t, err)
	require.Equal(t, "done", resultText(t, r))
	require.NotZero(t, b.svc.ProcessID(srv.ID))
	require.Eventually(t, func() bool { return b.svc.ProcessID(srv.ID) == 0 }, 10*time.Second, 50*time.Millisecond, "idle process stopped")
}

func TestStdioBadCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "nope", Type: mcpregistry.TypeStdio, Command: "/nonexistent/mcp-server"}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Inspect(ctx, b.project, srv.ID)
	require.Equal(t, errs.BadGateway, errs.CodeOf(err), "%v", err)
}

func TestStdioPolicyDisabled(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *mcpregistry.Config) { c.StdioPolicy = mcpregistry.StdioDisabled })
	ctx := context.Background()
	_, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "x", Type: mcpregistry.TypeStdio, Command: stdioBin}, superadmin)
	require.ErrorIs(t, err, mcpregistry.ErrStdioOff, "no one creates stdio servers")
	srv, err := b.svc.CreateRecord(ctx, b.project, mcpregistry.ServerInput{Name: "x", Type: mcpregistry.TypeStdio, Command: stdioBin})
	require.NoError(t, err, "a record made before the policy changed")
	_, err = b.svc.Inspect(ctx, b.project, srv.ID)
	require.ErrorIs(t, err, mcpregistry.ErrStdioOff)
	require.ErrorIs(t, b.svc.CheckStdio(mcpregistry.Caller{Superadmin: true, OrgAdmin: true}), mcpregistry.ErrStdioOff)
}

func TestCheckStdio(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		policy               string
		superadmin, orgAdmin bool
		want                 error
	}{
		{mcpregistry.StdioSuperadmin, true, false, nil},
		{mcpregistry.StdioSuperadmin, false, true, mcpregistry.ErrStdioSuper},
		{mcpregistry.StdioEnabled, false, true, nil},
		{mcpregistry.StdioEnabled, false, false, mcpregistry.ErrStdioOrgAdmin},
		{mcpregistry.StdioDisabled, true, true, mcpregistry.ErrStdioOff},
	} {
		c := mcpregistry.Config{StdioPolicy: tt.policy}
		mcpregistry.PretendHost(&c, 0, true) // children run as nobody
		svc, err := mcpregistry.NewService(c)
		require.NoError(t, err)
		err = svc.CheckStdio(mcpregistry.Caller{Superadmin: tt.superadmin, OrgAdmin: tt.orgAdmin})
		if tt.want == nil {
			require.NoError(t, err, tt.policy)
		} else {
			require.ErrorIs(t, err, tt.want, tt.policy)
		}
	}
}

// The service applies the stdio policy to the caller it is given, so no
// route can forget it: creating a stdio server and changing what it runs
// are refused, renaming it is not, and its type cannot change.
func TestStdioCaller(t *testing.T) {
	t.Parallel()
	b := setup(t) // GRAPHMILL_MCP_STDIO=superadmin
	ctx := context.Background()
	orgAdmin := mcpregistry.Caller{OrgAdmin: true}
	in := mcpregistry.ServerInput{Name: "x", Type: mcpregistry.TypeStdio, Command: stdioBin}
	_, err := b.svc.CreateServer(ctx, b.project, in, orgAdmin)
	require.ErrorIs(t, err, mcpregistry.ErrStdioSuper)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM mcp_servers WHERE type = 'stdio'`).Scan(&n))
	require.Zero(t, n)

	srv, err := b.svc.CreateServer(ctx, b.project, in, superadmin)
	require.NoError(t, err)
	_, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{Args: &[]string{"--other"}}, orgAdmin)
	require.ErrorIs(t, err, mcpregistry.ErrStdioSuper)
	renamed, err := b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{Name: ptr("y")}, orgAdmin)
	require.NoError(t, err, "renaming needs only the route's rule")
	require.Equal(t, "y", renamed.Name)
	require.Empty(t, renamed.Args, "the refused change changed nothing")
	_, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{Type: ptr(mcpregistry.TypeHTTP)}, superadmin)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
}

func TestRemoteServers(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{mcpregistry.TypeHTTP, mcpregistry.TypeSSE} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			server := mcptest.NewServer("echo", "add")
			serve := mcptest.Streamable
			if typ == mcpregistry.TypeSSE {
				serve = mcptest.SSE
			}
			ts := serve(t, server, "Authorization", "Bearer remote-secret-77")
			srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{
				Name: "remote", Type: typ, URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer remote-secret-77"},
			}, superadmin)
			require.NoError(t, err)
			require.Equal(t, map[string]string{"Authorization": "***"}, srv.Headers)
			var raw string
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT headers_sealed FROM mcp_servers WHERE id = $1`, srv.ID).Scan(&raw))
			require.NotContains(t, raw, "remote-secret-77")

			live, err := b.svc.Inspect(ctx, b.project, srv.ID)
			require.NoError(t, err)
			require.Equal(t, []string{"add", "echo"}, names(live))
			require.Equal(t, "object", live[0].InputSchema["type"])
			require.Equal(t, mcpregistry.Hints{ReadOnly: true}, live[0].Hints, "add is read-only")
			res, err := b.svc.Sync(ctx, b.project, srv.ID)
			require.NoError(t, err)
			require.Equal(t, 2, res.Added)
			refs, err := b.svc.ListTools(ctx, b.project)
			require.NoError(t, err)
			require.Len(t, refs, 2)
			require.Equal(t, map[string]mcpregistry.Hints{"add": {ReadOnly: true}, "echo": {}},
				map[string]mcpregistry.Hints{refs[0].ToolName: refs[0].Hints, refs[1].ToolName: refs[1].Hints}, "the annotations are recorded")
			r, err := b.svc.CallTool(ctx, b.project, srv.ID.String(), "add", map[string]any{"a": 2, "b": 40})
			require.NoError(t, err)
			require.Equal(t, "42", resultText(t, r))

			server.RemoveTools("add")
			res, err = b.svc.Sync(ctx, b.project, srv.ID)
			require.NoError(t, err)
			require.Equal(t, 1, res.Removed)
			require.Len(t, res.Tools, 1)

			// A wrong header: the server refuses, reported as a bad gateway.
			_, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{Headers: &map[string]string{"Authorization": "Bearer wrong"}}, superadmin)
			require.NoError(t, err)
			_, err = b.svc.Inspect(ctx, b.project, srv.ID)
			require.Equal(t, errs.BadGateway, errs.CodeOf(err), "%v", err)
		})
	}
}

func TestRemoteEgressRefused(t *testing.T) {
	t.Parallel()
	guard, err := egress.New(nil)
	require.NoError(t, err)
	b := setup(t, func(c *mcpregistry.Config) { c.Egress = guard })
	ctx := context.Background()
	ts := mcptest.Streamable(t, mcptest.NewServer("echo"), "", "")
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "loop", Type: mcpregistry.TypeHTTP, URL: ts.URL}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Inspect(ctx, b.project, srv.ID)
	require.Error(t, err)
	require.Contains(t, errs.MessageOf(err), "non-public address")
}

func TestServerValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		in   mcpregistry.ServerInput
		want string
	}{
		{"no command", mcpregistry.ServerInput{Name: "a", Type: "stdio"}, "needs a command"},
		{"no url", mcpregistry.ServerInput{Name: "a", Type: "http"}, "a server of type http needs an http(s) url"},
		{"ftp url", mcpregistry.ServerInput{Name: "a", Type: "sse", URL: "ftp://x/y"}, "a server of type sse needs an http(s) url"},
		{"builtin", mcpregistry.ServerInput{Name: "a", Type: "builtin"}, "cannot be created"},
		{"bad type", mcpregistry.ServerInput{Name: "a", Type: "grpc"}, "type must be"},
		{"no name", mcpregistry.ServerInput{Type: "http", URL: "http://x"}, "name must be"},
		{"bad env", mcpregistry.ServerInput{Name: "a", Type: "stdio", Command: "x", Env: map[string]string{"1X": "v"}}, "env names"},
		{"header crlf", mcpregistry.ServerInput{Name: "a", Type: "http", URL: "http://x", Headers: map[string]string{"X-A": "a\r\nb"}}, "line breaks"},
		{"stdio url", mcpregistry.ServerInput{Name: "a", Type: "stdio", Command: "x", URL: "http://x"}, "not stdio"},
	} {
		_, err := b.svc.CreateServer(ctx, b.project, tt.in, superadmin)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), tt.name)
		require.Contains(t, err.Error(), tt.want, tt.name)
	}
}

func TestBuiltinRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	list, total, err := b.svc.ListServers(ctx, b.project, 50, 0)
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, mcpregistry.TypeBuiltin, list[0].Type)
	_, total, err = b.svc.ListServers(ctx, b.project, 50, 0)
	require.NoError(t, err)
	require.Equal(t, 1, total, "created once")
	id := list[0].ID
	_, err = b.svc.UpdateServer(ctx, b.project, id, mcpregistry.ServerUpdate{Enabled: ptr(false)}, superadmin)
	require.ErrorIs(t, err, mcpregistry.ErrBuiltinFixed)
	require.ErrorIs(t, b.svc.DeleteServer(ctx, b.project, id), mcpregistry.ErrBuiltinFixed)
	_, err = b.svc.Sync(ctx, b.project, id)
	require.ErrorIs(t, err, mcpregistry.ErrBuiltinRemote)
	_, err = b.svc.Server(ctx, uuid.Must(uuid.NewV7()), id)
	require.ErrorIs(t, err, mcpregistry.ErrServerNotFound, "another project's server is not found")
}

func TestStderrLogBounded(t *testing.T) {
	t.Parallel()
	l := mcpregistry.NewRingLog(10)
	for _, s := range []string{"0123456", "789ab", "cdefghijklmnop"} {
		n, err := l.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	require.Equal(t, "ghijklmnop", l.String(), "only the last bytes are kept")
	require.Equal(t, 64<<10, mcpregistry.StderrLogBytes)
}

// The registry has the start/stop shape of every long-running part: a
// second Start is refused; Stop, before Start too, kills every stdio
// process and waits for its supervisor; a second Stop is harmless.
func TestRegistryStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, started := range []bool{false, true} {
		b := setupUnstarted(t)
		if started {
			require.NoError(t, b.svc.Start(ctx))
			require.ErrorIs(t, b.svc.Start(ctx), startstop.ErrStarted)
		}
		srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{
			Name: "local", Type: mcpregistry.TypeStdio, Command: stdioBin, Env: map[string]string{"MCPTEST_TOOLS": "echo"},
		}, superadmin)
		require.NoError(t, err)
		_, err = b.svc.Sync(ctx, b.project, srv.ID)
		require.NoError(t, err)
		r, err := b.svc.CallTool(ctx, b.project, srv.ID.String(), "echo", map[string]any{"text": "hi"})
		require.NoError(t, err)
		require.Equal(t, "echo: hi", resultText(t, r))
		pid := b.svc.ProcessID(srv.ID)
		require.NotZero(t, pid)

		require.NoError(t, b.svc.Stop(ctx))
		require.Zero(t, b.svc.ProcessID(srv.ID))
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the process is gone and reaped (started %v)", started)
		require.NoError(t, b.svc.Stop(ctx))
	}
}

// TestSyncToolTextWithNUL: a server whose tool list holds NUL characters
// is recorded, never refused: a NUL in a description or an input schema
// is dropped; a tool whose name holds one is left out (it could not be
// called by another name) and the others recorded.
func TestSyncToolTextWithNUL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	server := mcptest.NewServer("echo")
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	server.AddTool(&mcp.Tool{Name: "greet", Description: "Says\x00 hi.", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"who\x00": map[string]any{"type": "string", "description": "Who\x00 is greeted."}},
	}}, handler)
	server.AddTool(&mcp.Tool{Name: "bad\x00name", Description: "Unnamable.", InputSchema: map[string]any{"type": "object"}}, handler)
	ts := mcptest.Streamable(t, server, "", "")
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "nul", Type: mcpregistry.TypeHTTP, URL: ts.URL}, superadmin)
	require.NoError(t, err)
	res, err := b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)
	require.Equal(t, 2, res.Added)
	var desc, schema string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT description, input_schema::text FROM mcp_server_tools WHERE server_id = $1 AND tool_name = 'greet'`, srv.ID).
		Scan(&desc, &schema))
	require.Equal(t, "Says hi.", desc)
	require.JSONEq(t, `{"type": "object", "properties": {"who": {"type": "string", "description": "Who is greeted."}}}`, schema)
	rows, err := b.pool.Query(ctx, `SELECT tool_name FROM mcp_server_tools WHERE server_id = $1 ORDER BY tool_name`, srv.ID)
	require.NoError(t, err)
	tools, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"echo", "greet"}, tools)
}
