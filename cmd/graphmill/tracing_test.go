package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/tracing"
)

// otlpReceiver is an in-process OTLP/HTTP collector: it decodes the
// protobuf export requests posted to /v1/traces and keeps their spans.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	posts int
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		raw, err := io.ReadAll(req.Body)
		var in coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &in)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.posts++
		for _, rs := range in.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				r.spans = append(r.spans, ss.GetSpans()...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) received() (posts int, spans []*tracepb.Span) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts, append([]*tracepb.Span(nil), r.spans...)
}

// spanAttrs flattens a span's attributes to strings.
func spanAttrs(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.GetAttributes() {
		out[kv.GetKey()] = anyValueString(kv.GetValue())
	}
	return out
}

func anyValueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyValueString(e))
		}
		return strings.Join(parts, ",")
	default:
		raw, _ := json.Marshal(v.GetValue())
		return string(raw)
	}
}

// findSpan returns the first span match accepts.
func findSpan(t *testing.T, spans []*tracepb.Span, what string, match func(*tracepb.Span, map[string]string) bool) *tracepb.Span {
	t.Helper()
	for _, s := range spans {
		if match(s, spanAttrs(s)) {
			return s
		}
	}
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.GetName()
	}
	require.Failf(t, "span not exported", "%s; exported: %v", what, names)
	return nil
}

// requestLog returns the request log line of method and route.
func requestLog(t *testing.T, logs string, method, route string) map[string]any {
	t.Helper()
	for line := range strings.SplitSeq(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if m["msg"] == "request" && m["method"] == method && m["route"] == route {
			return m
		}
	}
	require.Failf(t, "no request log", "%s %s", method, route)
	return nil
}

// TestTracesFromRequestThroughJobToProvider: with an OTLP endpoint set,
// the upload of a document is one trace: the request's server span
// (named by the route pattern), the parse job's span as its child (the
// traceparent stored on the job row), the chunk embedding batch as the
// parse job's child and the embedding provider call beneath it, with the
// database's spans carrying statements but never argument values, no
// secret in any attribute, and the request's log line carrying the trace
// and span ids. Stop flushes the spans.
func TestTracesFromRequestThroughJobToProvider(t *testing.T) {
	t.Parallel()
	rcv := newOTLPReceiver(t)
	logs := &syncBuffer{}
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, nil), func(c *config.Config) { c.OTLPEndpoint = rcv.srv.URL })
	require.True(t, tracing.Enabled(s.m.tracing.TracerProvider()))
	project, _ := s.defaultProject()
	const marker = "Quillwort tracing marker sentence"
	r := s.uploadFile(s.admin, project, "traced.md", "text/markdown", []byte("# Traced\n\n"+marker+" about knowledge graphs.\n"))
	require.Equal(t, 201, r.Status, "%s", r.Body)
	var d docBody
	r.Decode(t, &d)
	d = s.waitDocument(project, d.ID)
	require.Equal(t, "parsed", d.Status, d.Error)
	require.Positive(t, d.ChunkCount)

	pool := s.pool()
	ctx := context.Background()
	var parseJob string
	var parent *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT id::text, trace_parent FROM document_parsing_jobs WHERE document_id = $1`, d.ID).Scan(&parseJob, &parent))
	require.NotNil(t, parent, "the job row keeps the request's traceparent")
	var chunkParents int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM chunk_embedding_jobs j JOIN document_chunks c ON c.id = j.chunk_id
		WHERE c.document_id = $1 AND j.trace_parent IS NOT NULL`, d.ID).Scan(&chunkParents))
	require.Equal(t, d.ChunkCount, chunkParents, "the parse job's chunk embedding jobs keep its traceparent")

	s.m.Stop(ctx) // flushes the spans not exported yet
	_, spans := rcv.received()

	post := findSpan(t, spans, "the upload's server span", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "POST /api/documents"
	})
	require.Equal(t, tracepb.Span_SPAN_KIND_SERVER, post.GetKind())
	require.Equal(t, "/api/documents", spanAttrs(post)["http.route"])
	require.Empty(t, post.GetParentSpanId(), "a request without traceparent starts a trace")
	traceID := post.GetTraceId()
	require.Equal(t, "00-"+hex.EncodeToString(traceID)+"-"+hex.EncodeToString(post.GetSpanId())+"-01", *parent)

	parse := findSpan(t, spans, "the parse job's span", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "job document_parsing" && a["graphmill.job.id"] == parseJob
	})
	require.Equal(t, traceID, parse.GetTraceId(), "the job continues the request's trace")
	require.Equal(t, post.GetSpanId(), parse.GetParentSpanId(), "as a child of the request's span")
	require.Equal(t, tracepb.Span_SPAN_KIND_CONSUMER, parse.GetKind())
	require.Equal(t, "document_parsing", spanAttrs(parse)["graphmill.job.queue"])
	require.Equal(t, project, spanAttrs(parse)["graphmill.project.id"])
	require.Len(t, parse.GetLinks(), 1, "every job's traceparent is a link too")

	embed := findSpan(t, spans, "the chunk embedding batch", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "job chunk_embedding" && string(sp.GetParentSpanId()) == string(parse.GetSpanId())
	})
	require.Equal(t, traceID, embed.GetTraceId())
	call := findSpan(t, spans, "the embedding provider call", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "provider embed" && string(sp.GetParentSpanId()) == string(embed.GetSpanId())
	})
	ca := spanAttrs(call)
	require.Equal(t, traceID, call.GetTraceId())
	require.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, call.GetKind())
	require.Equal(t, "local", ca["gen_ai.provider.name"])
	require.Equal(t, "embed", ca["gen_ai.operation.name"])
	require.NotEmpty(t, ca["gen_ai.request.model"])
	var model string
	require.NoError(t, pool.QueryRow(ctx, `SELECT embedding_model FROM document_chunks WHERE document_id = $1 LIMIT 1`, d.ID).Scan(&model))
	require.Equal(t, model, ca["gen_ai.request.model"], "the model that embedded the chunks")
	require.Equal(t, strconv.Itoa(d.ChunkCount), ca["graphmill.provider.items"])

	// Routes with ids are named by their pattern.
	get := findSpan(t, spans, "a document read", func(sp *tracepb.Span, a map[string]string) bool {
		return a["http.route"] == "/api/documents/{id}"
	})
	require.Equal(t, "GET /api/documents/{id}", get.GetName())

	// The database's spans: the statement with its placeholders, never
	// the values bound to them.
	insert := findSpan(t, spans, "the parse job's insert", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "INSERT document_parsing_jobs" && string(sp.GetParentSpanId()) == string(post.GetSpanId())
	})
	ia := spanAttrs(insert)
	require.Equal(t, "postgresql", ia["db.system.name"])
	require.Contains(t, ia["db.query.text"], "$1")
	var dbSpans int
	for _, sp := range spans {
		a := spanAttrs(sp)
		if a["db.system.name"] == "" {
			continue
		}
		dbSpans++
		require.NotContains(t, a, "pgx.query.parameters")
		for k, v := range a {
			for _, value := range []string{d.ID, project, parseJob, marker} {
				require.NotContains(t, v, value, "span %s attribute %s carries a bound value", sp.GetName(), k)
			}
		}
	}
	require.Greater(t, dbSpans, 10)

	// No secret anywhere: tokens, the secret key, the content.
	for _, sp := range spans {
		for k, v := range spanAttrs(sp) {
			for _, secret := range []string{s.admin, testSecretKey, "Bearer", marker} {
				require.NotContains(t, v, secret, "span %s attribute %s", sp.GetName(), k)
			}
		}
	}

	// The request's log line carries its trace and span.
	line := requestLog(t, logs.String(), "POST", "/api/documents")
	require.Equal(t, hex.EncodeToString(traceID), line["traceId"])
	require.Equal(t, hex.EncodeToString(post.GetSpanId()), line["spanId"])
}

// TestTracingOffExportsNothing: without an OTLP endpoint the no-op
// provider is used: no job row keeps a traceparent, an incoming
// traceparent is not continued (the request log has no trace id), and
// nothing is exported, even on Stop.
func TestTracingOffExportsNothing(t *testing.T) {
	t.Parallel()
	rcv := newOTLPReceiver(t)
	logs := &syncBuffer{}
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(logs, nil))
	require.False(t, tracing.Enabled(s.m.tracing.TracerProvider()))
	require.IsType(t, noop.TracerProvider{}, s.m.tracing.TracerProvider())
	project, _ := s.defaultProject()
	r := s.uploadFile(s.admin, project, "untraced.md", "text/markdown", []byte("# Untraced\n\nNothing here is traced.\n"))
	require.Equal(t, 201, r.Status, "%s", r.Body)
	var d docBody
	r.Decode(t, &d)
	d = s.waitDocument(project, d.ID)
	require.Equal(t, "parsed", d.Status, d.Error)
	s.must(200, "GET", "/api/projects", s.admin, nil, header{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})

	var withParent int
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM document_parsing_jobs WHERE trace_parent IS NOT NULL) +
		(SELECT count(*) FROM chunk_embedding_jobs WHERE trace_parent IS NOT NULL) +
		(SELECT count(*) FROM object_extraction_jobs WHERE trace_parent IS NOT NULL)`).Scan(&withParent))
	require.Zero(t, withParent)
	s.m.Stop(context.Background())

	line := requestLog(t, logs.String(), "GET", "/api/projects")
	require.NotContains(t, line, "traceId")
	require.NotContains(t, line, "spanId")
	posts, spans := rcv.received()
	require.Zero(t, posts)
	require.Empty(t, spans)
}
