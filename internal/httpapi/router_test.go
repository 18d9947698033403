package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

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
