// Package mcpregistry is the registry of each project's MCP servers: the
// server records (env and headers sealed at rest, shown masked), their
// mirrored tool catalogues, the connections to the servers (stdio
// subprocesses, SSE and streamable HTTP through the egress guard), the
// official MCP registry (search, details, install), and the settings of
// the built-in server's tools at project, organization and global level,
// with the web search tool they configure.
package mcpregistry

import (
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// Server types.
const (
	TypeStdio   = "stdio"
	TypeSSE     = "sse"
	TypeHTTP    = "http"
	TypeBuiltin = "builtin"
)

// BuiltinName is the display name of every project's built-in record.
const BuiltinName = "Graphmill"

// Levels that supply a built-in tool's effective setting (inheritedFrom).
const (
	LevelProject = "project"
	LevelOrg     = "org"
	LevelGlobal  = "global"
)

// Stdio policies (GRAPHMILL_MCP_STDIO).
const (
	StdioSuperadmin = "superadmin"
	StdioEnabled    = "enabled"
	StdioDisabled   = "disabled"
)

// Masked replaces every secret value in responses.
const Masked = "***"

// WebSearchTool is the name of the built-in web search tool.
const WebSearchTool = "web_search"

// ConfigAPIKey is the config field of a configurable built-in tool.
const ConfigAPIKey = "api_key"

// Errors.
var (
	ErrServerNotFound = errs.New(errs.NotFound, "MCP server not found")
	ErrToolNotFound   = errs.New(errs.NotFound, "tool not found")
	ErrBuiltinFixed   = errs.New(errs.Conflict, "the built-in MCP server is not editable and cannot be deleted")
	ErrBuiltinCreate  = errs.New(errs.Invalid, "type builtin cannot be created: every project has one built-in server, created when servers are first listed")
	ErrBuiltinRemote  = errs.New(errs.Invalid, "the built-in server cannot be inspected or synced: its tools are listed by GET .../tools")
	ErrStdioOff       = errs.New(errs.PermissionDenied, "stdio MCP servers are disabled on this deployment (GRAPHMILL_MCP_STDIO=disabled)")
	ErrStdioSuper     = errs.New(errs.PermissionDenied, "only superadmins may create or change stdio MCP servers (GRAPHMILL_MCP_STDIO=superadmin)")
	ErrStdioOrgAdmin  = errs.New(errs.PermissionDenied, "only organization admins may create or change stdio MCP servers")
	ErrStdioShared    = errs.New(errs.PermissionDenied, "stdio MCP servers are refused: they would run as this server's own user and could read its secrets; "+
		"set GRAPHMILL_MCP_STDIO=superadmin, or let them run as another user (run as root, or set GRAPHMILL_MCP_STDIO_USER with CAP_SETUID and CAP_SETGID)")
	ErrServerDisabled = errs.New(errs.FailedPrecondition, "this MCP server is disabled")
	ErrToolDisabled   = errs.New(errs.FailedPrecondition, "this tool is disabled")
	ErrNoSearchKey    = errs.New(errs.FailedPrecondition, "web_search is disabled: no API key is configured for this project, its organization or the deployment (WEB_SEARCH_API_KEY)")
	ErrUnknownBuiltin = errs.New(errs.NotFound, "unknown built-in tool")
)

// Server is the spec's MCPServer record. Env and header values are always
// masked.
type Server struct {
	ID        uuid.UUID         `json:"id"`
	ProjectID uuid.UUID         `json:"projectId"`
	Name      string            `json:"name"`
	Enabled   bool              `json:"enabled"`
	Type      string            `json:"type" enum:"stdio,sse,http,builtin"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty" doc:"Variable names; values are write-only and shown as ***."`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty" doc:"Header names; values are write-only and shown as ***."`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`

	env, headers map[string]string // the real values, never encoded
	// vars fill the {name} placeholders of Args (when the process starts)
	// and URL (for each request): values given at a registry install,
	// sealed, never encoded.
	vars map[string]string
}

// args returns the arguments a stdio process starts with.
func (s Server) args() []string {
	if len(s.vars) == 0 {
		return s.Args
	}
	out := make([]string, len(s.Args))
	for i, a := range s.Args {
		out[i] = expand(a, s.vars)
	}
	return out
}

// url returns the URL requests go to.
func (s Server) url() string { return expand(s.URL, s.vars) }

// Tool is the spec's MCPServerTool record; tools of the built-in server
// carry InheritedFrom.
type Tool struct {
	ID            uuid.UUID      `json:"id"`
	ServerID      uuid.UUID      `json:"serverId"`
	ToolName      string         `json:"toolName"`
	Description   string         `json:"description"`
	InputSchema   map[string]any `json:"inputSchema"`
	Enabled       bool           `json:"enabled"`
	InheritedFrom string         `json:"inheritedFrom,omitempty" enum:"project,org,global"`
	Configurable  *bool          `json:"configurable,omitempty" doc:"Built-in tools: whether the tool takes a config (api_key)."`
	Config        map[string]any `json:"config,omitempty" doc:"Built-in tools: the effective config, secrets masked."`
	CreatedAt     time.Time      `json:"createdAt"`
}

// LiveTool is a tool as a live server reports it (inspect).
type LiveTool struct {
	ToolName    string         `json:"toolName"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
	// Hints are the tool's MCP annotations that tell whether calling it
	// again is safe (recorded, not shown).
	Hints Hints `json:"-"`
}

// Hints are the MCP annotations of an external tool that tell whether a
// call may be made again when its outcome is unknown (an agent run
// resumed after a crash during it).
type Hints struct {
	ReadOnly   bool `json:"readOnlyHint,omitempty"`
	Idempotent bool `json:"idempotentHint,omitempty"`
}

// SyncResult is what a sync changed.
type SyncResult struct {
	Added   int    `json:"added"`
	Updated int    `json:"updated"`
	Removed int    `json:"removed"`
	Tools   []Tool `json:"tools"`
}

// ServerInput creates a server.
type ServerInput struct {
	Name    string
	Type    string
	Enabled *bool // nil: true
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
}

// ServerUpdate changes a server; nil fields are unchanged. In Env and
// Headers, a value of *** keeps the stored value of that name.
type ServerUpdate struct {
	// Type cannot change; a different one is invalid_argument.
	Type    *string
	Name    *string
	Enabled *bool
	Command *string
	Args    *[]string
	Env     *map[string]string
	URL     *string
	Headers *map[string]string
}

// Caller is who asks for a change that GRAPHMILL_MCP_STDIO restricts
// (creating stdio servers, changing what they run): the HTTP layer takes
// it from the request's authorised access, the service decides.
type Caller struct {
	Superadmin bool
	// OrgAdmin: an owner or admin of the project's organization.
	OrgAdmin bool
}

// ToolUpdate changes a tool: Enabled for any tool; Config only for
// configurable built-in tools (a nil Config leaves it unchanged).
type ToolUpdate struct {
	Enabled *bool
	Config  map[string]any
}

// ToolRef is one enabled tool of an enabled external server, for agents.
type ToolRef struct {
	ServerID    uuid.UUID      `json:"serverId"`
	ServerName  string         `json:"serverName"`
	ToolID      uuid.UUID      `json:"toolId"`
	ToolName    string         `json:"toolName"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
	Hints       Hints          `json:"-"`
}

// BuiltinTool is one tool of the built-in MCP server's catalogue.
// Configurable tools take config.api_key and are disabled while no level
// supplies one; the others are enabled unless a setting disables them.
type BuiltinTool struct {
	Name         string
	Description  string
	InputSchema  map[string]any
	Configurable bool
}

// WebSearchBuiltin is the catalogue entry of the web search tool.
func WebSearchBuiltin() BuiltinTool {
	return BuiltinTool{
		Name:        WebSearchTool,
		Description: "Search the web; returns titles, URLs and descriptions of matching pages.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string", "minLength": 1, "maxLength": 400, "description": "The search query."},
				"count": map[string]any{"type": "integer", "minimum": 1, "maximum": 20, "default": 10, "description": "Number of results."},
			},
			"required":             []any{"query"},
			"additionalProperties": false,
		},
		Configurable: true,
	}
}

// ToolSetting is a built-in tool's setting at one level (the spec's
// Built-in tool setting); config secrets are masked.
type ToolSetting struct {
	ToolName  string         `json:"toolName"`
	Enabled   bool           `json:"enabled"`
	Config    map[string]any `json:"config"`
	CreatedAt time.Time      `json:"createdAt"`
	UpdatedAt time.Time      `json:"updatedAt"`
}

// Effective is the setting a project's built-in tool runs with.
type Effective struct {
	Enabled       bool
	InheritedFrom string
	APIKey        string
	keyFrom       string // the level that supplied APIKey
}

// SearchResult is one web search hit.
type SearchResult struct {
	Title       string `json:"title"`
	URL         string `json:"url"`
	Description string `json:"description"`
}
