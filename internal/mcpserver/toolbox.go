package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/llm"
)

// The tool box: the built-in server's tools, and the project's external
// tools, called in process (agents). It takes the path of the transports:
// the caller is authorised for the project as the MCP routes authorise
// it, each call goes through an in-memory MCP session of the same server
// (the same access check, argument checks and handlers), and external
// tools through mcp-servers/call.

// ExternalToolName is the name agent definitions, run steps and the tool
// box give a tool of an external MCP server: "server/tool".
func ExternalToolName(server, tool string) string { return server + "/" + tool }

// boxTool is one tool of a caller's tool box.
type boxTool struct {
	// name is the built-in name or "server/tool".
	name string
	tool llm.Tool
	// external is the external tool, nil for built-in tools.
	external *RegistryTool
}

// Tools lists the tools p may use in project, by the names the built-in
// server lists them and ExternalToolName's "server/tool" (a name a model
// is not given as it is: llm.Tool's rule forbids '/'; its user maps it):
// the built-in tools p's scopes, project role and the
// project's tool settings allow, and, when p may use mcp-servers/call, the
// enabled tools of the project's enabled external MCP servers. Left out:
// mcp-servers/list and mcp-servers/call themselves (an agent gets each
// external tool by name, so its definition's list of tools bounds what it
// can call) and the tools that start model work (agents and chat).
// Errors: those of authorising p for project (not_found: the project is
// unknown or invisible to p; permission_denied: p's token is bound to
// another project).
func (s *Server) Tools(ctx context.Context, p *auth.Principal, project uuid.UUID) ([]llm.Tool, error) {
	c, err := s.inProcessCaller(ctx, p, project)
	if err != nil {
		return nil, err
	}
	box, err := s.toolbox(ctx, c)
	if err != nil {
		return nil, err
	}
	out := make([]llm.Tool, len(box))
	for i, t := range box {
		out[i] = t.tool
	}
	return out, nil
}

// Call runs the tool name (as Tools lists it) as p in project, with
// args (a JSON object), through the MCP server. The tool's own failures
// (bad arguments, a service's refusal, the external tool's error) are
// (their description, true, nil). Errors: permission_denied for a tool
// Tools does not list for p; those of authorising p (see Tools); others
// for failures of the infrastructure.
//
// A call whose ctx carries a run's tool call key (agent.WithCallKey)
// records what graph_create_object and graph_create_relationship create
// under the key, in the create's transaction. Resumed (the run was
// killed during the call and makes it again), such a call returns what
// the key created, if anything, instead of creating again; it is never a
// "create or get" of what others created. The other built-in tools need
// nothing: graph_update_object sets values, documents_upload_text
// returns the existing document for the same content, the rest only
// read. A resumed external tool is called again only when its
// annotations say it is read-only or idempotent; otherwise the call is a
// tool error saying its outcome is unknown.
func (s *Server) Call(ctx context.Context, p *auth.Principal, project uuid.UUID, name string, args json.RawMessage) (json.RawMessage, bool, error) {
	c, err := s.inProcessCaller(ctx, p, project)
	if err != nil {
		return nil, false, err
	}
	box, err := s.toolbox(ctx, c)
	if err != nil {
		return nil, false, err
	}
	var found *boxTool
	for i := range box {
		if box[i].name == name {
			found = &box[i]
			break
		}
	}
	if found == nil {
		reason, err := s.refusal(ctx, c, name)
		if err != nil {
			return nil, false, err
		}
		return nil, false, errs.New(errs.PermissionDenied, reason)
	}
	params := &mcp.CallToolParams{Name: found.name, Arguments: args}
	if len(args) == 0 {
		params.Arguments = nil
	}
	if ext := found.external; ext != nil {
		if c.resumed && !ext.Repeatable {
			return textContent(fmt.Sprintf("the outcome of this call of %s is unknown after a restart; it was not repeated "+
				"(the tool is not marked read-only or idempotent)", name)), true, nil
		}
		var in map[string]any
		if len(args) > 0 {
			if err := json.Unmarshal(args, &in); err != nil {
				return textContent("the arguments must be a JSON object"), true, nil
			}
		}
		params = &mcp.CallToolParams{Name: ToolRegistryCall, Arguments: registryCallIn{
			Server: ext.ServerID.String(), Tool: ext.Name, Arguments: in,
		}}
	}
	var res *mcp.CallToolResult
	err = s.inProcess(ctx, c, func(cs *mcp.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, params)
		return err
	})
	if wire := (*jsonrpc.Error)(nil); errors.As(err, &wire) {
		return textContent(wire.Message), true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("call tool %s: %w", found.name, err)
	}
	content, err := resultContent(res)
	if err != nil {
		return nil, false, fmt.Errorf("call tool %s: %w", found.name, err)
	}
	return content, res.IsError, nil
}

// inProcessCaller authorises p for project as the MCP routes do (a live
// project p can see; a project-scoped token bound to it).
func (s *Server) inProcessCaller(ctx context.Context, p *auth.Principal, project uuid.UUID) (*caller, error) {
	if p == nil {
		return nil, errors.New("mcp tool box: no principal")
	}
	acc, err := s.cfg.Guard.Check(ctx, p, auth.Rule{Resource: auth.Project, ProjectRole: auth.ProjectViewer},
		auth.Request{ProjectID: project.String()})
	if err != nil {
		return nil, err
	}
	key, resumed := agent.CallKeyFrom(ctx)
	return &caller{principal: p, project: acc.ProjectID, org: acc.OrgID, callKey: key, resumed: resumed, span: trace.SpanContextFromContext(ctx)}, nil
}

// toolbox lists c's tools (see Tools).
func (s *Server) toolbox(ctx context.Context, c *caller) ([]boxTool, error) {
	enabled, err := s.enabledTools(ctx, c)
	if err != nil {
		return nil, err
	}
	out := []boxTool{}
	for _, t := range s.catalog {
		rule := s.rules[t.Name]
		if rule.notInToolbox {
			continue
		}
		reason, err := deny(ctx, c, t.Name, rule, enabled)
		if err != nil {
			return nil, err
		}
		if reason == "" {
			out = append(out, boxTool{name: t.Name, tool: llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
		}
	}
	if s.cfg.Registry == nil {
		return out, nil
	}
	reason, err := deny(ctx, c, ToolRegistryCall, s.rules[ToolRegistryCall], enabled)
	if err != nil || reason != "" {
		return out, err
	}
	ext, err := s.cfg.Registry.ListTools(ctx, c.project)
	if err != nil {
		return nil, fmt.Errorf("list external tools: %w", err)
	}
	seen := map[string]bool{}
	for _, t := range out {
		seen[t.name] = true
	}
	for i := range ext {
		t := &ext[i]
		name := ExternalToolName(t.Server, t.Name)
		if seen[name] {
			// "a/b" + "c" and "a" + "b/c": the first listed wins.
			s.logger.WarnContext(ctx, "external tool left out of the tool box: its name is taken", "tool", name)
			continue
		}
		seen[name] = true
		desc := t.Description
		if desc == "" {
			desc = "Tool " + t.Name + " of the MCP server " + t.Server + "."
		}
		out = append(out, boxTool{name: name, external: t, tool: llm.Tool{Name: name, Description: desc, Parameters: t.InputSchema}})
	}
	return out, nil
}

// refusal says why c may not call name.
func (s *Server) refusal(ctx context.Context, c *caller, name string) (string, error) {
	rule, known := s.rules[name]
	if !known {
		return fmt.Sprintf("tool %s is not available in this project: no built-in tool has this name, "+
			"and no enabled MCP server of the project has it enabled", name), nil
	}
	if rule.notInToolbox {
		return fmt.Sprintf("tool %s is not offered to agents", name), nil
	}
	enabled, err := s.enabledTools(ctx, c)
	if err != nil {
		return "", err
	}
	reason, err := deny(ctx, c, name, rule, enabled)
	if err != nil {
		return "", err
	}
	if reason == "" {
		// Allowed meanwhile: the listing just before said otherwise.
		reason = fmt.Sprintf("tool %s is not available to you in this project", name)
	}
	return reason, nil
}

// inProcess runs fn with a client session of an in-memory MCP session of
// this server whose every request comes from c.
func (s *Server) inProcess(ctx context.Context, c *caller, fn func(cs *mcp.ClientSession) error) error {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.mcp.Connect(withCaller(ctx, c), st, nil)
	if err != nil {
		return fmt.Errorf("connect in process: %w", err)
	}
	defer func() { _ = ss.Close() }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "graphmill-toolbox", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return fmt.Errorf("connect in process: %w", err)
	}
	defer func() { _ = cs.Close() }()
	return fn(cs)
}

// resultContent is what a model sees of a tool result: its structured
// content when it has one, else its text (a JSON value when the text is
// one), other content named by kind.
func resultContent(res *mcp.CallToolResult) (json.RawMessage, error) {
	if res.StructuredContent != nil && !res.IsError {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("encode structured content: %w", err)
		}
		return b, nil
	}
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, "[image "+c.MIMEType+"]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio "+c.MIMEType+"]")
		case *mcp.ResourceLink:
			parts = append(parts, "[resource "+c.URI+"]")
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, "[resource "+c.Resource.URI+"]")
			}
		}
	}
	text := strings.Join(parts, "\n")
	if len(parts) == 1 && json.Valid([]byte(text)) {
		trimmed := strings.TrimSpace(text)
		if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
			return json.RawMessage(trimmed), nil
		}
	}
	return textContent(text), nil
}

// textContent is text as a JSON string.
func textContent(text string) json.RawMessage {
	b, _ := json.Marshal(text) //nolint:errchkjson // a string always encodes
	return b
}
