package mcpregistry_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	apiv0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

// superadmin is a caller the default stdio policy lets create stdio
// servers.
var superadmin = mcpregistry.Caller{Superadmin: true} //nolint:gochecknoglobals // constant value

func TestRegistry(t *testing.T) {
	t.Parallel()
	remote := mcptest.Streamable(t, mcptest.NewServer("echo"), "Authorization", "Bearer notes-secret")
	reg := mcptest.NewRegistry(t, mcptest.SampleEntries(remote.URL+"/mcp"))
	b := setup(t, func(c *mcpregistry.Config) { c.RegistryURL = reg.URL })
	ctx := context.Background()

	list, err := b.svc.SearchRegistry(ctx, "acme", "")
	require.NoError(t, err)
	require.Len(t, list.Servers, 4, "latest versions only")
	list, err = b.svc.SearchRegistry(ctx, "weather", "")
	require.NoError(t, err)
	require.Len(t, list.Servers, 1)
	require.Equal(t, "1.2.0", list.Servers[0].Server.Version)

	d, err := b.svc.RegistryServer(ctx, "io.github.acme/weather")
	require.NoError(t, err)
	require.Equal(t, "1.2.0", d.Server.Version)
	_, err = b.svc.RegistryServer(ctx, "io.github.acme/nothing")
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
	_, err = b.svc.RegistryServer(ctx, "no-slash")
	require.Equal(t, errs.Invalid, errs.CodeOf(err))

	// Missing required variables are named.
	_, err = b.svc.Install(ctx, b.project, mcpregistry.InstallInput{ServerName: "io.github.acme/weather", Caller: superadmin})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.Contains(t, err.Error(), "WEATHER_API_KEY")
	_, err = b.svc.Install(ctx, b.project, mcpregistry.InstallInput{ServerName: "com.acme/notes", Caller: superadmin})
	require.Contains(t, err.Error(), "notes_token")

	// A remote: an http record with the header filled, synced at once.
	res, err := b.svc.Install(ctx, b.project, mcpregistry.InstallInput{
		ServerName: "com.acme/notes", Env: map[string]string{"notes_token": "notes-secret"}, Caller: superadmin,
	})
	require.NoError(t, err)
	require.Empty(t, res.SyncError)
	require.Equal(t, "Acme Notes", res.Server.Name)
	require.Equal(t, mcpregistry.TypeHTTP, res.Server.Type)
	require.Equal(t, map[string]string{"Authorization": "***"}, res.Server.Headers)
	require.NotNil(t, res.Sync)
	require.Equal(t, 1, res.Sync.Added)

	// The stdio policy refuses a package-only server.
	_, err = b.svc.Install(ctx, b.project, mcpregistry.InstallInput{ServerName: "io.github.acme/pysearch", Caller: mcpregistry.Caller{}})
	require.ErrorIs(t, err, mcpregistry.ErrStdioSuper)

	// Registry down.
	down := httptest.NewServer(nil)
	down.Close()
	b2 := setup(t, func(c *mcpregistry.Config) { c.RegistryURL = down.URL })
	_, err = b2.svc.SearchRegistry(ctx, "x", "")
	require.Equal(t, errs.BadGateway, errs.CodeOf(err))
	require.Contains(t, err.Error(), "unreachable")
	_, err = b2.svc.Install(ctx, b2.project, mcpregistry.InstallInput{ServerName: "com.acme/notes", Caller: superadmin})
	require.Equal(t, errs.BadGateway, errs.CodeOf(err))
}

func TestPackageRecord(t *testing.T) {
	t.Parallel()
	entries := mcptest.SampleEntries("https://notes.example.com/mcp")
	for _, tt := range []struct {
		entry       int
		env         map[string]string
		command     string
		args        []string
		wantEnv     map[string]string
		wantMissing []string
	}{
		{
			1,
			map[string]string{"WEATHER_API_KEY": "k"},
			"npx",
			[]string{"-y", "@acme/weather-mcp@1.2.0"},
			map[string]string{"WEATHER_API_KEY": "k", "WEATHER_UNITS": "metric"},
			nil,
		},
		{1, nil, "npx", []string{"-y", "@acme/weather-mcp@1.2.0"}, map[string]string{"WEATHER_UNITS": "metric"}, []string{"WEATHER_API_KEY"}},
		{2, nil, "uvx", []string{"acme-pysearch==0.3.1"}, map[string]string{}, nil},
		{
			3,
			map[string]string{"BOXED_TOKEN": "t"},
			"docker",
			[]string{"run", "-i", "--rm", "-e", "BOXED_TOKEN", "ghcr.io/acme/boxed:2.0.0"},
			map[string]string{"BOXED_TOKEN": "t"},
			nil,
		},
	} {
		missing := map[string]bool{}
		vars := map[string]string{}
		in, ok := mcpregistry.PackageRecord(entries[tt.entry].Server.Packages[0], tt.env, missing, vars)
		require.True(t, ok)
		require.Equal(t, tt.command, in.Command)
		require.Equal(t, tt.args, in.Args)
		require.Equal(t, tt.wantEnv, in.Env)
		var got []string
		for k := range missing {
			got = append(got, k)
		}
		require.Equal(t, tt.wantMissing, got)
		require.Empty(t, vars, "no argument takes a value")
	}
}

// Values given at install are sealed: the record's plain columns and what
// mcp:use reads hold placeholders, filled only when the process starts or
// the request is made.
func TestInstallKeepsValuesSealed(t *testing.T) {
	t.Parallel()
	remote, seen := mcptest.StreamableSeen(t, mcptest.NewServer("echo"))
	reg := mcptest.NewRegistry(t, mcptest.SecretEntries(remote.URL+"/mcp"))
	logs := &syncBuffer{}
	b := setup(t, func(c *mcpregistry.Config) {
		c.RegistryURL = reg.URL
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	ctx := context.Background()
	plain := func(id uuid.UUID) string {
		t.Helper()
		var s string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT concat_ws(' ', name, command, array_to_string(args, ' '), url) FROM mcp_servers WHERE id = $1`, id).Scan(&s))
		return s
	}

	// A remote: the URL keeps its placeholder; the request carries the value.
	res, err := b.svc.Install(ctx, b.project, mcpregistry.InstallInput{
		ServerName: "com.acme/urlkey", Env: map[string]string{"url_key": "url-secret-55"}, Caller: superadmin,
	})
	require.NoError(t, err)
	require.Empty(t, res.SyncError)
	require.Equal(t, remote.URL+"/mcp?key={url_key}&region=eu", res.Server.URL)
	got, err := b.svc.Server(ctx, b.project, res.Server.ID)
	require.NoError(t, err)
	out, _ := json.Marshal(got)
	require.NotContains(t, string(out), "url-secret-55")
	require.NotContains(t, plain(res.Server.ID), "url-secret-55")
	require.NotEmpty(t, seen.Requests())
	for _, r := range seen.Requests() {
		require.Contains(t, r.URL, "key=url-secret-55&region=eu")
	}
	list, _, err := b.svc.ListServers(ctx, b.project, 50, 0)
	require.NoError(t, err)
	out, _ = json.Marshal(list)
	require.NotContains(t, string(out), "url-secret-55")

	// The remote stopped: connection refused names the URL the request
	// went to. Neither the errors (shown to mcp:use) nor the log hold the
	// value; the URL keeps its scheme, host and path.
	remote.Close()
	_, err = b.svc.Inspect(ctx, b.project, res.Server.ID)
	require.Equal(t, errs.BadGateway, errs.CodeOf(err), "%v", err)
	_, callErr := b.svc.CallTool(ctx, b.project, res.Server.ID.String(), "echo", map[string]any{"text": "x"})
	require.Equal(t, errs.BadGateway, errs.CodeOf(callErr), "%v", callErr)
	for _, e := range []error{err, callErr} {
		require.Contains(t, e.Error(), "cannot connect to the MCP server")
		require.Contains(t, e.Error(), remote.URL+"/mcp")
		require.NotContains(t, e.Error(), "url-secret-55")
		require.NotContains(t, e.Error(), "region=eu")
	}
	require.Contains(t, logs.String(), "cannot connect to the MCP server")
	require.NotContains(t, logs.String(), "url-secret-55")

	// Another origin with the same placeholder: the sealed value is dropped
	// with the origin it was given for.
	other, seenOther := mcptest.StreamableSeen(t, mcptest.NewServer("echo"))
	_, err = b.svc.UpdateServer(ctx, b.project, res.Server.ID, mcpregistry.ServerUpdate{URL: ptr(other.URL + "/mcp?key={url_key}")}, superadmin)
	require.NoError(t, err)
	var vars *string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT vars_sealed FROM mcp_servers WHERE id = $1`, res.Server.ID).Scan(&vars))
	require.Nil(t, vars)
	_, err = b.svc.Inspect(ctx, b.project, res.Server.ID)
	require.NoError(t, err)
	require.NotEmpty(t, seenOther.Requests())
	for _, r := range seenOther.Requests() {
		require.NotContains(t, r.URL, "url-secret-55")
	}

	// A package: the arguments keep their placeholders (uvx is not
	// installed here: the first sync fails, the record stays).
	res, err = b.svc.Install(ctx, b.project, mcpregistry.InstallInput{
		ServerName: "io.github.acme/argkeys", Caller: superadmin,
		Env: map[string]string{"api_key": "arg-secret-66", "token": "arg-secret-77", "MCPTEST_TOOLS": "whoami"},
	})
	require.NoError(t, err)
	require.Equal(t, "uvx", res.Server.Command)
	require.Equal(t, []string{"acme-argkeys==1.0.0", "--api-key", "{api_key}", "{token}", "--region", "eu"}, res.Server.Args)
	got, err = b.svc.Server(ctx, b.project, res.Server.ID)
	require.NoError(t, err)
	out, _ = json.Marshal(got)
	for _, secret := range []string{"arg-secret-66", "arg-secret-77"} {
		require.NotContains(t, string(out), secret)
		require.NotContains(t, plain(res.Server.ID), secret)
	}
	// The process gets the values in its arguments.
	_, err = b.svc.UpdateServer(ctx, b.project, res.Server.ID, mcpregistry.ServerUpdate{Command: ptr(stdioBin)}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Sync(ctx, b.project, res.Server.ID)
	require.NoError(t, err)
	r, err := b.svc.CallTool(ctx, b.project, res.Server.ID.String(), "whoami", nil)
	require.NoError(t, err)
	var who struct {
		Args []string `json:"args"`
	}
	require.NoError(t, json.Unmarshal([]byte(resultText(t, r)), &who))
	require.Equal(t, []string{"acme-argkeys==1.0.0", "--api-key", "arg-secret-66", "arg-secret-77", "--region", "eu"}, who.Args)
}

// TestInstallTitleWithNUL: a registry entry whose title holds a NUL is
// installed under that title with the NUL dropped (a display name), never
// refused for a character the database cannot hold.
func TestInstallTitleWithNUL(t *testing.T) {
	t.Parallel()
	remote := mcptest.Streamable(t, mcptest.NewServer("echo"), "", "")
	reg := mcptest.NewRegistry(t, []apiv0.ServerResponse{{
		Server: apiv0.ServerJSON{
			Schema: model.CurrentSchemaURL, Name: "com.acme/tools", Title: "Acme\x00 Tools", Description: "Tools", Version: "1.0.0",
			Remotes: []model.Transport{{Type: model.TransportTypeStreamableHTTP, URL: remote.URL + "/mcp"}},
		},
		Meta: apiv0.ResponseMeta{Official: &apiv0.RegistryExtensions{Status: model.StatusActive, IsLatest: true}},
	}})
	b := setup(t, func(c *mcpregistry.Config) { c.RegistryURL = reg.URL })
	ctx := context.Background()
	res, err := b.svc.Install(ctx, b.project, mcpregistry.InstallInput{ServerName: "com.acme/tools", Caller: superadmin})
	require.NoError(t, err)
	require.Empty(t, res.SyncError)
	require.Equal(t, "Acme Tools", res.Server.Name)
	var name string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT name FROM mcp_servers WHERE id = $1`, res.Server.ID).Scan(&name))
	require.Equal(t, "Acme Tools", name)
}
