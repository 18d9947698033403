package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// requireProblem requires r to be a problem body of status with code, and
// a requestId equal to the X-Request-ID header.
func requireProblem(t testing.TB, r response, status int, code string, what ...string) map[string]any {
	t.Helper()
	require.Equal(t, status, r.Status, "%s: %s", what, r.Body)
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"), "%s", r.Body)
	p := r.JSON(t)
	require.Equal(t, code, p["code"], "%s", r.Body)
	require.NotEmpty(t, p["requestId"], "%s", r.Body)
	require.Equal(t, r.Header.Get("X-Request-ID"), p["requestId"])
	return p
}

// TestNULRefused: a NUL character (U+0000) in a JSON string, a query value
// or a path segment is refused with 400 naming the field, before anything
// reaches PostgreSQL (whose text type cannot hold it); the record is left
// as it was. The two endpoints where a client saw 500 first.
func TestNULRefused(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	q := "?projectId=" + project

	var srv mcpRegServer
	s.must(201, "POST", "/api/admin/mcp-servers"+q, s.admin, map[string]any{"name": "notes", "type": "http", "url": "https://example.com/mcp"}).Decode(t, &srv)
	r := s.do("PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, `{"name": "no\u0000tes"}`)
	require.Contains(t, requireProblem(t, r, 400, "invalid_argument")["detail"], "body.name")
	require.Contains(t, r.Detail(t), "U+0000")
	r = s.do("POST", "/api/admin/mcp-servers"+q, s.admin, `{"name": "x", "type": "http", "url": "https://example.com", "headers": {"X-Key": "a\u0000"}}`)
	require.Contains(t, requireProblem(t, r, 400, "invalid_argument")["detail"], "body.headers.X-Key")
	r = s.do("POST", "/api/admin/mcp-servers"+q, s.admin, `{"name": "x", "type": "stdio", "command": "echo", "args": ["a", "\u0000"]}`)
	require.Contains(t, requireProblem(t, r, 400, "invalid_argument")["detail"], "body.args[1]")
	list := mcpRegServers(t, s, s.admin, q)
	require.Len(t, list, 2, "the built-in record and notes; nothing was created")
	for _, l := range list {
		require.NotContains(t, l.Name, "\x00")
	}
	// An escaped backslash followed by u0000 is six ordinary characters.
	s.must(200, "PATCH", "/api/admin/mcp-servers/"+srv.ID, s.admin, `{"name": "no\\u0000tes"}`).Decode(t, &srv)
	require.Equal(t, `no\u0000tes`, srv.Name)

	_, user := s.newMember("u@example.com", []string{"user-activity:read", "user-activity:write"}, project, "viewer")
	r = s.do("POST", "/api/user-activity/record"+q, user, `{"resourceType": "report", "resourceId": "d1", "actionType": "view", "resourceName": "\u0000"}`)
	require.Contains(t, requireProblem(t, r, 400, "invalid_argument")["detail"], "body.resourceName")
	require.Empty(t, s.recent(user, "/api/user-activity/recent"))

	// Query values and path segments, on huma routes and on the routes
	// outside huma (event stream, MCP transports).
	for _, c := range []struct{ path, field string }{
		{"/api/superadmin/users?search=a%00b", "query.search"},
		{"/api/user-activity/recent/document?limit=2&x=%00", "query.x"},
		{"/api/events/stream?lastEventId=%00", "query.lastEventId"},
		{"/api/mcp?projectId=%00", "query.projectId"},
		{"/api/mcp/sse/a%00b", "path.projectId"},
		{"/api/admin/mcp-servers/a%00b/tools", "path.serverId"},
		{"/api/nothing/%00", "path"},
	} {
		r := s.do("GET", c.path, user, nil)
		require.Contains(t, requireProblem(t, r, 400, "invalid_argument")["detail"], c.field, c.path)
	}
	r = s.do("DELETE", "/api/user-activity/recent/document/d%00", user, nil)
	require.Contains(t, requireProblem(t, r, 400, "invalid_argument")["detail"], "path.resourceID")

	// Header values cannot carry one: net/http refuses the request before
	// any handler (a Go client will not even send it, so this is raw).
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /api/projects HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + s.admin + "\r\nX-Project-ID: a\x00b\r\n\r\n"))
	require.NoError(t, err)
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(status, "HTTP/1.1 400 "), status)
}

// TestInvalidUTF8Refused: a query value, a query parameter name or a
// path segment that is not UTF-8 once percent-decoded is refused at the
// boundary with 400 naming it, as a NUL is; it reached PostgreSQL (a
// task type filter, a recent-activity id) and was refused there with a
// detail that named no field and spoke of NUL.
func TestInvalidUTF8Refused(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	for _, c := range []struct{ method, path, field string }{
		{"GET", "/api/tasks?type=x%ffy", "query.type"},
		{"GET", "/api/tasks/all?status=pending&type=%c3", "query.type"},
		{"GET", "/api/superadmin/users?search=%ed%a0%80", "query.search"},
		{"GET", "/api/tasks?%ff=1", "query (a parameter name)"},
		{"GET", "/api/events/stream?lastEventId=%fe", "query.lastEventId"},
		{"DELETE", "/api/user-activity/recent/document/d%ff", "path.resourceID"},
		{"GET", "/api/chat/sessions/%ff", "path.sessionId"},
	} {
		r := s.do(c.method, c.path, s.admin, nil, hp)
		p := requireProblem(t, r, 400, "invalid_argument", c.method, c.path)
		require.Equal(t, c.field+": must be valid UTF-8", p["detail"], c.path)
	}
	// Valid UTF-8, percent-encoded or not, passes.
	s.must(200, "GET", "/api/tasks?type=caf%C3%A9", s.admin, nil, hp)
	s.must(200, "GET", "/api/superadmin/users?search=%C3%A9t%C3%A9", s.admin, nil)
}

// TestNULSweep sends a NUL in a string field of every JSON body, every
// query parameter and every path parameter of the OpenAPI document, as the
// superadmin in the default project: each answers 400 invalid_argument
// naming the field.
func TestNULSweep(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	spec := loadSpec(t, s)
	hp := header{"X-Project-ID", project}
	bodies, queries, paths := 0, 0, 0
	for _, op := range spec.operations() {
		target := op.fill(map[string]string{"projectId": project, "orgId": org})
		if field, ok := op.stringField(spec); ok {
			bodies++
			r := s.do(op.Method, target, s.admin, `{"`+field+`": "x\u0000"}`, hp)
			p := requireProblem(t, r, 400, "invalid_argument", op.Method, op.Path)
			require.Contains(t, p["detail"], "body."+field, "%s %s", op.Method, op.Path)
		}
		for _, name := range op.params("query") {
			queries++
			sep := "?"
			if strings.Contains(target, "?") {
				sep = "&"
			}
			r := s.do(op.Method, target+sep+url.QueryEscape(name)+"=%00", s.admin, nil, hp)
			p := requireProblem(t, r, 400, "invalid_argument")
			require.Contains(t, p["detail"], "query."+name, "%s %s", op.Method, op.Path)
		}
		for _, name := range op.params("path") {
			paths++
			r := s.do(op.Method, op.fill(map[string]string{"projectId": project, "orgId": org, name: "a%00"}), s.admin, nil, hp)
			p := requireProblem(t, r, 400, "invalid_argument")
			require.Contains(t, p["detail"], "path."+name, "%s %s", op.Method, op.Path)
		}
	}
	t.Logf("swept %d bodies, %d query parameters, %d path parameters", bodies, queries, paths)
	require.Greater(t, bodies, 25)
	require.Greater(t, queries, 100)
	require.Greater(t, paths, 80)
	// Nothing reached the database: no 5xx was logged, no row was written
	// with a NUL (PostgreSQL would have refused it anyway).
	var n int
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM mcp_servers WHERE name LIKE 'x%'`).Scan(&n))
	require.Zero(t, n)
}

// openAPISpec is the part of the OpenAPI document the sweeps read.
type openAPISpec struct {
	Paths      map[string]map[string]openAPIOp `json:"paths"`
	Components struct {
		Schemas map[string]openAPISchema `json:"schemas"`
	} `json:"components"`
}

type openAPIOp struct {
	Method     string `json:"-"`
	Path       string `json:"-"`
	ID         string `json:"operationId"`
	Parameters []struct {
		Name string `json:"name"`
		In   string `json:"in"`
	} `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema *openAPISchema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
}

type openAPISchema struct {
	Ref        string                    `json:"$ref"`
	Type       any                       `json:"type"`
	Properties map[string]*openAPISchema `json:"properties"`
}

func loadSpec(t testing.TB, s *testServer) *openAPISpec {
	t.Helper()
	var spec openAPISpec
	s.must(200, "GET", "/api/openapi.json", "", nil).Decode(t, &spec)
	return &spec
}

// operations lists the operations in a stable order.
func (sp *openAPISpec) operations() []openAPIOp {
	var out []openAPIOp
	for path, methods := range sp.Paths {
		for m, op := range methods {
			op.Method, op.Path = strings.ToUpper(m), path
			out = append(out, op)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path+out[i].Method < out[j].Path+out[j].Method })
	return out
}

// resolve follows a $ref.
func (sp *openAPISpec) resolve(s *openAPISchema) *openAPISchema {
	for s != nil && s.Ref != "" {
		c, ok := sp.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
		if !ok {
			return nil
		}
		s = &c
	}
	return s
}

// jsonSchema is the operation's JSON request body schema, if any.
func (op openAPIOp) jsonSchema(sp *openAPISpec) *openAPISchema {
	if op.RequestBody == nil {
		return nil
	}
	c, ok := op.RequestBody.Content["application/json"]
	if !ok {
		return nil
	}
	return sp.resolve(c.Schema)
}

// stringField is a top-level string property of the JSON body.
func (op openAPIOp) stringField(sp *openAPISpec) (string, bool) {
	sch := op.jsonSchema(sp)
	if sch == nil {
		return "", false
	}
	names := make([]string, 0, len(sch.Properties))
	for n := range sch.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := sp.resolve(sch.Properties[n])
		if p != nil && isStringType(p.Type) {
			return n, true
		}
	}
	return "", false
}

// params names the operation's parameters of kind in (path, query).
func (op openAPIOp) params(in string) []string {
	var out []string
	for _, p := range op.Parameters {
		if p.In == in {
			out = append(out, p.Name)
		}
	}
	return out
}

// fill puts values into the path's parameters: those given, and a random
// id for the others.
func (op openAPIOp) fill(values map[string]string) string {
	out := op.Path
	for _, p := range op.Parameters {
		if p.In != "path" {
			continue
		}
		v, ok := values[p.Name]
		if !ok {
			v, ok = values[strings.Replace(p.Name, "ID", "Id", 1)]
		}
		if !ok {
			v = uuid.NewString()
		}
		out = strings.ReplaceAll(out, "{"+p.Name+"}", v)
	}
	return out
}

// isStringType reports whether a schema's type is string (or string and
// null).
func isStringType(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "string"
	case []any:
		return len(t) > 0 && t[0] == "string"
	}
	return false
}

// opsDo sends a request to the ops listener.
func (s *testServer) opsDo(method, path, body string, headers ...header) response {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, "http://"+s.m.OpsAddr()+path, rd)
	require.NoError(s.t, err)
	for _, h := range headers {
		req.Header.Set(h.k, h.v)
	}
	res, err := s.client.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(s.t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// TestOpsProblemBodies: every error of the ops listener is a problem body
// with code and requestId, like the public API's, and the refused change
// is not applied.
func TestOpsProblemBodies(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	before := s.opsDo("GET", "/api/embeddings/status", "").JSON(t)["batchSize"]

	r := s.opsDo("PATCH", "/api/embeddings/config", `{"batchSize": 0}`, header{"X-Request-ID", "ops-req-1"})
	p := requireProblem(t, r, 400, "invalid_argument")
	require.Equal(t, "ops-req-1", p["requestId"])
	require.Contains(t, p["detail"], "batchSize")
	require.Equal(t, before, s.opsDo("GET", "/api/embeddings/status", "").JSON(t)["batchSize"])

	requireProblem(t, s.opsDo("PATCH", "/api/embeddings/config", `nope`), 400, "invalid_argument")
	requireProblem(t, s.opsDo("GET", "/api/embeddings/nothing", ""), 404, "not_found")
	requireProblem(t, s.opsDo("GET", "/nothing", ""), 404, "not_found")
	requireProblem(t, s.opsDo("DELETE", "/api/embeddings/config", ""), 405, "invalid_argument")
	requireProblem(t, s.opsDo("POST", "/metrics", ""), 405, "invalid_argument")
	requireProblem(t, s.opsDo("GET", "/metrics?x=%00", ""), 400, "invalid_argument")
	// What worked before still does.
	require.Equal(t, 200, s.opsDo("GET", "/metrics", "").Status)
	require.Equal(t, 200, s.opsDo("GET", "/debug/pprof/", "").Status)
	require.Equal(t, 200, s.opsDo("GET", "/debug/pprof/cmdline", "").Status)
	require.Equal(t, 200, s.opsDo("GET", "/debug/pprof/heap?debug=1", "").Status)
	require.NotEmpty(t, s.opsDo("GET", "/api/embeddings/status", "").Header.Get("X-Request-ID"))
}

// TestHugeIDNotEchoed: a discovery job's document id, a finalize's
// existingPackId, or an ids filter item, of 100,000 characters is refused
// with a detail quoting its start only (it was echoed whole).
func TestHugeIDNotEchoed(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	var doc idBody
	s.uploadFile(s.admin, project, "a.txt", "text/plain", []byte("Ada Lovelace worked with Charles Babbage in London.\n")).Decode(t, &doc)
	s.waitDocument(project, doc.ID)
	job := s.discStart(s.admin, project, map[string]any{"document_ids": []string{doc.ID}})
	huge := strings.Repeat("d", 100_000)
	ship := map[string]any{"type_name": "Ship", "description": "d", "properties": map[string]any{}}
	finalize := map[string]any{"packName": "P", "mode": "update", "existingPackId": huge, "includedTypes": []any{ship}}
	for _, r := range []response{
		s.do("POST", "/api/discovery-jobs", s.admin, map[string]any{"document_ids": []string{huge}}, hp),
		s.do("POST", "/api/discovery-jobs/"+job+"/finalize", s.admin, finalize, hp),
		s.do("GET", "/api/documents?ids="+huge, s.admin, nil, hp),
	} {
		p := requireProblem(t, r, 400, "invalid_argument")
		detail, _ := p["detail"].(string)
		require.Less(t, len(detail), 500, detail[:min(len(detail), 200)])
		require.Contains(t, detail, `"dddd`)
		require.Contains(t, detail, `…"`)
	}
}
