package integration_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/tracing"
)

// TestSyncTraces: a sync queued under a span keeps its traceparent on
// the job row, and the connector's walk is a span naming the connector
// and the integration, without the integration's secrets.
func TestSyncTraces(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := setup(t, setupOpts{start: true, configure: func(c *integration.Config) { c.Tracer = tp }})
	b.src.put("a", "# a\n\ntext a")
	i := b.create(t, "docs", nil)

	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	res, err := b.svc.Sync(ctx, b.project, "docs", integration.TriggerManual, integration.SyncOptions{})
	span.End()
	require.NoError(t, err)
	require.True(t, res.Success, res.Message)
	require.Equal(t, "completed", b.wait(t, res.JobID).Status)
	var parent string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT trace_parent FROM integration_sync_jobs WHERE id = $1`, res.JobID).Scan(&parent))
	require.Equal(t, tracing.TraceParent(ctx), parent)

	var walk sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "connector "+i.ProviderType+" walk" {
			walk = s
		}
	}
	require.NotNil(t, walk)
	attrs := attribute.NewSet(walk.Attributes()...)
	conn, _ := attrs.Value(integration.AttrConnector)
	require.Equal(t, i.ProviderType, conn.AsString())
	id, _ := attrs.Value(integration.AttrIntegration)
	require.Equal(t, i.ID.String(), id.AsString())
	for _, a := range walk.Attributes() {
		require.NotContains(t, a.Value.String(), "secret", "attribute %s", a.Key)
	}
}
