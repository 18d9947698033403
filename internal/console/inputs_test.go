package console

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
)

// TestStatusOfUnstorableText: a value PostgreSQL refused as text is the
// caller's 400, as in the API (httpapi.ClientError); a domain error keeps
// its status and message; anything else is an internal error.
func TestStatusOfUnstorableText(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"22021", "22P05"} {
		status, msg := statusOf(fmt.Errorf("insert: %w", &pgconn.PgError{Code: code, Message: "invalid byte sequence"}))
		require.Equal(t, http.StatusBadRequest, status, code)
		require.Contains(t, msg, "NUL", code)
		require.NotContains(t, msg, "invalid byte sequence", "the database's text is not shown")
	}
	status, msg := statusOf(fmt.Errorf("get: %w", errs.New(errs.NotFound, "agent not found")))
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "agent not found", msg)
	status, msg = statusOf(&pgconn.PgError{Code: "23505", Message: "duplicate key"})
	require.Equal(t, http.StatusInternalServerError, status)
	require.Equal(t, "internal error", msg)
}

// TestTextInput: a query or form value (or a parameter's name) with a
// NUL or invalid UTF-8 is refused, naming the field; text is passed.
func TestTextInput(t *testing.T) {
	t.Parallel()
	check := func(target string, form url.Values) error {
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		require.NoError(t, readForm(httptest.NewRecorder(), r, formBody))
		return textInput(r)
	}
	require.NoError(t, check("/x?q=caf%C3%A9", url.Values{"title": {"naïve 日本"}}))
	for _, c := range []struct {
		target string
		form   url.Values
		field  string
	}{
		{"/x?q=%FF", nil, "query.q"},
		{"/x?type=a%00b", nil, "query.type"},
		{"/x", url.Values{"title": {"a\x00b"}}, "form.title"},
		{"/x", url.Values{"content": {"a\xffb"}}, "form.content"},
		{"/x", url.Values{"a\x00": {"b"}}, "form (a parameter name)"},
	} {
		err := check(c.target, c.form)
		require.Error(t, err, c.field)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), c.field)
		require.True(t, strings.HasPrefix(err.Error(), c.field+": "), "%s: %v", c.field, err)
	}
}

// TestReadFormBounded: a form body over FormMax is 413, not read whole,
// urlencoded or multipart (its fields, or a file part); under it, a
// multipart form's values are read as an urlencoded form's. The upload's
// multipart body is left to its handler; a body that is no form is not
// read.
func TestReadFormBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", FormMax)
	request := func(ct, body string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(body))
		r.Header.Set("Content-Type", ct)
		return r
	}
	multipartBody := func(fields map[string]string, file string) (string, string) {
		var b strings.Builder
		mw := multipart.NewWriter(&b)
		for k, v := range fields {
			require.NoError(t, mw.WriteField(k, v))
		}
		if file != "" {
			fw, err := mw.CreateFormFile("file", "f.txt")
			require.NoError(t, err)
			_, err = io.WriteString(fw, file)
			require.NoError(t, err)
		}
		require.NoError(t, mw.Close())
		return mw.FormDataContentType(), b.String()
	}

	err := readForm(httptest.NewRecorder(), request("application/x-www-form-urlencoded", "content="+big), formBody)
	require.Equal(t, errs.PayloadTooLarge, errs.CodeOf(err), "%v", err)
	fieldCT, fieldBody := multipartBody(map[string]string{"content": big}, "")
	fileCT, fileBody := multipartBody(nil, big)
	for _, r := range []*http.Request{request(fieldCT, fieldBody), request(fileCT, fileBody)} {
		err := readForm(httptest.NewRecorder(), r, formBody)
		require.Equal(t, errs.PayloadTooLarge, errs.CodeOf(err), "%v", err)
		require.EqualError(t, err, "the form is larger than 1048576 bytes")
	}

	ct, body := multipartBody(map[string]string{"content": "hello", "csrf": "t"}, "")
	r := request(ct, body)
	require.NoError(t, readForm(httptest.NewRecorder(), r, formBody))
	require.Equal(t, "hello", r.PostForm.Get("content"))
	require.Equal(t, "t", r.PostFormValue("csrf"))

	err = readForm(httptest.NewRecorder(), request("multipart/form-data; boundary=x", "not multipart"), formBody)
	require.Equal(t, errs.Invalid, errs.CodeOf(err), "%v", err)

	r = request(fieldCT, fieldBody)
	require.NoError(t, readForm(httptest.NewRecorder(), r, uploadBody))
	require.Nil(t, r.PostForm, "not parsed")
	require.Nil(t, r.MultipartForm, "not parsed")
	r = request("application/json", `{"content": "x"}`)
	require.NoError(t, readForm(httptest.NewRecorder(), r, formBody))
	require.Nil(t, r.PostForm, "not parsed")
}

// TestLocalLink: a notification's action URL is drawn as a link only
// when it is a path of this server: nothing a browser reads as another
// site (tabs and newlines are stripped by browsers, "\" is "/").
func TestLocalLink(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"/projects/p/documents", "/notifications?tab=important", "/a#b"} {
		require.Equal(t, ok, localLink(ok))
	}
	for _, bad := range []string{
		"", "//evil.example", "/\t/evil.example/x", "/\n/evil.example", "/\r/evil.example", "/\\evil.example",
		"https://evil.example/", "javascript:alert(1)", "evil.example", "/%zz", " /x", "/x\x7f",
	} {
		require.Empty(t, localLink(bad), "%q", bad)
	}
}

// TestRelKeyDistinct: two proposals whose names differ only in where a
// "|" falls have different keys in the finalize form.
func TestRelKeyDistinct(t *testing.T) {
	t.Parallel()
	a := discovery.Relationship{SourceType: "Person|Employer", RelationType: "works_at", TargetType: "Company"}
	b := discovery.Relationship{SourceType: "Person", RelationType: "Employer|works_at", TargetType: "Company"}
	require.NotEqual(t, relKey(a), relKey(b))
	require.Equal(t, "Person|works_at|Company", relKey(discovery.Relationship{SourceType: "Person", RelationType: "works_at", TargetType: "Company"}))
}

// TestMCPToolRowTarget: a tool's actions swap their own row (closest tr),
// whatever the tool's name: "#tool-notes.search" would be a CSS selector
// for id tool-notes with class search, which finds nothing.
func TestMCPToolRowTarget(t *testing.T) {
	t.Parallel()
	on := true
	srv := mcpregistry.Server{ID: uuid.New(), Type: mcpregistry.TypeHTTP, Enabled: true}
	tool := mcpregistry.Tool{ID: uuid.New(), ToolName: "notes.search", Enabled: true, Configurable: &on}
	var b bytes.Buffer
	require.NoError(t, mcpToolRow(projectView{CanWrite: true}, srv, tool).Render(context.Background(), &b))
	html := b.String()
	require.Contains(t, html, `id="tool-notes.search"`)
	require.NotContains(t, html, `hx-target="#tool-`)
	require.Equal(t, 2, strings.Count(html, `hx-target="closest tr"`), "the toggle and the key form: %s", html)
}
