package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/mcpregistry"
)

// tracedToolbox traces the tool calls of agent runs through the built-in
// MCP server's tool box: a client span per call, named by the tool,
// without its arguments or result. (The registry traces its own calls to
// external servers beneath it.)
type tracedToolbox struct {
	agent.Toolbox
	tracer trace.Tracer
}

// Call implements agent.Toolbox.
func (t tracedToolbox) Call(ctx context.Context, p *auth.Principal, project uuid.UUID, name string, args json.RawMessage) (json.RawMessage, bool, error) {
	ctx, span := t.tracer.Start(ctx, "tools/call "+name, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	out, isError, err := t.Toolbox.Call(ctx, p, project, name, args)
	if span.IsRecording() {
		server := "graphmill"
		if s, _, ok := strings.Cut(name, "/"); ok {
			server = s
		}
		span.SetAttributes(mcpregistry.AttrMCPMethod.String("tools/call"), mcpregistry.AttrMCPTool.String(name),
			mcpregistry.AttrMCPServer.String(server))
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
		case isError:
			span.SetStatus(codes.Error, "the tool reported an error")
		}
	}
	return out, isError, err
}
