// Package config reads Graphmill's configuration from GRAPHMILL_* environment
// variables and prints it with secrets masked.
package config

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/mcpserver"
)

// Environments.
const (
	EnvDevelopment = "development"
	EnvProduction  = "production"
)

// Log formats.
const (
	LogJSON = "json"
	LogText = "text"
)

// Config is the effective configuration of one process. A field read from
// a GRAPHMILL_ variable (env tag) is logged by LogValue, in clear unless
// its log tag says otherwise (logSecret, logURL, logCount, logDerived);
// the variables of the fields LogValue masks are SecretVars.
type Config struct {
	// DatabaseURL points at an external PostgreSQL; empty means the embedded
	// cluster under DataDir.
	DatabaseURL string `env:"DATABASE_URL" log:"url"`
	// DataDir holds the embedded cluster, the generated admin token and other
	// local state.
	DataDir     string `env:"DATA_DIR" envDefault:"./.graphmill"`
	HTTPAddr    string `env:"HTTP_ADDR" envDefault:"127.0.0.1:8080"`
	OpsAddr     string `env:"OPS_ADDR" envDefault:"127.0.0.1:8081"`
	Environment string `env:"ENVIRONMENT" envDefault:"development"`
	LogLevel    string `env:"LOG_LEVEL" envDefault:"info"`
	// LogFormat is json or text; unset means text when stderr is a
	// terminal and JSON otherwise.
	LogFormat string `env:"LOG_FORMAT"`

	// BootstrapToken fixes the value of the first admin token.
	BootstrapToken string `env:"BOOTSTRAP_TOKEN" log:"secret"`

	OIDCIssuer   string `env:"OIDC_ISSUER"`
	OIDCAudience string `env:"OIDC_AUDIENCE"`
	// OIDCTokenMaxLifetime bounds the API tokens created with an OIDC
	// session: their expiry when none is asked for, the latest allowed.
	// It must be positive.
	OIDCTokenMaxLifetime time.Duration `env:"OIDC_TOKEN_MAX_LIFETIME" envDefault:"720h"`

	// ConsoleOIDCClientID turns on the console's sign-in with the OIDC
	// issuer (authorization-code flow with PKCE); the issuer's access
	// tokens must be for OIDCAudience. ConsoleOIDCClientSecret is empty
	// for a public client. ConsoleOIDCRedirectURL is the callback
	// registered at the provider (empty: the public base URL +
	// /signin/oidc/callback). ConsoleOIDCScopes are asked for;
	// offline_access brings a refresh token, which renews the session's
	// access token.
	ConsoleOIDCClientID     string   `env:"CONSOLE_OIDC_CLIENT_ID"`
	ConsoleOIDCClientSecret string   `env:"CONSOLE_OIDC_CLIENT_SECRET" log:"secret"`
	ConsoleOIDCRedirectURL  string   `env:"CONSOLE_OIDC_REDIRECT_URL" log:"url"`
	ConsoleOIDCScopes       []string `env:"CONSOLE_OIDC_SCOPES" envSeparator:"," envDefault:"openid,profile,email,offline_access"`
	// ConsoleSecureCookie says when the console's cookies are Secure:
	// auto (over TLS, or always when PUBLIC_URL is https, as behind a
	// TLS-terminating proxy), always or never.
	ConsoleSecureCookie string `env:"CONSOLE_SECURE_COOKIE" envDefault:"auto"`

	// AuthCacheTTL bounds how long a verified token is trusted without a
	// database round trip; revocations are pushed to every process at once,
	// so this only limits the damage of a lost notification.
	AuthCacheTTL time.Duration `env:"AUTH_CACHE_TTL" envDefault:"60s"`

	// ShutdownTimeout bounds the graceful drain on SIGINT/SIGTERM.
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"30s"`

	// EventHeartbeat is the comment interval on event streams.
	EventHeartbeat time.Duration `env:"EVENT_HEARTBEAT" envDefault:"15s"`

	// MaxUploadBytes caps an uploaded document.
	MaxUploadBytes int64 `env:"MAX_UPLOAD_BYTES" envDefault:"104857600"`
	// MaxJSONUploadBytes caps the body of a JSON upload, which is decoded
	// in memory (multipart uploads stream to a spool file).
	MaxJSONUploadBytes int64 `env:"MAX_JSON_UPLOAD_BYTES" envDefault:"10485760"`
	// MaxConcurrentUploads bounds the uploads in progress in one process;
	// beyond it an upload answers 429 with Retry-After.
	MaxConcurrentUploads int `env:"MAX_CONCURRENT_UPLOADS" envDefault:"8"`
	// UploadSpoolDir holds multipart uploads while they are stored (empty:
	// the system's temporary directory, TMPDIR).
	UploadSpoolDir string `env:"UPLOAD_SPOOL_DIR"`
	// EmbeddingDimension is the vector length of the local embedder.
	EmbeddingDimension int `env:"EMBEDDING_DIMENSION" envDefault:"768"`
	// QueueProjectMax caps one project's running jobs per queue (0: no cap).
	QueueProjectMax int `env:"QUEUE_PROJECT_MAX" envDefault:"0"`
	// ParseConcurrency is the number of documents parsed at once per process.
	ParseConcurrency int `env:"PARSE_CONCURRENCY" envDefault:"2"`

	// DBMaxConns sizes the connection pool.
	DBMaxConns int32 `env:"DB_MAX_CONNS" envDefault:"20"`

	// SecretKey (base64 of 32 bytes) seals secrets at rest; the embedded
	// default generates one into the data directory when it is unset.
	SecretKey string `env:"SECRET_KEY" log:"secret"`
	// SecretKeysOld are retired keys, still used to open old values.
	SecretKeysOld []string `env:"SECRET_KEYS_OLD" envSeparator:"," log:"count"`

	// The global provider credentials, used by projects without their own
	// or their organization's.
	KeyAIAPIKey              string `env:"KEY_AI_API_KEY" log:"secret"`
	KeyAIBaseURL             string `env:"KEY_AI_BASE_URL" log:"url"`
	AccountAICredentialsFile string `env:"ACCOUNT_AI_CREDENTIALS_FILE"`
	AccountAIProject         string `env:"ACCOUNT_AI_PROJECT"`
	AccountAILocation        string `env:"ACCOUNT_AI_LOCATION"`
	AccountAIBaseURL         string `env:"ACCOUNT_AI_BASE_URL" log:"url"`
	// The openai provider (any OpenAI-compatible endpoint): either the
	// base URL or the key enables it. The base URL is the operator's, so it
	// may be private or loopback (Ollama: http://localhost:11434/v1).
	OpenAIBaseURL        string `env:"OPENAI_BASE_URL" log:"url"`
	OpenAIAPIKey         string `env:"OPENAI_API_KEY" log:"secret"`
	OpenAIModel          string `env:"OPENAI_MODEL"`
	OpenAIEmbeddingModel string `env:"OPENAI_EMBEDDING_MODEL"`
	// LocalProvider enables the offline provider as the last resort; unset
	// means enabled on the embedded default and disabled otherwise.
	LocalProvider *bool `env:"LOCAL_PROVIDER" log:"derived"`
	// ProviderRPM and ProviderTPM override the catalog's requests and
	// tokens per minute for every model (0: the catalog's figures).
	ProviderRPM int `env:"PROVIDER_RPM" envDefault:"0"`
	ProviderTPM int `env:"PROVIDER_TPM" envDefault:"0"`
	// VectorCacheBytes bounds the memory of the in-process vector index
	// (least recently used project spaces are evicted).
	VectorCacheBytes int64 `env:"VECTOR_CACHE_BYTES" envDefault:"1073741824"`
	// ModelSyncInterval is how often the model catalog is refreshed from
	// the providers' model lists.
	ModelSyncInterval time.Duration `env:"MODEL_SYNC_INTERVAL" envDefault:"24h"`

	// MCPAllowedOrigins lists the browser origins (scheme://host[:port])
	// allowed to call the built-in MCP server besides its own origin (the
	// validated Host) and requests without an Origin header.
	MCPAllowedOrigins []string `env:"MCP_ALLOWED_ORIGINS" envSeparator:","`
	// PublicHosts lists the names (no scheme, no port) clients reach the
	// server by, for the MCP server's Host check (DNS-rebinding
	// protection), besides the loopback names and the listen address.
	PublicHosts []string `env:"PUBLIC_HOSTS" envSeparator:","`
	// MCPStateless serves the MCP streamable HTTP transport without
	// sessions, so that any replica answers any request (GET and DELETE
	// answer 405).
	MCPStateless bool `env:"MCP_STATELESS" envDefault:"false"`
	// MCPRegistryURL is the official MCP registry (its /v0.1/servers API).
	MCPRegistryURL string `env:"MCP_REGISTRY_URL" envDefault:"https://registry.modelcontextprotocol.io" log:"url"`
	// MCPStdio says who may create stdio MCP servers, which run commands
	// on this host: superadmin (only superadmins), enabled (organization
	// admins too) or disabled (nobody; existing ones do not start).
	MCPStdio string `env:"MCP_STDIO" envDefault:"superadmin"`
	// MCPCallTimeout bounds one MCP tool call, inspect or sync.
	MCPCallTimeout time.Duration `env:"MCP_CALL_TIMEOUT" envDefault:"60s"`
	// AgentQuestionTimeout is how long an agent run's question waits for
	// its answer; then the run fails with that reason.
	AgentQuestionTimeout time.Duration `env:"AGENT_QUESTION_TIMEOUT" envDefault:"24h"`
	// MCPIdleTimeout stops stdio MCP server processes unused this long.
	MCPIdleTimeout time.Duration `env:"MCP_IDLE_TIMEOUT" envDefault:"5m"`
	// MCPStdioUser is the user stdio MCP servers run as (empty: nobody when
	// running as root, else this process's own user, and then only
	// superadmins may have them).
	MCPStdioUser string `env:"MCP_STDIO_USER"`
	// MCPMaxResponseBytes bounds one response body of a remote MCP server
	// (0: mcpregistry.MaxResponseBytesDefault, 16 MiB).
	MCPMaxResponseBytes int64 `env:"MCP_MAX_RESPONSE_BYTES"`
	// MCPMaxConcurrentCalls bounds the calls running at once against one
	// external MCP server, per process; more are refused with 429 (0:
	// mcpregistry.MaxConcurrentCallsDefault, 8).
	MCPMaxConcurrentCalls int `env:"MCP_MAX_CONCURRENT_CALLS"`
	// MCPMaxConcurrentCallsTotal bounds the calls running at once against
	// all remote (SSE and HTTP) MCP servers, per process; more are refused
	// with 429 (0: mcpregistry.MaxConcurrentCallsTotalDefault, 64).
	MCPMaxConcurrentCallsTotal int `env:"MCP_MAX_CONCURRENT_CALLS_TOTAL"`
	// EgressAllow lists CIDRs, hosts and host:port pairs that outbound
	// connections set by tenants may reach although they are not public
	// (loopback, private, link-local).
	EgressAllow []string `env:"EGRESS_ALLOW" envSeparator:","`
	// WebSearchAPIKey is the global fallback key of the web_search tool,
	// read from the unprefixed WEB_SEARCH_API_KEY the contract names.
	WebSearchAPIKey string
	// WebSearchBaseURL is the Brave Search API's base URL.
	WebSearchBaseURL string `env:"WEB_SEARCH_BASE_URL" envDefault:"https://api.search.brave.com" log:"url"`

	// SMTPURL (smtp://user:pass@host:587, STARTTLS required except to a
	// loopback host; smtps:// for implicit TLS) and EmailFrom turn email
	// on; without both, email is off.
	SMTPURL   string `env:"SMTP_URL" log:"url"`
	EmailFrom string `env:"EMAIL_FROM"`
	// PublicURL is the base URL (scheme://host[:port][/path]) people
	// reach the server by, under which emailed links point; empty means
	// http:// and the HTTP address (PublicBaseURL).
	PublicURL string `env:"PUBLIC_URL" log:"url"`

	// Tracing, from OpenTelemetry's standard (unprefixed) variables:
	// OTLPEndpoint (OTEL_EXPORTER_OTLP_ENDPOINT, the base URL /v1/traces
	// is added to) or OTLPTracesEndpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
	// the full URL) turns it on; OTLPProtocol
	// (OTEL_EXPORTER_OTLP_PROTOCOL) must be http/protobuf when set;
	// TracingOff (OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none)
	// turns it off whatever the endpoint. The SDK reads the other OTEL_*
	// variables itself (TraceEndpoint).
	OTLPEndpoint, OTLPTracesEndpoint, OTLPProtocol string
	TracingOff                                     bool
}

// The OpenTelemetry variables Config reads (unprefixed, standard names).
const (
	OTLPEndpointVar       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	OTLPTracesEndpointVar = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	OTLPProtocolVar       = "OTEL_EXPORTER_OTLP_PROTOCOL"
)

// TraceEndpoint is the URL traces are posted to over OTLP/HTTP, "" when
// tracing is off.
func (c Config) TraceEndpoint() string {
	switch {
	case c.TracingOff:
		return ""
	case c.OTLPTracesEndpoint != "":
		return c.OTLPTracesEndpoint
	case c.OTLPEndpoint != "":
		return strings.TrimSuffix(c.OTLPEndpoint, "/") + "/v1/traces"
	}
	return ""
}

// envPrefix starts the name of every variable of an env-tagged field.
const envPrefix = "GRAPHMILL_"

// WebSearchKeyVar is the contract's name of the global web search key.
const WebSearchKeyVar = "WEB_SEARCH_API_KEY"

// Load parses the environment (a KEY=VALUE list, as os.Environ returns) and
// validates the result.
func Load(environ []string) (Config, error) {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	var c Config
	if err := env.ParseWithOptions(&c, env.Options{Prefix: envPrefix, Environment: m}); err != nil {
		return Config{}, fmt.Errorf("read configuration: %w", err)
	}
	c.WebSearchAPIKey = m[WebSearchKeyVar]
	c.OTLPEndpoint, c.OTLPTracesEndpoint, c.OTLPProtocol = m[OTLPEndpointVar], m[OTLPTracesEndpointVar], m[OTLPProtocolVar]
	c.TracingOff = strings.EqualFold(strings.TrimSpace(m["OTEL_SDK_DISABLED"]), "true") || strings.EqualFold(strings.TrimSpace(m["OTEL_TRACES_EXPORTER"]), "none")
	return c, c.Validate()
}

// Validate reports the first configuration error.
func (c Config) Validate() error {
	switch c.Environment {
	case EnvDevelopment, EnvProduction:
	default:
		return fmt.Errorf("GRAPHMILL_ENVIRONMENT must be %q or %q, not %q", EnvDevelopment, EnvProduction, c.Environment)
	}
	if c.Environment == EnvProduction && c.DatabaseURL == "" {
		return fmt.Errorf("GRAPHMILL_DATABASE_URL is required in production: the embedded database is for development only")
	}
	if c.DatabaseURL != "" {
		if _, err := url.Parse(c.DatabaseURL); err != nil {
			return fmt.Errorf("GRAPHMILL_DATABASE_URL is not a URL")
		}
	}
	if (c.OIDCIssuer == "") != (c.OIDCAudience == "") {
		return fmt.Errorf("GRAPHMILL_OIDC_ISSUER and GRAPHMILL_OIDC_AUDIENCE must be set together")
	}
	if err := c.validateConsole(); err != nil {
		return err
	}
	if c.OIDCTokenMaxLifetime <= 0 {
		// 0 would not mean "no limit" nor "no tokens": refused rather
		// than read as some default.
		return fmt.Errorf("GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME must be positive (a duration such as 720h), not %s", c.OIDCTokenMaxLifetime)
	}
	for name, addr := range map[string]string{"GRAPHMILL_HTTP_ADDR": c.HTTPAddr, "GRAPHMILL_OPS_ADDR": c.OpsAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%s: %q is not host:port", name, addr)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("GRAPHMILL_LOG_LEVEL must be debug, info, warn or error")
	}
	switch c.LogFormat {
	case "", LogJSON, LogText:
	default:
		return fmt.Errorf("GRAPHMILL_LOG_FORMAT must be json or text (unset: text on a terminal, JSON otherwise), not %q", c.LogFormat)
	}
	if c.AuthCacheTTL <= 0 {
		return fmt.Errorf("GRAPHMILL_AUTH_CACHE_TTL must be positive")
	}
	if c.MaxUploadBytes < 1 || c.MaxUploadBytes > 1<<30 {
		return fmt.Errorf("GRAPHMILL_MAX_UPLOAD_BYTES must be between 1 and 1073741824 (PostgreSQL's limit for one value)")
	}
	if c.MaxJSONUploadBytes < 1 {
		return fmt.Errorf("GRAPHMILL_MAX_JSON_UPLOAD_BYTES must be positive")
	}
	if c.MaxConcurrentUploads < 1 {
		return fmt.Errorf("GRAPHMILL_MAX_CONCURRENT_UPLOADS must be positive")
	}
	if c.EmbeddingDimension < 8 || c.EmbeddingDimension > 8192 {
		return fmt.Errorf("GRAPHMILL_EMBEDDING_DIMENSION must be between 8 and 8192")
	}
	if err := c.validateTracing(); err != nil {
		return err
	}
	if c.QueueProjectMax < 0 {
		return fmt.Errorf("GRAPHMILL_QUEUE_PROJECT_MAX must not be negative")
	}
	if c.ParseConcurrency < 1 || c.ParseConcurrency > 64 {
		return fmt.Errorf("GRAPHMILL_PARSE_CONCURRENCY must be between 1 and 64")
	}
	if c.Production() && c.SecretKey == "" {
		return fmt.Errorf("GRAPHMILL_SECRET_KEY is required in production (base64 of 32 random bytes, e.g. from: openssl rand -base64 32)")
	}
	if (c.AccountAICredentialsFile == "") != (c.AccountAIProject == "") || (c.AccountAIProject == "") != (c.AccountAILocation == "") {
		return fmt.Errorf("GRAPHMILL_ACCOUNT_AI_CREDENTIALS_FILE, GRAPHMILL_ACCOUNT_AI_PROJECT and GRAPHMILL_ACCOUNT_AI_LOCATION must be set together")
	}
	switch c.MCPStdio {
	case "superadmin", "enabled", "disabled":
	default:
		return fmt.Errorf("GRAPHMILL_MCP_STDIO must be superadmin, enabled or disabled")
	}
	if c.MCPCallTimeout <= 0 || c.MCPIdleTimeout <= 0 {
		return fmt.Errorf("GRAPHMILL_MCP_CALL_TIMEOUT and GRAPHMILL_MCP_IDLE_TIMEOUT must be positive")
	}
	if c.AgentQuestionTimeout <= 0 {
		return fmt.Errorf("GRAPHMILL_AGENT_QUESTION_TIMEOUT must be positive")
	}
	if c.MCPMaxResponseBytes < 0 || c.MCPMaxConcurrentCalls < 0 || c.MCPMaxConcurrentCallsTotal < 0 {
		return fmt.Errorf("GRAPHMILL_MCP_MAX_RESPONSE_BYTES, GRAPHMILL_MCP_MAX_CONCURRENT_CALLS and GRAPHMILL_MCP_MAX_CONCURRENT_CALLS_TOTAL must not be negative")
	}
	if _, on, err := email.ParseSettings(c.SMTPURL, c.EmailFrom); err != nil {
		return err
	} else if on && c.PublicURL == "" && c.Production() {
		return fmt.Errorf("GRAPHMILL_PUBLIC_URL is required in production with email on: emailed links must not point at the listen address")
	}
	if c.PublicURL != "" {
		if u := httpURL(c.PublicURL); u == nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("GRAPHMILL_PUBLIC_URL must be an http(s) URL without query or fragment (https://graphmill.example.com)")
		}
	}
	if _, err := egress.New(c.EgressAllow); err != nil {
		return fmt.Errorf("GRAPHMILL_EGRESS_ALLOW: %w", err)
	}
	for name, u := range map[string]string{
		"GRAPHMILL_KEY_AI_BASE_URL": c.KeyAIBaseURL, "GRAPHMILL_ACCOUNT_AI_BASE_URL": c.AccountAIBaseURL, "GRAPHMILL_OPENAI_BASE_URL": c.OpenAIBaseURL,
		"GRAPHMILL_MCP_REGISTRY_URL": c.MCPRegistryURL, "GRAPHMILL_WEB_SEARCH_BASE_URL": c.WebSearchBaseURL,
	} {
		if u == "" {
			continue
		}
		if httpURL(u) == nil {
			return fmt.Errorf("%s must be an http(s) URL", name)
		}
	}
	if (c.OpenAIModel != "" || c.OpenAIEmbeddingModel != "") && c.OpenAIBaseURL == "" && c.OpenAIAPIKey == "" {
		return fmt.Errorf("GRAPHMILL_OPENAI_MODEL and GRAPHMILL_OPENAI_EMBEDDING_MODEL need GRAPHMILL_OPENAI_BASE_URL (Ollama: http://localhost:11434/v1) or GRAPHMILL_OPENAI_API_KEY")
	}
	if c.ProviderRPM < 0 || c.ProviderTPM < 0 {
		return fmt.Errorf("GRAPHMILL_PROVIDER_RPM and GRAPHMILL_PROVIDER_TPM must not be negative")
	}
	if c.VectorCacheBytes < 1<<20 {
		return fmt.Errorf("GRAPHMILL_VECTOR_CACHE_BYTES must be at least 1048576")
	}
	if c.ModelSyncInterval < time.Minute {
		return fmt.Errorf("GRAPHMILL_MODEL_SYNC_INTERVAL must be at least 1m")
	}
	if c.DBMaxConns < 2 {
		return fmt.Errorf("GRAPHMILL_DB_MAX_CONNS must be at least 2")
	}
	for _, o := range c.MCPAllowedOrigins {
		if _, err := mcpserver.NormalizeOrigin(o); err != nil {
			return fmt.Errorf("GRAPHMILL_MCP_ALLOWED_ORIGINS: %w", err)
		}
	}
	for _, h := range c.PublicHosts {
		if _, ok := mcpserver.CanonicalHost(h); !ok {
			return fmt.Errorf("GRAPHMILL_PUBLIC_HOSTS: %q is not a host name (a name or IP address, without scheme or port)", h)
		}
	}
	return nil
}

func (c Config) validateConsole() error {
	switch c.ConsoleSecureCookie {
	case "", "auto", "always", "never": // "": a Config built in code, auto
	default:
		return fmt.Errorf("GRAPHMILL_CONSOLE_SECURE_COOKIE must be auto, always or never, not %q", c.ConsoleSecureCookie)
	}
	if c.ConsoleOIDCClientID == "" {
		if c.ConsoleOIDCClientSecret != "" || c.ConsoleOIDCRedirectURL != "" {
			return fmt.Errorf("GRAPHMILL_CONSOLE_OIDC_CLIENT_SECRET and GRAPHMILL_CONSOLE_OIDC_REDIRECT_URL need GRAPHMILL_CONSOLE_OIDC_CLIENT_ID")
		}
		return nil
	}
	if c.OIDCIssuer == "" {
		return fmt.Errorf("GRAPHMILL_CONSOLE_OIDC_CLIENT_ID needs GRAPHMILL_OIDC_ISSUER and GRAPHMILL_OIDC_AUDIENCE (the API must accept the provider's access tokens)")
	}
	if c.ConsoleOIDCRedirectURL != "" {
		if u := httpURL(c.ConsoleOIDCRedirectURL); u == nil || u.Fragment != "" {
			return fmt.Errorf("GRAPHMILL_CONSOLE_OIDC_REDIRECT_URL must be an absolute http(s) URL without a fragment, not %q", c.ConsoleOIDCRedirectURL)
		}
	}
	if !slices.Contains(c.ConsoleOIDCScopes, "openid") {
		return fmt.Errorf("GRAPHMILL_CONSOLE_OIDC_SCOPES must include openid")
	}
	return nil
}

// PublicBaseURL is the base of the links the server emails, without a
// trailing slash: GRAPHMILL_PUBLIC_URL, else http:// and the HTTP address
// (localhost when it names no host or every interface).
func (c Config) PublicBaseURL() string {
	if c.PublicURL != "" {
		return strings.TrimSuffix(c.PublicURL, "/")
	}
	host, port, err := net.SplitHostPort(c.HTTPAddr)
	if err != nil {
		return "http://" + c.HTTPAddr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Production reports whether the process runs in the production environment.
func (c Config) Production() bool { return c.Environment == EnvProduction }

// LocalProviderEnabled reports whether the offline provider may be used:
// as configured, else only on the embedded default.
func (c Config) LocalProviderEnabled() bool {
	if c.LocalProvider != nil {
		return *c.LocalProvider
	}
	return c.DatabaseURL == ""
}

// SlogLevel is the configured log level.
func (c Config) SlogLevel() slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(c.LogLevel))
	return l
}

// LogValue prints the configuration with every secret masked, so that it can
// be logged at start: every field read from a GRAPHMILL_ variable under
// logKey of its name, as its log tag says, then the settings derived or
// read from unprefixed variables.
func (c Config) LogValue() slog.Value {
	v := reflect.ValueOf(c)
	var attrs []slog.Attr
	for _, f := range envFields() {
		if f.log != logDerived {
			attrs = append(attrs, slog.Attr{Key: logKey(f.name), Value: logField(f.log, v.Field(f.index))})
		}
	}
	return slog.GroupValue(append(attrs,
		slog.Bool("localProvider", c.LocalProviderEnabled()),
		slog.Attr{Key: "webSearchApiKey", Value: logField(logSecret, reflect.ValueOf(c.WebSearchAPIKey))},
		slog.String("traceEndpoint", MaskURL(c.TraceEndpoint())),
	)...)
}

// logField is v as a field tagged log:how is shown; a tag that does not
// fit v's kind, or that logField does not know, masks it.
func logField(how string, v reflect.Value) slog.Value {
	switch {
	case how == "":
		return slog.AnyValue(v.Interface())
	case how == logURL && v.Kind() == reflect.String:
		return slog.StringValue(MaskURL(v.String()))
	case how == logCount && v.Kind() == reflect.Slice:
		return slog.IntValue(v.Len())
	case v.IsZero():
		return slog.StringValue("")
	}
	return slog.StringValue(masked)
}

// MaskURL hides the passwords of a connection string, in either form that
// pgx accepts: a URL (postgres://user:password@host/db?password=...) or
// keyword/value settings (host=db user=u password=secret); sslpassword is
// masked too. A string of
// neither form is hidden whole.
func MaskURL(s string) string {
	if s == "" {
		return ""
	}
	if !strings.Contains(s, "://") {
		if strings.Contains(s, "=") {
			return dsnPassword.ReplaceAllString(s, "${1}"+masked)
		}
		return masked
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return masked
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), masked)
	}
	q := u.Query()
	changed := false
	for _, k := range []string{"password", "sslpassword"} {
		if q.Has(k) {
			q.Set(k, masked)
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	// url escapes the asterisks; show them as written.
	return strings.ReplaceAll(u.String(), url.QueryEscape(masked), masked)
}

const masked = "***"

// How LogValue shows a field, by its log tag; a field without one is shown
// as it is.
const (
	logSecret  = "secret"  // masked when set
	logURL     = "url"     // MaskURL: the passwords in it masked
	logCount   = "count"   // the number of values
	logDerived = "derived" // not shown as read: LogValue shows what it derives from it
)

// envField is a field of Config read from a GRAPHMILL_ variable.
type envField struct {
	index     int    // in Config
	name, log string // its env and log tags
}

// envFields are the fields of Config read from GRAPHMILL_ variables.
func envFields() []envField {
	var fs []envField
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		if name, ok := t.Field(i).Tag.Lookup("env"); ok {
			fs = append(fs, envField{index: i, name: name, log: t.Field(i).Tag.Get("log")})
		}
	}
	return fs
}

// logKey is the key a setting is logged under: its variable's name
// (without GRAPHMILL_) in lowerCamel, DATABASE_URL as databaseUrl.
func logKey(name string) string {
	words := strings.Split(strings.ToLower(name), "_")
	for i := 1; i < len(words); i++ {
		if words[i] != "" {
			words[i] = strings.ToUpper(words[i][:1]) + words[i][1:]
		}
	}
	return strings.Join(words, "")
}

// dsnPassword matches the value of a password (or sslpassword, the client
// key's passphrase) setting in a keyword/value connection string: single-quoted with backslash escapes (an unterminated
// quote runs to the end), or up to the next space.
var dsnPassword = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)(?:'(?:[^'\\]|\\.)*(?:'|$)|\S*)`)

// httpURL is s parsed when it is an absolute http:// or https:// URL with
// a host, else nil.
func httpURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil
	}
	return u
}

// validateTracing checks the OpenTelemetry variables Config reads.
func (c Config) validateTracing() error {
	for name, v := range map[string]string{OTLPEndpointVar: c.OTLPEndpoint, OTLPTracesEndpointVar: c.OTLPTracesEndpoint} {
		if v == "" {
			continue
		}
		if httpURL(v) == nil {
			return fmt.Errorf("%s must be an http:// or https:// URL (OTLP over HTTP), not %q", name, MaskURL(v))
		}
	}
	if c.OTLPProtocol != "" && c.OTLPProtocol != "http/protobuf" {
		return fmt.Errorf("%s: only http/protobuf is supported, not %q", OTLPProtocolVar, c.OTLPProtocol)
	}
	return nil
}
