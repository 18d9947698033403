package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleListPagers: the project list pages read through projectList
// (agents, integrations, MCP servers, documents) page their lists by
// PageSize under their own path: the first page of 51 (the MCP servers:
// 50 and the built-in one) shows 50 with Next to offset 50, the second
// the last one with Previous back to the page itself.
func TestConsoleListPagers(t *testing.T) {
	t.Parallel()
	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	for i := range 51 {
		name := fmt.Sprintf("n%02d", i)
		s.agentCreate(s.admin, project, map[string]any{"name": name, "instructions": "x", "tools": []string{"search"}})
		s.createIntegration(project, name, "web", map[string]any{"start_urls": []string{"http://127.0.0.1:9/"}})
		if i < 50 {
			s.must(201, "POST", "/api/admin/mcp-servers", s.admin, map[string]any{"name": name, "type": "http", "url": "https://mcp.example.com/mcp"}, hp)
		}
		s.uploadFile(s.admin, project, name+".txt", "text/plain", []byte("Page "+name+"."))
	}

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	for _, path := range []string{"/agents", "/integrations", "/mcp", "/documents"} {
		base := "/projects/" + project + path
		status, _, page := b.do("GET", base, nil)
		require.Equal(t, 200, status, path)
		require.True(t, strings.Contains(page, "1–50 of 51"), path)
		require.True(t, strings.Contains(page, `<a href="`+base+`?offset=50">Next</a>`), path)
		require.False(t, strings.Contains(page, ">Previous</a>"), path)

		status, _, page = b.do("GET", base+"?offset=50", nil)
		require.Equal(t, 200, status, path)
		require.True(t, strings.Contains(page, "51–51 of 51"), path)
		require.True(t, strings.Contains(page, `<a href="`+base+`">Previous</a>`), path)
		require.False(t, strings.Contains(page, ">Next</a>"), path)
	}
}
