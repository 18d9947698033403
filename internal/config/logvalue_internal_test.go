package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLogTags: every setting whose variable names a key, token, secret,
// password or URL says with a log tag how it is masked, but the few listed
// with the reason they are not secret; tags are known and fit their field.
func TestLogTags(t *testing.T) {
	t.Parallel()

	// unprefixed are the fields Load reads from unprefixed variables (or
	// derives), which have no env tag and so are not logged by reflection:
	// LogValue shows each as its reason says.
	unprefixed := map[string]string{
		"WebSearchAPIKey":    "webSearchApiKey, masked",
		"OTLPEndpoint":       "in traceEndpoint, masked",
		"OTLPTracesEndpoint": "in traceEndpoint, masked",
		"OTLPProtocol":       "not logged: only http/protobuf is accepted",
		"TracingOff":         "not logged: traceEndpoint is empty",
	}
	notSecret := map[string]string{
		"OIDC_TOKEN_MAX_LIFETIME": "a duration, the lifetime of the tokens created with an OIDC session",
	}
	seen := map[string]bool{}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		name, ok := f.Tag.Lookup("env")
		if !ok {
			require.Contains(t, unprefixed, f.Name, "a field without env tag must be listed in unprefixed, with how LogValue shows it")
			seen[f.Name] = true
			continue
		}
		how := f.Tag.Get("log")
		looksSecret := false
		for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "URL"} {
			looksSecret = looksSecret || strings.Contains(name, w)
		}
		switch how {
		case "":
			if looksSecret {
				require.Contains(t, notSecret, name, "%s needs a log tag (secret, url or count) or a reason in notSecret", name)
				seen[name] = true
			}
		case logSecret:
		case logURL:
			require.Equal(t, reflect.String, f.Type.Kind(), name)
		case logCount:
			require.Equal(t, reflect.Slice, f.Type.Kind(), name)
		case logDerived:
			require.Equal(t, "LOCAL_PROVIDER", name, "LogValue shows only localProvider derived")
		default:
			require.Failf(t, "unknown log tag", "%s: log:%q", name, how)
		}
	}
	for _, m := range []map[string]string{unprefixed, notSecret} {
		for k := range m {
			require.True(t, seen[k], "%s is listed but not (or no longer) such a field", k)
		}
	}
}

// TestLogKey: a setting is logged under its variable's name in lowerCamel.
func TestLogKey(t *testing.T) {
	t.Parallel()

	for name, want := range map[string]string{
		"DATABASE_URL":                   "databaseUrl",
		"KEY_AI_API_KEY":                 "keyAiApiKey",
		"MAX_JSON_UPLOAD_BYTES":          "maxJsonUploadBytes",
		"OPENAI_BASE_URL":                "openaiBaseUrl",
		"AUTH_CACHE_TTL":                 "authCacheTtl",
		"MCP_MAX_CONCURRENT_CALLS_TOTAL": "mcpMaxConcurrentCallsTotal",
		"ENVIRONMENT":                    "environment",
	} {
		require.Equal(t, want, logKey(name))
	}
}

// TestLogValueEveryField sets every field of a Config to a value of its own
// (every secret containing s3cret) and checks that each setting is logged
// under its key, in clear or masked as its tag says, that the keys logged
// before LogValue was derived from the struct are all still there, and that
// no secret reaches the output of either handler the server uses.
func TestLogValueEveryField(t *testing.T) {
	t.Parallel()

	var c Config
	v := reflect.ValueOf(&c).Elem()
	want := map[string]any{}
	for i, f := range reflect.VisibleFields(v.Type()) {
		name, tagged := f.Tag.Lookup("env")
		how := f.Tag.Get("log")
		if !tagged {
			how = logSecret // the unprefixed fields hold URLs and keys
		}
		fv := v.FieldByIndex(f.Index)
		switch {
		case f.Type == reflect.TypeFor[time.Duration]():
			d := time.Duration(i+1) * time.Second
			fv.Set(reflect.ValueOf(d))
			want[logKey(name)] = d
		case f.Type.Kind() == reflect.String && how == logURL, f.Type.Kind() == reflect.String && !tagged:
			fv.SetString("https://user:s3cret-" + f.Name + "@" + strings.ToLower(f.Name) + ".example.com/")
			want[logKey(name)] = "https://user:***@" + strings.ToLower(f.Name) + ".example.com/"
		case f.Type.Kind() == reflect.String && how == logSecret:
			fv.SetString("s3cret-" + f.Name)
			want[logKey(name)] = "***"
		case f.Type.Kind() == reflect.String:
			fv.SetString("v-" + f.Name)
			want[logKey(name)] = "v-" + f.Name
		case f.Type.Kind() == reflect.Slice && how == logCount:
			fv.Set(reflect.ValueOf([]string{"s3cret-" + f.Name + "-1", "s3cret-" + f.Name + "-2"}))
			want[logKey(name)] = int64(2)
		case f.Type.Kind() == reflect.Slice:
			fv.Set(reflect.ValueOf([]string{"v-" + f.Name}))
			want[logKey(name)] = []string{"v-" + f.Name}
		case f.Type.Kind() == reflect.Bool:
			fv.SetBool(true)
			want[logKey(name)] = true
		case f.Type == reflect.TypeFor[*bool]():
			on := true
			fv.Set(reflect.ValueOf(&on))
			want[logKey(name)] = true
		case fv.CanInt():
			fv.SetInt(int64(1000 + i))
			want[logKey(name)] = int64(1000 + i)
		default:
			require.Failf(t, "no distinctive value", "field %s of type %s", f.Name, f.Type)
		}
		if !tagged {
			delete(want, logKey(name))
		}
	}
	c.TracingOff = false
	want["webSearchApiKey"] = "***"
	want["traceEndpoint"] = "https://user:***@otlptracesendpoint.example.com/"

	got := map[string]any{}
	for _, a := range c.LogValue().Group() {
		require.NotContains(t, got, a.Key, "logged twice")
		got[a.Key] = a.Value.Resolve().Any()
	}
	require.Equal(t, want, got)
	for _, old := range []string{
		"databaseUrl", "dataDir", "httpAddr", "opsAddr", "environment", "logLevel", "logFormat", "bootstrapToken",
		"oidcIssuer", "oidcAudience", "oidcTokenMaxLifetime", "consoleOidcClientId", "consoleOidcClientSecret",
		"consoleOidcRedirectUrl", "consoleOidcScopes", "consoleSecureCookie", "authCacheTtl", "shutdownTimeout",
		"dbMaxConns", "secretKey", "secretKeysOld", "keyAiApiKey", "keyAiBaseUrl", "accountAiCredentialsFile",
		"accountAiProject", "accountAiLocation", "accountAiBaseUrl", "openaiBaseUrl", "openaiApiKey", "openaiModel",
		"openaiEmbeddingModel", "localProvider", "vectorCacheBytes", "maxUploadBytes", "maxJsonUploadBytes",
		"maxConcurrentUploads", "uploadSpoolDir", "mcpAllowedOrigins", "publicHosts", "mcpStateless", "mcpRegistryUrl",
		"mcpStdio", "mcpCallTimeout", "mcpIdleTimeout", "agentQuestionTimeout", "mcpStdioUser", "mcpMaxResponseBytes",
		"mcpMaxConcurrentCalls", "mcpMaxConcurrentCallsTotal", "egressAllow", "webSearchApiKey", "webSearchBaseUrl",
		"smtpUrl", "emailFrom", "publicUrl", "traceEndpoint",
	} {
		require.Contains(t, got, old, "a key operators may search their logs for")
	}

	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		slog.New(h(&buf)).Info("config", "config", c)
		require.NotContains(t, buf.String(), "s3cret", name)
		require.Contains(t, buf.String(), "v-DataDir", name)
		if name == "json" {
			require.True(t, json.Valid(buf.Bytes()), buf.String())
		}
	}
}

// TestLogFieldFailsSafe: a log tag logField does not know, or one that does
// not fit the field, masks the value rather than showing it.
func TestLogFieldFailsSafe(t *testing.T) {
	t.Parallel()

	require.Equal(t, masked, logField("secert", reflect.ValueOf("s3cret")).String())
	require.Equal(t, masked, logField(logURL, reflect.ValueOf([]string{"s3cret"})).String())
	require.Equal(t, masked, logField(logCount, reflect.ValueOf("s3cret")).String())
	require.Empty(t, logField(logSecret, reflect.ValueOf("")).String())
	require.Equal(t, "v", logField("", reflect.ValueOf("v")).String())
}
