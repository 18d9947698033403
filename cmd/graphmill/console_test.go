package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/console"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// consoleBrowser is an HTTP client with cookies, as a browser signed in to
// the console.
type consoleBrowser struct {
	t    testing.TB
	s    *testServer
	c    *http.Client
	csrf string
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func newConsoleBrowser(t testing.TB, s *testServer) *consoleBrowser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &consoleBrowser{t: t, s: s, c: &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *consoleBrowser) do(method, path string, form url.Values, headers ...header) (int, http.Header, string) {
	b.t.Helper()
	if form == nil {
		return b.send(method, path, "", nil, headers...)
	}
	return b.send(method, path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), headers...)
}

// send sends body of contentType (none when empty) with headers and
// returns the answer whole.
func (b *consoleBrowser) send(method, path, contentType string, body io.Reader, headers ...header) (int, http.Header, string) {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), method, b.s.base+path, body)
	require.NoError(b.t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, h := range headers {
		req.Header.Set(h.k, h.v)
	}
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, resp.Header, string(raw)
}

// requireFormAgain asserts a refused form's answer (the console's rule,
// docs/decisions.md "Issue 18: console forms"): the status of the
// refusal, the page again with the form (id form), the message in its
// alert (id problem) and each of typed, the submitted values as the form
// writes them back (value="...", checked, the textarea's text); not the
// error page.
func requireFormAgain(t *testing.T, status int, page string, want int, form, problem, msg string, typed ...string) {
	t.Helper()
	require.Equal(t, want, status, page)
	require.Contains(t, page, `id="`+form+`"`, "the form again")
	require.Contains(t, page, `role="alert" id="`+problem+`">`+msg+`<`)
	for _, v := range typed {
		require.Contains(t, page, v, "the value typed")
	}
	require.NotContains(t, page, `<title>Error`, "not the error page")
}

// requireActionRefused asserts a refused htmx action's answer: the
// refusal's status and its message alone (console.js shows it; htmx swaps
// nothing, so the page and its form stay as they were).
func requireActionRefused(t *testing.T, status int, body string, want int, msg string) {
	t.Helper()
	require.Equal(t, want, status, body)
	require.Equal(t, msg, body)
}

// signIn signs in with token and keeps the session's CSRF token.
func (b *consoleBrowser) signIn(token string) {
	b.t.Helper()
	status, _, page := b.do("GET", "/signin", nil)
	require.Equal(b.t, 200, status)
	m := csrfInput.FindStringSubmatch(page)
	require.NotNil(b.t, m, page)
	status, hdr, page := b.do("POST", "/signin", url.Values{"csrf": {m[1]}, "token": {token}})
	require.Equal(b.t, http.StatusSeeOther, status, page)
	require.Equal(b.t, "/", hdr.Get("Location"))
	status, _, page = b.do("GET", "/", nil)
	require.Equal(b.t, 200, status, page)
	m = csrfInput.FindStringSubmatch(page)
	require.NotNil(b.t, m, page)
	b.csrf = m[1]
}

func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	project, _ := s.defaultProject()
	b := newConsoleBrowser(t, s)

	// Signed out: pages send to the sign-in form, with the console's headers.
	status, hdr, _ := b.do("GET", "/projects/"+project, nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))
	require.Equal(t, console.ContentSecurityPolicy, hdr.Get("Content-Security-Policy"))
	// The vendored files are served from the binary; no directory listing.
	status, hdr, js := b.do("GET", "/static/htmx.min.js", nil)
	require.Equal(t, 200, status)
	require.Contains(t, hdr.Get("Content-Type"), "javascript")
	require.Contains(t, js, "htmx")
	status, _, _ = b.do("GET", "/static/", nil)
	require.Equal(t, http.StatusNotFound, status)

	b.signIn(s.admin)
	status, _, page := b.do("GET", "/", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `href="/projects/`+project+`"`)
	status, _, page = b.do("GET", "/projects/"+project, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="document-count">0<`)
}

// TestConsoleSignInRefusals: a sign-in without the form's CSRF token, or
// from another site, is refused before the token is looked at; a bad
// token sets no session.
func TestConsoleSignInRefusals(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	b := newConsoleBrowser(t, s)

	status, _, _ := b.do("POST", "/signin", url.Values{"token": {s.admin}})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	status, _, page := b.do("GET", "/signin", nil)
	require.Equal(t, 200, status)
	csrf := csrfInput.FindStringSubmatch(page)[1]
	status, _, _ = b.do("POST", "/signin", url.Values{"csrf": {"x" + csrf}, "token": {s.admin}})
	require.Equal(t, http.StatusForbidden, status, "wrong CSRF token")
	status, _, _ = b.do("POST", "/signin", url.Values{"csrf": {csrf}, "token": {s.admin}}, header{"Sec-Fetch-Site", "cross-site"})
	require.Equal(t, http.StatusForbidden, status, "cross-site form")
	status, hdr, page := b.do("POST", "/signin", url.Values{"csrf": {csrf}, "token": {"gm_not_a_token"}})
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, page, "This token is not valid.")
	require.Empty(t, hdr.Values("Set-Cookie"))
	status, hdr, _ = b.do("GET", "/", nil)
	require.Equal(t, http.StatusSeeOther, status, "still signed out")
	require.Equal(t, "/signin", hdr.Get("Location"))
}

// TestConsoleCSRF: the signed-in console's unsafe requests need the
// session's CSRF token; without it nothing happens (the session lives on,
// no document is stored).
func TestConsoleCSRF(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)

	status, _, _ := b.do("POST", "/signout", url.Values{})
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = b.do("GET", "/", nil)
	require.Equal(t, 200, status, "still signed in")

	upload := func(headers ...header) (int, string) {
		return b.uploadNote("/projects/"+project+"/documents", headers...)
	}
	countDocs := func() int {
		return int(s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", project}).JSON(t)["total"].(float64))
	}
	status, _ = upload()
	require.Equal(t, http.StatusForbidden, status)
	status, _ = upload(header{console.CSRFHeader, "x" + b.csrf})
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, 0, countDocs())
	status, body := upload(header{console.CSRFHeader, b.csrf})
	require.Equal(t, http.StatusCreated, status, body)
	require.Contains(t, body, `"filename":"note.md"`)
	require.Equal(t, 1, countDocs())

	status, hdr, _ := b.do("POST", "/signout", url.Values{"csrf": {b.csrf}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))
	status, _, _ = b.do("GET", "/", nil)
	require.Equal(t, http.StatusSeeOther, status, "signed out")
}

// TestConsoleAuthorization: the console's pages apply the API's rules: a
// project the caller cannot see and a document of another project are not
// found, a token without documents:read is forbidden the documents, and a
// revoked token signs the browser out at its next page.
func TestConsoleAuthorization(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	doc := consoleUpload(t, s, other, "a.md", "# A\n\nText.")

	// A viewer of the default project only.
	userID, _ := s.newMember("viewer@example.com", allScopes, project, "viewer")
	var tok struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/superadmin/users/"+userID+"/tokens", s.admin, map[string]any{"name": "console", "scopes": allScopes}).Decode(t, &tok)
	b := newConsoleBrowser(t, s)
	b.signIn(tok.Token)
	status, _, page := b.do("GET", "/", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, project)
	require.NotContains(t, page, other, "a project the viewer is not in")
	for _, path := range []string{
		"/projects/" + other, "/projects/" + other + "/documents", "/projects/" + other + "/documents/" + doc,
		"/projects/" + project + "/documents/" + doc, "/projects/" + project + "/documents/not-a-uuid",
		"/stream/projects/" + other + "/documents",
	} {
		status, _, page := b.do("GET", path, nil)
		require.Equal(t, http.StatusNotFound, status, path)
		require.NotContains(t, page, "a.md", path)
	}
	status, _, _ = b.do("GET", "/projects/"+project+"/documents", nil)
	require.Equal(t, 200, status)

	// Without documents:read: the project, but not its documents.
	_, noDocs := s.newMember("nodocs@example.com", []string{"admin:read"}, project, "viewer")
	nb := newConsoleBrowser(t, s)
	nb.signIn(noDocs)
	status, _, _ = nb.do("GET", "/projects/"+project, nil)
	require.Equal(t, 200, status)
	status, _, _ = nb.do("GET", "/projects/"+project+"/documents", nil)
	require.Equal(t, http.StatusForbidden, status)

	// Revoked: the next page signs the browser out.
	s.must(204, "DELETE", "/api/tokens/"+tok.ID, tok.Token, nil)
	status, hdr, _ := b.do("GET", "/projects/"+project, nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))
	require.Contains(t, hdr.Get("Set-Cookie"), console.SessionCookie+"=;")
}

// TestConsoleDocumentStream: the documents page's stream passes on a
// "documents" event when one of the project's documents is parsed, and
// none for another project's.
func TestConsoleDocumentStream(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)

	frames := consoleStreamFrames(t, b, "/stream/projects/"+project+"/documents")
	require.Equal(t, ": connected", <-frames)

	s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "b.md", "content": "# B\n\nOther project."},
		header{"X-Project-ID", other})
	doc := consoleUpload(t, s, project, "a.md", "# A\n\nThis project.")
	s.waitDocument(project, doc)
	_, name, data := nextConsoleEvent(t, frames)
	require.Equal(t, console.DocumentsEvent, name)
	require.Equal(t, "document.converted", data)
	select {
	case f := <-frames:
		require.True(t, strings.HasPrefix(f, ":") || idOnlyFrame.MatchString(f), "only heartbeats and other events' ids follow, got %q", f)
	default:
	}
}

// TestConsoleJobActions: cancel and retry need the session's CSRF token
// and the API's write rule (a viewer sees no buttons and is forbidden
// the action); another project's job is not found. Each refusal leaves
// the job as it was; the allowed action changes it and answers its row.
func TestConsoleJobActions(t *testing.T) {
	t.Parallel()
	s, project, _, job, otherJob := consoleJobFixture(t)

	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, page := viewer.do("GET", "/projects/"+project+"/jobs", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="job-`+job+`"`)
	require.NotContains(t, page, "/cancel", "no action for a viewer")
	status, _, _ = viewer.do("POST", "/projects/"+project+"/jobs/"+job+"/cancel", url.Values{}, header{console.CSRFHeader, viewer.csrf})
	require.Equal(t, http.StatusForbidden, status)

	admin := newConsoleBrowser(t, s)
	admin.signIn(s.admin)
	status, _, _ = admin.do("POST", "/projects/"+project+"/jobs/"+job+"/cancel", url.Values{})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	status, _, _ = admin.do("POST", "/projects/"+project+"/jobs/"+otherJob+"/cancel", url.Values{}, header{console.CSRFHeader, admin.csrf})
	require.Equal(t, http.StatusNotFound, status, "another project's job")
	require.Equal(t, "queued", s.extractionGetJob(job).Status)
	require.Equal(t, "queued", s.extractionGetJob(otherJob).Status)

	status, _, page = admin.do("POST", "/projects/"+project+"/jobs/"+job+"/cancel", url.Values{}, header{console.CSRFHeader, admin.csrf})
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `data-status="cancelled"`)
	require.Equal(t, "cancelled", s.extractionGetJob(job).Status)
	// A cancelled job cannot be retried (not failed): the service's answer.
	status, _, page = admin.do("POST", "/projects/"+project+"/jobs/"+job+"/retry", url.Values{}, header{console.CSRFHeader, admin.csrf}, header{"HX-Request", "true"})
	requireActionRefused(t, status, page, http.StatusConflict, "job "+job+" is cancelled; only failed jobs can be retried")
	require.Equal(t, "cancelled", s.extractionGetJob(job).Status)

	// The filter: by status.
	status, _, page = admin.do("GET", "/projects/"+project+"/jobs?status=queued", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, `id="job-`+job+`"`)
	status, _, _ = admin.do("GET", "/projects/"+project+"/jobs?status=nonsense", nil)
	require.Equal(t, http.StatusBadRequest, status)
}

// TestConsoleTasks: the review tasks page lists a status's tasks (pending
// by default) and resolves them with the API's rule and the CSRF token:
// a viewer sees no buttons and is forbidden, another project's task is
// not found, a resolved task answers as the API does; the accepted and
// rejected tasks are so in the service.
func TestConsoleTasks(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	first := s.createTask(project, "Merge Ada", "suggestion", "", map[string]any{"name": "Ada Lovelace"})
	second := s.createTask(project, "Merge Bob", "suggestion", "", nil)
	foreign := s.createTask(other, "Merge Eve", "suggestion", "", nil)
	taskStatus := func(id, project string) string {
		return s.must(200, "GET", "/api/tasks/"+id, s.admin, nil, header{"X-Project-ID", project}).JSON(t)["data"].(map[string]any)["status"].(string)
	}

	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, page := viewer.do("GET", "/projects/"+project+"/tasks", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "Merge Ada")
	require.Contains(t, page, "Ada Lovelace", "the suggestion's metadata")
	require.NotContains(t, page, "/resolve", "no action for a viewer")
	resolve := func(b *consoleBrowser, project, id, resolution string, headers ...header) (int, string) {
		status, _, page := b.do("POST", "/projects/"+project+"/tasks/"+id+"/resolve", url.Values{"resolution": {resolution}}, headers...)
		return status, page
	}
	status, _ = resolve(viewer, project, first, "accepted", header{console.CSRFHeader, viewer.csrf})
	require.Equal(t, http.StatusForbidden, status)

	admin := newConsoleBrowser(t, s)
	admin.signIn(s.admin)
	status, _ = resolve(admin, project, first, "accepted")
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	status, _ = resolve(admin, project, foreign, "accepted", header{console.CSRFHeader, admin.csrf})
	require.Equal(t, http.StatusNotFound, status, "another project's task")
	status, page = resolve(admin, project, first, "maybe", header{console.CSRFHeader, admin.csrf}, header{"HX-Request", "true"})
	requireActionRefused(t, status, page, http.StatusBadRequest, "resolution must be accepted or rejected")
	require.Equal(t, "pending", taskStatus(first, project))
	require.Equal(t, "pending", taskStatus(foreign, other))

	status, page = resolve(admin, project, first, "accepted", header{console.CSRFHeader, admin.csrf})
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `data-status="accepted"`)
	status, _ = resolve(admin, project, second, "rejected", header{console.CSRFHeader, admin.csrf})
	require.Equal(t, 200, status)
	require.Equal(t, "accepted", taskStatus(first, project))
	require.Equal(t, "rejected", taskStatus(second, project))
	api := s.do("POST", "/api/tasks/"+first+"/resolve", s.admin, map[string]any{"resolution": "rejected"}, header{"X-Project-ID", project})
	status, _ = resolve(admin, project, first, "rejected", header{console.CSRFHeader, admin.csrf})
	require.Equal(t, api.Status, status, "a resolved task: the API's answer")
	require.Equal(t, "accepted", taskStatus(first, project))

	status, _, page = admin.do("GET", "/projects/"+project+"/tasks", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, "No pending task.")
	status, _, page = admin.do("GET", "/projects/"+project+"/tasks?status=accepted", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="task-`+first+`"`)
	require.NotContains(t, page, `id="task-`+second+`"`)
}

// TestConsoleSearch: the search page runs the project's search with the
// API's rule and shows highlights as <mark> while the documents' text is
// escaped; another project's documents are not found, a token without
// search:read is forbidden, a bad mode is the API's 400.
func TestConsoleSearch(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	doc := consoleUpload(t, s, project, "looms.md", "# Looms\n\nThe Jacquard & Co <loom> reads punched cards.")
	s.waitDocument(project, doc)
	odoc := consoleUpload(t, s, other, "secret.md", "# Secret\n\nThe Jacquard archive of another project.")
	s.waitDocument(other, odoc)

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page := b.do("GET", "/projects/"+project+"/search?q=jacquard&mode=keyword", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `<mark>Jacquard</mark>`)
	require.Contains(t, page, `href="/projects/`+project+`/documents/`+doc+`"`)
	require.Contains(t, page, "&amp;", "the document's text is escaped")
	require.NotContains(t, page, "<loom>", "the document's text is escaped")
	require.NotContains(t, page, odoc, "another project's document")
	status, _, _ = b.do("GET", "/projects/"+project+"/search?q=jacquard&mode=sideways", nil)
	require.Equal(t, http.StatusBadRequest, status)

	_, noSearch := s.newMember("nosearch@example.com", []string{"admin:read", "documents:read"}, project, "viewer")
	nb := newConsoleBrowser(t, s)
	nb.signIn(noSearch)
	status, _, _ = nb.do("GET", "/projects/"+project+"/search?q=jacquard", nil)
	require.Equal(t, http.StatusForbidden, status)
}

// consoleUpload uploads a text document to project through the API, as
// the admin, and returns its id.
func consoleUpload(t *testing.T, s *testServer, project, filename, content string) string {
	t.Helper()
	var doc struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": filename, "content": content},
		header{"X-Project-ID", project}).Decode(t, &doc)
	return doc.ID
}

// TestConsoleDocumentSizes: the documents page and a document's page show
// its size for a reader (18951 bytes is "18.5 KB"), the exact count in the
// title; a small one stays in bytes.
func TestConsoleDocumentSizes(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	big := consoleUpload(t, s, project, "big.md", "# Big\n\n"+strings.Repeat("x", 18951-len("# Big\n\n")))
	consoleUpload(t, s, project, "small.md", "# Small")
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)

	status, _, page := b.do("GET", "/projects/"+project+"/documents", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `<td title="18951 bytes">18.5 KB</td>`)
	require.Contains(t, page, `<td title="7 bytes">7 B</td>`)
	require.NotContains(t, page, "18951 B<")

	status, _, page = b.do("GET", "/projects/"+project+"/documents/"+big, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `<dd title="18951 bytes">18.5 KB</dd>`)
}
