package mcpregistry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

// Sealed headers belong to the origin they were given for: changing the
// URL's scheme, host or port drops them, so the new host never receives
// them.
func TestURLOriginChangeDropsHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a, seenA := mcptest.StreamableSeen(t, mcptest.NewServer("echo"))
	other, seenB := mcptest.StreamableSeen(t, mcptest.NewServer("echo"))
	secrets := map[string]string{"Authorization": "Bearer origin-secret-1", "X-Api-Key": "origin-secret-2"}
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "r", Type: mcpregistry.TypeHTTP, URL: a.URL + "/mcp", Headers: secrets}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)
	require.Contains(t, seenA.Values("X-Api-Key"), "origin-secret-2")

	// Same origin, another path: the headers stay.
	srv, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{URL: ptr(a.URL + "/other/../mcp")}, superadmin)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": "***", "X-Api-Key": "***"}, srv.Headers)

	// Keeping a header (***) across an origin change is refused, and
	// nothing changes.
	_, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{
		URL: ptr(other.URL + "/mcp"), Headers: &map[string]string{"Authorization": "***"},
	}, superadmin)
	require.Equal(t, errs.Invalid, errs.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "origin")

	// Another port: the stored headers are gone, and the new host gets none.
	srv, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{URL: ptr(other.URL + "/mcp")}, superadmin)
	require.NoError(t, err)
	require.Empty(t, srv.Headers)
	var sealed *string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT headers_sealed FROM mcp_servers WHERE id = $1`, srv.ID).Scan(&sealed))
	require.Nil(t, sealed, "the sealed headers are deleted")
	_, err = b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)
	_, err = b.svc.CallTool(ctx, b.project, srv.ID.String(), "echo", map[string]any{"text": "x"})
	require.NoError(t, err)
	require.NotEmpty(t, seenB.Requests())
	require.Empty(t, seenB.Values("Authorization"))
	require.Empty(t, seenB.Values("X-Api-Key"))

	// New headers given with the new URL are kept.
	srv, err = b.svc.UpdateServer(ctx, b.project, srv.ID, mcpregistry.ServerUpdate{
		URL: ptr(a.URL + "/mcp"), Headers: &map[string]string{"X-Api-Key": "origin-secret-3"},
	}, superadmin)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"X-Api-Key": "***"}, srv.Headers)
	_, err = b.svc.Inspect(ctx, b.project, srv.ID)
	require.NoError(t, err)
	require.Contains(t, seenA.Values("X-Api-Key"), "origin-secret-3")
}

// A redirect to another origin is followed without the record's headers
// and without a Referer (it would carry the first URL's query).
func TestHeadersNotSentAcrossRedirect(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{mcpregistry.TypeHTTP, mcpregistry.TypeSSE} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			var target string
			var seenB *mcptest.Seen
			if typ == mcpregistry.TypeHTTP {
				ts, seen := mcptest.StreamableSeen(t, mcptest.NewServer("echo"))
				target, seenB = ts.URL, seen
			} else {
				ts, seen := mcptest.SSESeen(t, mcptest.NewServer("echo"))
				target, seenB = ts.URL, seen
			}
			a, seenA := mcptest.Redirect(t, target)
			srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{
				Name: "r", Type: typ, URL: a.URL + "/mcp?key=query-secret-3",
				Headers: map[string]string{"Authorization": "Bearer redirect-secret-1", "X-Api-Key": "redirect-secret-2"},
			}, superadmin)
			require.NoError(t, err)
			live, err := b.svc.Inspect(ctx, b.project, srv.ID)
			require.NoError(t, err)
			require.Equal(t, []string{"echo"}, names(live))
			require.Contains(t, seenA.Values("X-Api-Key"), "redirect-secret-2", "the record's own origin gets them")
			require.NotEmpty(t, seenB.Requests())
			require.Empty(t, seenB.Values("Authorization"))
			require.Empty(t, seenB.Values("X-Api-Key"))
			require.Empty(t, seenB.Values("Referer"))
		})
	}
}
