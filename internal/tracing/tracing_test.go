package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/graphmill/graphmill/internal/tracing"
)

// TestOffIsTheNoopProvider: without an endpoint New gives the no-op
// provider, no database tracer, and a shutdown with nothing to flush.
func TestOffIsTheNoopProvider(t *testing.T) {
	t.Parallel()
	p, err := tracing.New(context.Background(), tracing.Config{})
	require.NoError(t, err)
	require.False(t, tracing.Enabled(p.TracerProvider()))
	require.IsType(t, noop.TracerProvider{}, p.TracerProvider())
	require.False(t, tracing.Enabled(p.TracerProvider()))
	require.False(t, tracing.Enabled(nil))
	require.Nil(t, tracing.DBTracer(p.TracerProvider()))
	require.NoError(t, p.Shutdown(context.Background()))

	on, err := tracing.New(context.Background(), tracing.Config{Endpoint: "http://127.0.0.1:1/v1/traces", Version: "test"})
	require.NoError(t, err)
	require.True(t, tracing.Enabled(on.TracerProvider()))
	require.True(t, tracing.Enabled(on.TracerProvider()))
	require.NotNil(t, tracing.DBTracer(on.TracerProvider()))
	require.NoError(t, on.Shutdown(context.Background()), "nothing was recorded: nothing to send")
}

// TestTraceParentRoundTrip: the traceparent of a span parses back to its
// span context, remote; nothing without a span, and garbage is no context.
func TestTraceParentRoundTrip(t *testing.T) {
	t.Parallel()
	require.Empty(t, tracing.TraceParent(context.Background()))
	ctx, span := sdktrace.NewTracerProvider().Tracer("t").Start(context.Background(), "s")
	defer span.End()
	tp := tracing.TraceParent(ctx)
	require.Equal(t, "00-"+span.SpanContext().TraceID().String()+"-"+span.SpanContext().SpanID().String()+"-01", tp)
	sc := tracing.RemoteContext(tp)
	require.True(t, sc.IsRemote())
	require.Equal(t, span.SpanContext().TraceID(), sc.TraceID())
	require.Equal(t, span.SpanContext().SpanID(), sc.SpanID())
	require.False(t, tracing.RemoteContext("").IsValid())
	require.False(t, tracing.RemoteContext("00-zz-yy-01").IsValid())
}

// TestStatementName: the span name of a statement is its keyword and
// first table, never a literal.
func TestStatementName(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string]string{
		"INSERT INTO document_parsing_jobs (id) VALUES ($1)":         "INSERT document_parsing_jobs",
		"  select id from documents where id = $1":                   "SELECT documents",
		"UPDATE \"jobs\" AS j SET x = 1":                             "UPDATE jobs",
		"-- name: q\nDELETE FROM chunks WHERE id = 'secret-literal'": "DELETE chunks",
		"SELECT pg_advisory_xact_lock($1)":                           "SELECT",
		"WITH cur AS (SELECT 1) SELECT * FROM (SELECT 'lit') AS x":   "WITH",
		"SELECT * FROM unnest($1::uuid[]) AS u(id)":                  "SELECT",
		"": "SQL",
		"SELECT count(*) FROM jobs, 'quoted value' WHERE a = 'secret'": "SELECT jobs",
	} {
		require.Equal(t, want, tracing.StatementName(sql), sql)
	}
}
