package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// TestMethodNotAllowed: a method a path has no route for is 405 (was
// 400) with the path's methods in Allow and a problem body naming them
// (code invalid_argument, as huma's own 405s).
func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	r := httpapi.NewRouter(httpapi.RouterConfig{Logger: slog.New(slog.DiscardHandler)})
	ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
	r.Post("/api/search", ok)
	r.Get("/api/items/{id}", ok)
	r.Delete("/api/items/{id}", ok)

	for path, allow := range map[string]string{"/api/search": "POST", "/api/items/7": "GET, DELETE"} {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPut, path, http.NoBody)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		require.Equal(t, http.StatusMethodNotAllowed, rec.Code, path)
		require.Equal(t, allow, rec.Header().Get("Allow"), path)
		require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
		var p map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
		require.Equal(t, "invalid_argument", p["code"])
		require.Equal(t, "method PUT is not allowed on "+path+" (allowed: "+allow+")", p["detail"])
	}
}

// TestRequestTextNamesLongParameterCut: a query value refused for its
// text is named by its parameter, whose name the caller chose: a long
// name is quoted cut (errs.Quoted), never echoed whole; a short one is
// named query.<name> as before.
func TestRequestTextNamesLongParameterCut(t *testing.T) {
	t.Parallel()
	r := httpapi.NewRouter(httpapi.RouterConfig{Logger: slog.New(slog.DiscardHandler)})
	r.Get("/api/items", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	detail := func(query string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/items?"+query, nil))
		require.Equal(t, http.StatusBadRequest, rec.Code, query)
		var p struct{ Detail string }
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
		return p.Detail
	}
	require.Equal(t, "query.type: must be valid UTF-8", detail("type=%ff"))
	require.Equal(t, "query.type: must not contain the NUL character (U+0000)", detail("type=%00"))
	long := strings.Repeat("k", 100_000)
	require.Equal(t, "query (a parameter named "+errs.Quoted(long)+"): must be valid UTF-8", detail(long+"=%ff"))
}
