package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// revocationBound is how soon an open stream must end once its credential
// or membership is gone ("within seconds"; the periodic re-check runs every
// auth.RecheckInterval).
const revocationBound = 6 * time.Second

// revStream is an open streaming response: ended is closed when its body
// ends (the server closed it).
type revStream struct {
	ended chan struct{}
}

// openRevStream sends a streaming GET and returns once the server
// answered 200; first is the body's first line.
func openRevStream(t *testing.T, s *testServer, path, token string, hs ...header) (*revStream, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", s.base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	for _, h := range hs {
		req.Header.Set(h.k, h.v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode, "GET %s", path)
	st := &revStream{ended: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		defer close(st.ended)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	first := ""
	if path != "/api/mcp" {
		select {
		case first = <-lines:
		case <-time.After(5 * time.Second):
			t.Fatalf("GET %s: nothing within 5s", path)
		}
	}
	return st, first
}

// requireEnds waits for the stream to end within revocationBound.
func (st *revStream) requireEnds(t *testing.T, what string) {
	t.Helper()
	select {
	case <-st.ended:
	case <-time.After(revocationBound):
		t.Fatalf("%s still open %s after the change", what, revocationBound)
	}
}

// revMCPSession opens a streamable MCP session (initialize, initialized)
// and its standalone GET stream; it returns the session id.
func revMCPSession(t *testing.T, s *testServer, token string) (string, *revStream) {
	t.Helper()
	r := s.must(200, "POST", "/api/mcp", token, mcpSrvInit, mcpSrvAccept)
	sid := r.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	proto := header{"Mcp-Protocol-Version", "2025-06-18"}
	s.must(202, "POST", "/api/mcp", token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, mcpSrvAccept, header{"Mcp-Session-Id", sid}, proto)
	st, _ := openRevStream(t, s, "/api/mcp", token, header{"Mcp-Session-Id", sid}, proto)
	return sid, st
}

// TestRevocationEndsOpenStreams: revoking or expiring a token, deleting its
// user or removing the user's membership ends, within seconds, the user's
// event stream, open streamable MCP sessions (their GET stream ends and
// the next request fails) and MCP SSE transport streams; and no event
// published after the change reaches the user, even before the stream is
// closed.
func TestRevocationEndsOpenStreams(t *testing.T) {
	t.Parallel()
	cases := map[string]func(s, other *testServer, project, user, tokenID string){
		"RevokeToken": func(s, _ *testServer, project, _, tokenID string) {
			s.must(204, "DELETE", "/api/projects/"+project+"/tokens/"+tokenID, s.admin, nil)
		},
		"TokenExpiry": func(s, other *testServer, _, _, _ string) {
			// Both processes' clocks: real time passes for both.
			other.clock.Advance(2 * time.Hour)
			s.clock.Advance(2 * time.Hour)
		},
		"DeleteUser": func(s, _ *testServer, _, user, _ string) {
			s.must(200, "DELETE", "/api/superadmin/users/"+user, s.admin, nil)
		},
		"RemoveMembership": func(s, _ *testServer, project, user, _ string) {
			s.must(204, "DELETE", "/api/projects/"+project+"/members/"+user, s.admin, nil)
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			project, _ := s.defaultProject()
			projectID := uuid.MustParse(project)
			// The second process on the same database sees the change
			// through the authz notification.
			other := startServer(t, s.dbURL)
			user, _ := s.newUser(strings.ToLower(name)+"@example.com", []string{"admin:read"}, "")
			s.addMember(project, user, "viewer")
			var tok struct {
				ID    string `json:"id"`
				Token string `json:"token"`
			}
			s.must(201, "POST", "/api/superadmin/users/"+user+"/tokens", s.admin, map[string]any{
				"name": "streams", "scopes": []string{"notifications:read", "graph:read", "mcp:use"}, "projectId": project,
				"expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			}).Decode(t, &tok)

			frames, _ := s.openStream(tok.Token, 0)
			otherFrames, _ := other.openStream(tok.Token, 0)
			witness, _ := s.openStream(s.admin, 0)
			require.Eventually(t, func() bool { return s.m.hub.Clients() == 2 && other.m.hub.Clients() == 1 }, 5*time.Second, 10*time.Millisecond)
			sse, first := openRevStream(t, s, "/api/mcp/sse/"+project, tok.Token)
			require.Equal(t, "event: endpoint", first)
			sid, get := revMCPSession(t, s, tok.Token)
			mcpList := func() response {
				return s.do("POST", "/api/mcp", tok.Token, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, mcpSrvAccept,
					header{"Mcp-Session-Id", sid}, header{"Mcp-Protocol-Version", "2025-06-18"})
			}
			require.Equal(t, 200, mcpList().Status)

			change(s, other, project, user, tok.ID)
			// Published after the change: the witness gets it, the user
			// must not, whether or not its stream is closed by then.
			id := s.publish("test.revocation", &projectID, nil, map[string]any{})
			require.Equal(t, id, nextEvent(t, witness).ID)

			for what, fr := range map[string]<-chan sseFrame{"event stream": frames, "event stream of the other process": otherFrames} {
				deadline := time.After(revocationBound)
			drain:
				for {
					select {
					case f, ok := <-fr:
						if !ok {
							break drain
						}
						require.NotEqual(t, id, f.ID, "%s delivered an event published after the change", what)
					case <-deadline:
						t.Fatalf("%s still open %s after the change", what, revocationBound)
					}
				}
			}
			sse.requireEnds(t, "MCP SSE transport stream")
			get.requireEnds(t, "MCP session GET stream")
			r := mcpList()
			require.GreaterOrEqual(t, r.Status, 400, "%s", r.Body)

			if name == "RemoveMembership" {
				// Back in the project, the token works again, but the old
				// session was closed, not only refused.
				s.addMember(project, user, "viewer")
				require.Equal(t, 404, mcpList().Status)
				s.must(200, "POST", "/api/mcp", tok.Token, mcpSrvInit, mcpSrvAccept)
			}
			require.Eventually(t, func() bool { return s.m.hub.Clients() == 1 && other.m.hub.Clients() == 0 }, 5*time.Second, 10*time.Millisecond)
		})
	}
}
