// Package tracing sets up OpenTelemetry tracing: an SDK tracer provider
// exporting over OTLP/HTTP when an endpoint is configured, the no-op
// provider otherwise. The provider is passed explicitly to the parts that
// trace (cmd/graphmill/app.go); nothing here sets OpenTelemetry's globals.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config configures New.
type Config struct {
	// Endpoint is the full URL traces are posted to (OTLP/HTTP protobuf,
	// e.g. http://collector:4318/v1/traces); empty turns tracing off.
	Endpoint string
	// Version is the service.version resource attribute.
	Version string
}

// Provider is the process's tracer provider and what shuts it down.
type Provider struct {
	tp  trace.TracerProvider
	sdk *sdktrace.TracerProvider // nil when off
}

// Off returns the provider of a process that does not trace: the no-op
// tracer provider.
func Off() *Provider { return &Provider{tp: noop.NewTracerProvider()} }

// New returns the SDK tracer provider batching spans to c.Endpoint, or
// Off when c.Endpoint is empty. The exporter and the SDK read the other
// standard variables themselves (OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_COMPRESSION,
// OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES); no connection is made until the first export.
func New(ctx context.Context, c Config) (*Provider, error) {
	if c.Endpoint == "" {
		return Off(), nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(c.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("create OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("graphmill"), semconv.ServiceVersion(c.Version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessPID(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{tp: sdk, sdk: sdk}, nil
}

// TracerProvider returns the provider to trace with (no-op when off).
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Shutdown flushes the spans not exported yet and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down tracing: %w", err)
	}
	return nil
}

// Enabled reports whether tp records spans: false for nil and the no-op
// provider. Parts on a hot path (the router, the database tracer) skip
// tracing entirely when it is false, so that tracing off costs nothing.
func Enabled(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider:
		return false
	}
	return true
}

// Propagator is the W3C trace context propagation every part uses: the
// traceparent header of incoming requests and the trace_parent column of
// job rows.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// TraceParent returns the W3C traceparent of ctx's span, or "" when ctx
// has none.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	Propagator().Inject(ctx, c)
	return c.Get("traceparent")
}

// RemoteContext parses a W3C traceparent (as TraceParent returns it) into
// a remote span context; the zero SpanContext when it is empty or invalid.
func RemoteContext(traceParent string) trace.SpanContext {
	traceParent = strings.TrimSpace(traceParent)
	if traceParent == "" {
		return trace.SpanContext{}
	}
	ctx := Propagator().Extract(context.Background(), propagation.MapCarrier{"traceparent": traceParent})
	return trace.SpanContextFromContext(ctx)
}
