package jobqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/tracing"
)

// TestBatchSpanContinuesTheQueuedTrace: a batch's span is the child of
// the span that queued its first job with a traceparent, links every
// job's traceparent, and is the span of the handler's context; a job
// queued outside a trace adds no link.
func TestBatchSpanContinuesTheQueuedTrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctxA, spanA := tp.Tracer("test").Start(context.Background(), "request a")
	ctxB, spanB := tp.Tracer("test").Start(context.Background(), "request b")
	spanA.End()
	spanB.End()
	require.Nil(t, jobqueue.TraceParent(context.Background()), "no span: NULL")

	ids := b.insert(t,
		jobSpec{priority: 2, traceParent: *jobqueue.TraceParent(ctxA)},
		jobSpec{priority: 1, traceParent: *jobqueue.TraceParent(ctxB)},
		jobSpec{priority: 0},
	)
	type worked struct {
		jobs []jobqueue.Job
		span trace.SpanContext
	}
	handled := make(chan worked, 1)
	b.newProcess(t, opts{cfg: jobqueue.Config{Tracer: tp}, queue: jobqueue.QueueConfig{
		BatchSize: 3,
		Handler: jobqueue.HandlerFunc(func(ctx context.Context, jobs []jobqueue.Job) []error {
			handled <- worked{jobs: jobs, span: trace.SpanContextFromContext(ctx)}
			return make([]error, len(jobs))
		}),
	}})
	var w worked
	select {
	case w = <-handled:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the batch was not worked")
	}
	require.Len(t, w.jobs, 3)
	require.Equal(t, tracing.TraceParent(ctxA), w.jobs[0].TraceParent, "the claim returns the stored traceparent")
	require.Empty(t, w.jobs[2].TraceParent)
	for _, id := range ids {
		b.requireStatus(t, id, jobqueue.StatusCompleted)
	}
	var batch sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "job "+queueName {
			batch = s
		}
	}
	require.NotNil(t, batch)
	require.Equal(t, w.span, batch.SpanContext(), "the handler runs under the batch's span")
	require.Equal(t, spanA.SpanContext().TraceID(), batch.SpanContext().TraceID())
	require.Equal(t, spanA.SpanContext().SpanID(), batch.Parent().SpanID())
	require.Equal(t, trace.SpanKindConsumer, batch.SpanKind())
	links := batch.Links()
	require.Len(t, links, 2)
	require.Equal(t, spanA.SpanContext().SpanID(), links[0].SpanContext.SpanID())
	require.Equal(t, spanB.SpanContext().SpanID(), links[1].SpanContext.SpanID())
	attrs := attribute.NewSet(batch.Attributes()...)
	queue, _ := attrs.Value("graphmill.job.queue")
	require.Equal(t, queueName, queue.AsString())
	count, _ := attrs.Value("graphmill.job.count")
	require.Equal(t, int64(3), count.AsInt64())
	got, _ := attrs.Value("graphmill.job.ids")
	require.Equal(t, []string{ids[0].String(), ids[1].String(), ids[2].String()}, got.AsStringSlice())
}
