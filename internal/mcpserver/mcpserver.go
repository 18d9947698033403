// Package mcpserver is Graphmill's built-in MCP server: the graph,
// document, search, registry and web-search tools, served over the
// streamable HTTP transport at /api/mcp and the SSE transport at
// /api/mcp/sse/{projectId}. One mcp.Server is built at start; what each
// caller may see and call (scopes, project role, per-project settings) is
// decided per request in middleware (DESIGN 8a).
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/search"
	"github.com/graphmill/graphmill/internal/startstop"
)

// Graph is what the graph tools call (graph.Service).
type Graph interface {
	ListObjects(ctx context.Context, project uuid.UUID, f graph.ObjectFilter) ([]graph.Object, int, error)
	GetObject(ctx context.Context, project, id uuid.UUID) (graph.Object, error)
	CreateObject(ctx context.Context, project uuid.UUID, p graph.CreateObjectParams) (graph.Object, error)
	UpdateObject(ctx context.Context, project, id uuid.UUID, u graph.ObjectUpdate) (graph.Object, error)
	CreateRelationship(ctx context.Context, project uuid.UUID, p graph.CreateRelationshipParams) (graph.Relationship, error)
	ListRelationships(ctx context.Context, project uuid.UUID, f graph.RelationshipFilter) ([]graph.Relationship, int, error)
	ListObjectRelationships(ctx context.Context, project, id uuid.UUID, d graph.Direction, typ string, limit, offset int) ([]graph.Relationship, int, error)
	// ObjectOfCall and RelationshipOfCall find what an agent tool call
	// created (a resumed call, Server.Call).
	ObjectOfCall(ctx context.Context, project uuid.UUID, key string) (graph.Object, error)
	RelationshipOfCall(ctx context.Context, project uuid.UUID, key string) (graph.Relationship, error)
}

// Documents is what the document tools call (document.Service).
type Documents interface {
	Upload(ctx context.Context, u document.Upload) (document.Document, error)
	List(ctx context.Context, project uuid.UUID, limit, offset int) ([]document.Document, int, error)
	Get(ctx context.Context, project, id uuid.UUID) (document.Document, error)
	Chunks(ctx context.Context, project, id uuid.UUID, limit, offset int) ([]document.StoredChunk, int, error)
}

// Searcher runs the unified search of a project (search.Service).
type Searcher interface {
	Search(ctx context.Context, project uuid.UUID, req search.Request) (search.Response, error)
}

// RegistryTool is one enabled tool of an enabled external MCP server of a
// project, as mcp-servers/list shows it.
type RegistryTool struct {
	ServerID    uuid.UUID      `json:"serverId"`
	Server      string         `json:"server" jsonschema:"the server's name, as mcp-servers/call takes it"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"inputSchema,omitempty"`
	// Repeatable: its annotations say it is read-only or idempotent, so a
	// call whose outcome is unknown may be made again (Server.Call).
	Repeatable bool `json:"-"`
}

// Registry is the project's registry of external MCP servers. ListTools
// lists only enabled tools of enabled servers; CallTool refuses disabled
// ones and unknown names with an errs.Error (not_found, failed_precondition)
// and reports an unreachable server as bad_gateway. A tool error of the
// external server is a result with IsError, not an error.
type Registry interface {
	ListTools(ctx context.Context, project uuid.UUID) ([]RegistryTool, error)
	CallTool(ctx context.Context, project uuid.UUID, server, tool string, args map[string]any) (*mcp.CallToolResult, error)
}

// WebResult is one web search result.
type WebResult struct {
	Title       string `json:"title"`
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
}

// WebSearcher runs web searches with the project's effective web search
// setting. WebSearchEnabled reports whether the setting is enabled and has
// a key at some level (project, organization or global).
type WebSearcher interface {
	WebSearch(ctx context.Context, project uuid.UUID, query string, count int) ([]WebResult, error)
	WebSearchEnabled(ctx context.Context, project uuid.UUID) (bool, error)
}

// Config configures a Server. Graph, Documents, Search, Guard, Watcher and
// Logger are required; Registry, Web and Agents are optional: their tools
// are registered only when they are given.
type Config struct {
	Graph     Graph
	Documents Documents
	Search    Searcher
	Registry  Registry
	Web       WebSearcher
	Guard     *auth.Guard
	// Watcher ends open sessions and SSE streams whose token, user or
	// project membership is gone.
	Watcher *auth.Watcher
	Logger  *slog.Logger
	// AllowedOrigins are the browser origins allowed besides the server's
	// own (the validated Host); requests without an Origin header (not from
	// a browser) pass too.
	AllowedOrigins []string
	// PublicHosts are the names (GRAPHMILL_PUBLIC_HOSTS) clients reach the
	// server by, besides the loopback names, ListenAddr's host and the
	// address a connection arrived on. Other Host headers are refused.
	PublicHosts []string
	// ListenAddr is the API's listen address (host:port).
	ListenAddr string
	// Stateless serves the streamable transport without sessions.
	Stateless bool
	// Version is reported to clients in the initialize result.
	Version string
	// Settings, when set, switches tools on and off per project (the
	// built-in tool settings of the MCP registry).
	Settings ToolSettings
	// Chat, when set, adds the chat tools.
	Chat Chat
	// Agents, when set, adds the agent tools (agents_list, agents_run,
	// agent_run_get, agent_run_answer).
	Agents Agents
	// TracerProvider traces tool calls (nil: not traced).
	TracerProvider trace.TracerProvider
}

// ToolSettings says which built-in tools are enabled for a project, all at
// once (a tools/list checks every tool).
type ToolSettings interface {
	EnabledTools(ctx context.Context, project uuid.UUID) (map[string]bool, error)
}

// CatalogTool describes one registered tool.
type CatalogTool struct {
	Name        string
	Description string
	InputSchema map[string]any
}

// Catalog lists the registered tools, in registration order.
func (s *Server) Catalog() []CatalogTool { return append([]CatalogTool(nil), s.catalog...) }

// Server is the built-in MCP server and its two HTTP transports.
type Server struct {
	cfg    Config
	logger *slog.Logger
	// sdkLogger is what go-sdk logs to: warnings and errors only (it logs
	// every session's start and end at info, once per request when
	// stateless), its message about the spec's tool names demoted.
	sdkLogger *slog.Logger
	mcp       *mcp.Server
	tracer    trace.Tracer
	rules     map[string]toolRule
	catalog   []CatalogTool
	hosts     hostPolicy

	mu  sync.Mutex
	sse map[string]*sseSession

	// life owns the goroutine that ties each streamable session to its
	// token (watchSession).
	life startstop.Base
}

// New builds the server and registers every tool whose dependency is
// given.
func New(c Config) (*Server, error) {
	if c.Graph == nil || c.Documents == nil || c.Search == nil || c.Guard == nil || c.Watcher == nil || c.Logger == nil {
		return nil, errors.New("mcpserver: Graph, Documents, Search, Guard, Watcher and Logger are required")
	}
	s := &Server{
		cfg: c, logger: c.Logger.With("component", "mcp"), rules: map[string]toolRule{},
		sse: map[string]*sseSession{},
	}
	tp := c.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	s.tracer = tp.Tracer("github.com/graphmill/graphmill/internal/mcpserver")
	s.sdkLogger = slog.New(minLevel{Handler: specToolNames{Handler: s.logger.Handler()}, min: slog.LevelWarn})
	var err error
	if s.hosts, err = newHostPolicy(c.ListenAddr, c.PublicHosts, c.AllowedOrigins); err != nil {
		return nil, err
	}
	version := c.Version
	if version == "" {
		version = "dev"
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "graphmill", Title: "Graphmill knowledge graph", Version: version}, &mcp.ServerOptions{
		Instructions: "Tools over one Graphmill project: its knowledge graph (objects and relationships), its documents and " +
			"their chunks, and unified keyword and vector search. The project is the one your API token is bound to, " +
			"or the X-Project-ID header.",
		Logger:       s.sdkLogger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		// Tool lists differ per caller: no one else may cache them.
		SetCacheable: func(_ context.Context, _ mcp.Request, ca *mcp.Cacheable) { ca.CacheScope = "private" },
	})
	if err := s.addTools(); err != nil {
		return nil, err
	}
	s.mcp.AddReceivingMiddleware(s.authorize)
	s.mcp.AddReceivingMiddleware(s.traced) // outermost: refusals are traced too
	return s, nil
}

// Start opens the server to sessions: one opened before Start or after
// Stop is closed at once.
func (s *Server) Start(ctx context.Context) error {
	if err := s.life.Begin(ctx); err != nil {
		return fmt.Errorf("mcp server: %w", err)
	}
	return nil
}

// Stop ends every open session (SSE streams and streamable sessions), so
// that a graceful HTTP shutdown does not wait for their clients, and
// waits until ctx ends for the goroutines that watched them.
func (s *Server) Stop(ctx context.Context) error {
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
	// A session opened meanwhile is closed when its watcher's context
	// ends, or at once once stopping (own).
	return s.life.Stop(ctx)
}

// own ties an open session to the server's life: Stop closes it, and once
// it has ended, ended runs. A session opened before Start or after Stop is
// closed at once.
func (s *Server) own(ss *mcp.ServerSession, ended func()) {
	watched := s.life.Go(func(ctx context.Context) {
		stop := context.AfterFunc(ctx, func() { _ = ss.Close() })
		defer stop()
		_ = ss.Wait()
		ended()
	})
	if !watched {
		_ = ss.Close()
		ended()
	}
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

// specToolNames demotes to DEBUG the one message go-sdk v1.8.0 logs at
// ERROR when the spec's tool names mcp-servers/list and mcp-servers/call
// are registered ("AddTool: invalid tool name ...": it allows only
// [A-Za-z0-9_.-]). The names are the platform specification's and are
// kept (DESIGN 8a); the SDK registers them all the same, so the message
// reports no fault, and a clean start logs no ERROR. Every other record
// passes unchanged.
type specToolNames struct{ slog.Handler }

// Handle implements slog.Handler.
func (h specToolNames) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelDebug && isSpecToolNameMessage(r.Message) {
		if !h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		d := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
		r.Attrs(func(a slog.Attr) bool { d.AddAttrs(a); return true })
		r = d
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h specToolNames) WithAttrs(attrs []slog.Attr) slog.Handler {
	return specToolNames{Handler: h.Handler.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h specToolNames) WithGroup(name string) slog.Handler {
	return specToolNames{Handler: h.Handler.WithGroup(name)}
}

// isSpecToolNameMessage reports whether msg is go-sdk's registration
// message about one of the spec's two tool names.
func isSpecToolNameMessage(msg string) bool {
	for _, name := range []string{ToolRegistryList, ToolRegistryCall} {
		if strings.HasPrefix(msg, fmt.Sprintf("AddTool: invalid tool name %q: ", name)) {
			return true
		}
	}
	return false
}
