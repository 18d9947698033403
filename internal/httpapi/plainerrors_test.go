package httpapi_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/httpapi"
)

// A plain-text error answer becomes a problem (code from the status,
// requestId, the trimmed text as detail; a 5xx text is not shown); JSON
// errors and successful answers pass as they are, and a stream's flushes
// reach the client while the handler still runs.
func TestPlainErrorsAsProblems(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	r := httpapi.NewRouter(httpapi.RouterConfig{Logger: slog.New(slog.DiscardHandler), StreamPrefixes: []string{"/stream"}})
	r.Handle("/*", httpapi.PlainErrorsAsProblems(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/notfound":
			http.Error(w, "session not found", http.StatusNotFound)
		case "/gone":
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		case "/internal":
			http.Error(w, "storing stream: secret detail", http.StatusInternalServerError)
		case "/jsonrpc":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"bad"}}`)
		case "/plain-ok":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "fine")
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "data: one\n\n")
			_ = http.NewResponseController(w).Flush()
			<-release
			_, _ = io.WriteString(w, "data: two\n\n")
		}
	})))
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)

	get := func(path string) (*http.Response, map[string]any, string) {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		var p map[string]any
		if res.Header.Get("Content-Type") == "application/problem+json" {
			require.NoError(t, json.Unmarshal(raw, &p), "%s", raw)
		}
		return res, p, string(raw)
	}
	for path, want := range map[string]struct {
		status       int
		code, detail string
	}{
		"/notfound": {404, "not_found", "session not found"},
		"/gone":     {405, "invalid_argument", "Method Not Allowed"},
		"/internal": {500, "internal", "internal error"},
	} {
		res, p, raw := get(path)
		require.Equal(t, want.status, res.StatusCode, path)
		require.Equal(t, "application/problem+json", res.Header.Get("Content-Type"), "%s: %s", path, raw)
		require.Equal(t, want.code, p["code"], path)
		require.Equal(t, want.detail, p["detail"], path)
		require.InDelta(t, float64(want.status), p["status"], 0, path)
		require.Equal(t, http.StatusText(want.status), p["title"], path)
		require.NotEmpty(t, p["requestId"], path)
		require.Equal(t, res.Header.Get("X-Request-ID"), p["requestId"], path)
		require.NotContains(t, raw, "secret detail", path)
	}

	res, _, raw := get("/jsonrpc")
	require.Equal(t, 400, res.StatusCode)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	require.JSONEq(t, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"bad"}}`, raw)
	res, _, raw = get("/plain-ok")
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "fine", raw)

	// The first event arrives while the handler waits: it was flushed.
	res, err := http.Get(srv.URL + "/stream")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	br := bufio.NewReader(res.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "data: one\n", line)
	close(release)
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	require.Equal(t, "\ndata: two\n\n", string(rest))
}
