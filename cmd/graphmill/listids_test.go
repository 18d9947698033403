package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// listIDs lists path's records filtered by ids in project and returns
// their ids, in the order answered, and the total.
func (s *testServer) listIDs(path, project string, ids ...string) ([]string, int) {
	s.t.Helper()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Total int `json:"total"`
	}
	s.must(200, "GET", path+"?ids="+url.QueryEscape(strings.Join(ids, ",")), s.admin, nil, header{"X-Project-ID", project}).Decode(s.t, &list)
	var out []string
	for _, d := range list.Data {
		out = append(out, d.ID)
	}
	return out, list.Total
}

// TestListFiltersByIDs: the document and graph object lists take an ids
// filter: only the records named, of the project (another project's ids,
// deleted objects and unknown ids are left out), newest first; without it
// every record; a malformed id, or more than 200, is a 400 naming the
// parameter.
func TestListFiltersByIDs(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.graphNewProject(org, "other")
	hp := header{"X-Project-ID", project}

	upload := func(project, name string) string {
		var d idBody
		s.uploadFile(s.admin, project, name, "text/plain", []byte("The text of "+name+".\n")).Decode(t, &d)
		return d.ID
	}
	docs := []string{upload(project, "a.txt"), upload(project, "b.txt"), upload(project, "c.txt")}
	elsewhere := upload(other, "d.txt")
	unknown := "00000000-0000-4000-8000-000000000001"

	got, total := s.listIDs("/api/documents", project, docs[0], docs[2], elsewhere, unknown)
	require.Equal(t, []string{docs[2], docs[0]}, got)
	require.Equal(t, 2, total)
	got, total = s.listIDs("/api/documents", project)
	require.Len(t, got, 3, "an empty filter is no filter")
	require.Equal(t, 3, total)

	objects := []string{
		s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Ada"}),
		s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Charles"}),
		s.graphCreateObject(s.admin, project, map[string]any{"type": "Organization", "name": "Acme"}),
	}
	otherObject := s.graphCreateObject(s.admin, other, map[string]any{"type": "Person", "name": "Elsewhere"})
	s.must(204, "DELETE", "/api/graph/objects/"+objects[1], s.admin, nil, hp)
	got, total = s.listIDs("/api/graph/objects", project, objects[0], objects[1], objects[2], otherObject, unknown)
	require.Equal(t, []string{objects[2], objects[0]}, got)
	require.Equal(t, 2, total)

	many := make([]string, 201)
	for i := range many {
		many[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	}
	for _, path := range []string{"/api/documents", "/api/graph/objects"} {
		detail := s.must(400, "GET", path+"?ids="+docs[0]+",nope", s.admin, nil, hp).Detail(t)
		require.Contains(t, detail, `ids must be UUIDs separated by commas: "nope" is not one`, path)
		detail = s.must(400, "GET", path+"?ids="+strings.Join(many, ","), s.admin, nil, hp).Detail(t)
		require.Contains(t, detail, "ids takes at most 200 ids, not 201", path)
		got, _ = s.listIDs(path, project, many[:200]...)
		require.Empty(t, got, path)
	}
}

// TestListIDsGivenOnce: an ids filter given twice (ids=a&ids=b, the
// exploded form many clients send) is a 400 naming ids, not a list
// filtered by the first alone.
func TestListIDsGivenOnce(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	var d idBody
	s.uploadFile(s.admin, project, "a.txt", "text/plain", []byte("The text of a.\n")).Decode(t, &d)
	object := s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Ada"})
	unknown := "00000000-0000-4000-8000-000000000001"
	for path, id := range map[string]string{"/api/documents": d.ID, "/api/graph/objects": object} {
		detail := s.must(400, "GET", path+"?ids="+unknown+"&ids="+id, s.admin, nil, hp).Detail(t)
		require.Contains(t, detail, "query.ids: given more than once: separate its values by commas", path)
		got, total := s.listIDs(path, project, unknown, id)
		require.Equal(t, []string{id}, got, path)
		require.Equal(t, 1, total, path)
	}
}

// TestDocumentListTotalPastTheEnd: the document list's total past the
// end of the list is the real total, filtered by ids or not (as the graph
// list's), not 0.
func TestDocumentListTotalPastTheEnd(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	var docs []string
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		var d idBody
		s.uploadFile(s.admin, project, name, "text/plain", []byte("The text of "+name+".\n")).Decode(t, &d)
		docs = append(docs, d.ID)
	}
	var list struct {
		Data  []json.RawMessage `json:"data"`
		Total int               `json:"total"`
	}
	for query, total := range map[string]int{
		"?offset=3":         3,
		"?limit=1&offset=2": 3,
		"?ids=" + docs[0] + "," + docs[2] + "&offset=2": 2,
		"?ids=" + docs[0] + "," + docs[2] + "&offset=1": 2,
	} {
		list.Data = nil
		s.must(200, "GET", "/api/documents"+query, s.admin, nil, hp).Decode(t, &list)
		require.Equal(t, total, list.Total, query)
	}
}

// TestAccountListsTotalPastTheEnd: the integration, organization, project,
// member and token lists and the superadmin user, organization and
// project lists answer their real total on an empty page past the end,
// as the document list does (their window count read 0 there, and the
// superadmin meta said 0 pages with a previous one).
func TestAccountListsTotalPastTheEnd(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	hp := header{"X-Project-ID", project}
	for _, name := range []string{"one", "two"} {
		body := map[string]any{"name": name, "display_name": name, "provider_type": "rss", "config": map[string]any{"feed_url": "https://feeds.example.com/" + name}}
		s.must(201, "POST", "/api/integrations", s.admin, body, hp)
	}
	s.newProject(org, "second")
	s.must(201, "POST", "/api/projects/"+project+"/tokens", s.admin, map[string]any{"name": "bound", "scopes": []string{"documents:read"}})
	for path, total := range map[string]int{
		"/api/integrations?offset=2":                     2,
		"/api/orgs?offset=5":                             1,
		"/api/projects?offset=5":                         2,
		"/api/projects/" + project + "/members?offset=5": 1,
		"/api/tokens?offset=50":                          2,
		"/api/projects/" + project + "/tokens?offset=5":  1,
	} {
		var list struct {
			Total int `json:"total"`
		}
		s.must(200, "GET", path, s.admin, nil, hp).Decode(t, &list)
		require.Equal(t, total, list.Total, path)
	}
	for path, total := range map[string]int{
		"/api/superadmin/users?page=50":         1,
		"/api/superadmin/organizations?page=50": 1,
		"/api/superadmin/projects?page=50":      2,
	} {
		var p pagedBody
		s.must(200, "GET", path, s.admin, nil).Decode(t, &p)
		require.Equal(t, total, p.Meta.Total, path)
		require.Equal(t, 1, p.Meta.TotalPages, path)
		require.True(t, p.Meta.HasPrev, path)
		require.Empty(t, p.Data, path)
	}
}

// TestTenancyHeaderGivenOnce: X-Project-ID or X-Org-ID given more than
// once (two header lines, even of one id) is a 400 naming the header, on
// huma routes, the event stream and MCP alike, not a request for the first
// value's tenant; given once it is read as before, and an unauthenticated
// request is still a 401.
func TestTenancyHeaderGivenOnce(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	send := func(path, token, name string, values ...string) response {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, s.base+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for _, v := range values {
			req.Header.Add(name, v)
		}
		return s.send(req)
	}
	for _, c := range []struct{ path, name, first, second string }{
		{"/api/documents", "X-Project-ID", project, other},
		{"/api/documents", "X-Project-ID", project, project},
		{"/api/graph/objects", "X-Project-ID", other, project},
		{"/api/tasks/all", "X-Org-ID", org, org},
		{"/api/events/stream", "X-Project-ID", project, other},
	} {
		r := send(c.path, s.admin, c.name, c.first, c.second)
		require.Equal(t, 400, r.Status, "%s %s: %s", c.path, c.name, r.Body)
		require.Contains(t, r.Detail(t), "header "+c.name+" given 2 times: give it once, with one id", c.path)
		require.Equal(t, 401, send(c.path, "", c.name, c.first, c.second).Status, c.path)
	}
	// MCP, with the API token it requires.
	r := send("/api/mcp", mcpSrvProjectToken(s, project, allScopes), "X-Project-ID", project, other)
	require.Equal(t, 400, r.Status, r.Body)
	require.Contains(t, r.Detail(t), "header X-Project-ID given 2 times: give it once, with one id")
	require.Equal(t, 401, send("/api/mcp", "", "X-Project-ID", project, other).Status)
	require.Equal(t, 200, send("/api/documents", s.admin, "X-Project-ID", project).Status)
	require.Equal(t, 200, send("/api/tasks/all", s.admin, "X-Org-ID", org).Status)
}

// TestListIDsAuth: the ids filter of the document and graph object lists
// is read under the lists' rules: no token is a 401 (even with a
// malformed filter: nothing is parsed for a stranger), a token without
// the read scope a 403 naming it, a user who cannot see the project a
// 404, and a member of another project naming this project's ids in
// their own gets none of them.
func TestListIDsAuth(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.graphNewProject(org, "other")
	hp := header{"X-Project-ID", project}
	var d idBody
	s.uploadFile(s.admin, project, "a.txt", "text/plain", []byte("The text of a.\n")).Decode(t, &d)
	object := s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Ada"})
	scopes := []string{"documents:read", "graph:read"}
	_, noScope := s.newMember("noscope@example.com", []string{"schema:read"}, project, "admin")
	_, outsider := s.newMember("outsider@example.com", scopes, other, "admin")
	for _, c := range []struct{ path, id, scope string }{
		{"/api/documents", d.ID, "documents:read"},
		{"/api/graph/objects", object, "graph:read"},
	} {
		q := c.path + "?ids=" + c.id
		requireProblem(t, s.do("GET", q, "", nil, hp), 401, "unauthenticated", c.path)
		requireProblem(t, s.do("GET", c.path+"?ids=nope", "", nil, hp), 401, "unauthenticated", c.path)
		p := requireProblem(t, s.do("GET", q, noScope, nil, hp), 403, "permission_denied", c.path)
		require.Contains(t, p["detail"], c.scope, c.path)
		requireProblem(t, s.do("GET", q, outsider, nil, hp), 404, "not_found", c.path)
		var list struct {
			Data  []json.RawMessage `json:"data"`
			Total int               `json:"total"`
		}
		s.must(200, "GET", q, outsider, nil, header{"X-Project-ID", other}).Decode(t, &list)
		require.Empty(t, list.Data, c.path)
		require.Zero(t, list.Total, c.path)
		got, total := s.listIDs(c.path, project, c.id)
		require.Equal(t, []string{c.id}, got, c.path)
		require.Equal(t, 1, total, c.path)
	}
}
