package jobqueue

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/tracing"
)

// tracerName is the instrumentation scope of the engine's spans.
const tracerName = "github.com/graphmill/graphmill/internal/jobqueue"

// Span attributes of a batch.
const (
	AttrQueue   = attribute.Key("graphmill.job.queue")
	AttrJobID   = attribute.Key("graphmill.job.id")
	AttrJobIDs  = attribute.Key("graphmill.job.ids")
	AttrJobs    = attribute.Key("graphmill.job.count")
	AttrAttempt = attribute.Key("graphmill.job.attempt")
	AttrProject = attribute.Key("graphmill.project.id")
)

// TraceParent returns the value of a job row's trace_parent column for a
// job queued under ctx: the W3C traceparent of ctx's span, nil (NULL)
// when ctx carries none (tracing off: nothing is allocated).
func TraceParent(ctx context.Context) *string {
	tp := tracing.TraceParent(ctx)
	if tp == "" {
		return nil
	}
	return &tp
}

// startBatch starts the span of a batch, "job <queue>". Its parent is the
// span that queued the batch's first job with a stored traceparent, so
// that a job queued by a request continues the request's trace; every
// job's stored traceparent is also a link, which keeps the other jobs of
// a batch (queued by other requests) reachable from it.
func (q *queue) startBatch(ctx context.Context, jobs []Job) (context.Context, trace.Span) {
	var parent trace.SpanContext
	var links []trace.Link
	for _, j := range jobs {
		sc := tracing.RemoteContext(j.TraceParent)
		if !sc.IsValid() {
			continue
		}
		if !parent.IsValid() {
			parent = sc
		}
		links = append(links, trace.Link{SpanContext: sc})
	}
	pctx := ctx
	if parent.IsValid() {
		pctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	sctx, span := q.c.tracer.Start(pctx, "job "+q.cfg.Name, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(AttrQueue.String(q.cfg.Name), AttrJobs.Int(len(jobs)))
	if len(jobs) == 1 {
		span.SetAttributes(AttrJobID.String(jobs[0].ID.String()), AttrAttempt.Int(jobs[0].Attempt))
	} else {
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID.String()
		}
		span.SetAttributes(AttrJobIDs.StringSlice(ids))
	}
	if p := jobs[0].ProjectID; p != nil {
		span.SetAttributes(AttrProject.String(p.String()))
	}
	return sctx, span
}

// endBatch records the batch's outcome on its span and ends it: an error
// status naming the first failure when a job failed.
func endBatch(span trace.Span, results []error) {
	failed := 0
	var first error
	for _, err := range results {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if failed > 0 && span.IsRecording() {
		span.SetAttributes(attribute.Int("graphmill.job.failed", failed))
		span.SetStatus(codes.Error, first.Error())
	}
	span.End()
}
