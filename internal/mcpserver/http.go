package mcpserver

import (
	"context"
	"crypto/rand"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// SessionIdleTimeout closes a streamable session that received no request
// for this long (clients that never send DELETE would otherwise keep theirs
// forever). Clients that only listen on the GET stream should ping.
const SessionIdleTimeout = 30 * time.Minute

// Paths of the two transports.
const (
	StreamablePath = "/api/mcp"
	SSEPath        = "/api/mcp/sse/{projectId}"
)

// Errors of the transports.
var (
	ErrNotAPIToken = errs.New(errs.Unauthenticated,
		"the MCP server accepts Graphmill API tokens only (Authorization: Bearer gm_...); OIDC access tokens are not accepted: create an API token")
	ErrSSEToken = errs.New(errs.PermissionDenied,
		"the SSE transport needs a project-scoped API token bound to this project")
	ErrHost = errs.New(errs.PermissionDenied,
		"this Host may not reach the MCP server (DNS-rebinding protection): list the server's public names in GRAPHMILL_PUBLIC_HOSTS")
	ErrOrigin = errs.New(errs.PermissionDenied,
		"this Origin may not call the MCP server: only the server's own origin (the Host's host and port) and GRAPHMILL_MCP_ALLOWED_ORIGINS may")
	ErrNoSession = errs.New(errs.NotFound, "no such MCP session: open a new SSE stream")
)

// corsHeaders are the request headers a browser client of an allowed
// origin may send.
const corsHeaders = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, X-Project-ID, X-Org-ID"

// Mount adds the MCP routes to r: the streamable transport (POST, GET and
// DELETE; GET and DELETE answer 405 when stateless) and the SSE transport
// (GET opens the stream, POST ?sessionid= carries the client's messages).
// Every request passes the Host and Origin checks (admit), then
// authentication and the project check, before the SDK sees it.
func (s *Server) Mount(r chi.Router) {
	stream := s.guard(s.streamableHandler())
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		r.Method(m, StreamablePath, stream)
	}
	sse := s.guard(http.HandlerFunc(s.serveSSE))
	r.Method(http.MethodGet, SSEPath, sse)
	r.Method(http.MethodPost, SSEPath, sse)
	pre := http.HandlerFunc(s.preflight)
	r.Method(http.MethodOptions, StreamablePath, pre)
	r.Method(http.MethodOptions, SSEPath, pre)
}

// streamableHandler is the SDK's streamable handler behind a bearer-token
// step that hands it the caller: the session is bound to the token and
// project that opened it (the SDK refuses any other with 403), and each
// request's caller reaches the tools through the request's TokenInfo.
func (s *Server) streamableHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:      s.cfg.Stateless,
		Logger:         s.sdkLogger,
		SessionTimeout: SessionIdleTimeout,
		// admit is the DNS-rebinding protection; the SDK's own Host check
		// would refuse every reverse proxy on loopback.
		DisableLocalhostProtection: true,
	})
	withInfo := mcpauth.RequireBearerToken(tokenInfo, &mcpauth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return withInfo(streamable{s: s, sdk: h})
}

// tokenInfo is the SDK's view of the request's caller, which guard has
// authorised.
func tokenInfo(ctx context.Context, _ string, _ *http.Request) (*mcpauth.TokenInfo, error) {
	c := callerFromContext(ctx)
	if c == nil {
		return nil, mcpauth.ErrInvalidToken
	}
	return &mcpauth.TokenInfo{
		UserID: c.sessionOwner(), Scopes: c.principal.Scopes.Names(), Expiration: c.principal.ExpiresAt,
		Extra: map[string]any{callerExtra: c},
	}, nil
}

// streamable serves the SDK's streamable transport and watches each
// session it opens.
type streamable struct {
	s   *Server
	sdk http.Handler
}

func (h streamable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	opening := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
	h.sdk.ServeHTTP(w, r)
	if id := w.Header().Get("Mcp-Session-Id"); opening && id != "" {
		h.s.watchSession(r, id)
	}
}

// watchSession ties the streamable session id, just opened by r, to the
// token and project that opened it: the session is closed once they are
// no longer valid (its GET stream ends, and the next request finds no
// session).
func (s *Server) watchSession(r *http.Request, id string) {
	c := callerFromContext(r.Context())
	ss := s.session(id)
	if ss == nil {
		return // initialization failed: the SDK closed it
	}
	watch, err := s.cfg.Watcher.Watch(context.WithoutCancel(r.Context()), r.Header.Get("Authorization"), c.project, func() {
		s.logger.Info("closing an MCP session: its token or membership is gone", "session", id)
		_ = ss.Close()
	})
	if err != nil {
		_ = ss.Close()
		return
	}
	s.own(ss, watch.Close)
}

// session finds an open session by id.
func (s *Server) session(id string) *mcp.ServerSession {
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// guard checks the Host and Origin, refuses anything but API tokens, then
// authenticates and resolves the project (bound project or X-Project-ID,
// membership checked) exactly as the rest of the API does. The SDK's own
// error answers (plain text) reach clients as problem bodies, like every
// other error of the API.
func (s *Server) guard(h http.Handler) http.Handler {
	rule := auth.Rule{Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	return httpapi.PlainErrorsAsProblems(guarded{s: s, next: httpapi.Protect(s.cfg.Guard, rule, apiTokenCaller{next: h})})
}

// guarded answers requests whose Host, Origin or bearer token the MCP
// server refuses, and passes the others to next.
type guarded struct {
	s    *Server
	next http.Handler
}

func (g guarded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := g.s.admit(r); err != nil {
		httpapi.WriteProblem(w, r, err)
		return
	}
	g.s.cors(w, r)
	if raw, ok := auth.Bearer(r.Header.Get("Authorization")); ok && !strings.HasPrefix(raw, auth.TokenPrefix) {
		// Checked before the token is verified: an OIDC token is
		// refused without a round trip to the issuer.
		httpapi.WriteProblem(w, r, ErrNotAPIToken)
		return
	}
	g.next.ServeHTTP(w, r)
}

// apiTokenCaller refuses principals other than API tokens and hands next
// the authorised caller.
type apiTokenCaller struct {
	next http.Handler
}

func (a apiTokenCaller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, acc := auth.PrincipalFrom(r.Context()), auth.AccessFrom(r.Context())
	if p == nil || p.Kind != auth.KindAPIToken {
		httpapi.WriteProblem(w, r, ErrNotAPIToken)
		return
	}
	c := &caller{principal: p, project: acc.ProjectID, org: acc.OrgID, span: trace.SpanContextFromContext(r.Context())}
	a.next.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
}

// cors answers browsers of allowed origins.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) {
	o := r.Header.Get("Origin")
	if o == "" {
		return
	}
	w.Header().Add("Vary", "Origin")
	w.Header().Set("Access-Control-Allow-Origin", o)
	w.Header().Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version")
}

// preflight answers CORS preflight requests, which carry no credentials.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	if err := s.admit(r); err != nil {
		httpapi.WriteProblem(w, r, err)
		return
	}
	s.cors(w, r)
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	w.Header().Set("Access-Control-Allow-Headers", corsHeaders)
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// sseSession is one open SSE stream and the token and project it belongs
// to.
type sseSession struct {
	transport *mcp.SSEServerTransport
	owner     string
	// current is the caller of the latest POST (same token and project,
	// freshly authorised), so that role changes apply to the next message.
	current atomic.Pointer[caller]
}

type sseSessionKey struct{}

// serveSSE serves the SSE transport of the MCP specification of
// 2024-11-05: a GET opens the event stream, whose first event names the
// endpoint (this path with ?sessionid=) where the client POSTs messages.
// Only a project-scoped token bound to the path's project may use it.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request) {
	c := callerFromContext(r.Context())
	if c.principal.BoundProject != c.project {
		httpapi.WriteProblem(w, r, ErrSSEToken)
		return
	}
	if r.Method == http.MethodPost {
		s.postSSE(w, r, c)
		return
	}
	id := rand.Text()
	t := &mcp.SSEServerTransport{Endpoint: r.URL.EscapedPath() + "?sessionid=" + id, Response: w}
	sess := &sseSession{transport: t, owner: c.sessionOwner()}
	sess.current.Store(c)
	s.mu.Lock()
	s.sse[id] = sess
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sse, id)
		s.mu.Unlock()
	}()
	// The stream ends when the client goes, or when its token or
	// membership does.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	watch, err := s.cfg.Watcher.Watch(ctx, r.Header.Get("Authorization"), c.project, cancel)
	if err != nil {
		httpapi.WriteProblem(w, r, err)
		return
	}
	defer watch.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	// The session's context keeps this request's values for every message
	// of the stream: the session, whose current caller the POSTs update.
	ss, err := s.mcp.Connect(context.WithValue(ctx, sseSessionKey{}, sess), t, nil)
	if err != nil {
		httpapi.WriteProblem(w, r, err)
		return
	}
	stop := context.AfterFunc(ctx, func() { _ = ss.Close() })
	defer stop()
	s.own(ss, func() {})
	_ = ss.Wait()
}

func (s *Server) postSSE(w http.ResponseWriter, r *http.Request, c *caller) {
	id := r.URL.Query().Get("sessionid")
	if id == "" {
		httpapi.WriteProblem(w, r, errs.New(errs.Invalid, "sessionid is required: POST to the endpoint the stream announced"))
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		httpapi.WriteProblem(w, r, errs.New(errs.Invalid, "Content-Type must be application/json"))
		return
	}
	s.mu.Lock()
	sess := s.sse[id]
	s.mu.Unlock()
	if sess == nil || sess.owner != c.sessionOwner() {
		httpapi.WriteProblem(w, r, ErrNoSession)
		return
	}
	sess.current.Store(c)
	sess.transport.ServeHTTP(w, r)
}
