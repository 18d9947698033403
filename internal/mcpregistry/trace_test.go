package mcpregistry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

// TestCallToolSpan: a tool call to an external server is a client span
// naming the tool and the server, child of the caller's span, without
// the call's arguments or result.
func TestCallToolSpan(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := setup(t, func(c *mcpregistry.Config) { c.Tracer = tp })
	ts := mcptest.Streamable(t, mcptest.NewServer("echo"), "", "")
	ctx := context.Background()
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "echoes", Type: mcpregistry.TypeHTTP, URL: ts.URL}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)

	ctx, parent := tp.Tracer("test").Start(ctx, "request")
	const argument = "argument-value-never-traced"
	_, err = b.svc.CallTool(ctx, b.project, "echoes", "echo", map[string]any{"text": argument})
	parent.End()
	require.NoError(t, err)

	var call sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call echo" {
			call = s
		}
	}
	require.NotNil(t, call)
	require.Equal(t, trace.SpanKindClient, call.SpanKind())
	require.Equal(t, parent.SpanContext().SpanID(), call.Parent().SpanID())
	attrs := attribute.NewSet(call.Attributes()...)
	tool, _ := attrs.Value(mcpregistry.AttrMCPTool)
	require.Equal(t, "echo", tool.AsString())
	server, _ := attrs.Value(mcpregistry.AttrMCPServer)
	require.Equal(t, "echoes", server.AsString())
	for _, a := range call.Attributes() {
		require.NotContains(t, a.Value.String(), argument, "attribute %s", a.Key)
	}
}
