package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
)

// TestMCPServerErrorsAreProblems: the error answers go-sdk writes itself
// (plain text there) reach clients of the API listener as problem+json
// with code and requestId, the SDK's text as detail, like every other
// error of the API.
func TestMCPServerErrorsAreProblems(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	stateless := newServer(t, func(c *config.Config) { c.MCPStateless = true })
	project, _ := s.defaultProject()
	token := mcpSrvProjectToken(s, project, allScopes)
	statelessProject, _ := stateless.defaultProject()
	statelessToken := mcpSrvProjectToken(stateless, statelessProject, allScopes)
	proto := header{"Mcp-Protocol-Version", "2025-06-18"}

	// An SSE transport stream, to post a malformed message into.
	endpoint := openSSEEndpoint(t, s, project, token)

	cases := []struct {
		name   string
		send   func() response
		status int
		code   string
		detail string
	}{
		{
			name: "UnknownSession",
			send: func() response {
				return s.do("POST", "/api/mcp", token, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, mcpSrvAccept,
					header{"Mcp-Session-Id", "no-such-session"}, proto)
			},
			status: 404, code: "not_found", detail: "session not found",
		},
		{
			name: "BadAccept",
			send: func() response {
				return s.do("POST", "/api/mcp", token, mcpSrvInit, header{"Accept", "application/json"})
			},
			status: 400, code: "invalid_argument", detail: "Accept must contain both 'application/json' and 'text/event-stream'",
		},
		{
			name: "BadProtocolVersion",
			send: func() response {
				return s.do("POST", "/api/mcp", token, mcpSrvInit, mcpSrvAccept, header{"Mcp-Protocol-Version", "1999-01-01"})
			},
			status: 400, code: "invalid_argument", detail: "Bad Request: Unsupported protocol version",
		},
		{
			name: "DeleteWithoutSession",
			send: func() response {
				return s.do("DELETE", "/api/mcp", token, nil, proto)
			},
			status: 400, code: "invalid_argument", detail: "Bad Request: DELETE requires an Mcp-Session-Id header",
		},
		{
			name: "StatelessGet",
			send: func() response {
				return stateless.do("GET", "/api/mcp", statelessToken, nil, header{"Accept", "text/event-stream"}, header{"Mcp-Session-Id", "x"})
			},
			status: 405, code: "invalid_argument", detail: "Method Not Allowed",
		},
		{
			name: "MalformedSSEMessage",
			send: func() response {
				// An unknown session id is ours (already a problem); a
				// malformed body posted to a live one is the SDK's.
				return s.do("POST", endpoint, token, `{"jsonrpc":`)
			},
			status: 400, code: "invalid_argument", detail: "failed to parse body",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.send()
			p := requireProblem(t, r, c.status, c.code, c.name)
			require.Contains(t, p["detail"], c.detail)
			require.NotContains(t, p["detail"], "\n", "the SDK's text is trimmed")
			require.Equal(t, float64(c.status), p["status"])
			require.NotEmpty(t, p["title"])
		})
	}
}

// openSSEEndpoint opens an MCP SSE transport stream for project, kept open
// until the test ends, and returns the endpoint its first event names.
func openSSEEndpoint(t *testing.T, s *testServer, project, token string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", s.base+"/api/mcp/sse/"+project, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	require.Equal(t, 200, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if endpoint, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			require.True(t, strings.HasPrefix(endpoint, "/api/mcp/sse/"+project+"?sessionid="), endpoint)
			return endpoint
		}
	}
	t.Fatalf("the SSE stream ended before naming its endpoint: %v", sc.Err())
	return ""
}
