package mcpregistry_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
	"github.com/graphmill/graphmill/internal/secrets"
)

func TestWebSearchLevels(t *testing.T) {
	t.Parallel()
	for _, global := range []string{"", "key-global"} {
		t.Run("global="+global, func(t *testing.T) {
			t.Parallel()
			// One fake per subtest: the checks read the key of the last request it saw.
			brave := mcptest.NewBrave(t, "key-global", "key-org", "key-project")
			b := setup(t, func(c *mcpregistry.Config) { c.WebSearchAPIKey, c.WebSearchBaseURL = global, brave.URL })
			ctx := context.Background()
			builtin, _, err := b.svc.ListServers(ctx, b.project, 50, 0)
			require.NoError(t, err)
			bid := builtin[0].ID
			effective := func() mcpregistry.Tool {
				tools, err := b.svc.Tools(ctx, b.project, bid)
				require.NoError(t, err)
				return toolByName(t, tools, mcpregistry.WebSearchTool)
			}
			search := func() ([]mcpregistry.SearchResult, error) {
				return b.svc.WebSearch(ctx, b.project, "graph databases", 2)
			}

			tool := effective()
			require.Equal(t, mcpregistry.LevelGlobal, tool.InheritedFrom)
			if global == "" {
				require.False(t, tool.Enabled, "no key at any level: disabled")
				_, err := search()
				require.ErrorIs(t, err, mcpregistry.ErrNoSearchKey)
			} else {
				require.True(t, tool.Enabled)
				require.Equal(t, map[string]any{"api_key": "***"}, tool.Config)
				res, err := search()
				require.NoError(t, err)
				require.Len(t, res, 2)
				require.Equal(t, mcpregistry.SearchResult{Title: "graph databases result 1", URL: "https://example.com/1", Description: "About graph databases"}, res[0])
				require.Equal(t, "key-global", brave.Keys()[len(brave.Keys())-1])
			}

			// Organization default.
			st, err := b.svc.PutOrgToolSetting(ctx, b.org, mcpregistry.WebSearchTool, nil, map[string]any{"api_key": "key-org"})
			require.NoError(t, err)
			require.Equal(t, map[string]any{"api_key": "***"}, st.Config)
			require.True(t, st.Enabled)
			tool = effective()
			require.Equal(t, mcpregistry.LevelOrg, tool.InheritedFrom)
			require.True(t, tool.Enabled)
			_, err = search()
			require.NoError(t, err)
			require.Equal(t, "key-org", brave.Keys()[len(brave.Keys())-1])

			// Project setting.
			tool, err = b.svc.UpdateTool(ctx, b.project, bid, mcpregistry.WebSearchTool, mcpregistry.ToolUpdate{Config: map[string]any{"api_key": "key-project"}})
			require.NoError(t, err)
			require.Equal(t, mcpregistry.LevelProject, tool.InheritedFrom)
			require.True(t, tool.Enabled)
			_, err = search()
			require.NoError(t, err)
			require.Equal(t, "key-project", brave.Keys()[len(brave.Keys())-1])

			// The project disables it: its setting wins over the org's.
			tool, err = b.svc.UpdateTool(ctx, b.project, bid, tool.ID.String(), mcpregistry.ToolUpdate{Enabled: ptr(false)})
			require.NoError(t, err)
			require.False(t, tool.Enabled)
			_, err = search()
			require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
			require.Contains(t, err.Error(), "project setting")

			// Sealed at rest.
			var sealed string
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT config_sealed FROM mcp_project_tool_settings WHERE project_id = $1`, b.project).Scan(&sealed))
			require.NotContains(t, sealed, "key-project")
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT config_sealed FROM mcp_org_tool_settings WHERE org_id = $1`, b.org).Scan(&sealed))
			require.NotContains(t, sealed, "key-org")

			// Removing the org default: back to global for a project without a setting.
			require.NoError(t, b.svc.DeleteOrgToolSetting(ctx, b.org, mcpregistry.WebSearchTool))
			require.Equal(t, errs.NotFound, errs.CodeOf(b.svc.DeleteOrgToolSetting(ctx, b.org, mcpregistry.WebSearchTool)))
			_, err = b.pool.Exec(ctx, `DELETE FROM mcp_project_tool_settings`)
			require.NoError(t, err)
			require.Equal(t, mcpregistry.LevelGlobal, effective().InheritedFrom)
		})
	}
}

func TestWebSearchErrors(t *testing.T) {
	t.Parallel()
	brave := mcptest.NewBrave(t, "good")
	ctx := context.Background()
	b := setup(t, func(c *mcpregistry.Config) { c.WebSearchAPIKey, c.WebSearchBaseURL = "bad", brave.URL })
	_, err := b.svc.WebSearch(ctx, b.project, "q", 1)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	require.Contains(t, err.Error(), "rejected the API key of the global setting")
	require.NotContains(t, err.Error(), "bad")

	b = setup(t, func(c *mcpregistry.Config) { c.WebSearchAPIKey, c.WebSearchBaseURL = "good", brave.URL })
	_, err = b.svc.WebSearch(ctx, b.project, "", 1)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	_, err = b.svc.WebSearch(ctx, b.project, "q", 99)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	for status, code := range map[int]errs.Code{http.StatusTooManyRequests: errs.RateLimited, http.StatusBadGateway: errs.BadGateway} {
		brave.FailWith(status)
		_, err = b.svc.WebSearch(ctx, b.project, "q", 1)
		require.Equal(t, code, errs.CodeOf(err), "%d: %v", status, err)
	}
	brave.FailWith(0)
}

func TestToolSettingValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *mcpregistry.Config) {
		c.Builtin = append(c.Builtin, mcpregistry.BuiltinTool{Name: "graph_search", Description: "search"})
	})
	ctx := context.Background()
	builtin, _, err := b.svc.ListServers(ctx, b.project, 50, 0)
	require.NoError(t, err)
	bid := builtin[0].ID
	tools, err := b.svc.Tools(ctx, b.project, bid)
	require.NoError(t, err)
	require.Len(t, tools, 2)
	gs := toolByName(t, tools, "graph_search")
	require.True(t, gs.Enabled, "tools without config are on by default")
	require.Equal(t, mcpregistry.LevelGlobal, gs.InheritedFrom)

	_, err = b.svc.UpdateTool(ctx, b.project, bid, "graph_search", mcpregistry.ToolUpdate{Config: map[string]any{"api_key": "x"}})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	_, err = b.svc.UpdateTool(ctx, b.project, bid, mcpregistry.WebSearchTool, mcpregistry.ToolUpdate{Config: map[string]any{"other": "x"}})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	_, err = b.svc.UpdateTool(ctx, b.project, bid, mcpregistry.WebSearchTool, mcpregistry.ToolUpdate{})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	_, err = b.svc.UpdateTool(ctx, b.project, bid, "nope", mcpregistry.ToolUpdate{Enabled: ptr(true)})
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
	_, err = b.svc.PutOrgToolSetting(ctx, b.org, "nope", ptr(true), nil)
	require.Equal(t, errs.NotFound, errs.CodeOf(err))

	gs, err = b.svc.UpdateTool(ctx, b.project, bid, gs.ID.String(), mcpregistry.ToolUpdate{Enabled: ptr(false)})
	require.NoError(t, err)
	require.False(t, gs.Enabled)
	require.Equal(t, mcpregistry.LevelProject, gs.InheritedFrom)
}

// Concurrent first PUTs of one setting all succeed and leave a setting
// that opens (each was sealed for the same place: its natural key). A
// barrier holds both first writes of a level after each found no row,
// so both insert a row of their own id and the second's upsert lands on
// the first's row: a config sealed for the row id would not open.
func TestToolSettingConcurrentPuts(t *testing.T) {
	t.Parallel()
	brave := mcptest.NewBrave(t)
	var arrived atomic.Int32
	var release chan struct{} // closed by the second first write of a race
	b := setup(t, func(c *mcpregistry.Config) {
		c.WebSearchBaseURL = brave.URL
		mcpregistry.BeforeFirstSettingWrite(c, func(string) {
			if arrived.Add(1) == 2 {
				close(release)
			}
			select {
			case <-release:
			case <-time.After(time.Minute):
				// Not a timing assumption: only a change that serialises
				// first writes gets here, and the arrival count then
				// fails the test instead of hanging it.
			}
		})
	})
	ctx := context.Background()
	builtin, _, err := b.svc.ListServers(ctx, b.project, 50, 0)
	require.NoError(t, err)
	bid := builtin[0].ID
	_, err = b.svc.Tools(ctx, b.project, bid) // the catalogue rows exist before the race
	require.NoError(t, err)

	// race runs two first PUTs of one setting, both past their read
	// before either writes.
	race := func(put func(key string) error, prefix string) {
		t.Helper()
		arrived.Store(0)
		release = make(chan struct{})
		var wg sync.WaitGroup
		errc := make(chan error, 2)
		for i := range 2 {
			wg.Go(func() { errc <- put(fmt.Sprintf("%s-%d", prefix, i)) })
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			require.NoError(t, err)
		}
		require.EqualValues(t, 2, arrived.Load(), "both PUTs were first writes")
	}

	race(func(key string) error {
		_, err := b.svc.PutOrgToolSetting(ctx, b.org, mcpregistry.WebSearchTool, nil, map[string]any{"api_key": key})
		return err
	}, "org-key")
	list, err := b.svc.OrgToolSettings(ctx, b.org)
	require.NoError(t, err, "the org setting opens")
	require.Len(t, list, 1)

	race(func(key string) error {
		_, err := b.svc.UpdateTool(ctx, b.project, bid, mcpregistry.WebSearchTool, mcpregistry.ToolUpdate{Config: map[string]any{"api_key": key}})
		return err
	}, "project-key")
	e, err := b.svc.EffectiveSetting(ctx, b.project, mcpregistry.WebSearchTool)
	require.NoError(t, err, "the project setting opens")
	require.Equal(t, mcpregistry.LevelProject, e.InheritedFrom)
	require.Regexp(t, `^project-key-[01]$`, e.APIKey)
	require.NoError(t, b.svc.DeleteProjectToolSetting(ctx, b.project, mcpregistry.WebSearchTool))
	e, err = b.svc.EffectiveSetting(ctx, b.project, mcpregistry.WebSearchTool)
	require.NoError(t, err)
	require.Equal(t, mcpregistry.LevelOrg, e.InheritedFrom)
	require.Regexp(t, `^org-key-[01]$`, e.APIKey)
}

// Settings sealed before issue 11 (bound to their row id) still open, and
// the next change seals them for their natural key.
func TestToolSettingSealedByRowID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	box, err := secrets.New(testKey)
	require.NoError(t, err)
	id := uuid.Must(uuid.NewV7())
	old := box.Seal([]byte(`{"api_key":"legacy-org-key"}`), secrets.Place("mcp_org_tool_settings", "config", id.String()))
	_, err = b.pool.Exec(ctx, `INSERT INTO mcp_org_tool_settings (id, org_id, tool_name, enabled, config_sealed, created_at, updated_at)
		VALUES ($1, $2, 'web_search', true, $3, now(), now())`, id, b.org, old)
	require.NoError(t, err)
	e, err := b.svc.EffectiveSetting(ctx, b.project, mcpregistry.WebSearchTool)
	require.NoError(t, err)
	require.Equal(t, "legacy-org-key", e.APIKey)

	_, err = b.svc.PutOrgToolSetting(ctx, b.org, mcpregistry.WebSearchTool, ptr(true), nil)
	require.NoError(t, err)
	var sealed string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT config_sealed FROM mcp_org_tool_settings WHERE id = $1`, id).Scan(&sealed))
	require.NotEqual(t, old, sealed, "re-sealed for the natural key")
	e, err = b.svc.EffectiveSetting(ctx, b.project, mcpregistry.WebSearchTool)
	require.NoError(t, err)
	require.Equal(t, "legacy-org-key", e.APIKey)
}
