package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

// TestConsoleBrowserIntegrations drives the MCP server, integration and
// discovery pages in chromium (testdata/console-browser/integrations.mjs):
// an MCP server of the test (mcptest, a secret header) added and its
// tools synced, inspected and one disabled; an integration of the test's
// notes connector added and synced, the sync seen pending then completed
// through the event stream, with its log; a document uploaded, a
// discovery started on it and seen completed live, and finalized into
// an installed template pack. Screenshots of each page.
func TestConsoleBrowserIntegrations(t *testing.T) {
	t.Parallel()
	const secret = "Bearer browser-secret-3141"
	remote := mcptest.NewServer("echo", "add")
	ts := mcptest.Streamable(t, remote, "Authorization", secret)
	s := mainServer(t, func(m *Main) {
		m.Connectors = append(m.Connectors, notesSource{notes: map[string]string{"n1": "# One\n\nFirst note.", "n2": "# Two\n\nSecond note."}})
		mcpRegLoopback(&m.Config)
	})
	project, _ := s.defaultProject()
	// The sync and discovery queues wait until the script has seen their
	// jobs pending.
	require.NoError(t, s.m.jobs.Pause(t.Context(), integration.Queue))
	require.NoError(t, s.m.jobs.Pause(t.Context(), discovery.Queue))

	out, shots := runConsoleScript(t, s, "integrations.mjs", project, []string{ts.URL, secret}, func(name string) string {
		switch name {
		case "resume-sync":
			require.NoError(t, s.m.jobs.Resume(t.Context(), integration.Queue))
		case "embedded":
			s.waitDocument(project, consoleDocID(t, s, project, "team.md"))
		case "resume-discovery":
			require.NoError(t, s.m.jobs.Resume(t.Context(), discovery.Queue))
		default:
			t.Errorf("unknown step %q", name)
		}
		return "ok"
	})

	var report struct {
		Pages                  []string `json:"pages"`
		Sections               []string `json:"sections"`
		MCPServerPath          string   `json:"mcpServerPath"`
		MCPSecretShown         bool     `json:"mcpSecretShown"`
		MCPListSecretShown     bool     `json:"mcpListSecretShown"`
		MCPSynced              string   `json:"mcpSynced"`
		MCPTools               []string `json:"mcpTools"`
		MCPLive                []string `json:"mcpLive"`
		MCPServers             []string `json:"mcpServers"`
		IntegrationSecretShown bool     `json:"integrationSecretShown"`
		SyncNotReloaded        bool     `json:"syncNotReloaded"`
		SyncRow                string   `json:"syncRow"`
		SyncLog                []string `json:"syncLog"`
		Integrations           []string `json:"integrations"`
		DiscoveryPath          string   `json:"discoveryPath"`
		DiscoveryNotReloaded   bool     `json:"discoveryNotReloaded"`
		Types                  []string `json:"types"`
		Finalized              string   `json:"finalized"`
		DiscoveryRows          []string `json:"discoveryRows"`
	}
	require.NoError(t, json.Unmarshal(out, &report), "report: %s", out)
	require.Equal(t, []string{
		"mcp-server", "mcp-servers", "integration-new", "integration", "sync", "integrations",
		"discovery-new", "discovery-job", "discovery-finalized", "discovery",
	}, report.Pages)
	requireScreenshots(t, shots, report.Pages)
	require.Subset(t, report.Sections, []string{"MCP servers", "Integrations", "Schema discovery"})

	// MCP: the server added with its header sealed, never shown; its
	// tools synced, add disabled.
	require.False(t, report.MCPSecretShown)
	require.False(t, report.MCPListSecretShown)
	require.Equal(t, "Synced: 2 added, 0 updated, 0 removed.", report.MCPSynced)
	require.Equal(t, []string{"add", "echo"}, report.MCPTools)
	require.Equal(t, []string{"add", "echo"}, report.MCPLive)
	require.Equal(t, []string{"Graphmill", "notes"}, report.MCPServers)
	servers := mcpRegServers(t, s, s.admin, "?projectId="+project)
	require.Len(t, servers, 2)
	notes := servers[1]
	require.Equal(t, "/projects/"+project+"/mcp/"+notes.ID, report.MCPServerPath)
	require.Equal(t, map[string]string{"Authorization": "***"}, notes.Headers)
	enabled := map[string]bool{}
	for _, tool := range mcpRegTools(t, s, s.admin, notes.ID) {
		enabled[tool.ToolName] = tool.Enabled
	}
	require.Equal(t, map[string]bool{"add": false, "echo": true}, enabled)

	// Integration: created, synced to completion live, the notes stored.
	require.False(t, report.IntegrationSecretShown)
	require.True(t, report.SyncNotReloaded, "the integration page was reloaded")
	require.Contains(t, report.SyncRow, "manual")
	require.Contains(t, report.SyncRow, "2 / 0 / 0 / 0 / 0")
	require.NotEmpty(t, report.SyncLog)
	require.Equal(t, []string{"integration-kb"}, report.Integrations)
	in := s.must(200, "GET", "/api/integrations/kb", s.admin, nil, header{"X-Project-ID", project}).JSON(t)
	require.Equal(t, "completed", in["last_sync_status"])
	for _, name := range []string{"n1.md", "n2.md"} {
		consoleDocID(t, s, project, name)
	}

	// Discovery: completed live, finalized into an installed pack.
	require.True(t, report.DiscoveryNotReloaded, "the discovery page was reloaded")
	require.NotEmpty(t, report.Types)
	id := strings.TrimPrefix(report.DiscoveryPath, "/projects/"+project+"/discovery/")
	j := s.discGet(project, id)
	require.Equal(t, "completed", j.Status)
	require.NotEmpty(t, j.TemplatePackID)
	require.Contains(t, report.Finalized, j.TemplatePackID)
	require.Equal(t, []string{"completed"}, report.DiscoveryRows)
	var pack struct {
		Name        string `json:"name"`
		ObjectTypes []struct {
			Name string `json:"name"`
		} `json:"objectTypes"`
	}
	s.must(200, "GET", "/api/template-packs/"+j.TemplatePackID, s.admin, nil, header{"X-Project-ID", project}).Decode(t, &pack)
	require.Equal(t, "Team types", pack.Name)
	var names []string
	for _, o := range pack.ObjectTypes {
		names = append(names, o.Name)
	}
	require.ElementsMatch(t, report.Types, names, "every proposed type included")
}
