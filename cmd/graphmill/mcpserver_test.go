package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
	"github.com/graphmill/graphmill/internal/mcpserver"
)

// mcpSrvHeaders adds headers (the bearer token, X-Project-ID, Origin) to
// every request of an MCP client.
type mcpSrvHeaders struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h mcpSrvHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

func mcpSrvHTTPClient(token string, extra ...header) *http.Client {
	hs := map[string]string{"Authorization": "Bearer " + token}
	for _, h := range extra {
		hs[h.k] = h.v
	}
	return &http.Client{Transport: mcpSrvHeaders{headers: hs, base: http.DefaultTransport}}
}

// mcpSrvConnect opens a go-sdk client session over the streamable transport.
func mcpSrvConnect(t *testing.T, s *testServer, token string, extra ...header) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: s.base + "/api/mcp", HTTPClient: mcpSrvHTTPClient(token, extra...), MaxRetries: -1}
	return mcpSrvOpen(t, tr)
}

// mcpSrvConnectSSE opens a go-sdk client session over the SSE transport.
func mcpSrvConnectSSE(t *testing.T, s *testServer, token, project string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.SSEClientTransport{Endpoint: s.base + "/api/mcp/sse/" + project, HTTPClient: mcpSrvHTTPClient(token)}
	return mcpSrvOpen(t, tr)
}

func mcpSrvOpen(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	// The SSE transport ties its stream to this context: it lives as long
	// as the test.
	c := mcp.NewClient(&mcp.Implementation{Name: "graphmill-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func mcpSrvToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	names := make([]string, len(res.Tools))
	for i, tool := range res.Tools {
		names[i] = tool.Name
		require.NotNil(t, tool.InputSchema, tool.Name)
	}
	sort.Strings(names)
	return names
}

// mcpSrvCall calls a tool and returns its result; a protocol error fails
// the test.
func mcpSrvCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	return res
}

// mcpSrvOK calls a tool that must succeed and decodes its structured
// content into out; the text content must carry the same JSON.
func mcpSrvOK(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res := mcpSrvCall(t, cs, name, args)
	require.False(t, res.IsError, "%s: %s", name, mcpSrvText(res))
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, out), "%s: %s", name, raw)
	require.JSONEq(t, string(raw), mcpSrvText(res), "the text content renders the structured content")
}

// mcpSrvErr calls a tool that must fail with a tool error and returns its
// message.
func mcpSrvErr(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res := mcpSrvCall(t, cs, name, args)
	require.True(t, res.IsError, "%s must fail: %s", name, mcpSrvText(res))
	return mcpSrvText(res)
}

func mcpSrvText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// mcpSrvProjectToken mints a token of the admin bound to project.
func mcpSrvProjectToken(s *testServer, project string, scopes []string) string {
	s.t.Helper()
	var tok struct {
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/projects/"+project+"/tokens", s.admin, map[string]any{"name": "mcp", "scopes": scopes}).Decode(s.t, &tok)
	return tok.Token
}

// mcpSrvInit is a raw initialize request body.
const mcpSrvInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

var mcpSrvAccept = header{"Accept", "application/json, text/event-stream"}

type mcpSrvObject struct {
	ID          string         `json:"id"`
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Labels      []string       `json:"labels"`
	Properties  map[string]any `json:"properties"`
}

type mcpSrvRel struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	SourceID string `json:"sourceId"`
	TargetID string `json:"targetId"`
}

// mcpSrvAllTools is what a caller with every scope sees; web_search is
// missing while no key is configured at any level.
var mcpSrvAllTools = []string{
	"agent_run_answer", "agent_run_get", "agents_list", "agents_run", "chat_send", "chat_sessions_list", "documents_get", "documents_list", "documents_upload_text",
	"graph_create_object", "graph_create_relationship", "graph_get_object", "graph_list_relationships",
	"graph_neighbors", "graph_search_objects", "graph_update_object", "mcp-servers/call", "mcp-servers/list", "search",
}

func TestMCPServerGraphAndDocumentsOverStreamable(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	cs := mcpSrvConnect(t, s, s.admin, header{"X-Project-ID", project})

	init := cs.InitializeResult()
	require.Equal(t, "graphmill", init.ServerInfo.Name)
	require.NotNil(t, init.Capabilities.Tools)
	require.Equal(t, mcpSrvAllTools, mcpSrvToolNames(t, cs), "web_search is not listed without a key")

	// Schemas are precise: required members, enums, bounds, no extras.
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		raw, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var schema map[string]any
		require.NoError(t, json.Unmarshal(raw, &schema))
		require.Equal(t, "object", schema["type"], tool.Name)
		switch tool.Name {
		case "graph_create_object":
			require.ElementsMatch(t, []any{"type", "name"}, schema["required"])
			props := schema["properties"].(map[string]any)
			require.Equal(t, []any{"accepted", "suggested"}, props["status"].(map[string]any)["enum"])
			require.InDelta(t, 1.0, props["confidence"].(map[string]any)["maximum"], 0)
		case "search":
			props := schema["properties"].(map[string]any)
			require.Equal(t, []any{"keyword", "vector", "hybrid"}, props["mode"].(map[string]any)["enum"])
			require.InDelta(t, 100.0, props["limit"].(map[string]any)["maximum"], 0)
		}
	}

	var ada, acme mcpSrvObject
	mcpSrvOK(t, cs, "graph_create_object", map[string]any{
		"type": "Person", "name": "Ada Lovelace", "description": "Wrote the first program", "labels": []string{"pioneer"},
	}, &ada)
	require.Equal(t, "Person", ada.Type)
	mcpSrvOK(t, cs, "graph_create_object", map[string]any{"type": "Organization", "name": "Analytical Engines Ltd"}, &acme)
	require.Contains(t, mcpSrvErr(t, cs, "graph_create_object", map[string]any{"type": "Person", "name": "ada  LOVELACE!"}),
		"already exists: "+ada.ID, "a conflict names the existing object")
	require.Contains(t, mcpSrvErr(t, cs, "graph_create_object", map[string]any{"type": "Spaceship", "name": "x"}), "Spaceship")

	var rel mcpSrvRel
	mcpSrvOK(t, cs, "graph_create_relationship", map[string]any{"type": "WORKS_FOR", "sourceId": ada.ID, "targetId": acme.ID}, &rel)
	require.Equal(t, ada.ID, rel.SourceID)

	var updated mcpSrvObject
	mcpSrvOK(t, cs, "graph_update_object", map[string]any{"id": ada.ID, "description": "Mathematician", "labels": []string{"a", "b"}}, &updated)
	require.Equal(t, "Mathematician", updated.Description)
	require.Equal(t, "Ada Lovelace", updated.Name, "members left out stay")
	// The change is in the database, as the HTTP API shows.
	var viaAPI mcpSrvObject
	s.must(200, "GET", "/api/graph/objects/"+ada.ID, s.admin, nil, header{"X-Project-ID", project}).Decode(t, &viaAPI)
	require.Equal(t, []string{"a", "b"}, viaAPI.Labels)

	var got struct {
		Object             mcpSrvObject `json:"object"`
		Relationships      []mcpSrvRel  `json:"relationships"`
		RelationshipsTotal int          `json:"relationshipsTotal"`
	}
	mcpSrvOK(t, cs, "graph_get_object", map[string]any{"id": ada.ID}, &got)
	require.Equal(t, "Mathematician", got.Object.Description)
	require.Equal(t, 1, got.RelationshipsTotal)
	require.Equal(t, rel.ID, got.Relationships[0].ID)

	var page struct {
		Objects []mcpSrvObject `json:"objects"`
		Total   int            `json:"total"`
		Limit   int            `json:"limit"`
	}
	mcpSrvOK(t, cs, "graph_search_objects", map[string]any{"type": "Person", "text": "lovelace"}, &page)
	require.Equal(t, 1, page.Total)
	require.Equal(t, 20, page.Limit, "the default page size")
	require.Equal(t, ada.ID, page.Objects[0].ID)
	mcpSrvOK(t, cs, "graph_search_objects", map[string]any{"label": "nobody"}, &page)
	require.Equal(t, 0, page.Total)
	require.NotNil(t, page.Objects, "an empty list is []")

	var rels struct {
		Relationships []mcpSrvRel `json:"relationships"`
		Total         int         `json:"total"`
	}
	mcpSrvOK(t, cs, "graph_list_relationships", map[string]any{"targetId": acme.ID}, &rels)
	require.Equal(t, 1, rels.Total)

	var nb struct {
		Object    mcpSrvObject `json:"object"`
		Neighbors []struct {
			Direction    string       `json:"direction"`
			Relationship mcpSrvRel    `json:"relationship"`
			Object       mcpSrvObject `json:"object"`
		} `json:"neighbors"`
	}
	mcpSrvOK(t, cs, "graph_neighbors", map[string]any{"id": acme.ID}, &nb)
	require.Len(t, nb.Neighbors, 1)
	require.Equal(t, "incoming", nb.Neighbors[0].Direction)
	require.Equal(t, ada.ID, nb.Neighbors[0].Object.ID)
	mcpSrvOK(t, cs, "graph_neighbors", map[string]any{"id": acme.ID, "direction": "outgoing"}, &nb)
	require.Empty(t, nb.Neighbors)
	mcpSrvOK(t, cs, "graph_neighbors", map[string]any{"id": ada.ID, "relationshipType": "FOUNDED"}, &nb)
	require.Empty(t, nb.Neighbors)

	// Tool errors are IsError results with a clear message, not protocol
	// failures; the session goes on.
	missing := uuid.NewString()
	require.Equal(t, "no object with id "+missing+" in this project", mcpSrvErr(t, cs, "graph_get_object", map[string]any{"id": missing}))
	require.Contains(t, mcpSrvErr(t, cs, "graph_update_object", map[string]any{"id": missing, "name": "x"}), "no object with id "+missing)
	require.Equal(t, "id must be a UUID", mcpSrvErr(t, cs, "graph_get_object", map[string]any{"id": "42"}))
	require.Contains(t, mcpSrvErr(t, cs, "graph_search_objects", map[string]any{"limit": 500}), "limit")
	require.Contains(t, mcpSrvErr(t, cs, "graph_search_objects", map[string]any{"status": "maybe"}), "status")
	require.Contains(t, mcpSrvErr(t, cs, "graph_get_object", map[string]any{}), "id")
	require.Contains(t, mcpSrvErr(t, cs, "graph_get_object", map[string]any{"id": ada.ID, "bogus": 1}), "bogus")
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
	require.ErrorContains(t, err, `unknown tool "no_such_tool"`)

	// Documents: upload, list, read with chunks, then search finds it.
	var doc struct {
		ID       string `json:"id"`
		Filename string `json:"filename"`
		MimeType string `json:"mimeType"`
		Status   string `json:"status"`
	}
	text := "# Engines\n\nThe analytical engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves."
	mcpSrvOK(t, cs, "documents_upload_text", map[string]any{"filename": "engines.md", "content": text}, &doc)
	require.Equal(t, "text/markdown", doc.MimeType, "the media type follows the extension")
	require.Equal(t, "parsing", doc.Status)
	require.Equal(t, "parsed", s.waitDocument(project, doc.ID).Status)

	var docs struct {
		Documents []struct {
			ID string `json:"id"`
		} `json:"documents"`
		Total int `json:"total"`
	}
	mcpSrvOK(t, cs, "documents_list", nil, &docs)
	require.Equal(t, 1, docs.Total)
	require.Equal(t, doc.ID, docs.Documents[0].ID)

	var full struct {
		Document struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"document"`
		Chunks []struct {
			Index int    `json:"index"`
			Text  string `json:"text"`
		} `json:"chunks"`
		ChunksTotal int `json:"chunksTotal"`
	}
	mcpSrvOK(t, cs, "documents_get", map[string]any{"id": doc.ID}, &full)
	require.Equal(t, "parsed", full.Document.Status)
	require.GreaterOrEqual(t, full.ChunksTotal, 1)
	require.Contains(t, full.Chunks[0].Text, "Jacquard")
	mcpSrvOK(t, cs, "documents_get", map[string]any{"id": doc.ID, "chunkLimit": 0}, &full)
	require.Empty(t, full.Chunks)
	require.Contains(t, mcpSrvErr(t, cs, "documents_get", map[string]any{"id": missing}), "no document with id "+missing)
	require.Contains(t, mcpSrvErr(t, cs, "documents_upload_text", map[string]any{"filename": "x.txt", "content": "hi", "mimeType": "image/png"}), "mimeType")

	var found struct {
		Mode string `json:"mode"`
		Data []struct {
			Target     string `json:"target"`
			ID         string `json:"id"`
			DocumentID string `json:"documentId"`
			Snippet    string `json:"snippet"`
		} `json:"data"`
	}
	mcpSrvOK(t, cs, "search", map[string]any{"query": "jacquard loom", "mode": "keyword", "targets": []string{"chunks"}}, &found)
	require.Equal(t, "keyword", found.Mode)
	require.NotEmpty(t, found.Data)
	require.Equal(t, "chunk", found.Data[0].Target)
	require.Equal(t, doc.ID, found.Data[0].DocumentID)
	mcpSrvOK(t, cs, "search", map[string]any{"query": "lovelace", "mode": "keyword", "targets": []string{"objects"}}, &found)
	require.Len(t, found.Data, 1)
	require.Equal(t, ada.ID, found.Data[0].ID)
	require.Contains(t, mcpSrvErr(t, cs, "search", map[string]any{"query": "x", "targets": []string{"people"}}), "targets")
	require.Contains(t, mcpSrvErr(t, cs, "search", map[string]any{"query": "x", "documentIds": []string{"nope"}}), "documentIds")
}

func TestMCPServerToolsFollowScopesAndRoles(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()

	// A viewer whose token holds only graph:read sees only the graph
	// read tools.
	reader, readToken := s.newUser("reader@example.com", []string{"graph:read"}, project)
	s.addMember(project, reader, "viewer")
	cs := mcpSrvConnect(t, s, readToken)
	require.Equal(t, []string{"graph_get_object", "graph_list_relationships", "graph_neighbors", "graph_search_objects"}, mcpSrvToolNames(t, cs))
	var page struct {
		Total int `json:"total"`
	}
	mcpSrvOK(t, cs, "graph_search_objects", nil, &page)
	// Calling a hidden tool is a tool error naming the reason; nothing is
	// created.
	require.Equal(t, "tool graph_create_object needs the scope graph:write, which this token lacks",
		mcpSrvErr(t, cs, "graph_create_object", map[string]any{"type": "Person", "name": "Eve"}))
	require.Contains(t, mcpSrvErr(t, cs, "search", map[string]any{"query": "x"}), "search:read")
	s.must(200, "GET", "/api/graph/objects", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &page)
	require.Equal(t, 0, page.Total)

	// Scopes are not enough: writing needs the editor role.
	viewer, viewerToken := s.newMember("viewer@example.com", []string{"graph:read", "graph:write", "documents:read", "documents:write"}, project, "viewer")
	cs = mcpSrvConnect(t, s, viewerToken, header{"X-Project-ID", project})
	require.Equal(t, []string{"documents_get", "documents_list", "graph_get_object", "graph_list_relationships", "graph_neighbors", "graph_search_objects"},
		mcpSrvToolNames(t, cs))
	require.Equal(t, "tool documents_upload_text needs the project role editor or higher; yours is viewer",
		mcpSrvErr(t, cs, "documents_upload_text", map[string]any{"filename": "a.txt", "content": "x"}))

	// A role change shows at the next request of the same session.
	s.must(200, "POST", "/api/projects/"+project+"/members", s.admin, map[string]any{"userId": viewer, "role": "editor"})
	require.Eventually(t, func() bool {
		return slices.Contains(mcpSrvToolNames(t, cs), "graph_create_object")
	}, 10*time.Second, 50*time.Millisecond)
	var obj mcpSrvObject
	mcpSrvOK(t, cs, "graph_create_object", map[string]any{"type": "Person", "name": "Eve"}, &obj)

	// The same over an SSE stream: each message is authorised afresh.
	sseUser, sseToken := s.newUser("sse@example.com", []string{"graph:read", "graph:write"}, project)
	s.addMember(project, sseUser, "viewer")
	sse := mcpSrvConnectSSE(t, s, sseToken, project)
	require.NotContains(t, mcpSrvToolNames(t, sse), "graph_create_object")
	s.must(200, "POST", "/api/projects/"+project+"/members", s.admin, map[string]any{"userId": sseUser, "role": "editor"})
	require.Eventually(t, func() bool {
		return slices.Contains(mcpSrvToolNames(t, sse), "graph_create_object")
	}, 10*time.Second, 50*time.Millisecond)
	mcpSrvOK(t, sse, "graph_create_object", map[string]any{"type": "Person", "name": "Mallory"}, &obj)
}

func TestMCPServerRefusals(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *config.Config) { c.MCPAllowedOrigins = []string{"https://app.example.com"} })
	project, org := s.defaultProject()
	post := func(token string, hs ...header) response {
		return s.do("POST", "/api/mcp", token, mcpSrvInit, append([]header{mcpSrvAccept}, hs...)...)
	}

	r := post("", header{"X-Project-ID", project})
	require.Equal(t, 401, r.Status)
	require.Equal(t, "unauthenticated", r.JSON(t)["code"])
	r = post("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", header{"X-Project-ID", project})
	require.Equal(t, 401, r.Status)
	require.Contains(t, r.Detail(t), "API tokens only")
	require.Contains(t, r.Detail(t), "OIDC")
	require.Equal(t, 401, post("gm_"+strings.Repeat("A", 43), header{"X-Project-ID", project}).Status)

	// The project: the token's, else X-Project-ID; invisible ones are 404.
	require.Equal(t, 400, post(s.admin).Status, "an account token needs X-Project-ID")
	outsider, outsiderToken := s.newUser("out@example.com", allScopes, "")
	require.NotEmpty(t, outsider)
	r = post(outsiderToken, header{"X-Project-ID", project})
	require.Equal(t, 404, r.Status)
	require.Equal(t, "not_found", r.JSON(t)["code"])
	require.Equal(t, 404, post(s.admin, header{"X-Project-ID", uuid.NewString()}).Status)
	require.Equal(t, 404, post(s.admin, header{"X-Project-ID", "not-a-uuid"}).Status)
	var other struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": "other", "orgId": org}).Decode(t, &other)
	bound := mcpSrvProjectToken(s, project, allScopes)
	require.Equal(t, 403, post(bound, header{"X-Project-ID", other.ID}).Status, "a bound token stays in its project")

	// Origins: none, the server's own (its Host's) and listed ones pass;
	// others are 403 before anything else.
	require.Equal(t, 200, post(bound).Status)
	require.Equal(t, 200, post(bound, header{"Origin", s.base}).Status, "the server's own origin (DESIGN 8a)")
	r = post(bound, header{"Origin", "https://app.example.com"})
	require.Equal(t, 200, r.Status)
	require.Equal(t, "https://app.example.com", r.Header.Get("Access-Control-Allow-Origin"))
	for _, o := range []string{"https://evil.example.com", "null", "http://127.0.0.1:1"} {
		r = post(bound, header{"Origin", o})
		require.Equal(t, 403, r.Status, o)
		require.Contains(t, r.Detail(t), "GRAPHMILL_MCP_ALLOWED_ORIGINS")
	}
	require.Equal(t, 403, post("", header{"Origin", "https://evil.example.com"}).Status)
	r = s.do("OPTIONS", "/api/mcp", "", nil, header{"Origin", "https://app.example.com"}, header{"Access-Control-Request-Method", "POST"})
	require.Equal(t, 204, r.Status)
	require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id")

	// A session belongs to the token and project that opened it.
	r = post(bound)
	sid := r.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	r = s.do("POST", "/api/mcp", s.admin, list, mcpSrvAccept, header{"Mcp-Session-Id", sid}, header{"X-Project-ID", project},
		header{"Mcp-Protocol-Version", "2025-06-18"})
	require.Equal(t, 403, r.Status, "%s", r.Body)
	r = s.do("DELETE", "/api/mcp", bound, nil, header{"Mcp-Session-Id", sid})
	require.Equal(t, 204, r.Status, "%s", r.Body)
	r = s.do("POST", "/api/mcp", bound, list, mcpSrvAccept, header{"Mcp-Session-Id", sid}, header{"Mcp-Protocol-Version", "2025-06-18"})
	require.Equal(t, 404, r.Status, "a deleted session is gone")
}

func TestMCPServerSSE(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	token := mcpSrvProjectToken(s, project, []string{"graph:read", "graph:write", "search:read"})

	cs := mcpSrvConnectSSE(t, s, token, project)
	require.Equal(t, []string{
		"graph_create_object", "graph_create_relationship", "graph_get_object", "graph_list_relationships",
		"graph_neighbors", "graph_search_objects", "graph_update_object", "search",
	}, mcpSrvToolNames(t, cs))
	var obj mcpSrvObject
	mcpSrvOK(t, cs, "graph_create_object", map[string]any{"type": "Concept", "name": "Difference engine"}, &obj)
	var got struct {
		Object mcpSrvObject `json:"object"`
	}
	mcpSrvOK(t, cs, "graph_get_object", map[string]any{"id": obj.ID}, &got)
	require.Equal(t, "Difference engine", got.Object.Name)
	var found struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	mcpSrvOK(t, cs, "search", map[string]any{"query": "difference", "mode": "keyword"}, &found)
	require.Len(t, found.Data, 1)
	require.Equal(t, obj.ID, found.Data[0].ID)
	require.Contains(t, mcpSrvErr(t, cs, "documents_list", nil), "documents:read")
	require.Contains(t, mcpSrvErr(t, cs, "graph_get_object", map[string]any{"id": uuid.NewString()}), "no object with id")

	// Only a token bound to exactly this project opens the stream.
	get := func(token, project string) response {
		return s.do("GET", "/api/mcp/sse/"+project, token, nil, header{"Accept", "text/event-stream"})
	}
	require.Equal(t, 401, get("", project).Status)
	r := get(s.admin, project)
	require.Equal(t, 403, r.Status)
	require.Contains(t, r.Detail(t), "project-scoped API token")
	var other struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": "other", "orgId": org}).Decode(t, &other)
	require.Equal(t, 403, get(mcpSrvProjectToken(s, other.ID, allScopes), project).Status)
	require.Equal(t, 404, get(token, uuid.NewString()).Status)

	// Messages go only to a live session of the same token.
	msg := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	require.Equal(t, 404, s.do("POST", "/api/mcp/sse/"+project+"?sessionid=nope", token, msg).Status)
	require.Equal(t, 400, s.do("POST", "/api/mcp/sse/"+project, token, msg).Status)
}

func TestMCPServerSSEMessagesNeedTheStreamsToken(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	token := mcpSrvProjectToken(s, project, []string{"graph:read"})
	other := mcpSrvProjectToken(s, project, []string{"graph:read"})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.base+"/api/mcp/sse/"+project, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	buf := make([]byte, 512)
	n, err := res.Body.Read(buf)
	require.NoError(t, err)
	first := string(buf[:n])
	require.Contains(t, first, "event: endpoint")
	_, endpoint, _ := strings.Cut(first, "data: ")
	endpoint = strings.TrimSpace(endpoint)
	require.True(t, strings.HasPrefix(endpoint, "/api/mcp/sse/"+project+"?sessionid="), endpoint)

	r := s.do("POST", endpoint, other, mcpSrvInit)
	require.Equal(t, 404, r.Status, "another token of the same project cannot post into the stream")
	r = s.do("POST", endpoint, token, mcpSrvInit)
	require.Equal(t, 202, r.Status, "%s", r.Body)
}

func TestMCPServerStateless(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *config.Config) { c.MCPStateless = true })
	project, _ := s.defaultProject()
	token := mcpSrvProjectToken(s, project, allScopes)

	cs := mcpSrvConnect(t, s, token)
	require.Equal(t, mcpSrvAllTools, mcpSrvToolNames(t, cs))
	var obj mcpSrvObject
	mcpSrvOK(t, cs, "graph_create_object", map[string]any{"type": "Person", "name": "Charles Babbage"}, &obj)
	var got struct {
		Object mcpSrvObject `json:"object"`
	}
	mcpSrvOK(t, cs, "graph_get_object", map[string]any{"id": obj.ID}, &got)
	require.Equal(t, "Charles Babbage", got.Object.Name)

	r := s.do("POST", "/api/mcp", token, mcpSrvInit, mcpSrvAccept)
	require.Equal(t, 200, r.Status)
	require.Empty(t, r.Header.Get("Mcp-Session-Id"), "no sessions when stateless")
	for _, m := range []string{"GET", "DELETE"} {
		r = s.do(m, "/api/mcp", token, nil, header{"Accept", "text/event-stream"}, header{"Mcp-Session-Id", "x"})
		require.Equal(t, 405, r.Status, m)
	}
	require.Equal(t, 401, s.do("POST", "/api/mcp", "", mcpSrvInit, mcpSrvAccept).Status)
}

// TestMCPServerToolNames checks the names the MCP specification allows,
// except the spec's two registry tools (DESIGN 8a).
func TestMCPServerToolNames(t *testing.T) {
	t.Parallel()
	for _, n := range mcpSrvAllTools {
		if strings.HasPrefix(n, "mcp-servers/") {
			continue
		}
		for _, r := range n {
			require.True(t, r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'), n)
		}
	}
	require.Equal(t, "mcp-servers/list", mcpserver.ToolRegistryList)
	require.Equal(t, "mcp-servers/call", mcpserver.ToolRegistryCall)
}

// mcpSrvTypeScriptSDK is the version of the official TypeScript SDK
// (@modelcontextprotocol/sdk on npm) the interop test runs.
const mcpSrvTypeScriptSDK = "1.32.2"

// TestMCPServerInteropTypeScript runs the official TypeScript SDK's client
// (testdata/mcp-interop/client.mjs) against the server over both
// transports: initialize, list tools, call search, get a tool error, run
// an agent to its end (agents_run). It
// needs node and npm (and the npm registry, or a warm ~/.npm cache).
func TestMCPServerInteropTypeScript(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the MCP interop test needs Node.js (node and npm, version 18 or newer) on PATH")
	npm, err := exec.LookPath("npm")
	require.NoError(t, err, "the MCP interop test needs npm on PATH")

	s := newServer(t)
	project, _ := s.defaultProject()
	token := mcpSrvProjectToken(s, project, allScopes)
	var obj mcpSrvObject
	s.must(201, "POST", "/api/graph/objects", s.admin, map[string]any{"type": "Concept", "name": "Jacquard loom"},
		header{"X-Project-ID", project}).Decode(t, &obj)
	var doc docBody
	s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "bakery.md", "content": "# Bakery\n\nThe Cobblestone bakery opens at six in the morning."},
		header{"X-Project-ID", project}).Decode(t, &doc)
	s.waitDocument(project, doc.ID)
	agentID := s.agentCreate(s.admin, project, map[string]any{
		"name": "Looms", "instructions": "Search the project and report.", "tools": []string{"search"},
	})

	dir := t.TempDir()
	script, err := os.ReadFile("testdata/mcp-interop/client.mjs")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true, "type": "module"}`), 0o600))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/sdk@"+mcpSrvTypeScriptSDK)
	install.Dir = dir
	out, err := install.CombinedOutput()
	require.NoError(t, err, "npm install @modelcontextprotocol/sdk@%s: %s", mcpSrvTypeScriptSDK, out)

	run := exec.CommandContext(ctx, node, "client.mjs", s.base, token, project, "jacquard", agentID, "When does the Cobblestone bakery open?")
	run.Dir = dir
	var stderr strings.Builder
	run.Stderr = &stderr
	out, err = run.Output()
	require.NoError(t, err, "node client.mjs: %s", stderr.String())

	type toolResult struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Data []struct {
				Target string `json:"target"`
				ID     string `json:"id"`
				Name   string `json:"name"`
			} `json:"data"`
		} `json:"structuredContent"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	type run1 struct {
		Server struct {
			Name string `json:"name"`
		} `json:"server"`
		SessionID *string    `json:"sessionId"`
		Tools     []string   `json:"tools"`
		Search    toolResult `json:"search"`
		Missing   toolResult `json:"missing"`
		AgentRun  struct {
			IsError           bool     `json:"isError"`
			StructuredContent agentRun `json:"structuredContent"`
		} `json:"agentRun"`
		Chat struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				SessionID string      `json:"sessionId"`
				Message   chatMessage `json:"message"`
			} `json:"structuredContent"`
		} `json:"chat"`
	}
	var got struct {
		Streamable run1 `json:"streamable"`
		SSE        run1 `json:"sse"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	for name, r := range map[string]run1{"streamable": got.Streamable, "sse": got.SSE} {
		require.Equal(t, "graphmill", r.Server.Name, name)
		require.Equal(t, mcpSrvAllTools, r.Tools, name)
		require.False(t, r.Search.IsError, name)
		require.Len(t, r.Search.StructuredContent.Data, 1, name)
		require.Equal(t, obj.ID, r.Search.StructuredContent.Data[0].ID, name)
		require.Equal(t, "Jacquard loom", r.Search.StructuredContent.Data[0].Name, name)
		require.Equal(t, "text", r.Search.Content[0].Type, name)
		require.Contains(t, r.Search.Content[0].Text, obj.ID, name)
		require.True(t, r.Missing.IsError, name)
		require.Equal(t, "no object with id 00000000-0000-0000-0000-000000000000 in this project", r.Missing.Content[0].Text, name)
		// The run ends within the wait: the local planner searches with
		// the input, then answers from what it found.
		run := r.AgentRun.StructuredContent
		require.False(t, r.AgentRun.IsError, name)
		require.Equal(t, "completed", run.Status, "%s: %s", name, run.Error)
		require.Equal(t, agentID, run.AgentID, name)
		require.Equal(t, "jacquard", run.Input, name)
		require.Equal(t, []string{"model", "tool:search", "model"}, run.stepKinds(), name)
		require.Contains(t, run.Output, "Jacquard loom", name)
		require.Equal(t, run.ID, s.agentRunGet(s.admin, run.ID).ID, "the run is the token's user's")
		require.False(t, r.Chat.IsError, name)
		require.NotEmpty(t, r.Chat.StructuredContent.SessionID, name)
		require.Contains(t, r.Chat.StructuredContent.Message.Content, "The Cobblestone bakery opens at six in the morning.", name)
		require.Len(t, r.Chat.StructuredContent.Message.Citations, 1, name)
		require.Equal(t, doc.ID, r.Chat.StructuredContent.Message.Citations[0].DocumentID, name)
	}
	require.NotNil(t, got.Streamable.SessionID)
	require.NotEmpty(t, *got.Streamable.SessionID, "the streamable transport is stateful by default")
}

// TestMCPServerStopEndsStreams: open SSE streams and streamable sessions
// do not hold up a graceful stop.
func TestMCPServerStopEndsStreams(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	token := mcpSrvProjectToken(s, project, []string{"graph:read"})
	sse := mcpSrvConnectSSE(t, s, token, project)
	stream := mcpSrvConnect(t, s, token)
	require.Len(t, mcpSrvToolNames(t, sse), 4)
	require.Len(t, mcpSrvToolNames(t, stream), 4)

	start := time.Now()
	s.m.Stop(context.Background())
	require.Less(t, time.Since(start), 3*time.Second, "the shutdown timeout is 5s; streams must not wait for it")
	_, err := sse.ListTools(context.Background(), nil)
	require.Error(t, err)
}

// TestMCPServerWithRegistry: the built-in server's tool list follows the
// built-in tool settings, web_search appears once a key exists and calls
// the search API, and the registry tools list and call an external server's
// synced tools.
func TestMCPServerWithRegistry(t *testing.T) {
	t.Parallel()
	brave := mcptest.NewBrave(t, "global-key-9")
	external := mcptest.Streamable(t, mcptest.NewServer("echo", "add"), "", "")
	s := newServer(t, mcpRegWith(func(c *config.Config) {
		c.WebSearchBaseURL, c.WebSearchAPIKey = brave.URL, "global-key-9"
	}))
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	cs := mcpSrvConnect(t, s, s.admin, hp)
	names := mcpSrvToolNames(t, cs)
	require.Contains(t, names, "web_search", "a global key enables web search")

	// The built-in server's tools are its catalogue in the registry.
	builtin := mcpRegServers(t, s, s.admin, "?projectId="+project)[0]
	require.Equal(t, "builtin", builtin.Type)
	tools := mcpRegTools(t, s, s.admin, builtin.ID)
	require.Len(t, tools, len(names))
	create := mcpRegTool1(t, tools, "graph_create_object")

	// Disabling a built-in tool for the project hides it and refuses calls.
	s.must(200, "PATCH", "/api/admin/mcp-servers/"+builtin.ID+"/tools/"+create.ID, s.admin, map[string]any{"enabled": false})
	require.NotContains(t, mcpSrvToolNames(t, cs), "graph_create_object")
	msg := mcpSrvErr(t, cs, "graph_create_object", map[string]any{"type": "Person", "name": "Ada"})
	require.Contains(t, msg, "not enabled for this project")
	s.must(200, "PATCH", "/api/admin/mcp-servers/"+builtin.ID+"/tools/"+create.ID, s.admin, map[string]any{"enabled": true})
	require.Contains(t, mcpSrvToolNames(t, cs), "graph_create_object")

	// web_search goes to the search API with the effective key.
	res := mcpSrvCall(t, cs, "web_search", map[string]any{"query": "knowledge graphs", "count": 2})
	require.False(t, res.IsError, mcpSrvText(res))
	require.Contains(t, brave.Keys(), "global-key-9")

	// An external server, synced, is listed and called through the
	// registry tools; disabling one of its tools refuses it.
	var srv struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/admin/mcp-servers", s.admin, map[string]any{"name": "calc", "type": "http", "url": external.URL}, hp).Decode(t, &srv)
	s.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/sync", s.admin, nil)
	res = mcpSrvCall(t, cs, "mcp-servers/list", map[string]any{})
	require.False(t, res.IsError, mcpSrvText(res))
	require.Contains(t, mcpSrvText(res), `"add"`)
	require.Contains(t, mcpSrvText(res), `"echo"`)
	res = mcpSrvCall(t, cs, "mcp-servers/call", map[string]any{"server": "calc", "tool": "add", "arguments": map[string]any{"a": 2, "b": 40}})
	require.False(t, res.IsError, mcpSrvText(res))
	require.Contains(t, mcpSrvText(res), "42")
	add := mcpRegTool1(t, mcpRegTools(t, s, s.admin, srv.ID), "add")
	s.must(200, "PATCH", "/api/admin/mcp-servers/"+srv.ID+"/tools/"+add.ID, s.admin, map[string]any{"enabled": false})
	res = mcpSrvCall(t, cs, "mcp-servers/call", map[string]any{"server": "calc", "tool": "add", "arguments": map[string]any{"a": 1, "b": 1}})
	require.True(t, res.IsError)
	require.Contains(t, mcpSrvText(res), "disabled")
}

// TestMCPServerAgentTools: over MCP, an editor lists the agents, runs one
// that asks a question (agents_run returns it waiting, with the question),
// answers it (agent_run_answer returns it ended) and reads it; the run is
// the same one the HTTP API shows. Another member does not see it; a
// viewer sees the reading tools only; a token without the agent scopes
// none of them.
func TestMCPServerAgentTools(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	agentID := s.agentCreate(s.admin, project, map[string]any{
		"name": "Asker", "instructions": "Ask, then report.", "tools": []string{"search"},
	})
	_, editor := s.newMember("mcp-agent-editor@example.com", []string{"agents:read", "agents:run", "search:read"}, project, "editor")
	cs := mcpSrvConnect(t, s, editor, hp)
	require.Subset(t, mcpSrvToolNames(t, cs), []string{"agent_run_answer", "agent_run_get", "agents_list", "agents_run"})

	var list struct {
		Agents []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"agents"`
		Total int `json:"total"`
	}
	mcpSrvOK(t, cs, "agents_list", map[string]any{}, &list)
	require.Equal(t, 1, list.Total)
	require.Equal(t, agentID, list.Agents[0].ID)

	var run agentRun
	mcpSrvOK(t, cs, "agents_run", map[string]any{"agentId": agentID, "input": "looms\nASK: Which loom?"}, &run)
	require.Equal(t, "waiting_for_input", run.Status, run.Error)
	require.Equal(t, "manual", run.Trigger)
	require.NotNil(t, run.Question)
	require.Equal(t, "Which loom?", run.Question.Text)
	require.Equal(t, run.Status, s.agentRunGet(editor, run.ID).Status, "the run the HTTP API shows")

	var done agentRun
	mcpSrvOK(t, cs, "agent_run_answer", map[string]any{"runId": run.ID, "answer": "the Jacquard loom"}, &done)
	require.Equal(t, "completed", done.Status, done.Error)
	require.Contains(t, done.Output, "ask_user: the Jacquard loom")
	var got agentRun
	mcpSrvOK(t, cs, "agent_run_get", map[string]any{"runId": run.ID}, &got)
	require.Equal(t, done.Output, got.Output)
	require.Equal(t, []string{"model", "tool:search", "model", "tool:ask_user", "model"}, got.stepKinds())
	require.Contains(t, mcpSrvErr(t, cs, "agent_run_answer", map[string]any{"runId": run.ID, "answer": "again"}),
		"only a run waiting for input can be answered")

	// Another member's session does not find the run.
	_, other := s.newMember("mcp-agent-other@example.com", []string{"agents:read", "agents:run"}, project, "editor")
	require.Equal(t, "no agent run of yours with id "+run.ID+" in this project",
		mcpSrvErr(t, mcpSrvConnect(t, s, other, hp), "agent_run_get", map[string]any{"runId": run.ID}))

	// A viewer reads; a token without the agent scopes sees none.
	_, viewer := s.newMember("mcp-agent-viewer@example.com", []string{"agents:read", "agents:run"}, project, "viewer")
	require.Equal(t, []string{"agent_run_get", "agents_list"}, mcpSrvToolNames(t, mcpSrvConnect(t, s, viewer, hp)))
	require.Contains(t, mcpSrvErr(t, mcpSrvConnect(t, s, viewer, hp), "agents_run", map[string]any{"agentId": agentID, "input": "x"}),
		"needs the project role editor")
	_, plain := s.newMember("mcp-agent-plain@example.com", []string{"graph:read"}, project, "editor")
	for _, name := range mcpSrvToolNames(t, mcpSrvConnect(t, s, plain, hp)) {
		require.NotContains(t, name, "agent")
	}
}
