package mcpserver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/secrets"
)

// registryTools is the registry as cmd/graphmill hands it to the server.
type registryTools struct{ reg *mcpregistry.Service }

func (r registryTools) ListTools(ctx context.Context, project uuid.UUID) ([]RegistryTool, error) {
	refs, err := r.reg.ListTools(ctx, project)
	out := make([]RegistryTool, len(refs))
	for i, t := range refs {
		out[i] = RegistryTool{ServerID: t.ServerID, Server: t.ServerName, Name: t.ToolName, Description: t.Description, InputSchema: t.InputSchema}
	}
	return out, err
}

func (r registryTools) CallTool(ctx context.Context, project uuid.UUID, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return r.reg.CallTool(ctx, project, server, tool, args)
}

func TestToolboxCallsExternalServers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.New(t)
	org, project := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	require.NoError(t, err)
	box, err := secrets.New("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	require.NoError(t, err)
	loopback, err := egress.New([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	reg, err := mcpregistry.NewService(mcpregistry.Config{
		Pool: pool, Box: box, Egress: loopback, CallTimeout: 10 * time.Second, StartTimeout: 20 * time.Second,
	})
	require.NoError(t, err)
	require.NoError(t, reg.Start(ctx))
	t.Cleanup(func() { require.NoError(t, reg.Stop(context.Background())) })

	// A real MCP server over streamable HTTP, registered and synced.
	ts := mcptest.Streamable(t, mcptest.NewServer("echo", "add"), "Authorization", "Bearer remote-secret")
	srv, err := reg.CreateServer(ctx, project, mcpregistry.ServerInput{
		Name: "remote", Type: mcpregistry.TypeHTTP, URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer remote-secret"},
	}, mcpregistry.Caller{Superadmin: true})
	require.NoError(t, err)
	_, err = reg.Sync(ctx, project, srv.ID)
	require.NoError(t, err)

	b := boxSetup(t, registryTools{reg: reg})
	b.project = project
	b.srv.cfg.Guard = auth.NewGuard(auth.GuardConfig{Directory: projectDirectory{orgs: map[uuid.UUID]uuid.UUID{project: org}}})
	p := b.principal(auth.Scopes(0).With(auth.MCPUse), auth.ProjectViewer)

	tools, err := b.srv.Tools(ctx, p, project)
	require.NoError(t, err)
	require.Equal(t, []string{"remote/add", "remote/echo"}, toolNamesOf(tools))
	for _, tool := range tools {
		require.Equal(t, "object", tool.Parameters["type"], "the schema the server reported")
	}

	out, isErr, err := b.srv.Call(ctx, p, project, "remote/add", json.RawMessage(`{"a":2,"b":40}`))
	require.NoError(t, err)
	require.False(t, isErr)
	require.JSONEq(t, `"42"`, string(out), "text that is not a JSON object or array stays text")
	out, isErr, err = b.srv.Call(ctx, p, project, "remote/echo", json.RawMessage(`{"text":"hi"}`))
	require.NoError(t, err)
	require.False(t, isErr)
	require.JSONEq(t, `"echo: hi"`, string(out))
	out, isErr, err = b.srv.Call(ctx, p, project, "remote/echo", json.RawMessage(`{"text":"fail"}`))
	require.NoError(t, err)
	require.True(t, isErr, "the external tool's own error")
	require.JSONEq(t, `"asked to fail"`, string(out))

	// A tool disabled in the registry is never listed, and refused.
	list, err := reg.Tools(ctx, project, srv.ID)
	require.NoError(t, err)
	for _, tool := range list {
		if tool.ToolName == "add" {
			_, err = reg.UpdateTool(ctx, project, srv.ID, tool.ID.String(), mcpregistry.ToolUpdate{Enabled: ptr(false)})
			require.NoError(t, err)
		}
	}
	tools, err = b.srv.Tools(ctx, p, project)
	require.NoError(t, err)
	require.Equal(t, []string{"remote/echo"}, toolNamesOf(tools))
	_, _, err = b.srv.Call(ctx, p, project, "remote/add", json.RawMessage(`{"a":1,"b":1}`))
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))

	// A disabled server's tools likewise.
	_, err = reg.UpdateServer(ctx, project, srv.ID, mcpregistry.ServerUpdate{Enabled: ptr(false)}, mcpregistry.Caller{Superadmin: true})
	require.NoError(t, err)
	tools, err = b.srv.Tools(ctx, p, project)
	require.NoError(t, err)
	require.Empty(t, tools)
	_, _, err = b.srv.Call(ctx, p, project, "remote/echo", json.RawMessage(`{"text":"hi"}`))
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))
}
