package config_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
)

func TestLoadDefaults(t *testing.T) {
	t.Parallel()

	c, err := config.Load([]string{"HOME=/root", "PATH=/bin", "not-a-pair", "DATABASE_URL=postgres://ignored"})
	require.NoError(t, err)
	require.Equal(t, config.Config{
		DataDir:         "./.graphmill",
		HTTPAddr:        "127.0.0.1:8080",
		OpsAddr:         "127.0.0.1:8081",
		Environment:     config.EnvDevelopment,
		LogLevel:        "info",
		AuthCacheTTL:    60 * time.Second,
		ShutdownTimeout: 30 * time.Second,
		DBMaxConns:      20, OIDCTokenMaxLifetime: 30 * 24 * time.Hour,
		EventHeartbeat: 15 * time.Second, MaxUploadBytes: 100 << 20, MaxJSONUploadBytes: 10 << 20, MaxConcurrentUploads: 8, EmbeddingDimension: 768, ParseConcurrency: 2, ModelSyncInterval: 24 * time.Hour, VectorCacheBytes: 1 << 30,
		MCPRegistryURL: "https://registry.modelcontextprotocol.io", MCPStdio: "superadmin", MCPCallTimeout: time.Minute,
		MCPIdleTimeout: 5 * time.Minute, WebSearchBaseURL: "https://api.search.brave.com",
		AgentQuestionTimeout: 24 * time.Hour,
		ConsoleOIDCScopes:    []string{"openid", "profile", "email", "offline_access"}, ConsoleSecureCookie: "auto",
	}, c, "unprefixed variables must not be read")
	require.False(t, c.Production())
	require.Equal(t, slog.LevelInfo, c.SlogLevel())
	require.True(t, c.LocalProviderEnabled(), "the embedded default may use the local provider")
}

func TestLoad(t *testing.T) {
	t.Parallel()
	no := false

	tests := []struct {
		name string
		env  []string
		// wantErr lists substrings of the error; empty means success.
		wantErr []string
		check   func(t *testing.T, c config.Config)
	}{
		{
			name: "AllSet",
			env: []string{
				"GRAPHMILL_DATABASE_URL=postgres://u:p@db:5432/gm", "GRAPHMILL_DATA_DIR=/var/lib/gm",
				"GRAPHMILL_HTTP_ADDR=:9000", "GRAPHMILL_OPS_ADDR=127.0.0.1:9001", "GRAPHMILL_ENVIRONMENT=production",
				"GRAPHMILL_LOG_LEVEL=debug", "GRAPHMILL_LOG_FORMAT=text", "GRAPHMILL_BOOTSTRAP_TOKEN=gm_x",
				"GRAPHMILL_OIDC_ISSUER=https://id.example.com", "GRAPHMILL_OIDC_AUDIENCE=graphmill", "GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME=24h",
				"GRAPHMILL_AUTH_CACHE_TTL=5s", "GRAPHMILL_SHUTDOWN_TIMEOUT=1m", "GRAPHMILL_DB_MAX_CONNS=50",
				"GRAPHMILL_SECRET_KEY=k1", "GRAPHMILL_SECRET_KEYS_OLD=k2,k3", "GRAPHMILL_KEY_AI_API_KEY=key",
				"GRAPHMILL_KEY_AI_BASE_URL=http://fake/", "GRAPHMILL_LOCAL_PROVIDER=false", "GRAPHMILL_PROVIDER_RPM=60",
				"GRAPHMILL_CONSOLE_OIDC_CLIENT_ID=console", "GRAPHMILL_CONSOLE_OIDC_CLIENT_SECRET=cs", "GRAPHMILL_CONSOLE_OIDC_REDIRECT_URL=https://gm.example.com/signin/oidc/callback",
				"GRAPHMILL_CONSOLE_OIDC_SCOPES=openid,email", "GRAPHMILL_CONSOLE_SECURE_COOKIE=always",
			},
			check: func(t *testing.T, c config.Config) {
				t.Helper()
				require.Equal(t, config.Config{
					DatabaseURL: "postgres://u:p@db:5432/gm", DataDir: "/var/lib/gm",
					HTTPAddr: ":9000", OpsAddr: "127.0.0.1:9001", Environment: config.EnvProduction,
					LogLevel: "debug", LogFormat: "text", BootstrapToken: "gm_x",
					OIDCIssuer: "https://id.example.com", OIDCAudience: "graphmill", OIDCTokenMaxLifetime: 24 * time.Hour,
					AuthCacheTTL: 5 * time.Second, ShutdownTimeout: time.Minute, DBMaxConns: 50,
					EventHeartbeat: 15 * time.Second, MaxUploadBytes: 100 << 20, MaxJSONUploadBytes: 10 << 20, MaxConcurrentUploads: 8,
					EmbeddingDimension: 768, ParseConcurrency: 2,
					SecretKey: "k1", SecretKeysOld: []string{"k2", "k3"}, KeyAIAPIKey: "key", KeyAIBaseURL: "http://fake/",
					LocalProvider: &no, ProviderRPM: 60, ModelSyncInterval: 24 * time.Hour, VectorCacheBytes: 1 << 30,
					MCPRegistryURL: "https://registry.modelcontextprotocol.io", MCPStdio: "superadmin", MCPCallTimeout: time.Minute,
					MCPIdleTimeout: 5 * time.Minute, WebSearchBaseURL: "https://api.search.brave.com",
					AgentQuestionTimeout: 24 * time.Hour,
					ConsoleOIDCClientID:  "console", ConsoleOIDCClientSecret: "cs", ConsoleOIDCRedirectURL: "https://gm.example.com/signin/oidc/callback",
					ConsoleOIDCScopes: []string{"openid", "email"}, ConsoleSecureCookie: "always",
				}, c)
				require.False(t, c.LocalProviderEnabled())
				require.True(t, c.Production())
				require.Equal(t, slog.LevelDebug, c.SlogLevel())
			},
		},
		{
			name: "MCP",
			env: []string{
				"GRAPHMILL_MCP_REGISTRY_URL=http://registry.local/", "GRAPHMILL_MCP_STDIO=enabled", "GRAPHMILL_MCP_CALL_TIMEOUT=5s",
				"GRAPHMILL_EGRESS_ALLOW=127.0.0.0/8,intranet.local:8443", "WEB_SEARCH_API_KEY=ws-key", "GRAPHMILL_WEB_SEARCH_BASE_URL=http://brave.local",
				"GRAPHMILL_MCP_MAX_CONCURRENT_CALLS_TOTAL=32", "GRAPHMILL_AGENT_QUESTION_TIMEOUT=90m",
			},
			check: func(t *testing.T, c config.Config) {
				t.Helper()
				require.Equal(t, "http://registry.local/", c.MCPRegistryURL)
				require.Equal(t, "enabled", c.MCPStdio)
				require.Equal(t, 5*time.Second, c.MCPCallTimeout)
				require.Equal(t, []string{"127.0.0.0/8", "intranet.local:8443"}, c.EgressAllow)
				require.Equal(t, "ws-key", c.WebSearchAPIKey, "read unprefixed, as the contract names it")
				require.Equal(t, "http://brave.local", c.WebSearchBaseURL)
				require.Equal(t, 32, c.MCPMaxConcurrentCallsTotal)
				require.Equal(t, 90*time.Minute, c.AgentQuestionTimeout)
			},
		},
		{
			name: "OpenAI",
			env: []string{
				"GRAPHMILL_OPENAI_BASE_URL=http://localhost:11434/v1", "GRAPHMILL_OPENAI_API_KEY=sk-x",
				"GRAPHMILL_OPENAI_MODEL=llama3.1:8b", "GRAPHMILL_OPENAI_EMBEDDING_MODEL=nomic-embed-text",
			},
			check: func(t *testing.T, c config.Config) {
				t.Helper()
				require.Equal(t, "http://localhost:11434/v1", c.OpenAIBaseURL, "the operator's URL may be loopback")
				require.Equal(t, "sk-x", c.OpenAIAPIKey)
				require.Equal(t, "llama3.1:8b", c.OpenAIModel)
				require.Equal(t, "nomic-embed-text", c.OpenAIEmbeddingModel)
			},
		},
		{
			name:    "OpenAIModelWithoutEndpoint",
			env:     []string{"GRAPHMILL_OPENAI_MODEL=llama3.1:8b"},
			wantErr: []string{"GRAPHMILL_OPENAI_MODEL", "need GRAPHMILL_OPENAI_BASE_URL"},
		},
		{
			name:    "BadOpenAIBaseURL",
			env:     []string{"GRAPHMILL_OPENAI_BASE_URL=localhost:11434"},
			wantErr: []string{"GRAPHMILL_OPENAI_BASE_URL", "http(s)"},
		},
		{
			name: "TracingEndpoint",
			env:  []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318/", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"},
			check: func(t *testing.T, c config.Config) {
				t.Helper()
				require.Equal(t, "http://collector:4318/v1/traces", c.TraceEndpoint(), "the base URL gets the signal's path")
			},
		},
		{
			name: "TracingTracesEndpointWins",
			env:  []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=https://traces.example.com/otlp/traces"},
			check: func(t *testing.T, c config.Config) {
				t.Helper()
				require.Equal(t, "https://traces.example.com/otlp/traces", c.TraceEndpoint(), "used as it is")
			},
		},
		{
			name: "TracingUnset",
			check: func(t *testing.T, c config.Config) {
				t.Helper()
				require.Empty(t, c.TraceEndpoint())
			},
		},
		{
			name: "TracingDisabled",
			env:  []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", "OTEL_SDK_DISABLED=true"},
			check: func(t *testing.T, c config.Config) {
				t.Helper()
				require.Empty(t, c.TraceEndpoint())
			},
		},
		{
			name: "TracingExporterNone",
			env:  []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", "OTEL_TRACES_EXPORTER=none"},
			check: func(t *testing.T, c config.Config) {
				t.Helper()
				require.Empty(t, c.TraceEndpoint())
			},
		},
		{
			name:    "TracingGRPC",
			env:     []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
		},
		{
			name:    "TracingBadEndpoint",
			env:     []string{"OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http:// or https://"},
		},
		{
			name:    "BadMCPStdio",
			env:     []string{"GRAPHMILL_MCP_STDIO=always"},
			wantErr: []string{"GRAPHMILL_MCP_STDIO", "superadmin, enabled or disabled"},
		},
		{
			name:    "BadEgressAllow",
			env:     []string{"GRAPHMILL_EGRESS_ALLOW=10.0.0.0/8,not a/host"},
			wantErr: []string{"GRAPHMILL_EGRESS_ALLOW"},
		},
		{
			name:    "BadRegistryURL",
			env:     []string{"GRAPHMILL_MCP_REGISTRY_URL=ftp://registry"},
			wantErr: []string{"GRAPHMILL_MCP_REGISTRY_URL", "http(s)"},
		},
		{
			name:    "BadEnvironment",
			env:     []string{"GRAPHMILL_ENVIRONMENT=staging"},
			wantErr: []string{"GRAPHMILL_ENVIRONMENT", `"staging"`, "development", "production"},
		},
		{
			name:    "ProductionWithoutDatabase",
			env:     []string{"GRAPHMILL_ENVIRONMENT=production"},
			wantErr: []string{"GRAPHMILL_DATABASE_URL is required in production"},
		},
		{
			name: "DevelopmentWithoutDatabase",
			env:  []string{"GRAPHMILL_ENVIRONMENT=development"},
			check: func(t *testing.T, c config.Config) {
				t.Helper()
				require.Empty(t, c.DatabaseURL)
			},
		},
		{
			name:    "BadDatabaseURL",
			env:     []string{"GRAPHMILL_DATABASE_URL=postgres://u:s3cret@db:5432/gm%zz"},
			wantErr: []string{"GRAPHMILL_DATABASE_URL is not a URL"},
		},
		{
			name:    "IssuerWithoutAudience",
			env:     []string{"GRAPHMILL_OIDC_ISSUER=https://id.example.com"},
			wantErr: []string{"GRAPHMILL_OIDC_ISSUER", "GRAPHMILL_OIDC_AUDIENCE"},
		},
		{
			name:    "AudienceWithoutIssuer",
			env:     []string{"GRAPHMILL_OIDC_AUDIENCE=graphmill"},
			wantErr: []string{"GRAPHMILL_OIDC_ISSUER", "GRAPHMILL_OIDC_AUDIENCE"},
		},
		{
			name:    "HTTPAddrWithoutPort",
			env:     []string{"GRAPHMILL_HTTP_ADDR=localhost"},
			wantErr: []string{"GRAPHMILL_HTTP_ADDR", `"localhost"`, "host:port"},
		},
		{
			name:    "OpsAddrWithoutHost",
			env:     []string{"GRAPHMILL_OPS_ADDR=8081"},
			wantErr: []string{"GRAPHMILL_OPS_ADDR", `"8081"`},
		},
		{
			name:    "BadLogLevel",
			env:     []string{"GRAPHMILL_LOG_LEVEL=verbose"},
			wantErr: []string{"GRAPHMILL_LOG_LEVEL"},
		},
		{
			name:    "UppercaseLogLevel",
			env:     []string{"GRAPHMILL_LOG_LEVEL=INFO"},
			wantErr: []string{"GRAPHMILL_LOG_LEVEL"},
		},
		{
			name:    "BadLogFormat",
			env:     []string{"GRAPHMILL_LOG_FORMAT=xml"},
			wantErr: []string{"GRAPHMILL_LOG_FORMAT"},
		},
		{
			name:    "UnparsableTTL",
			env:     []string{"GRAPHMILL_AUTH_CACHE_TTL=soon"},
			wantErr: []string{"read configuration", "AuthCacheTTL"},
		},
		{
			name:    "ZeroTTL",
			env:     []string{"GRAPHMILL_AUTH_CACHE_TTL=0s"},
			wantErr: []string{"GRAPHMILL_AUTH_CACHE_TTL must be positive"},
		},
		{
			name:    "ZeroOIDCTokenLifetime",
			env:     []string{"GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME=0"},
			wantErr: []string{"GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME must be positive"},
		},
		{
			name:    "NegativeOIDCTokenLifetime",
			env:     []string{"GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME=-1h"},
			wantErr: []string{"GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME must be positive"},
		},
		{
			name:    "TooFewConnections",
			env:     []string{"GRAPHMILL_DB_MAX_CONNS=1"},
			wantErr: []string{"GRAPHMILL_DB_MAX_CONNS"},
		},
		{
			name: "Email",
			env:  []string{"GRAPHMILL_SMTP_URL=smtp://u:s3cret@mail.example.com:587", "GRAPHMILL_EMAIL_FROM=Graphmill <noreply@example.com>"},
			check: func(t *testing.T, c config.Config) {
				require.Equal(t, "smtp://u:s3cret@mail.example.com:587", c.SMTPURL)
				require.Equal(t, "Graphmill <noreply@example.com>", c.EmailFrom)
			},
		},
		{
			name:    "EmailURLWithoutFrom",
			env:     []string{"GRAPHMILL_SMTP_URL=smtp://u:s3cret@mail.example.com:587"},
			wantErr: []string{"GRAPHMILL_SMTP_URL and GRAPHMILL_EMAIL_FROM must be set together"},
		},
		{
			name:    "EmailBadScheme",
			env:     []string{"GRAPHMILL_SMTP_URL=http://u:s3cret@mail.example.com", "GRAPHMILL_EMAIL_FROM=noreply@example.com"},
			wantErr: []string{"GRAPHMILL_SMTP_URL must be smtp://"},
		},
		{
			name:    "EmailBadFrom",
			env:     []string{"GRAPHMILL_SMTP_URL=smtp://mail.example.com", "GRAPHMILL_EMAIL_FROM=nobody"},
			wantErr: []string{"GRAPHMILL_EMAIL_FROM"},
		},
		{
			name:    "UnparsableConnections",
			env:     []string{"GRAPHMILL_DB_MAX_CONNS=many"},
			wantErr: []string{"read configuration", "DBMaxConns"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := config.Load(tt.env)
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				for _, want := range tt.wantErr {
					require.Contains(t, err.Error(), want)
				}
				require.NotContains(t, err.Error(), "s3cret", "errors must not echo secrets")
				return
			}
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

// TestValidate runs Validate on configurations built in code (the way the
// CLI and tests build them), not only through Load.
func TestValidate(t *testing.T) {
	t.Parallel()

	valid := config.Config{
		DataDir: "d", HTTPAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", Environment: config.EnvDevelopment,
		LogLevel: "info", LogFormat: "json", AuthCacheTTL: time.Second, OIDCTokenMaxLifetime: time.Hour, DBMaxConns: 2,
		MaxUploadBytes: 1, MaxJSONUploadBytes: 1, MaxConcurrentUploads: 1, EmbeddingDimension: 8, ParseConcurrency: 1, ModelSyncInterval: time.Hour, VectorCacheBytes: 1 << 20,
		MCPStdio: "superadmin", MCPCallTimeout: time.Second, MCPIdleTimeout: time.Second,
		AgentQuestionTimeout: time.Hour,
	}
	tests := []struct {
		name    string
		change  func(c *config.Config)
		wantErr string
	}{
		{name: "Valid", change: func(*config.Config) {}},
		{name: "AgentQuestionTimeout", change: func(c *config.Config) { c.AgentQuestionTimeout = 0 }, wantErr: "GRAPHMILL_AGENT_QUESTION_TIMEOUT must be positive"},
		{name: "EmptyEnvironment", change: func(c *config.Config) { c.Environment = "" }, wantErr: "GRAPHMILL_ENVIRONMENT"},
		{name: "Production", change: func(c *config.Config) { c.Environment = config.EnvProduction }, wantErr: "GRAPHMILL_DATABASE_URL"},
		{name: "ProductionWithDatabase", change: func(c *config.Config) {
			c.Environment = config.EnvProduction
			c.DatabaseURL = "postgres://db/gm"
			c.SecretKey = "k"
		}},
		{name: "ProductionWithoutSecretKey", change: func(c *config.Config) {
			c.Environment = config.EnvProduction
			c.DatabaseURL = "postgres://db/gm"
		}, wantErr: "GRAPHMILL_SECRET_KEY"},
		{name: "AccountAIPartial", change: func(c *config.Config) { c.AccountAIProject = "p" }, wantErr: "GRAPHMILL_ACCOUNT_AI_CREDENTIALS_FILE"},
		{name: "AccountAIComplete", change: func(c *config.Config) {
			c.AccountAICredentialsFile, c.AccountAIProject, c.AccountAILocation = "/sa.json", "p", "us-central1"
		}},
		{name: "BadBaseURL", change: func(c *config.Config) { c.KeyAIBaseURL = "ftp://x" }, wantErr: "GRAPHMILL_KEY_AI_BASE_URL"},
		{name: "NegativeRPM", change: func(c *config.Config) { c.ProviderRPM = -1 }, wantErr: "GRAPHMILL_PROVIDER_RPM"},
		{name: "TinyVectorCache", change: func(c *config.Config) { c.VectorCacheBytes = 10 }, wantErr: "GRAPHMILL_VECTOR_CACHE_BYTES"},
		{name: "ShortModelSync", change: func(c *config.Config) { c.ModelSyncInterval = time.Second }, wantErr: "GRAPHMILL_MODEL_SYNC_INTERVAL"},
		{name: "OIDCPair", change: func(c *config.Config) { c.OIDCIssuer, c.OIDCAudience = "https://id", "gm" }},
		{name: "ConsoleOIDC", change: func(c *config.Config) {
			c.OIDCIssuer, c.OIDCAudience, c.ConsoleOIDCClientID, c.ConsoleOIDCScopes = "https://id", "gm", "console", []string{"openid"}
			c.ConsoleOIDCRedirectURL = "https://gm.example.com/signin/oidc/callback"
		}},
		{name: "ConsoleOIDCWithoutIssuer", change: func(c *config.Config) {
			c.ConsoleOIDCClientID, c.ConsoleOIDCScopes = "console", []string{"openid"}
		}, wantErr: "GRAPHMILL_CONSOLE_OIDC_CLIENT_ID needs GRAPHMILL_OIDC_ISSUER"},
		{name: "ConsoleOIDCSecretWithoutClient", change: func(c *config.Config) { c.ConsoleOIDCClientSecret = "s" }, wantErr: "need GRAPHMILL_CONSOLE_OIDC_CLIENT_ID"},
		{name: "ConsoleOIDCWithoutOpenID", change: func(c *config.Config) {
			c.OIDCIssuer, c.OIDCAudience, c.ConsoleOIDCClientID, c.ConsoleOIDCScopes = "https://id", "gm", "console", []string{"email"}
		}, wantErr: "GRAPHMILL_CONSOLE_OIDC_SCOPES must include openid"},
		{name: "ConsoleOIDCRelativeRedirect", change: func(c *config.Config) {
			c.OIDCIssuer, c.OIDCAudience, c.ConsoleOIDCClientID, c.ConsoleOIDCScopes = "https://id", "gm", "console", []string{"openid"}
			c.ConsoleOIDCRedirectURL = "/signin/oidc/callback"
		}, wantErr: "GRAPHMILL_CONSOLE_OIDC_REDIRECT_URL must be an absolute http(s) URL"},
		{name: "ConsoleSecureCookie", change: func(c *config.Config) { c.ConsoleSecureCookie = "never" }},
		{name: "ConsoleSecureCookieBad", change: func(c *config.Config) { c.ConsoleSecureCookie = "yes" }, wantErr: "GRAPHMILL_CONSOLE_SECURE_COOKIE must be auto, always or never"},
		{name: "OIDCIssuerOnly", change: func(c *config.Config) { c.OIDCIssuer = "https://id" }, wantErr: "GRAPHMILL_OIDC_AUDIENCE"},
		{name: "NegativeOIDCTokenLifetime", change: func(c *config.Config) { c.OIDCTokenMaxLifetime = -time.Hour }, wantErr: "GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME"},
		{name: "ZeroOIDCTokenLifetime", change: func(c *config.Config) { c.OIDCTokenMaxLifetime = 0 }, wantErr: "GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME"},
		{name: "EmptyHTTPAddr", change: func(c *config.Config) { c.HTTPAddr = "" }, wantErr: "GRAPHMILL_HTTP_ADDR"},
		{name: "NegativeTTL", change: func(c *config.Config) { c.AuthCacheTTL = -time.Second }, wantErr: "GRAPHMILL_AUTH_CACHE_TTL"},
		{name: "ZeroConnections", change: func(c *config.Config) { c.DBMaxConns = 0 }, wantErr: "GRAPHMILL_DB_MAX_CONNS"},
		{name: "ZeroUpload", change: func(c *config.Config) { c.MaxUploadBytes = 0 }, wantErr: "GRAPHMILL_MAX_UPLOAD_BYTES"},
		{name: "UploadOverPostgresLimit", change: func(c *config.Config) { c.MaxUploadBytes = 1<<30 + 1 }, wantErr: "GRAPHMILL_MAX_UPLOAD_BYTES"},
		{name: "ZeroJSONUpload", change: func(c *config.Config) { c.MaxJSONUploadBytes = 0 }, wantErr: "GRAPHMILL_MAX_JSON_UPLOAD_BYTES"},
		{name: "ZeroConcurrentUploads", change: func(c *config.Config) { c.MaxConcurrentUploads = 0 }, wantErr: "GRAPHMILL_MAX_CONCURRENT_UPLOADS"},
		{name: "TinyDimension", change: func(c *config.Config) { c.EmbeddingDimension = 4 }, wantErr: "GRAPHMILL_EMBEDDING_DIMENSION"},
		{name: "NegativeProjectMax", change: func(c *config.Config) { c.QueueProjectMax = -1 }, wantErr: "GRAPHMILL_QUEUE_PROJECT_MAX"},
		{name: "ZeroParse", change: func(c *config.Config) { c.ParseConcurrency = 0 }, wantErr: "GRAPHMILL_PARSE_CONCURRENCY"},
		{name: "NegativeMCPCalls", change: func(c *config.Config) { c.MCPMaxConcurrentCalls = -1 }, wantErr: "GRAPHMILL_MCP_MAX_CONCURRENT_CALLS"},
		{name: "NegativeMCPCallsTotal", change: func(c *config.Config) { c.MCPMaxConcurrentCallsTotal = -1 }, wantErr: "GRAPHMILL_MCP_MAX_CONCURRENT_CALLS_TOTAL"},
		{name: "PublicURL", change: func(c *config.Config) { c.PublicURL = "https://graphmill.example.com/gm/" }},
		{name: "PublicURLNotHTTP", change: func(c *config.Config) { c.PublicURL = "graphmill.example.com" }, wantErr: "GRAPHMILL_PUBLIC_URL"},
		{name: "PublicURLQuery", change: func(c *config.Config) { c.PublicURL = "https://graphmill.example.com/?a=b" }, wantErr: "GRAPHMILL_PUBLIC_URL"},
		{name: "ProductionEmailWithoutPublicURL", change: func(c *config.Config) {
			c.Environment, c.DatabaseURL, c.SecretKey = config.EnvProduction, "postgres://db/gm", "k"
			c.SMTPURL, c.EmailFrom = "smtp://mail.example.com", "noreply@example.com"
		}, wantErr: "GRAPHMILL_PUBLIC_URL"},
		{name: "ProductionEmailWithPublicURL", change: func(c *config.Config) {
			c.Environment, c.DatabaseURL, c.SecretKey = config.EnvProduction, "postgres://db/gm", "k"
			c.SMTPURL, c.EmailFrom, c.PublicURL = "smtp://mail.example.com", "noreply@example.com", "https://gm.example.com"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := valid
			tt.change(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestPublicBaseURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ publicURL, httpAddr, want string }{
		{"https://gm.example.com/base/", "127.0.0.1:8080", "https://gm.example.com/base"},
		{"", "127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"", ":9000", "http://localhost:9000"},
		{"", "0.0.0.0:9000", "http://localhost:9000"},
		{"", "[::]:9000", "http://localhost:9000"},
		{"", "[::1]:9000", "http://[::1]:9000"},
	} {
		c := config.Config{PublicURL: tt.publicURL, HTTPAddr: tt.httpAddr}
		require.Equal(t, tt.want, c.PublicBaseURL(), "%+v", tt)
	}
}

func TestMaskURL(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "Empty", in: "", want: ""},
		{name: "UserPassword", in: "postgres://gm:s3cret@db:5432/gm?sslmode=disable", want: "postgres://gm:***@db:5432/gm?sslmode=disable"},
		{name: "NoPassword", in: "postgres://gm@db/gm", want: "postgres://gm@db/gm"},
		{name: "NoUser", in: "postgres://db/gm", want: "postgres://db/gm"},
		{name: "QueryPassword", in: "postgres://gm@db/gm?password=s3cret", want: "postgres://gm@db/gm?password=***"},
		{name: "BothPasswords", in: "postgresql://gm:s3cret@db/gm?password=s3cret", want: "postgresql://gm:***@db/gm?password=***"},
		{name: "EscapedPassword", in: "postgres://gm:s3cret%40x@db/gm", want: "postgres://gm:***@db/gm"},
		{name: "MultipleHosts", in: "postgres://gm:s3cret@db1:5432,db2:5432/gm", want: "postgres://gm:***@db1:5432,db2:5432/gm"},
		{name: "Unparsable", in: "postgres://gm:s3cret@db/gm%zz", want: "***"},
		{name: "KeywordValue", in: "host=db user=gm password=s3cret dbname=gm", want: "host=db user=gm password=*** dbname=gm"},
		{name: "KeywordValueSpaced", in: "host=db PASSWORD = s3cret dbname=gm", want: "host=db PASSWORD = *** dbname=gm"},
		{name: "KeywordValueQuoted", in: `host=db password='s3cret with \' spaces' dbname=gm`, want: "host=db password=*** dbname=gm"},
		{name: "KeywordValueUnterminated", in: "host=db password='s3cret more s3cret", want: "host=db password=***"},
		{name: "KeywordValueLast", in: "host=db password=s3cret", want: "host=db password=***"},
		{name: "SSLPasswordQuery", in: "postgres://gm@db/gm?sslpassword=s3cret&sslkey=/k", want: "postgres://gm@db/gm?sslkey=%2Fk&sslpassword=***"},
		{name: "KeywordValueSSLPassword", in: "host=db sslpassword=s3cret password=s3cret", want: "host=db sslpassword=*** password=***"},
		{name: "KeywordValueNoPassword", in: "host=db user=gm", want: "host=db user=gm"},
		{name: "NotAConnectionString", in: "gm:s3cret@db", want: "***"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := config.MaskURL(tt.in)
			require.Equal(t, tt.want, got)
			require.NotContains(t, got, "s3cret")
		})
	}
}

// TestLogValue logs a configuration full of secrets through both handlers
// the server can use and checks that none of them reaches the output.
func TestLogValue(t *testing.T) {
	t.Parallel()

	const token = "gm_bootstrapsecretbootstrapsecretbootstrap"
	for _, dbURL := range []string{
		"postgres://gm:s3cret@db:5432/gm?password=s3cret",
		"host=db user=gm password=s3cret",
	} {
		c := config.Config{
			DatabaseURL: dbURL, DataDir: "/data", HTTPAddr: ":8080", OpsAddr: "127.0.0.1:8081",
			Environment: config.EnvProduction, LogLevel: "info", LogFormat: "json", BootstrapToken: token,
			OIDCIssuer: "https://id.example.com", OIDCAudience: "graphmill", AuthCacheTTL: time.Minute,
			ShutdownTimeout: time.Second, DBMaxConns: 20, SecretKey: "c2VjcmV0LWtleS1ieXRlcw==", KeyAIAPIKey: "AIzaS3cretKey",
			KeyAIBaseURL: "https://u:s3cret@proxy.example.com/", WebSearchAPIKey: "BSA-s3cret-key",
			OpenAIAPIKey: "sk-s3cret-openai", OpenAIBaseURL: "https://u:s3cret@openai.example.com/v1",
			MCPRegistryURL: "https://u:s3cret@registry.example.com", WebSearchBaseURL: "https://api.search.brave.com",
			SMTPURL: "smtp://u:s3cret@mail.example.com:587", EmailFrom: "noreply@example.com",
			OTLPEndpoint: "https://u:s3cret@collector.example.com", ConsoleOIDCClientID: "console", ConsoleOIDCClientSecret: "console-s3cret",
		}
		for name, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
			"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
			"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		} {
			var buf bytes.Buffer
			slog.New(newHandler(&buf)).Info("config", "config", c)
			out := buf.String()
			require.NotContains(t, out, "s3cret", name)
			require.NotContains(t, out, "bootstrapsecret", name)
			require.NotContains(t, out, token[:12], name)
			require.NotContains(t, out, "c2VjcmV0", name)
			require.NotContains(t, out, "AIzaS3cret", name)
			for _, want := range []string{"***", "db", "/data", "https://id.example.com", "graphmill", "production", "127.0.0.1:8081"} {
				require.Contains(t, out, want, name)
			}
			require.Equal(t, 1, strings.Count(out, "\n"), name)
		}
	}
}

func TestLoadMCP(t *testing.T) {
	t.Parallel()

	c, err := config.Load([]string{
		"GRAPHMILL_MCP_ALLOWED_ORIGINS=https://app.example.com,http://localhost:3000",
		"GRAPHMILL_MCP_STATELESS=true",
		"GRAPHMILL_PUBLIC_HOSTS=graphmill.example.com,10.0.0.7,[2001:db8::1],internal_host.corp.",
	})
	require.NoError(t, err)
	require.Equal(t, []string{"https://app.example.com", "http://localhost:3000"}, c.MCPAllowedOrigins)
	require.True(t, c.MCPStateless)
	require.Equal(t, []string{"graphmill.example.com", "10.0.0.7", "[2001:db8::1]", "internal_host.corp."}, c.PublicHosts)
	// The MCP server's own check (mcpserver.CanonicalHost): spaces around
	// a name are dropped; an IPv4 address in brackets, which it refuses, is
	// refused here rather than when the server starts.
	_, err = config.Load([]string{"GRAPHMILL_PUBLIC_HOSTS=graphmill.example.com, other.example.com"})
	require.NoError(t, err)
	for _, bad := range []string{"graphmill.example.com:443", "https://graphmill.example.com", "a/b", "-x.example.com", "*.example.com", "[10.0.0.7]", "[::1"} {
		_, err := config.Load([]string{"GRAPHMILL_PUBLIC_HOSTS=" + bad})
		require.ErrorContains(t, err, "GRAPHMILL_PUBLIC_HOSTS", bad)
	}

	// Spaces around an entry (after the commas) are allowed: the MCP server
	// trims them, as it always did.
	c, err = config.Load([]string{"GRAPHMILL_MCP_ALLOWED_ORIGINS=https://app.example.com, http://localhost:3000/"})
	require.NoError(t, err)
	require.Equal(t, []string{"https://app.example.com", " http://localhost:3000/"}, c.MCPAllowedOrigins)
	for _, bad := range []string{"app.example.com", "https://app.example.com/path", "ftp://x", "https://u@x", "https://x?q=1", "https://x#f"} {
		_, err := config.Load([]string{"GRAPHMILL_MCP_ALLOWED_ORIGINS=" + bad})
		require.ErrorContains(t, err, "GRAPHMILL_MCP_ALLOWED_ORIGINS", bad)
	}
}
