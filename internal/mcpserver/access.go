package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// caller is who sends an MCP request and the project it acts on, as the
// HTTP layer authorised it.
type caller struct {
	principal *auth.Principal
	project   uuid.UUID
	org       uuid.UUID
	// callKey is the agent tool call an in-process call makes
	// (agent.WithCallKey), "" otherwise; resumed marks the call made
	// again after a restart, whose outcome is unknown (Server.Call).
	callKey string
	resumed bool
	// span is the span of the request (or the tool box call) the caller
	// was authorised in: the parent of its tool calls' spans.
	span trace.SpanContext
}

// sessionOwner names the token and project a session belongs to: a
// session opened by one token for one project answers no other.
func (c *caller) sessionOwner() string {
	return c.principal.TokenID.String() + "/" + c.project.String()
}

type callerKey struct{}

// callerExtra is the TokenInfo.Extra member that carries the caller of one
// HTTP request of the streamable transport.
const callerExtra = "graphmill.caller"

func withCaller(ctx context.Context, c *caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerFromContext(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// callerOf finds the caller of an MCP request: the HTTP request that
// carried it (streamable transport), else the latest POST of the SSE
// session (each authorised for the stream's token and project before it
// reaches the session), else the context the session was opened with.
func callerOf(ctx context.Context, req mcp.Request) *caller {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if c, ok := extra.TokenInfo.Extra[callerExtra].(*caller); ok {
			return c
		}
	}
	if sess, ok := ctx.Value(sseSessionKey{}).(*sseSession); ok {
		return sess.current.Load()
	}
	return callerFromContext(ctx)
}

// toolRule is what a tool needs: a scope, a minimum project role and,
// for some, a per-project setting.
type toolRule struct {
	scope auth.Scope
	role  auth.ProjectRole
	// enabled, when set, reports whether the tool is switched on for the
	// project.
	enabled func(ctx context.Context, project uuid.UUID) (bool, error)
	// notInToolbox leaves the tool out of the in-process tool box
	// (Server.Tools).
	notInToolbox bool
}

// deny says why c may not use the tool of rule r ("" when it may).
// enabled holds the project's tool settings (nil: no settings configured).
func deny(ctx context.Context, c *caller, name string, r toolRule, enabled map[string]bool) (string, error) {
	if !c.principal.Scopes.Has(r.scope) {
		return fmt.Sprintf("tool %s needs the scope %s, which this token lacks", name, r.scope), nil
	}
	role := c.principal.ProjectRole(c.project, c.org)
	if !roleAtLeast(role, r.role) {
		return fmt.Sprintf("tool %s needs the project role %s or higher; yours is %s", name, r.role, role), nil
	}
	if enabled != nil && !enabled[name] {
		return fmt.Sprintf("tool %s is not enabled for this project", name), nil
	}
	if r.enabled != nil {
		ok, err := r.enabled(ctx, c.project)
		if err != nil {
			return "", err
		}
		if !ok {
			return fmt.Sprintf("tool %s is not enabled for this project", name), nil
		}
	}
	return "", nil
}

// enabledTools loads the caller's project's tool settings (nil when the
// server has none).
func (s *Server) enabledTools(ctx context.Context, c *caller) (map[string]bool, error) {
	if s.cfg.Settings == nil {
		return nil, nil
	}
	return s.cfg.Settings.EnabledTools(ctx, c.project)
}

func roleAtLeast(have, need auth.ProjectRole) bool {
	order := []auth.ProjectRole{auth.ProjectViewer, auth.ProjectEditor, auth.ProjectAdmin}
	return slices.Index(order, have) >= slices.Index(order, need) && slices.Contains(order, have)
}

// authorize is the receiving middleware: tools/list shows only the tools
// the caller may use, and tools/call of a tool the caller may not use is a
// tool error naming the reason, without running the tool. Every request
// handled here carries its caller into the tool handlers.
func (s *Server) authorize(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		c := callerOf(ctx, req)
		if c == nil {
			// Only the HTTP handlers of this package connect sessions, and
			// they always attach a caller.
			return nil, fmt.Errorf("mcp request without an authorised caller")
		}
		ctx = withCaller(ctx, c)
		switch method {
		case "tools/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			list, ok := res.(*mcp.ListToolsResult)
			if !ok {
				return res, nil
			}
			enabled, err := s.enabledTools(ctx, c)
			if err != nil {
				return nil, err
			}
			out := *list
			out.Tools = make([]*mcp.Tool, 0, len(list.Tools))
			for _, t := range list.Tools {
				reason, err := deny(ctx, c, t.Name, s.rules[t.Name], enabled)
				if err != nil {
					s.logger.ErrorContext(ctx, "mcp tool filter", "tool", t.Name, "err", err)
					continue
				}
				if reason == "" {
					out.Tools = append(out.Tools, t)
				}
			}
			return &out, nil
		case "tools/call":
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil {
				return next(ctx, method, req)
			}
			// go-sdk v1.8.0 panics applying schema defaults to
			// "arguments": null (a nil map); treat it as no arguments.
			if bytes.Equal(bytes.TrimSpace(call.Params.Arguments), []byte("null")) {
				call.Params.Arguments = nil
			}
			rule, known := s.rules[call.Params.Name]
			if !known {
				// Unknown tools get the SDK's own protocol error.
				return next(ctx, method, req)
			}
			enabled, err := s.enabledTools(ctx, c)
			if err != nil {
				return s.toolError(ctx, call.Params.Name, err), nil
			}
			reason, err := deny(ctx, c, call.Params.Name, rule, enabled)
			if err != nil {
				return s.toolError(ctx, call.Params.Name, err), nil
			}
			if reason != "" {
				return errorResult(reason), nil
			}
			// The HTTP boundary's NUL check sees the path and query
			// only; a tool's arguments are checked here, once allowed.
			if err := httpapi.CheckJSONAt("arguments", call.Params.Arguments); err != nil {
				return errorResult(errs.MessageOf(err)), nil
			}
		}
		return next(ctx, method, req)
	}
}

// errorResult is a tool error with message text.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// toolError turns a service error into a tool error: the domain message
// for errs.Error values, "internal error" (the cause logged) for anything
// else.
func (s *Server) toolError(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	if errs.CodeOf(err) == errs.Internal {
		s.logger.ErrorContext(ctx, "mcp tool failed", "tool", tool, "err", err)
		return errorResult(tool + ": internal error")
	}
	return errorResult(errs.MessageOf(err))
}
