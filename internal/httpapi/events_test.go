package httpapi_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/httpapi"
)

func TestEventStream(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	rec.Header().Set("Cache-Control", "no-store")
	s := httpapi.NewEventStream(rec, func(h http.Header) { h.Set("Server-Timing", "x;dur=1") })
	require.False(t, s.Started())
	s.Event("delta", map[string]string{"text": "a<b"})
	s.Event("done", 1)
	require.True(t, s.Started())
	require.NoError(t, s.Err())
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/event-stream", rec.Header().Get("Content-Type"))
	require.Equal(t, "no-store", rec.Header().Get("Cache-Control"), "a caller's cache policy stays")
	require.Equal(t, "x;dur=1", rec.Header().Get("Server-Timing"))
	require.Equal(t, "event: delta\ndata: {\"text\":\"a\\u003cb\"}\n\nevent: done\ndata: 1\n\n", rec.Body.String())
	require.True(t, rec.Flushed)

	// The first write error is kept and later events are dropped.
	broken := &failingWriter{ResponseRecorder: httptest.NewRecorder()}
	s = httpapi.NewEventStream(broken, nil)
	s.Event("delta", "x")
	require.Error(t, s.Err())
	s.Event("delta", "y")
	require.Equal(t, 1, broken.writes)
	require.Equal(t, "no-cache", broken.Header().Get("Cache-Control"))
}

type failingWriter struct {
	*httptest.ResponseRecorder
	writes int
}

func (f *failingWriter) Write([]byte) (int, error) {
	f.writes++
	return 0, errors.New("client gone")
}
