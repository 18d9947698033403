package mcpregistry_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

func allowStdio() error { return nil }

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
	_, err = b.svc.Install(ctx, b.project, mcpregistry.InstallInput{ServerName: "io.github.acme/weather", CheckStdio: allowStdio})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.Contains(t, err.Error(), "WEATHER_API_KEY")
	_, err = b.svc.Install(ctx, b.project, mcpregistry.InstallInput{ServerName: "com.acme/notes", CheckStdio: allowStdio})
	require.Contains(t, err.Error(), "notes_token")

	// A remote: an http record with the header filled, synced at once.
	res, err := b.svc.Install(ctx, b.project, mcpregistry.InstallInput{
		ServerName: "com.acme/notes", Env: map[string]string{"notes_token": "notes-secret"}, CheckStdio: allowStdio,
	})
	require.NoError(t, err)
	require.Empty(t, res.SyncError)
	require.Equal(t, "Acme Notes", res.Server.Name)
	require.Equal(t, mcpregistry.TypeHTTP, res.Server.Type)
	require.Equal(t, map[string]string{"Authorization": "***"}, res.Server.Headers)
	require.NotNil(t, res.Sync)
	require.Equal(t, 1, res.Sync.Added)

	// The stdio policy refuses a package-only server.
	denied := func() error { return mcpregistry.ErrStdioSuper }
	_, err = b.svc.Install(ctx, b.project, mcpregistry.InstallInput{ServerName: "io.github.acme/pysearch", CheckStdio: denied})
	require.ErrorIs(t, err, mcpregistry.ErrStdioSuper)

	// Registry down.
	down := httptest.NewServer(nil)
	down.Close()
	b2 := setup(t, func(c *mcpregistry.Config) { c.RegistryURL = down.URL })
	_, err = b2.svc.SearchRegistry(ctx, "x", "")
	require.Equal(t, errs.BadGateway, errs.CodeOf(err))
	require.Contains(t, err.Error(), "unreachable")
	_, err = b2.svc.Install(ctx, b2.project, mcpregistry.InstallInput{ServerName: "com.acme/notes", CheckStdio: allowStdio})
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
		in, ok := mcpregistry.PackageRecord(entries[tt.entry].Server.Packages[0], tt.env, missing)
		require.True(t, ok)
		require.Equal(t, tt.command, in.Command)
		require.Equal(t, tt.args, in.Args)
		require.Equal(t, tt.wantEnv, in.Env)
		var got []string
		for k := range missing {
			got = append(got, k)
		}
		require.Equal(t, tt.wantMissing, got)
	}
}
