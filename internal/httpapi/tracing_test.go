package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/graphmill/graphmill/internal/httpapi"
)

// tracedRouter is a router with one route with an id.
func tracedRouter(tp trace.TracerProvider) http.Handler {
	r := httpapi.NewRouter(httpapi.RouterConfig{Logger: slog.New(slog.DiscardHandler), Tracer: tp})
	r.Get("/api/items/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return r
}

// TestRouterSpans: with a recording provider, a request is one server
// span named by its route pattern (not its path), continuing the
// client's traceparent; with the no-op provider or none, no span.
func TestRouterSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	h := tracedRouter(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	req := httptest.NewRequest(http.MethodGet, "/api/items/0199aa", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	spans := rec.Ended()
	require.Len(t, spans, 1)
	require.Equal(t, "GET /api/items/{id}", spans[0].Name())
	require.Equal(t, trace.SpanKindServer, spans[0].SpanKind())
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", spans[0].SpanContext().TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", spans[0].Parent().SpanID().String())
	var route string
	for _, a := range spans[0].Attributes() {
		if a.Key == "http.route" {
			route = a.Value.AsString()
		}
	}
	require.Equal(t, "/api/items/{id}", route)
}

// BenchmarkRouterTracing measures the request path without a tracer, with
// the no-op provider (tracing off) and with a recording SDK provider
// (tracing on, spans dropped by a processor that keeps nothing).
func BenchmarkRouterTracing(b *testing.B) {
	for _, c := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"none", nil},
		{"off", noop.NewTracerProvider()},
		{"on", sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discardProcessor{}))},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := tracedRouter(c.tp)
			req := httptest.NewRequest(http.MethodGet, "/api/items/0199aa", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

// discardProcessor ends spans without keeping them.
type discardProcessor struct{ sdktrace.SpanProcessor }

func (discardProcessor) OnStart(_ context.Context, _ sdktrace.ReadWriteSpan) {}
func (discardProcessor) OnEnd(sdktrace.ReadOnlySpan)                         {}
func (discardProcessor) Shutdown(context.Context) error                      { return nil }
func (discardProcessor) ForceFlush(context.Context) error                    { return nil }

// TestRouterTracingOffAllocatesNothingExtra: with tracing off (the no-op
// provider) a request allocates exactly what it does without any tracer
// (BenchmarkRouterTracing gives the figures). Not parallel: allocation
// counts are process-wide.
func TestRouterTracingOffAllocatesNothingExtra(t *testing.T) { //nolint:paralleltest // counts allocations of the whole process
	req := httptest.NewRequest(http.MethodGet, "/api/items/0199aa", nil)
	allocs := func(h http.Handler) float64 {
		return testing.AllocsPerRun(200, func() { h.ServeHTTP(httptest.NewRecorder(), req) })
	}
	none, off := allocs(tracedRouter(nil)), allocs(tracedRouter(noop.NewTracerProvider()))
	on := allocs(tracedRouter(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discardProcessor{}))))
	require.Equal(t, none, off)
	require.Greater(t, on, off, "the comparison would see a tracer's allocations")
}
