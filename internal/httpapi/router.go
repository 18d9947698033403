package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/metrics"
	"github.com/graphmill/graphmill/internal/tracing"
)

// RouteTimeout is the deadline of every request that is not a stream.
const RouteTimeout = 60 * time.Second

// requestRecord travels in the request context so that the error mapping
// can hand the cause of a 5xx to the request's log line.
type requestRecord struct {
	id    string
	mu    sync.Mutex
	cause error
	// stream is the failure of a stream after its status went out.
	stream *Problem
}

type recordKey struct{}

// RequestID returns the id of the request ctx belongs to.
func RequestID(ctx context.Context) string {
	if r, ok := ctx.Value(recordKey{}).(*requestRecord); ok {
		return r.id
	}
	return ""
}

func recordCause(ctx context.Context, err error) {
	if r, ok := ctx.Value(recordKey{}).(*requestRecord); ok {
		r.mu.Lock()
		r.cause = err
		r.mu.Unlock()
	}
}

// RecordStreamFailure records that the response of ctx's request failed
// with p after its status was sent (a stream's error event): the request's
// log line names it (streamError: the code, streamStatus: the status it
// would have had; level error for a 5xx) and
// graphmill_http_stream_failures_total counts it. The request itself
// stays counted under the status sent.
func RecordStreamFailure(ctx context.Context, p *Problem) {
	if r, ok := ctx.Value(recordKey{}).(*requestRecord); ok {
		r.mu.Lock()
		r.stream = p
		r.mu.Unlock()
	}
}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) //nolint:gochecknoglobals // compiled pattern, constant

// RouterConfig configures NewRouter.
type RouterConfig struct {
	Logger  *slog.Logger
	Metrics *metrics.HTTP
	// StreamPrefixes are path prefixes of long-lived responses (event
	// stream, MCP) that get no deadline.
	StreamPrefixes []string
	// RequestLevel is the level of the log line of a request that did not
	// fail with a 5xx (the zero value is info).
	RequestLevel slog.Level
	// Tracer traces every request (a server span named by the method and
	// the route pattern, continuing an incoming W3C traceparent); nil or
	// the no-op provider installs nothing, so that tracing off costs
	// nothing.
	Tracer trace.TracerProvider
}

// NewRouter returns the chi router with the platform middleware: request
// id, recovery, structured logs, metrics and route deadlines. Its 404 and
// 405 answers are problem bodies too.
func NewRouter(c RouterConfig) chi.Router {
	r := chi.NewRouter()
	if tracing.Enabled(c.Tracer) {
		// The span is named by the method until the route is known (serve
		// renames it); otelhttp's metrics are not used (Prometheus is).
		r.Use(otelhttp.NewMiddleware("http.request", otelhttp.WithTracerProvider(c.Tracer),
			otelhttp.WithPropagators(tracing.Propagator()), otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method })))
	}
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			serve(c, r, next, w, req)
		})
	})
	r.NotFound(NotFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		// The path's methods (chi tells a custom handler none).
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allowed = append(allowed, m)
			}
		}
		allow := strings.Join(allowed, ", ")
		w.Header().Set("Allow", allow)
		writeProblem(w, newProblem(req.Context(), http.StatusMethodNotAllowed,
			fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", req.Method, req.URL.Path, allow)))
	})
	return r
}

// NotFound answers a request no route matched with a problem body (the
// router's 404; the console answers its own paths outside /api with a
// page, see IsAPIPath).
func NotFound(w http.ResponseWriter, req *http.Request) {
	WriteProblem(w, req, errs.Errorf(errs.NotFound, "no route for %s %s", req.Method, req.URL.Path))
}

// IsAPIPath reports whether path is the API's (/api and below), whose
// answers are JSON whatever the route.
func IsAPIPath(path string) bool {
	return path == "/api" || strings.HasPrefix(path, "/api/")
}

func serve(c RouterConfig, mux *chi.Mux, next http.Handler, w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	id := req.Header.Get("X-Request-ID")
	if !validRequestID.MatchString(id) {
		id = uuid.NewString()
	}
	rec := &requestRecord{id: id}
	ctx := context.WithValue(req.Context(), recordKey{}, rec)
	stream := false
	for _, p := range c.StreamPrefixes {
		if strings.HasPrefix(req.URL.Path, p) {
			stream = true
		}
	}
	if !stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, RouteTimeout)
		defer cancel()
	}
	req = req.WithContext(ctx)
	w.Header().Set("X-Request-ID", id)
	ww := middleware.NewWrapResponseWriter(w, req.ProtoMajor)

	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler { //nolint:errorlint // sentinel value of panic, not a wrapped error
				panic(v)
			}
			recordCause(ctx, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
			if ww.Status() == 0 {
				WriteProblem(ww, req, fmt.Errorf("panic: %v", v))
			}
		}
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		route := "unmatched"
		if rc := chi.RouteContext(ctx); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		dur := time.Since(start)
		if c.Metrics != nil {
			labels := []string{route, req.Method, strconv.Itoa(status)}
			c.Metrics.Requests.WithLabelValues(labels...).Inc()
			c.Metrics.Duration.WithLabelValues(labels...).Observe(dur.Seconds())
		}
		attrs := []slog.Attr{
			slog.String("requestId", id), slog.String("method", req.Method), slog.String("route", route),
			slog.String("path", req.URL.Path), slog.Int("status", status), slog.Int("bytes", ww.BytesWritten()),
			slog.Float64("durationMs", float64(dur.Microseconds())/1000),
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			attrs = append(attrs, slog.String("traceId", sc.TraceID().String()), slog.String("spanId", sc.SpanID().String()))
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				span.SetName(req.Method + " " + route)
				span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
			}
		}
		level := c.RequestLevel
		rec.mu.Lock()
		if rec.cause != nil {
			attrs = append(attrs, slog.String("error", rec.cause.Error()))
			level = slog.LevelError
		}
		if p := rec.stream; p != nil {
			attrs = append(attrs, slog.String("streamError", string(p.Code)), slog.Int("streamStatus", p.Status))
			if p.Status >= http.StatusInternalServerError {
				level = slog.LevelError
			}
			if c.Metrics != nil {
				c.Metrics.StreamFailures.WithLabelValues(route, req.Method, string(p.Code)).Inc()
			}
		}
		rec.mu.Unlock()
		c.Logger.LogAttrs(ctx, level, "request", attrs...)
	}()
	if err := requestText(mux, req); err != nil {
		WriteProblem(ww, req, err)
		return
	}
	next.ServeHTTP(ww, req)
}
