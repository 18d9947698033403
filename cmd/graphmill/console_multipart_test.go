package main

import (
	"bytes"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/console"
)

// postMultipart sends fields as a multipart form (a file part too, when
// file is not empty) to path, with headers.
func (b *consoleBrowser) postMultipart(path string, fields map[string]string, file string, headers ...header) (int, http.Header, string) {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		require.NoError(b.t, mw.WriteField(k, v))
	}
	if file != "" {
		fw, err := mw.CreateFormFile("file", "note.md")
		require.NoError(b.t, err)
		_, err = io.WriteString(fw, file)
		require.NoError(b.t, err)
	}
	require.NoError(b.t, mw.Close())
	return b.send("POST", path, mw.FormDataContentType(), &body, headers...)
}

// TestConsoleMultipartFormsBounded: a console form read as multipart is
// bounded by console.FormMax as an urlencoded one is: over it, the same
// 413 page (nothing created), whether its size is in a field or a file
// part, on a page's form and on the sign-in form; under it, the form
// works as its urlencoded twin does. The upload, which streams its
// multipart body to the API, keeps the API's own limit.
func TestConsoleMultipartFormsBounded(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	csrf := header{console.CSRFHeader, b.csrf}
	chat := "/projects/" + project + "/chat"
	big := strings.Repeat("a", console.FormMax)

	status, _, want := b.do("POST", chat, url.Values{"title": {"t"}, "pad": {big}}, csrf)
	require.Equal(t, http.StatusRequestEntityTooLarge, status, want)
	require.Contains(t, want, "the form is larger than 1048576 bytes")
	status, _, page := b.postMultipart(chat, map[string]string{"title": "t", "pad": big}, "", csrf)
	require.Equal(t, http.StatusRequestEntityTooLarge, status, page)
	require.Equal(t, want, page, "the urlencoded form's refusal")
	status, _, page = b.postMultipart(chat, map[string]string{"title": "t"}, big, csrf)
	require.Equal(t, http.StatusRequestEntityTooLarge, status, page)
	require.Equal(t, want, page, "a file part counts")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chat_sessions`))

	// Under the bound: the form works, read as multipart or urlencoded;
	// without the CSRF token, it is refused.
	status, _, page = b.postMultipart(chat, map[string]string{"title": "multi"}, "", csrf)
	require.Equal(t, http.StatusSeeOther, status, page)
	status, _, page = b.do("POST", chat, url.Values{"csrf": {b.csrf}, "title": {"plain"}})
	require.Equal(t, http.StatusSeeOther, status, page)
	status, _, _ = b.postMultipart(chat, map[string]string{"title": "no token"}, "")
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM chat_sessions WHERE title = 'multi'`))
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM chat_sessions WHERE title = 'plain'`))
	require.Equal(t, 2, s.extractionCount(`SELECT count(*) FROM chat_sessions`))

	// The sign-in form, before any session: the same bound.
	anon := newConsoleBrowser(t, s)
	status, _, page = anon.postMultipart("/signin", map[string]string{"token": s.admin, "pad": big}, "")
	require.Equal(t, http.StatusRequestEntityTooLarge, status, page)
	require.Contains(t, page, "the form is larger than 1048576 bytes")

	// The upload is not a form: a document over FormMax is stored.
	status, _, page = b.postMultipart("/projects/"+project+"/documents", nil, "# Big\n\n"+strings.Repeat("word ", console.FormMax/4), csrf)
	require.Equal(t, http.StatusCreated, status, page)
}

// TestMalformedMultipartNotEchoed: a multipart body whose part header is
// malformed is a 400 saying so, without the header's text, on the API's
// upload, the console's upload (forwarded to it) and a console form.
func TestMalformedMultipartNotEchoed(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	const marker = "evil-marker"
	body := "--b\r\n<script>" + marker + "</script>\r\n\r\nx\r\n--b--\r\n"
	const detail = "a part's header is malformed"

	r := s.do("POST", "/api/documents", s.admin, body, header{"Content-Type", "multipart/form-data; boundary=b"}, header{"X-Project-ID", project})
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Contains(t, r.Detail(t), "malformed multipart body: "+detail)
	require.NotContains(t, string(r.Body), marker)

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	csrf := header{console.CSRFHeader, b.csrf}
	for _, path := range []string{"/projects/" + project + "/documents", "/projects/" + project + "/chat"} {
		status, _, page := b.send("POST", path, "multipart/form-data; boundary=b", strings.NewReader(body), csrf)
		require.Equal(t, http.StatusBadRequest, status, path)
		require.Contains(t, html.UnescapeString(page), detail, path)
		require.NotContains(t, page, marker, path)
	}
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chat_sessions`))
}
