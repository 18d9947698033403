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
	t    *testing.T
	s    *testServer
	c    *http.Client
	csrf string
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func newConsoleBrowser(t *testing.T, s *testServer) *consoleBrowser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &consoleBrowser{t: t, s: s, c: &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *consoleBrowser) do(method, path string, form url.Values, headers ...header) (int, http.Header, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(b.t.Context(), method, b.s.base+path, body)
	require.NoError(b.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
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

	b.signIn(s.admin)
	status, _, page := b.do("GET", "/", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `href="/projects/`+project+`"`)
	status, _, page = b.do("GET", "/projects/"+project, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="document-count">0<`)
}
