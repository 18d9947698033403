package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/console"
)

// TestConsoleUploadKeepsPageProject: an upload posted to project A's page
// is stored in A, whatever the query string says (the API reads projectId
// from it; the console does not pass it on).
func TestConsoleUploadKeepsPageProject(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, body := b.uploadNote("/projects/"+project+"/documents?projectId="+other, header{console.CSRFHeader, b.csrf})
	require.Equal(t, http.StatusCreated, status, body)
	count := func(p string) int {
		return int(s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", p}).JSON(t)["total"].(float64))
	}
	require.Equal(t, 0, count(other), "the query string's project")
	require.Equal(t, 1, count(project), "the page's project")
}

// uploadNote posts a markdown file to the console's upload path as the
// page's script does (multipart, headers as given).
func (b *consoleBrowser) uploadNote(path string, headers ...header) (int, string) {
	b.t.Helper()
	body := "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"note.md\"\r\nContent-Type: text/markdown\r\n\r\n# Note\n\nA short note.\r\n--b--\r\n"
	status, _, answer := b.send("POST", path, "multipart/form-data; boundary=b", strings.NewReader(body), headers...)
	return status, answer
}

// TestConsoleBadInputServices: input the services refuse is 400 with a
// clear message for every caller, the console's forms as the API: review
// notes with a NUL or invalid UTF-8 (the task stays pending), a search
// query that is not UTF-8, holds a NUL or is longer than 2,000 characters.
func TestConsoleBadInputServices(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	task := s.createTask(project, "Merge Ada", "suggestion", "", nil)
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)

	api := s.do("POST", "/api/tasks/"+task+"/resolve", s.admin, map[string]any{"resolution": "accepted", "resolutionNotes": "a\x00b"}, hp)
	require.Equal(t, http.StatusBadRequest, api.Status)
	for _, notes := range []string{"a\x00b", "a\xffb"} {
		status, _, page := b.do("POST", "/projects/"+project+"/tasks/"+task+"/resolve",
			url.Values{"resolution": {"accepted"}, "notes": {notes}}, header{console.CSRFHeader, b.csrf})
		require.Equal(t, http.StatusBadRequest, status, "%q: %s", notes, page)
		require.Contains(t, page, "form.notes: must be valid UTF-8 without the NUL character")
	}
	require.Equal(t, "pending", s.must(200, "GET", "/api/tasks/"+task, s.admin, nil, hp).JSON(t)["data"].(map[string]any)["status"])

	for q, detail := range map[string]string{
		"%FF%FE":  "query.q: must be valid UTF-8 without the NUL character",
		"loom%00": "must not contain the NUL character", // the router's check of every query string
	} {
		status, _, page := b.do("GET", "/projects/"+project+"/search?mode=keyword&q="+q, nil)
		require.Equal(t, http.StatusBadRequest, status, q)
		require.Contains(t, page, detail, q)
	}
	long := strings.Repeat("loom ", 401) // 2,005 characters
	api = s.do("POST", "/api/search", s.admin, map[string]any{"query": long, "mode": "keyword"}, hp)
	require.Equal(t, http.StatusBadRequest, api.Status)
	status, _, page := b.do("GET", "/projects/"+project+"/search?mode=keyword&q="+url.QueryEscape(long), nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "query must be at most 2000 characters")
	status, _, _ = b.do("GET", "/projects/"+project+"/search?mode=keyword&q="+url.QueryEscape(long[:2000]), nil)
	require.Equal(t, http.StatusOK, status, "2,000 characters")
}

// TestConsoleNarrowToken: a token with documents:read only (no
// admin:read, no documents:write) signs in and lands on a page that names
// the scope it lacks (not a 403 whose link leads back to it); the
// documents page shows the project's id, not its record, which GET
// /api/projects/{id} refuses it, and no upload zone. The admin sees both.
func TestConsoleNarrowToken(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, org := s.defaultProject()
	named := s.newProject(org, "Secret Codename Falcon")
	_, tok := s.newMember("docs@example.com", []string{"documents:read"}, named, "editor")
	require.Equal(t, http.StatusForbidden, s.do("GET", "/api/projects/"+named, tok, nil).Status)

	b := newConsoleBrowser(t, s)
	b.signIn(tok)
	status, _, home := b.do("GET", "/", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, home, "it lacks the admin:read scope")
	require.NotContains(t, home, "Back to the projects")

	status, _, page := b.do("GET", "/projects/"+named+"/documents", nil)
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, page, "Secret Codename Falcon")
	require.Contains(t, page, "Documents · "+named)
	require.NotContains(t, page, `class="dropzone"`, "no documents:write")

	// A token bound to the project: the landing page links its sections.
	var bound struct {
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/projects/"+named+"/tokens", s.admin, map[string]any{"name": "docs", "scopes": []string{"documents:read"}}).Decode(t, &bound)
	bb := newConsoleBrowser(t, s)
	bb.signIn(bound.Token)
	status, _, home = bb.do("GET", "/", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, home, "it lacks the admin:read scope")
	require.Contains(t, home, `href="/projects/`+named+`/documents"`)
	status, _, page = bb.do("GET", "/projects/"+named+"/documents", nil)
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, page, "Secret Codename Falcon")

	admin := newConsoleBrowser(t, s)
	admin.signIn(s.admin)
	_, _, home = admin.do("GET", "/", nil)
	require.Contains(t, home, `id="projects"`, "the admin's projects list")
	status, _, page = admin.do("GET", "/projects/"+named+"/documents", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Documents · Secret Codename Falcon")
	require.Contains(t, page, `class="dropzone"`)
}

// TestConsoleUnknownPath: an unknown address outside /api asked for as a
// page (Accept: text/html, as a browser's navigation) is the console's
// HTML error page (with its security headers), signed in or not; under
// /api, or for a client that does not ask for HTML, it stays the API's
// problem body.
func TestConsoleUnknownPath(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	b := newConsoleBrowser(t, s)
	accept := header{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
	check := func() {
		t.Helper()
		for _, path := range []string{"/projects/" + project + "/nosuch", "/nosuch"} {
			status, hdr, page := b.do("GET", path, nil, accept)
			require.Equal(t, http.StatusNotFound, status, path)
			require.True(t, strings.HasPrefix(hdr.Get("Content-Type"), "text/html"), path)
			require.Equal(t, console.ContentSecurityPolicy, hdr.Get("Content-Security-Policy"), path)
			require.Contains(t, page, "There is no page at this address.", path)
		}
		for _, path := range []string{"/api/nosuch", "/api"} {
			status, hdr, page := b.do("GET", path, nil, accept)
			require.Equal(t, http.StatusNotFound, status, path)
			require.Equal(t, "application/problem+json", hdr.Get("Content-Type"), path)
			require.Contains(t, page, `"no route for GET `+path+`"`, path)
		}
		status, hdr, _ := b.do("GET", "/nosuch", nil)
		require.Equal(t, http.StatusNotFound, status)
		require.Equal(t, "application/problem+json", hdr.Get("Content-Type"), "no Accept: text/html")
	}
	check()
	b.signIn(s.admin)
	check()
}

// TestSearchSnippetHostileDocument: a snippet is HTML whose only markup is
// the server's <b> highlights: a document's own <b>, <script>, <img> and
// the highlight markers' characters are text (escaped), in keyword, vector
// and hybrid mode; the console's search page shows them as text too.
func TestSearchSnippetHostileDocument(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	text := "Hostile <b>fake</b> jacquard <script>alert(1)</script> & co \ue000marker\ue001 <img src=x onerror=alert(2)> loom."
	var d docBody
	s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "hostile.txt", "content": text, "mimeType": "text/plain"}, hp).Decode(t, &d)
	d = s.waitDocument(project, d.ID)
	require.Equal(t, "parsed", d.Status, d.Error)
	tags := regexp.MustCompile(`<[^>]*>`)
	for _, mode := range []string{"keyword", "vector", "hybrid"} {
		var r searchResult
		s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": "jacquard", "mode": mode, "targets": []string{"chunks"}}, hp).Decode(t, &r)
		require.NotEmpty(t, r.Data, mode)
		snippet := r.Data[0].Snippet
		for _, tag := range tags.FindAllString(snippet, -1) {
			require.Contains(t, []string{"<b>", "</b>"}, tag, "%s: %s", mode, snippet)
		}
		require.Contains(t, snippet, "&lt;img src=x onerror=alert(2)&gt;", mode)
		require.Contains(t, snippet, "&amp; co", mode)
		if mode == "vector" {
			require.NotContains(t, snippet, "<b>", "no keyword highlight")
			require.Contains(t, snippet, "&lt;b&gt;fake&lt;/b&gt;", "the start of the text, escaped")
			require.Contains(t, snippet, "&lt;script&gt;alert(1)&lt;/script&gt;", "the start of the text, escaped")
			require.Contains(t, snippet, "\ue000marker\ue001", "the start of the text, escaped")
		} else {
			// ts_headline leaves out what its parser takes for tags
			// (<b>, <script>), not the <img> with a bare attribute.
			require.Contains(t, snippet, "<b>jacquard</b>", mode)
			require.Contains(t, snippet, " marker ", "%s: the markers' characters are not the text's", mode)
		}
	}

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page := b.do("GET", "/projects/"+project+"/search?q=jacquard&mode=keyword", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "<mark>jacquard</mark>")
	require.Contains(t, page, "&lt;img src=x onerror=alert(2)&gt;")
	require.NotContains(t, page, "<img src=x")
	require.NotContains(t, page, "&amp;lt;", "escaped once")
}
