package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/startstop"
)

// streamsFunc is a Streams whose Stop is f.
type streamsFunc func(ctx context.Context) error

func (f streamsFunc) Stop(ctx context.Context) error { return f(ctx) }

// slowMux serves GET /slow: it signals inHandler, then answers "done"
// once release is closed, whatever its context says.
func slowMux() (mux *http.ServeMux, inHandler, release chan struct{}) {
	inHandler, release = make(chan struct{}), make(chan struct{})
	mux = http.NewServeMux()
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, _ *http.Request) {
		close(inHandler)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	return mux, inHandler, release
}

// get GETs url in the background and sends the body, or the error.
func get(url string) <-chan string {
	answer := make(chan string, 1)
	go func() {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	return answer
}

// The server has the start/stop shape of every long-running part: Stop
// before Start does nothing harmful, a second Start is refused; Stop stops
// the streams first, then drains, waiting for a request in flight until
// its context ends; a second Stop is harmless.
func TestServerStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mux, inHandler, release := slowMux()
	var order []string
	streams := streamsFunc(func(context.Context) error {
		order = append(order, "streams")
		return nil
	})
	logger := slog.New(slog.DiscardHandler)
	require.NoError(t, httpapi.NewServer("unused", "127.0.0.1:0", mux, logger).Stop(ctx), "Stop before Start")

	s := httpapi.NewServer("test", "127.0.0.1:0", mux, logger, streams)
	require.Empty(t, s.Addr(), "not bound before Start")
	require.NoError(t, s.Start(ctx))
	require.ErrorIs(t, s.Start(ctx), startstop.ErrStarted)
	addr := s.Addr()
	require.NotEmpty(t, addr)

	answer := get("http://" + addr + "/slow")
	<-inHandler

	ended, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, s.Stop(ended), context.Canceled, "the request was still in flight")
	require.Equal(t, []string{"streams"}, order)
	close(release)
	require.NotEqual(t, "done", <-answer, "the request left after the deadline was cut")
	require.NoError(t, s.Stop(ctx), "a second Stop")
	require.Contains(t, <-get("http://"+addr+"/slow"), "connection refused", "no longer listening")
}

// A drain waits for a request in flight when its context allows.
func TestServerStopDrains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mux, inHandler, release := slowMux()
	s := httpapi.NewServer("test", "127.0.0.1:0", mux, slog.New(slog.DiscardHandler))
	require.NoError(t, s.Start(ctx))
	answer := get("http://" + s.Addr() + "/slow")
	<-inHandler
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(ctx) }()
	close(release)
	require.NoError(t, <-stopped)
	require.Equal(t, "done", <-answer)
}
