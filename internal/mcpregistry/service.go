package mcpregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/secrets"
	"github.com/graphmill/graphmill/internal/startstop"
)

// Defaults.
const (
	CallTimeoutDefault  = 60 * time.Second
	IdleTimeoutDefault  = 5 * time.Minute
	StartTimeoutDefault = 30 * time.Second
	// MaxResponseBytesDefault bounds one response body of a remote MCP
	// server, as go-sdk bounds one stdio message and one SSE event.
	MaxResponseBytesDefault = 16 << 20
	// MaxConcurrentCallsDefault bounds the operations running at once
	// against one server in one process.
	MaxConcurrentCallsDefault = 8
	// MaxConcurrentCallsTotalDefault bounds the operations running at once
	// against all remote (SSE and HTTP) servers in one process: with
	// MaxResponseBytesDefault, at most 1 GiB of response bodies in memory.
	MaxConcurrentCallsTotalDefault = 64
	RegistryURLDefault             = "https://registry.modelcontextprotocol.io"
	WebSearchURLDefault            = "https://api.search.brave.com"
)

// Config wires a Service.
type Config struct {
	Pool   *pgxpool.Pool
	Box    *secrets.Box
	Logger *slog.Logger
	Now    func() time.Time
	// Egress guards every outbound connection (SSE/HTTP servers, the
	// registry, web search).
	Egress *egress.Guard
	// Builtin is the built-in MCP server's tool catalogue.
	Builtin []BuiltinTool
	// StdioPolicy is GRAPHMILL_MCP_STDIO: superadmin, enabled or disabled.
	StdioPolicy string
	// StdioUser is the user stdio servers run as
	// (GRAPHMILL_MCP_STDIO_USER; empty: nobody when running as root, else
	// this process's own user).
	StdioUser string
	// RegistryURL is the official MCP registry's base URL.
	RegistryURL string
	// WebSearchAPIKey is the global fallback key (WEB_SEARCH_API_KEY).
	WebSearchAPIKey  string
	WebSearchBaseURL string
	// CallTimeout bounds one tool call, inspect or sync.
	CallTimeout time.Duration
	// IdleTimeout stops stdio processes unused this long.
	IdleTimeout time.Duration
	// StartTimeout bounds a stdio process's start and MCP handshake.
	StartTimeout time.Duration
	// Version is reported to MCP servers as the client version.
	Version string
	// MaxResponseBytes bounds every response body read from a remote MCP
	// server (0: MaxResponseBytesDefault).
	MaxResponseBytes int64
	// MaxConcurrentCalls bounds the operations (calls, inspects, syncs)
	// running at once against one server in this process (0:
	// MaxConcurrentCallsDefault); more are refused with rate_limited.
	MaxConcurrentCalls int
	// MaxConcurrentCallsTotal bounds the operations running at once
	// against all remote (SSE and HTTP) servers in this process (0:
	// MaxConcurrentCallsTotalDefault); more are refused with rate_limited.
	// With MaxResponseBytes it bounds the memory remote servers can make
	// this process hold.
	MaxConcurrentCallsTotal int
	// Tracer traces every tool call to an external server; nil is the
	// no-op provider.
	Tracer trace.TracerProvider

	host *host // this process's identity (nil: read it); tests pretend another
	// beforeFirstWrite runs in the first write of a tool setting, after
	// it found no row and before it writes one; tests hold concurrent
	// first writes there.
	beforeFirstWrite func(level string)
}

// Service is the MCP registry domain.
type Service struct {
	cfg     Config
	tracer  trace.Tracer
	conn    *connector
	http    *http.Client
	builtin map[string]BuiltinTool

	life startstop.Base
}

// NewService builds the service. Start runs its idle reaper; Stop ends
// every stdio process.
func NewService(c Config) (*Service, error) {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.CallTimeout = positiveOr(c.CallTimeout, CallTimeoutDefault)
	c.IdleTimeout = positiveOr(c.IdleTimeout, IdleTimeoutDefault)
	c.StartTimeout = positiveOr(c.StartTimeout, StartTimeoutDefault)
	c.MaxResponseBytes = positiveOr(c.MaxResponseBytes, MaxResponseBytesDefault)
	c.MaxConcurrentCalls = positiveOr(c.MaxConcurrentCalls, MaxConcurrentCallsDefault)
	c.MaxConcurrentCallsTotal = positiveOr(c.MaxConcurrentCallsTotal, MaxConcurrentCallsTotalDefault)
	if c.RegistryURL == "" {
		c.RegistryURL = RegistryURLDefault
	}
	if c.WebSearchBaseURL == "" {
		c.WebSearchBaseURL = WebSearchURLDefault
	}
	switch c.StdioPolicy {
	case "":
		c.StdioPolicy = StdioSuperadmin
	case StdioSuperadmin, StdioEnabled, StdioDisabled:
	default:
		return nil, fmt.Errorf("stdio policy must be superadmin, enabled or disabled")
	}
	if c.Egress == nil {
		g, err := egress.New(nil)
		if err != nil {
			return nil, err
		}
		c.Egress = g
	}
	h := currentHost()
	if c.host != nil {
		h = *c.host
	}
	cred, err := stdioCredential(h, c.StdioUser)
	if err != nil {
		return nil, err
	}
	builtin := map[string]BuiltinTool{}
	for _, t := range c.Builtin {
		if _, dup := builtin[t.Name]; dup {
			return nil, fmt.Errorf("built-in tool %s listed twice", t.Name)
		}
		builtin[t.Name] = t
	}
	version := c.Version
	if version == "" {
		version = "dev"
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "graphmill", Version: version}, nil)
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider()
	}
	return &Service{
		cfg: c, builtin: builtin, http: c.Egress.Client(30 * time.Second), tracer: c.Tracer.Tracer("github.com/graphmill/graphmill/internal/mcpregistry"),
		conn: &connector{
			logger: c.Logger, now: c.Now, client: client, httpClient: c.Egress.Client(0),
			idle: c.IdleTimeout, startWait: c.StartTimeout, credential: cred, slots: map[uuid.UUID]*slot{},
			maxBody: c.MaxResponseBytes, maxCalls: c.MaxConcurrentCalls, calls: map[uuid.UUID]chan struct{}{},
			remoteCalls: make(chan struct{}, c.MaxConcurrentCallsTotal),
		},
	}, nil
}

// positiveOr is v, or def when v is not positive (not set).
func positiveOr[T ~int | ~int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// stdioShared reports whether stdio children would run as this process's
// own user, able to read its environment, its data directory and so its
// secrets: then only superadmins (GRAPHMILL_MCP_STDIO=superadmin) may
// have them.
func (s *Service) stdioShared() bool { return s.conn.credential == nil }

// Start runs the reaper of idle stdio processes until Stop, after saying
// whom stdio servers run as.
func (s *Service) Start(ctx context.Context) error {
	if err := s.life.Begin(ctx); err != nil {
		return fmt.Errorf("mcp registry: %w", err)
	}
	switch {
	case s.cfg.StdioPolicy == StdioDisabled:
	case !s.stdioShared():
		name := s.cfg.StdioUser
		if name == "" {
			name = "nobody"
		}
		s.cfg.Logger.Info("mcp stdio servers run as "+name, "uid", s.conn.credential.Uid)
	case s.cfg.StdioPolicy == StdioSuperadmin:
		s.cfg.Logger.Info("mcp stdio servers run as this server's own user and could read its secrets, so only superadmins may create them; " +
			"to isolate them run as root, or set GRAPHMILL_MCP_STDIO_USER with CAP_SETUID and CAP_SETGID")
	default:
		s.cfg.Logger.Info("stdio MCP servers are refused: GRAPHMILL_MCP_STDIO=enabled lets organization admins create them, and they would run as this server's own user, able to read its secrets; " +
			"set GRAPHMILL_MCP_STDIO=superadmin, or run as root, or set GRAPHMILL_MCP_STDIO_USER with CAP_SETUID and CAP_SETGID")
	}
	s.life.Go(s.reap)
	return nil
}

// reap ends idle stdio processes until ctx ends.
func (s *Service) reap(ctx context.Context) {
	t := time.NewTicker(max(s.cfg.IdleTimeout/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.conn.reap()
		}
	}
}

// Stop ends the reaper, waiting for it until ctx ends, then every stdio
// process (killed at once, so that is not bounded by ctx). It also ends
// the processes started without Start.
func (s *Service) Stop(ctx context.Context) error {
	err := s.life.Stop(ctx)
	s.conn.stopAll()
	return err
}

// Stderr returns the last stderr output (at most StderrLogBytes) of a
// server's running stdio process. It may hold what the server printed, so
// it is for operators, never for API responses.
func (s *Service) Stderr(server uuid.UUID) string { return s.conn.stderr(server) }

// ProcessID returns the pid of a server's running stdio process (0: none).
func (s *Service) ProcessID(server uuid.UUID) int { return s.conn.pid(server) }

// envPlace and headersPlace bind sealed values to their row.
func envPlace(id uuid.UUID) []byte { return secrets.Place("mcp_servers", "env", id.String()) }

func headersPlace(id uuid.UUID) []byte { return secrets.Place("mcp_servers", "headers", id.String()) }

func varsPlace(id uuid.UUID) []byte { return secrets.Place("mcp_servers", "vars", id.String()) }

func (s *Service) sealMap(m map[string]string, place []byte) *string {
	if len(m) == 0 {
		return nil
	}
	raw, _ := json.Marshal(m)
	v := s.cfg.Box.Seal(raw, place)
	return &v
}

func (s *Service) openMap(sealed *string, place []byte) (map[string]string, error) {
	if sealed == nil {
		return nil, nil
	}
	raw, err := s.cfg.Box.Open(*sealed, place)
	if err != nil {
		return nil, fmt.Errorf("open sealed mcp server values: %w", err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode sealed mcp server values: %w", err)
	}
	return m, nil
}

func maskMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = Masked
	}
	return out
}

// toServer opens a row's secrets into the unexported fields and masks
// them in the exported ones.
func (s *Service) toServer(r serverRow) (Server, error) {
	env, err := s.openMap(r.EnvSealed, envPlace(r.ID))
	if err != nil {
		return Server{}, err
	}
	headers, err := s.openMap(r.HeadersSealed, headersPlace(r.ID))
	if err != nil {
		return Server{}, err
	}
	vars, err := s.openMap(r.VarsSealed, varsPlace(r.ID))
	if err != nil {
		return Server{}, err
	}
	return serverOf(r, env, headers, vars), nil
}

// serverOf is the server of a row whose secrets are open: masked in the
// exported fields, kept in the unexported ones.
func serverOf(r serverRow, env, headers, vars map[string]string) Server {
	return Server{
		ID: r.ID, ProjectID: r.ProjectID, Name: r.Name, Enabled: r.Enabled, Type: r.Type,
		Command: postgres.Value(r.Command), Args: r.Args, Env: maskMap(env), URL: postgres.Value(r.URL),
		Headers: maskMap(headers), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), env: env, headers: headers, vars: vars,
	}
}

// ListServers lists a project's servers, creating its built-in record on
// first use.
func (s *Service) ListServers(ctx context.Context, project uuid.UUID, limit, offset int) ([]Server, int, error) {
	if err := builtinEnsure(ctx, s.cfg.Pool, project, s.cfg.Now()); err != nil {
		return nil, 0, err
	}
	rows, total, err := serversList(ctx, s.cfg.Pool, project, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Server, len(rows))
	for i, r := range rows {
		if out[i], err = s.toServer(r); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// ServerProject returns the project a server belongs to. Errors: not_found.
func (s *Service) ServerProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return serverProject(ctx, s.cfg.Pool, id)
}

// server loads a project's server from db, its row locked for the rest
// of db's transaction when lock is set. Errors: not_found.
func (s *Service) server(ctx context.Context, db postgres.DBTX, project, id uuid.UUID, lock bool) (Server, error) {
	r, err := serverGet(ctx, db, project, id, lock)
	if err != nil {
		return Server{}, err
	}
	return s.toServer(r)
}

// Server returns a project's server, secrets masked. Errors: not_found.
func (s *Service) Server(ctx context.Context, project, id uuid.UUID) (Server, error) {
	return s.server(ctx, s.cfg.Pool, project, id, false)
}

var (
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)      //nolint:gochecknoglobals // compiled pattern, constant
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$") //nolint:gochecknoglobals // compiled pattern, constant
	varName    = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)             //nolint:gochecknoglobals // compiled pattern, constant

	envEntries = entryRule{ //nolint:gochecknoglobals // constant rule
		name: envName, forbid: "\x00", count: "at most %d env variables",
		badName:  "env names must be letters, digits and underscores, not starting with a digit",
		badValue: "env value of %s must be at most %d bytes without NUL characters",
	}
	headerEntries = entryRule{ //nolint:gochecknoglobals // constant rule
		name: headerName, forbid: "\r\n\x00", count: "at most %d headers",
		badName: "header names must be HTTP tokens", badValue: "header %s must be at most %d bytes without line breaks",
	}
	varEntries = entryRule{ //nolint:gochecknoglobals // constant rule
		name: varName, forbid: "\r\n\x00", count: "at most %d variables",
		badName:  "variable names must be letters, digits, dots, dashes and underscores",
		badValue: "variable %s must be at most %d bytes without line breaks",
	}
)

// entryRule bounds one of a server record's maps (env, headers,
// variables): at most MaxEntries, names matching name, values of at most
// MaxValueBytes without the bytes of forbid. Its messages never echo
// values.
type entryRule struct {
	name                     *regexp.Regexp
	forbid                   string
	count, badName, badValue string
}

func (r entryRule) check(m map[string]string) error {
	if len(m) > MaxEntries {
		return errs.Errorf(errs.Invalid, r.count, MaxEntries)
	}
	for k, v := range m {
		if !r.name.MatchString(k) {
			return errs.New(errs.Invalid, r.badName)
		}
		if len(v) > MaxValueBytes || strings.ContainsAny(v, r.forbid) {
			return errs.Errorf(errs.Invalid, r.badValue, k, MaxValueBytes)
		}
	}
	return nil
}

// Limits of a server record.
const (
	MaxArgs       = 100
	MaxArgBytes   = 4096
	MaxEntries    = 100
	MaxValueBytes = 8192
)

// validate checks a complete record. Messages never echo values (they may
// be secrets).
func validate(srv *Server) error {
	srv.Name = strings.TrimSpace(srv.Name)
	if srv.Name == "" || utf8.RuneCountInString(srv.Name) > 200 {
		return errs.New(errs.Invalid, "name must be 1 to 200 characters")
	}
	switch srv.Type {
	case TypeStdio:
		if strings.TrimSpace(srv.Command) == "" {
			return errs.New(errs.Invalid, "a stdio server needs a command")
		}
		if len(srv.Command) > 1024 || strings.ContainsRune(srv.Command, 0) {
			return errs.New(errs.Invalid, "command must be at most 1024 bytes without NUL characters")
		}
		if srv.URL != "" || len(srv.headers) > 0 {
			return errs.New(errs.Invalid, "url and headers apply to sse and http servers, not stdio")
		}
		if len(srv.Args) > MaxArgs {
			return errs.Errorf(errs.Invalid, "at most %d args", MaxArgs)
		}
		for i, a := range srv.Args {
			if len(a) > MaxArgBytes || strings.ContainsRune(a, 0) {
				return errs.Errorf(errs.Invalid, "args[%d] must be at most %d bytes without NUL characters", i, MaxArgBytes)
			}
		}
		if err := envEntries.check(srv.env); err != nil {
			return err
		}
	case TypeSSE, TypeHTTP:
		u, err := url.Parse(srv.url())
		if srv.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(srv.URL) > 2048 {
			return errs.Errorf(errs.Invalid, "a server of type %s needs an http(s) url", srv.Type)
		}
		if srv.Command != "" || len(srv.Args) > 0 || len(srv.env) > 0 {
			return errs.Errorf(errs.Invalid, "command, args and env apply to stdio servers, not %s", srv.Type)
		}
		if err := headerEntries.check(srv.headers); err != nil {
			return err
		}
	case TypeBuiltin:
		return ErrBuiltinCreate
	default:
		return errs.New(errs.Invalid, "type must be stdio, sse or http")
	}
	return varEntries.check(srv.vars)
}

// expand fills the {name} placeholders of s whose name vars holds; others
// stay as written. Values are not expanded again.
func expand(s string, vars map[string]string) string {
	if len(vars) == 0 || !strings.Contains(s, "{") {
		return s
	}
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := vars[m[1:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// CreateServer adds a server to a project; a stdio server needs c to be
// allowed them (CheckStdio). Errors: invalid_argument, permission_denied.
func (s *Service) CreateServer(ctx context.Context, project uuid.UUID, in ServerInput, c Caller) (Server, error) {
	if in.Type == TypeStdio {
		if err := s.CheckStdio(c); err != nil {
			return Server{}, err
		}
	}
	return s.createServer(ctx, project, in, nil)
}

// createServer adds a server whose args and url may hold placeholders of
// vars.
func (s *Service) createServer(ctx context.Context, project uuid.UUID, in ServerInput, vars map[string]string) (Server, error) {
	now := s.cfg.Now()
	srv := Server{
		ID: uuid.Must(uuid.NewV7()), ProjectID: project, Name: in.Name, Enabled: in.Enabled == nil || *in.Enabled, Type: in.Type,
		Command: in.Command, Args: in.Args, URL: in.URL, env: in.Env, headers: in.Headers, vars: vars, CreatedAt: now, UpdatedAt: now,
	}
	if err := validate(&srv); err != nil {
		return Server{}, err
	}
	r, err := serverInsert(ctx, s.cfg.Pool, s.toRow(srv))
	if err != nil {
		return Server{}, err
	}
	return serverOf(r, srv.env, srv.headers, srv.vars), nil
}

func (s *Service) toRow(srv Server) serverRow {
	return serverRow{
		ID: srv.ID, ProjectID: srv.ProjectID, Name: srv.Name, Enabled: srv.Enabled, Type: srv.Type,
		Command: postgres.NullIfEmpty(srv.Command), Args: srv.Args, EnvSealed: s.sealMap(srv.env, envPlace(srv.ID)),
		URL: postgres.NullIfEmpty(srv.URL), HeadersSealed: s.sealMap(srv.headers, headersPlace(srv.ID)), VarsSealed: s.sealMap(srv.vars, varsPlace(srv.ID)),
		CreatedAt: srv.CreatedAt, UpdatedAt: srv.UpdatedAt,
	}
}

// mergeSecrets replaces old with given, keeping old values where given
// says ***.
func mergeSecrets(old, given map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(given))
	for k, v := range given {
		if v == Masked {
			ov, ok := old[k]
			if !ok {
				return nil, errs.Errorf(errs.Invalid, "%s is *** but has no stored value to keep", k)
			}
			v = ov
		}
		out[k] = v
	}
	return out, nil
}

// TouchesCommand reports whether an update changes what a stdio server
// runs (command, args or env), which needs the stdio permission.
func (u ServerUpdate) TouchesCommand() bool {
	return u.Command != nil || u.Args != nil || u.Env != nil
}

// UpdateServer changes a server; disabling it or changing what it runs
// stops its process, and changing what a stdio server runs needs c to be
// allowed stdio servers (CheckStdio). One transaction locks and reads the
// server, applies u and returns the row it wrote. Errors: not_found,
// conflict (built-in), invalid_argument, permission_denied.
func (s *Service) UpdateServer(ctx context.Context, project, id uuid.UUID, u ServerUpdate, c Caller) (Server, error) {
	var out Server
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		srv, err := s.server(ctx, tx, project, id, true)
		if err != nil {
			return err
		}
		if err := s.apply(&srv, u, c); err != nil {
			return err
		}
		srv.UpdatedAt = s.cfg.Now()
		r, err := serverUpdate(ctx, tx, s.toRow(srv))
		if err != nil {
			return err
		}
		out = serverOf(r, srv.env, srv.headers, srv.vars)
		return nil
	})
	if err != nil {
		return Server{}, err
	}
	if !out.Enabled || u.TouchesCommand() {
		s.conn.stop(id)
	}
	return out, nil
}

// apply changes srv as u asks and validates the result; changing what a
// stdio server runs needs c to be allowed stdio servers.
func (s *Service) apply(srv *Server, u ServerUpdate, c Caller) error {
	if srv.Type == TypeBuiltin {
		return ErrBuiltinFixed
	}
	if u.Type != nil && *u.Type != srv.Type {
		return errs.New(errs.Invalid, "type cannot be changed: create a new server")
	}
	if srv.Type == TypeStdio && u.TouchesCommand() {
		if err := s.CheckStdio(c); err != nil {
			return err
		}
	}
	if u.Name != nil {
		srv.Name = *u.Name
	}
	if u.Enabled != nil {
		srv.Enabled = *u.Enabled
	}
	if u.Command != nil {
		srv.Command = *u.Command
	}
	if u.Args != nil {
		srv.Args = *u.Args
	}
	if u.URL != nil {
		before := origin(srv.url())
		srv.URL = *u.URL
		if origin(srv.url()) != before && (len(srv.headers) > 0 || len(srv.vars) > 0) {
			// Sealed headers and variables were given for one origin: they
			// never go to another. New headers may come with the new URL.
			if u.Headers != nil {
				for k, v := range *u.Headers {
					if v == Masked {
						return errs.Errorf(errs.Invalid, "header %s cannot be kept (***): the url's origin (scheme, host and port) changes, which drops the stored headers; give their values again", k)
					}
				}
			}
			srv.headers, srv.vars = nil, nil
		}
	}
	var err error
	if u.Env != nil {
		if srv.env, err = mergeSecrets(srv.env, *u.Env); err != nil {
			return err
		}
	}
	if u.Headers != nil {
		if srv.headers, err = mergeSecrets(srv.headers, *u.Headers); err != nil {
			return err
		}
	}
	return validate(srv)
}

// DeleteServer removes a server with its tools and stops its process.
// Errors: not_found, conflict (built-in).
func (s *Service) DeleteServer(ctx context.Context, project, id uuid.UUID) error {
	srv, err := s.server(ctx, s.cfg.Pool, project, id, false)
	if err != nil {
		return err
	}
	if srv.Type == TypeBuiltin {
		return ErrBuiltinFixed
	}
	s.conn.stop(id)
	s.conn.forget(id)
	return serverDelete(ctx, s.cfg.Pool, id)
}

// session runs fn with a live session to srv within the call timeout.
// Every error it returns has passed srv.redact: connection errors print
// the URL a request went to, which holds the install variables' values.
// A server that failed (bad_gateway) is logged for operators, who see no
// other trace of it.
func (s *Service) session(ctx context.Context, srv Server, fn func(context.Context, *mcp.ClientSession) error) error {
	err := srv.redactError(s.sessionRaw(ctx, srv, fn))
	if errs.CodeOf(err) == errs.BadGateway {
		s.cfg.Logger.WarnContext(ctx, "mcp server failed", "server", srv.ID, "type", srv.Type, "error", errs.MessageOf(err))
	}
	return err
}

// sessionRaw is session without the redaction.
func (s *Service) sessionRaw(ctx context.Context, srv Server, fn func(context.Context, *mcp.ClientSession) error) error {
	if srv.Type == TypeBuiltin {
		return ErrBuiltinRemote
	}
	if !srv.Enabled {
		return errs.Errorf(errs.FailedPrecondition, "the MCP server %q is disabled", srv.Name)
	}
	if srv.Type == TypeStdio && s.cfg.StdioPolicy == StdioDisabled {
		return ErrStdioOff
	}
	if srv.Type == TypeStdio && s.cfg.StdioPolicy != StdioSuperadmin && s.stdioShared() {
		return ErrStdioShared
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	err := s.conn.with(ctx, srv, func(cs *mcp.ClientSession) error { return fn(ctx, cs) })
	if err == nil {
		return nil
	}
	if errs.CodeOf(err) != errs.Internal {
		return err
	}
	if ctx.Err() != nil {
		return errs.Errorf(errs.BadGateway, "the MCP server %q did not answer within %s", srv.Name, s.cfg.CallTimeout)
	}
	return errs.Errorf(errs.BadGateway, "the MCP server %q failed: %s", srv.Name, mcpMessage(err))
}

// liveTools lists every tool of a live server, as the catalogue can
// record it: a tool whose name the database cannot hold (a NUL) is left
// out with a warning (it could not be called by another name), a NUL in
// its description dropped (postgres.Text; its input schema's, by
// toolsUpsert).
func (s *Service) liveTools(ctx context.Context, srv Server) ([]LiveTool, error) {
	out := []LiveTool{}
	err := s.session(ctx, srv, func(ctx context.Context, cs *mcp.ClientSession) error {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			if !postgres.ValidText(t.Name) {
				s.cfg.Logger.WarnContext(ctx, "MCP server tool left out: its name holds a NUL", "server", srv.ID, "tool", postgres.Text(t.Name))
				continue
			}
			lt := LiveTool{ToolName: t.Name, Description: postgres.Text(t.Description), InputSchema: map[string]any{}}
			if a := t.Annotations; a != nil {
				lt.Hints = Hints{ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint}
			}
			if raw, err := json.Marshal(t.InputSchema); err == nil {
				_ = json.Unmarshal(raw, &lt.InputSchema)
			}
			out = append(out, lt)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ToolName < out[j].ToolName })
	return out, nil
}

// Inspect connects to a server and returns its live tool list without
// recording it. Errors: not_found, invalid_argument (built-in),
// failed_precondition (disabled), bad_gateway (the server failed).
func (s *Service) Inspect(ctx context.Context, project, id uuid.UUID) ([]LiveTool, error) {
	srv, err := s.server(ctx, s.cfg.Pool, project, id, false)
	if err != nil {
		return nil, err
	}
	return s.liveTools(ctx, srv)
}

// Sync mirrors a server's live tool list into its catalogue: new tools are
// added enabled, known ones refreshed with their enabled choice kept,
// vanished ones removed. Errors as Inspect.
func (s *Service) Sync(ctx context.Context, project, id uuid.UUID) (SyncResult, error) {
	srv, err := s.server(ctx, s.cfg.Pool, project, id, false)
	if err != nil {
		return SyncResult{}, err
	}
	live, err := s.liveTools(ctx, srv)
	if err != nil {
		return SyncResult{}, err
	}
	var res SyncResult
	err = postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var err error
		res.Added, res.Updated, res.Removed, err = toolsUpsert(ctx, tx, id, live, s.cfg.Now())
		return err
	})
	if err != nil {
		return SyncResult{}, err
	}
	if res.Tools, err = s.Tools(ctx, project, id); err != nil {
		return SyncResult{}, err
	}
	return res, nil
}

// Tools lists a server's catalogue; the built-in server's tools carry
// their effective setting. Errors: not_found.
func (s *Service) Tools(ctx context.Context, project, id uuid.UUID) ([]Tool, error) {
	srv, err := s.server(ctx, s.cfg.Pool, project, id, false)
	if err != nil {
		return nil, err
	}
	if srv.Type == TypeBuiltin {
		return s.builtinTools(ctx, srv)
	}
	return toolsList(ctx, s.cfg.Pool, id)
}

// UpdateTool changes a tool: for external servers its enabled flag; for
// the built-in server the project's setting (enabled and config.api_key of
// configurable tools). toolID is the tool's id, or for built-in tools also
// its name. Errors: not_found, invalid_argument.
func (s *Service) UpdateTool(ctx context.Context, project, id uuid.UUID, toolID string, u ToolUpdate) (Tool, error) {
	srv, err := s.server(ctx, s.cfg.Pool, project, id, false)
	if err != nil {
		return Tool{}, err
	}
	if srv.Type == TypeBuiltin {
		return s.updateBuiltinTool(ctx, srv, toolID, u)
	}
	if u.Config != nil {
		return Tool{}, errs.New(errs.Invalid, "config applies to built-in tools only")
	}
	if u.Enabled == nil {
		return Tool{}, errs.New(errs.Invalid, "enabled is required")
	}
	tid, err := uuid.Parse(toolID)
	if err != nil {
		return Tool{}, ErrToolNotFound
	}
	return toolSetEnabled(ctx, s.cfg.Pool, id, tid, *u.Enabled)
}

// ListTools lists the enabled tools of a project's enabled external
// servers (those agents may call).
func (s *Service) ListTools(ctx context.Context, project uuid.UUID) ([]ToolRef, error) {
	return toolRefsList(ctx, s.cfg.Pool, project)
}

// CallTool calls a tool of a project's external server, named by id or by
// name, within the call timeout. A tool that fails reports it in the
// result (IsError); errors are for calls that could not be made: not_found
// (server or tool unknown, or not in the synced catalogue),
// failed_precondition (server or tool disabled), invalid_argument (the
// built-in server), bad_gateway (the server failed or timed out).
func (s *Service) CallTool(ctx context.Context, project uuid.UUID, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	var r serverRow
	var err error
	if id, perr := uuid.Parse(server); perr == nil {
		r, err = serverGet(ctx, s.cfg.Pool, project, id, false)
	} else {
		r, err = serverGetByName(ctx, s.cfg.Pool, project, server)
	}
	if err != nil {
		return nil, errs.Errorf(errs.NotFound, "no MCP server %q in this project", server)
	}
	srv, err := s.toServer(r)
	if err != nil {
		return nil, err
	}
	if srv.Type == TypeBuiltin {
		return nil, errs.New(errs.Invalid, "the built-in server's tools are called directly, not through mcp-servers/call")
	}
	if !srv.Enabled {
		return nil, errs.Errorf(errs.FailedPrecondition, "the MCP server %q is disabled", srv.Name)
	}
	t, err := toolGet(ctx, s.cfg.Pool, srv.ID, true, tool)
	if err != nil {
		return nil, errs.Errorf(errs.NotFound, "the MCP server %q has no tool %q in its catalogue (sync it to refresh)", srv.Name, tool)
	}
	if !t.Enabled {
		return nil, errs.Errorf(errs.FailedPrecondition, "the tool %q of the MCP server %q is disabled", tool, srv.Name)
	}
	if args == nil {
		args = map[string]any{}
	}
	return s.callTool(ctx, srv, tool, args)
}

// Span attributes of a tool call (the MCP semantic conventions' names;
// never the arguments nor the result).
const (
	AttrMCPMethod = attribute.Key("mcp.method.name")
	AttrMCPTool   = attribute.Key("gen_ai.tool.name")
	AttrMCPServer = attribute.Key("graphmill.mcp.server")
	AttrMCPType   = attribute.Key("graphmill.mcp.server_type")
)

// callTool calls tool on srv under the call's span.
func (s *Service) callTool(ctx context.Context, srv Server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, span := s.tracer.Start(ctx, "tools/call "+tool, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(AttrMCPMethod.String("tools/call"), AttrMCPTool.String(tool), AttrMCPServer.String(srv.Name), AttrMCPType.String(srv.Type))
	}
	var res *mcp.CallToolResult
	err := s.session(ctx, srv, func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		return err
	})
	if err != nil {
		span.SetStatus(codes.Error, errs.MessageOf(err))
		return nil, err
	}
	if res.IsError {
		span.SetStatus(codes.Error, "the tool reported an error")
	}
	return res, nil
}

// CheckStdio applies GRAPHMILL_MCP_STDIO to a caller who wants to create or
// change a stdio server. With enabled, stdio servers are refused while
// they would run as this process's own user. Errors: permission_denied.
func (s *Service) CheckStdio(c Caller) error {
	superadmin, orgAdmin := c.Superadmin, c.OrgAdmin
	switch s.cfg.StdioPolicy {
	case StdioDisabled:
		return ErrStdioOff
	case StdioEnabled:
		if s.stdioShared() {
			return ErrStdioShared
		}
		if superadmin || orgAdmin {
			return nil
		}
		return ErrStdioOrgAdmin
	}
	if superadmin {
		return nil
	}
	return ErrStdioSuper
}
