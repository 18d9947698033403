package main

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// consoleGraphObject is a graph object as the API answers it.
type consoleGraphObject struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Key         string `json:"key"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Status      string `json:"status"`
}

// consoleGraphRel is a relationship as the API answers it.
type consoleGraphRel struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	SourceID string `json:"sourceId"`
	TargetID string `json:"targetId"`
}

// consoleExtracted uploads testdata/extraction/name to project (review
// threshold 0: everything accepted), waits for its extraction to
// complete and returns the document's id.
func consoleExtracted(t *testing.T, s *testServer, project, name string) string {
	t.Helper()
	doc := s.extractionUpload(project, name, extractionReadFile(t, name))
	j := s.extractionWaitJob(s.extractionJobOf(doc), "completed", "failed", "requires_review")
	require.Equal(t, "completed", j.Status, j.ErrorMsg)
	require.Positive(t, j.RelationshipsCreated, name)
	return doc
}

var dataElements = regexp.MustCompile(`data-elements="([^"]*)"`)

// TestConsoleGraph: the explorer lists and searches the project's objects
// (text, type) with the API's service; an object's page shows its type,
// properties, the quotes it was extracted from linked to the document's
// chunk, its relationships as links (direction, other end) and the same
// neighbours as the drawing's elements; the project page counts the
// graph. The API's graph:read rule: another project's object is not
// found, a token without graph:read is forbidden (and sees no counts),
// a bad query is the API's 400, a deleted object is gone.
func TestConsoleGraph(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	s.extractionSetThreshold(project, 0)
	doc := consoleExtracted(t, s, project, "orbit.md")
	hp := header{"X-Project-ID", project}

	var objects struct {
		Data  []consoleGraphObject `json:"data"`
		Total int                  `json:"total"`
	}
	s.must(200, "GET", "/api/graph/objects?limit=200", s.admin, nil, hp).Decode(t, &objects)
	var rels struct {
		Total int `json:"total"`
	}
	s.must(200, "GET", "/api/graph/relationships?limit=1", s.admin, nil, hp).Decode(t, &rels)
	obj, mine := consoleBusiestObject(t, s, project)
	center := obj.ID

	b := newConsoleBrowser(t, s)
	for _, path := range []string{"/projects/" + project + "/graph", "/projects/" + project + "/graph/objects/" + center} {
		status, hdr, _ := b.do("GET", path, nil)
		require.Equal(t, http.StatusSeeOther, status, "signed out: %s", path)
		require.Equal(t, "/signin", hdr.Get("Location"))
	}
	b.signIn(s.admin)

	// The project page: the graph's counts, as the API counts them.
	status, _, page := b.do("GET", "/projects/"+project, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `href="/projects/`+project+`/graph"`)
	require.Contains(t, page, strconv.Itoa(objects.Total)+" objects, "+strconv.Itoa(rels.Total)+" relationships")

	// The list: every object, newest first; a search by name; by type.
	status, _, page = b.do("GET", "/projects/"+project+"/graph", nil)
	require.Equal(t, 200, status, page)
	require.Equal(t, objects.Total, strings.Count(page, `<tr id="object-`))
	require.Contains(t, page, `id="object-`+objects.Data[0].ID+`"`)
	types := map[string]bool{}
	for _, o := range objects.Data {
		types[o.Type] = true
	}
	options := map[string]bool{}
	for _, m := range regexp.MustCompile(`<option value="([^"]+)">`).FindAllStringSubmatch(page, -1) {
		options[html.UnescapeString(m[1])] = true
	}
	require.Equal(t, types, options, "the type select offers the types present")
	status, _, page = b.do("GET", "/projects/"+project+"/graph?q="+url.QueryEscape(strings.ToLower(obj.Name)), nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `href="/projects/`+project+`/graph/objects/`+center+`"`)
	for _, o := range objects.Data {
		matches := strings.Contains(strings.ToLower(o.Name+"\n"+o.Key+"\n"+o.Description), strings.ToLower(obj.Name))
		require.Equal(t, matches, strings.Contains(page, `id="object-`+o.ID+`"`), "%s matches %s: %v", o.Name, obj.Name, matches)
	}
	status, _, page = b.do("GET", "/projects/"+project+"/graph?type="+url.QueryEscape(obj.Type), nil)
	require.Equal(t, 200, status)
	for _, o := range objects.Data {
		require.Equal(t, o.Type == obj.Type, strings.Contains(page, `id="object-`+o.ID+`"`), "%s of type %s", o.Name, o.Type)
	}
	status, _, page = b.do("GET", "/projects/"+project+"/graph?q=no-such-object-anywhere", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "No object matches.")
	status, _, page = b.do("GET", "/projects/"+project+"/graph?q="+strings.Repeat("x", 201), nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "q must be at most 200 characters")

	// The object: type, provenance quoting the document, relationships.
	status, _, page = b.do("GET", "/projects/"+project+"/graph/objects/"+center, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `<dd id="object-type">`+html.EscapeString(obj.Type)+`</dd>`)
	require.Contains(t, page, `<ul id="provenance"`)
	require.Regexp(t, `(?i)<mark>`+regexp.QuoteMeta(html.EscapeString(obj.Name))+`</mark>`, page, "the quote marks the name")
	chunkLink := regexp.MustCompile(`href="(/projects/` + project + `/documents/` + doc + `/chunks/([0-9a-f-]{36}))"`).FindStringSubmatch(page)
	require.NotNil(t, chunkLink, "a quote links to its chunk")
	require.Contains(t, page, "orbit.md, chunk ")
	require.Contains(t, page, `src="/static/cytoscape.min.js"`)
	for _, r := range mine {
		otherEnd, dir := r.TargetID, "outgoing"
		if r.TargetID == center {
			otherEnd, dir = r.SourceID, "incoming"
		}
		row := regexp.MustCompile(`(?s)<tr id="rel-` + r.ID + `">.*?</tr>`).FindString(page)
		require.NotEmpty(t, row, "relationship %s listed", r.ID)
		require.Contains(t, row, html.EscapeString(r.Type))
		require.Contains(t, row, `data-direction="`+dir+`"`)
		require.Contains(t, row, `href="/projects/`+project+`/graph/objects/`+otherEnd+`"`)
	}
	m := dataElements.FindStringSubmatch(page)
	require.NotNil(t, m)
	var els []struct {
		Group   string `json:"group"`
		Classes string `json:"classes"`
		Data    struct {
			ID, Label, URL, Source, Target string
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &els))
	nodes, edges := map[string]string{}, map[string]bool{}
	for _, e := range els {
		if e.Group == "nodes" {
			nodes[e.Data.ID] = e.Data.URL
			continue
		}
		edges[e.Data.ID] = true
		require.Contains(t, nodes, e.Data.Source)
		require.Contains(t, nodes, e.Data.Target)
	}
	require.Equal(t, "center", els[0].Classes)
	require.Equal(t, obj.Name, els[0].Data.Label)
	require.Len(t, edges, len(mine))
	for _, r := range mine {
		require.True(t, edges[r.ID])
		require.Equal(t, "/projects/"+project+"/graph/objects/"+r.SourceID, nodes[r.SourceID])
		require.Equal(t, "/projects/"+project+"/graph/objects/"+r.TargetID, nodes[r.TargetID])
	}
	// The quote's link opens the chunk on its document's page.
	status, hdr, _ := b.do("GET", chunkLink[1], nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/projects/"+project+"/documents/"+doc+"#chunk-"+chunkLink[2], hdr.Get("Location"))
	status, _, page = b.do("GET", "/projects/"+project+"/documents/"+doc, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="chunk-`+chunkLink[2]+`"`)

	// Another project's object, through this project or its own: not found.
	foreignDoc := s.extractionUpload(other, "lantern.md", extractionReadFile(t, "lantern.md"))
	s.extractionWaitJob(s.extractionJobOf(foreignDoc), "completed", "requires_review", "failed")
	var foreign struct {
		Data []consoleGraphObject `json:"data"`
	}
	s.must(200, "GET", "/api/graph/objects", s.admin, nil, header{"X-Project-ID", other}).Decode(t, &foreign)
	require.NotEmpty(t, foreign.Data)
	for _, path := range []string{
		"/projects/" + project + "/graph/objects/" + foreign.Data[0].ID,
		"/projects/" + project + "/graph/objects/not-a-uuid",
	} {
		status, _, page := b.do("GET", path, nil)
		require.Equal(t, http.StatusNotFound, status, path)
		require.NotContains(t, page, html.EscapeString(foreign.Data[0].Name), path)
	}
	status, _, page = b.do("GET", "/projects/"+project+"/graph", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, foreign.Data[0].ID, "another project's object")

	// A viewer of the project reads it; not the other project.
	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, _ = viewer.do("GET", "/projects/"+project+"/graph/objects/"+center, nil)
	require.Equal(t, 200, status)
	for _, path := range []string{"/projects/" + other + "/graph", "/projects/" + other + "/graph/objects/" + foreign.Data[0].ID} {
		status, _, _ = viewer.do("GET", path, nil)
		require.Equal(t, http.StatusNotFound, status, path)
	}

	// Without graph:read: forbidden, and the project page counts nothing.
	_, noGraph := s.newMember("nograph@example.com", []string{"admin:read", "documents:read"}, project, "viewer")
	nb := newConsoleBrowser(t, s)
	nb.signIn(noGraph)
	for _, path := range []string{"/projects/" + project + "/graph", "/projects/" + project + "/graph/objects/" + center} {
		status, _, _ = nb.do("GET", path, nil)
		require.Equal(t, http.StatusForbidden, status, path)
	}
	status, _, page = nb.do("GET", "/projects/"+project, nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, `id="graph-count"`)

	// A deleted object: gone from its page, the list and its neighbours'.
	s.must(204, "DELETE", "/api/graph/objects/"+center, s.admin, nil, hp)
	status, _, _ = b.do("GET", "/projects/"+project+"/graph/objects/"+center, nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _, page = b.do("GET", "/projects/"+project+"/graph", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, `id="object-`+center+`"`)
	status, _, page = b.do("GET", "/projects/"+project, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, strconv.Itoa(objects.Total-1)+" objects, "+strconv.Itoa(rels.Total-len(mine))+" relationships")
	neighbour := mine[0].TargetID
	if neighbour == center {
		neighbour = mine[0].SourceID
	}
	status, _, page = b.do("GET", "/projects/"+project+"/graph/objects/"+neighbour, nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, center)
}

// consoleBusiestObject is the object of project with the most
// relationships (of its first 200), and its relationships.
func consoleBusiestObject(t *testing.T, s *testServer, project string) (consoleGraphObject, []consoleGraphRel) {
	t.Helper()
	hp := header{"X-Project-ID", project}
	var rels struct {
		Data []consoleGraphRel `json:"data"`
	}
	s.must(200, "GET", "/api/graph/relationships?limit=200", s.admin, nil, hp).Decode(t, &rels)
	require.NotEmpty(t, rels.Data)
	degree := map[string]int{}
	for _, r := range rels.Data {
		degree[r.SourceID]++
		degree[r.TargetID]++
	}
	center := rels.Data[0].SourceID
	for id, n := range degree {
		if n > degree[center] || (n == degree[center] && id < center) {
			center = id
		}
	}
	var mine []consoleGraphRel
	for _, r := range rels.Data {
		if r.SourceID == center || r.TargetID == center {
			mine = append(mine, r)
		}
	}
	var o consoleGraphObject
	s.must(200, "GET", "/api/graph/objects/"+center, s.admin, nil, hp).Decode(t, &o)
	return o, mine
}
