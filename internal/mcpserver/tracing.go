package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/mcpregistry"
)

// attrProject names the project a tool call works in.
const attrProject = attribute.Key("graphmill.project.id")

// traced is the receiving middleware that makes each tools/call one
// server span, "tools/call <tool>", beneath the HTTP request that carried
// it (or the agent's call through the tool box): the SDK handles a
// session's messages on the session's context, so the parent is the
// caller's, taken from the request when the context has no span. Its
// attributes name the method, tool, server and project, never the
// arguments or the result; a protocol error or a tool error is its
// error status.
func (s *Server) traced(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		c := callerOf(ctx, req)
		if c != nil && !trace.SpanContextFromContext(ctx).IsValid() && c.span.IsValid() {
			ctx = trace.ContextWithSpanContext(ctx, c.span)
		}
		ctx, span := s.tracer.Start(ctx, "tools/call "+call.Params.Name, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		res, err := next(ctx, method, req)
		if span.IsRecording() {
			span.SetAttributes(mcpregistry.AttrMCPMethod.String(method), mcpregistry.AttrMCPTool.String(call.Params.Name),
				mcpregistry.AttrMCPServer.String("graphmill"))
			if c != nil {
				span.SetAttributes(attrProject.String(c.project.String()))
			}
			if r, ok := res.(*mcp.CallToolResult); err == nil && ok && r.IsError {
				span.SetStatus(codes.Error, "the tool reported an error")
			} else if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
		}
		return res, err
	}
}
