// Package mcptest holds test fixtures of the MCP registry: real go-sdk MCP
// servers (in process over streamable HTTP and SSE, and a stdio binary), a
// fake official MCP registry and a fake Brave Search API, all speaking the
// real wire protocols.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apiv0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"
)

// AllTools are the tools a test server can offer.
var AllTools = []string{"echo", "add", "slow", "whoami"} //nolint:gochecknoglobals // constant list of a test fixture

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type slowIn struct {
	MS int `json:"ms" jsonschema:"milliseconds to sleep"`
}

type whoamiOut struct {
	UID  int               `json:"uid"`
	PID  int               `json:"pid"`
	Env  []string          `json:"env"`
	Args []string          `json:"args"`
	FDs  map[string]string `json:"fds"`
	// Inherited are the descriptors without close-on-exec: those the
	// process got from its parent (the Go runtime opens its own
	// close-on-exec).
	Inherited []int `json:"inherited"`
}

// openFDs lists the process's open file descriptors with what each
// refers to, and those without close-on-exec, leaving out the one that
// reads the list.
func openFDs() (map[string]string, []int) {
	out := map[string]string{}
	inherited := []int{}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		out["error"] = err.Error()
		return out, inherited
	}
	defer d.Close()
	own := d.Fd()
	names, err := d.Readdirnames(-1)
	if err != nil {
		out["error"] = err.Error()
	}
	for _, n := range names {
		var fd uintptr
		if _, err := fmt.Sscan(n, &fd); err != nil || fd == own {
			continue
		}
		target, _ := os.Readlink("/proc/self/fd/" + n)
		out[n] = target
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFD, 0)
		if errno == 0 && flags&syscall.FD_CLOEXEC == 0 {
			inherited = append(inherited, int(fd))
		}
	}
	sort.Ints(inherited)
	return out, inherited
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// NewServer returns an MCP server offering the named tools (all when none
// is named): echo {text}, add {a, b}, slow {ms}, whoami (uid, pid and
// environment names, arguments, open file descriptors).
func NewServer(tools ...string) *mcp.Server {
	if len(tools) == 0 {
		tools = AllTools
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1.0.0"}, nil)
	for _, t := range tools {
		switch t {
		case "echo":
			mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
				func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
					if in.Text == "fail" {
						return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "asked to fail"}}}, nil, nil
					}
					return text("echo: " + in.Text), nil, nil
				})
		case "add":
			mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
				func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
					return text(fmt.Sprint(in.A + in.B)), nil, nil
				})
		case "slow":
			mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleep, then answer."},
				func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
					select {
					case <-time.After(time.Duration(in.MS) * time.Millisecond):
						return text("done"), nil, nil
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					}
				})
		case "whoami":
			mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Report the process's uid, pid, environment names, arguments and open file descriptors."},
				func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
					out := whoamiOut{UID: os.Getuid(), PID: os.Getpid(), Args: os.Args[1:]}
					out.FDs, out.Inherited = openFDs()
					for _, kv := range os.Environ() {
						k, _, _ := strings.Cut(kv, "=")
						out.Env = append(out.Env, k)
					}
					sort.Strings(out.Env)
					raw, _ := json.Marshal(out)
					return text(string(raw)), nil, nil
				})
		}
	}
	return s
}

// checkHeader wraps h to require header name to equal value.
func checkHeader(h http.Handler, name, value string) http.Handler {
	if name == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(name) != value {
			http.Error(w, "missing or wrong "+name, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Streamable serves s over streamable HTTP; a request without header name
// set to value (when name is not empty) is refused with 401.
func Streamable(t testing.TB, s *mcp.Server, name, value string) *httptest.Server {
	t.Helper()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(checkHeader(h, name, value))
	t.Cleanup(ts.Close)
	return ts
}

// SSE serves s over the SSE transport, with the same header check.
func SSE(t testing.TB, s *mcp.Server, name, value string) *httptest.Server {
	t.Helper()
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(checkHeader(h, name, value))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts
}

// Request is what a test server received of one request.
type Request struct {
	Method string
	URL    string
	Header http.Header
}

// Seen records the requests a test server received.
type Seen struct {
	mu   sync.Mutex
	reqs []Request
}

// Wrap records every request before h serves it.
func (s *Seen) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Method: r.Method, URL: r.URL.String(), Header: r.Header.Clone()})
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// Requests returns the recorded requests, in order.
func (s *Seen) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Values returns every value of header name the server received.
func (s *Seen) Values(name string) []string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, r.Header.Values(name)...)
	}
	return out
}

// StreamableSeen serves s over streamable HTTP, recording every request.
func StreamableSeen(t testing.TB, s *mcp.Server) (*httptest.Server, *Seen) {
	t.Helper()
	seen := &Seen{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(seen.Wrap(h))
	t.Cleanup(ts.Close)
	return ts, seen
}

// SSESeen serves s over the SSE transport, recording every request.
func SSESeen(t testing.TB, s *mcp.Server) (*httptest.Server, *Seen) {
	t.Helper()
	seen := &Seen{}
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(seen.Wrap(h))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts, seen
}

// Redirect answers every request with a 307 to the same path and query
// on target, recording the requests.
func Redirect(t testing.TB, target string) (*httptest.Server, *Seen) {
	t.Helper()
	seen := &Seen{}
	ts := httptest.NewServer(seen.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusTemporaryRedirect) //nolint:gosec // a test fixture that redirects by design
	})))
	t.Cleanup(ts.Close)
	return ts, seen
}

// FloodCap is where a Flood server gives up: far beyond any sane limit,
// so that a client without one fails a test instead of exhausting the
// machine.
const FloodCap = 256 << 20

// Flood is a hostile MCP server that answers with a body that does not
// end (until FloodCap bytes, or the client hangs up).
type Flood struct {
	*httptest.Server
	done    chan struct{}
	mu      sync.Mutex
	written int64
}

// NewFlood serves a flood over the given transport: "http" answers every
// POST with an endless JSON body; "sse" opens the event stream with an
// endpoint event, then sends comment lines without end.
func NewFlood(t testing.TB, transport string) *Flood {
	t.Helper()
	f := &Flood{done: make(chan struct{})}
	var once, postOnce sync.Once
	posted := make(chan struct{})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var chunk []byte
		switch {
		case transport == "sse" && r.Method == http.MethodPost:
			postOnce.Do(func() { close(posted) })
			w.WriteHeader(http.StatusAccepted)
			return
		case transport == "sse":
			// The endpoint event alone, then the flood once the client
			// posts (go-sdk reads the endpoint event with a buffer of its
			// own and drops what that buffer read beyond it).
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: endpoint\ndata: /message\n\n")
			_ = http.NewResponseController(w).Flush()
			select {
			case <-posted:
			case <-r.Context().Done():
				return
			}
			chunk = []byte(": " + strings.Repeat("x", 4093) + "\n")
		default:
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"padding":"`)
			chunk = []byte(strings.Repeat("x", 4096))
		}
		defer once.Do(func() { close(f.done) })
		for {
			n, err := w.Write(chunk)
			f.mu.Lock()
			f.written += int64(n)
			total := f.written
			f.mu.Unlock()
			if err != nil || total >= FloodCap {
				return
			}
		}
	}))
	t.Cleanup(func() {
		f.CloseClientConnections()
		f.Close()
	})
	return f
}

// Done is closed when the first flooding response ended: the client hung
// up, or FloodCap was reached.
func (f *Flood) Done() <-chan struct{} { return f.done }

// Written is the number of body bytes the server managed to send.
func (f *Flood) Written() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written
}

// Gate is a tool "gate" that counts the calls inside it and holds them
// until Release.
type Gate struct {
	Entered chan struct{} // receives once per call that entered
	release chan struct{}
	mu      sync.Mutex
	inside  int
	most    int
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{Entered: make(chan struct{}, 100), release: make(chan struct{})}
}

// Add adds the gate tool to s.
func (g *Gate) Add(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "gate", Description: "Wait until the test opens the gate."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			g.mu.Lock()
			g.inside++
			g.most = max(g.most, g.inside)
			g.mu.Unlock()
			defer func() {
				g.mu.Lock()
				g.inside--
				g.mu.Unlock()
			}()
			g.Entered <- struct{}{}
			select {
			case <-g.release:
				return text("passed"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
}

// Release opens the gate for every waiting and later call.
func (g *Gate) Release() { close(g.release) }

// Most is the largest number of calls that were inside at once.
func (g *Gate) Most() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most
}

// ToolsEnv is the variable that names the stdio server's tools
// (comma-separated; all when unset).
const ToolsEnv = "MCPTEST_TOOLS"

// RunStdio serves the tools named by ToolsEnv on stdin/stdout until stdin
// closes. It is the whole of the stdio test server's main.
func RunStdio() error {
	var tools []string
	if v := os.Getenv(ToolsEnv); v != "" {
		tools = strings.Split(v, ",")
	}
	fmt.Fprintln(os.Stderr, "mcptest stdio server starting")
	return NewServer(tools...).Run(context.Background(), &mcp.StdioTransport{})
}

// BuildStdio builds the stdio test server (./stdioserver) into a
// directory any user can enter (stdio servers run as nobody when the
// tests run as root) and returns the binary's path. Callers build it once
// per test binary and remove dir when done.
func BuildStdio(dir string) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("mcptest: cannot find its source")
	}
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // the binary must be reachable by nobody
		return "", err
	}
	out := filepath.Join(dir, "mcptest-stdio")
	cmd := exec.Command("go", "build", "-o", out, "./stdioserver") //nolint:gosec,noctx // fixed arguments, test fixture
	cmd.Dir = filepath.Dir(file)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build stdio test server: %w: %s", err, b)
	}
	return out, nil
}

// Registry is a fake official MCP registry serving /v0.1/servers.
type Registry struct {
	*httptest.Server
	mu      sync.Mutex
	servers []apiv0.ServerResponse
}

// NewRegistry serves entries (every version of every server, latest
// marked by the official metadata's isLatest).
func NewRegistry(t testing.TB, entries []apiv0.ServerResponse) *Registry {
	t.Helper()
	r := &Registry{servers: entries}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v0.1/servers", r.list)
	mux.HandleFunc("GET /v0.1/servers/{name}/versions", r.versions)
	mux.HandleFunc("GET /v0.1/servers/{name}/versions/{version}", r.version)
	r.Server = httptest.NewServer(mux)
	t.Cleanup(r.Close)
	return r
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func latest(e apiv0.ServerResponse) bool {
	return e.Meta.Official != nil && e.Meta.Official.IsLatest
}

func (r *Registry) list(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := req.URL.Query()
	out := apiv0.ServerListResponse{Servers: []apiv0.ServerResponse{}}
	for _, e := range r.servers {
		if s := q.Get("search"); s != "" && !strings.Contains(strings.ToLower(e.Server.Name), strings.ToLower(s)) {
			continue
		}
		if q.Get("version") == "latest" && !latest(e) {
			continue
		}
		out.Servers = append(out.Servers, e)
	}
	out.Metadata.Count = len(out.Servers)
	writeJSON(w, http.StatusOK, out)
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]any{"title": "Not Found", "status": 404, "detail": "Server not found"})
}

func (r *Registry) versions(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, _ := url.PathUnescape(req.PathValue("name"))
	out := apiv0.ServerListResponse{Servers: []apiv0.ServerResponse{}}
	for _, e := range r.servers {
		if e.Server.Name == name {
			out.Servers = append(out.Servers, e)
		}
	}
	if len(out.Servers) == 0 {
		notFound(w)
		return
	}
	out.Metadata.Count = len(out.Servers)
	writeJSON(w, http.StatusOK, out)
}

func (r *Registry) version(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, _ := url.PathUnescape(req.PathValue("name"))
	v := req.PathValue("version")
	for _, e := range r.servers {
		if e.Server.Name == name && (e.Server.Version == v || v == "latest" && latest(e)) {
			writeJSON(w, http.StatusOK, e)
			return
		}
	}
	notFound(w)
}

// Brave is a fake Brave Search web API.
type Brave struct {
	*httptest.Server
	mu     sync.Mutex
	keys   []string
	status int
}

// NewBrave answers GET /res/v1/web/search for the keys in valid (401 for
// others) with results naming the query and the key's position.
func NewBrave(t testing.TB, valid ...string) *Brave {
	t.Helper()
	b := &Brave{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /res/v1/web/search", func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Subscription-Token")
		b.mu.Lock()
		b.keys = append(b.keys, key)
		status := b.status
		b.mu.Unlock()
		if status != 0 {
			writeJSON(w, status, map[string]any{"type": "ErrorResponse", "error": map[string]any{"status": status}})
			return
		}
		ok := false
		for _, v := range valid {
			ok = ok || v == key
		}
		if !ok {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"type": "ErrorResponse", "error": map[string]any{"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401}})
			return
		}
		q := r.URL.Query().Get("q")
		count := 3
		if _, err := fmt.Sscan(r.URL.Query().Get("count"), &count); err != nil {
			count = 3
		}
		results := []map[string]any{}
		for i := range count {
			results = append(results, map[string]any{
				"title": fmt.Sprintf("%s result %d", q, i+1), "url": fmt.Sprintf("https://example.com/%d", i+1),
				"description": "About " + q, "language": "en", "family_friendly": true,
			})
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"type": "search", "query": map[string]any{"original": q},
			"web": map[string]any{"type": "search", "results": results},
		})
	})
	b.Server = httptest.NewServer(mux)
	t.Cleanup(b.Close)
	return b
}

// Keys returns the keys the API was called with, in order.
func (b *Brave) Keys() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.keys...)
}

// FailWith makes every answer status (0: answer normally).
func (b *Brave) FailWith(status int) {
	b.mu.Lock()
	b.status = status
	b.mu.Unlock()
}

// official is the registry's metadata of an entry.
func official(latest bool) apiv0.ResponseMeta {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return apiv0.ResponseMeta{Official: &apiv0.RegistryExtensions{
		Status: model.StatusActive, StatusChangedAt: at, PublishedAt: at, UpdatedAt: at, IsLatest: latest,
	}}
}

// SecretEntries are registry entries whose secrets go where they would be
// visible if substituted at install: a PyPI package taking a secret in a
// named argument (from a variable) and in a positional one (by its value
// hint), and a remote taking one in its URL's query.
func SecretEntries(remoteURL string) []apiv0.ServerResponse {
	secret := model.Input{IsRequired: true, IsSecret: true}
	return []apiv0.ServerResponse{
		{
			Server: apiv0.ServerJSON{
				Schema: model.CurrentSchemaURL, Name: "io.github.acme/argkeys", Description: "Keys in arguments", Version: "1.0.0",
				Packages: []model.Package{{
					RegistryType: model.RegistryTypePyPI, RegistryBaseURL: model.RegistryURLPyPI, Identifier: "acme-argkeys", Version: "1.0.0",
					Transport: model.Transport{Type: model.TransportTypeStdio},
					PackageArguments: []model.Argument{
						{Type: model.ArgumentTypeNamed, Name: "--api-key", InputWithVariables: model.InputWithVariables{
							Input: model.Input{Value: "{api_key}", IsRequired: true, IsSecret: true}, Variables: map[string]model.Input{"api_key": secret},
						}},
						{Type: model.ArgumentTypePositional, ValueHint: "token", InputWithVariables: model.InputWithVariables{Input: secret}},
						{Type: model.ArgumentTypeNamed, Name: "--region", InputWithVariables: model.InputWithVariables{Input: model.Input{Default: "eu"}}},
					},
				}},
			},
			Meta: official(true),
		},
		{
			Server: apiv0.ServerJSON{
				Schema: model.CurrentSchemaURL, Name: "com.acme/urlkey", Description: "Key in the URL", Version: "1.0.0",
				Remotes: []model.Transport{{
					Type: model.TransportTypeStreamableHTTP, URL: remoteURL + "?key={url_key}&region={region}",
					Variables: map[string]model.Input{"url_key": secret, "region": {Default: "eu"}},
				}},
			},
			Meta: official(true),
		},
	}
}

// SampleEntries are realistic registry entries: an npm server in two
// versions (a required secret and an optional variable with a default), a
// PyPI server, an OCI server and a remote (streamable HTTP at remoteURL,
// with an Authorization header built from a required variable).
func SampleEntries(remoteURL string) []apiv0.ServerResponse {
	weather := func(version string, latest bool) apiv0.ServerResponse {
		return apiv0.ServerResponse{
			Server: apiv0.ServerJSON{
				Schema: model.CurrentSchemaURL, Name: "io.github.acme/weather", Title: "Weather",
				Description: "Weather forecasts from the Acme weather API", Version: version,
				Repository: &model.Repository{URL: "https://github.com/acme/weather-mcp", Source: "github"},
				Packages: []model.Package{{
					RegistryType: model.RegistryTypeNPM, RegistryBaseURL: model.RegistryURLNPM, Identifier: "@acme/weather-mcp", Version: version,
					Transport: model.Transport{Type: model.TransportTypeStdio},
					EnvironmentVariables: []model.KeyValueInput{
						{Name: "WEATHER_API_KEY", InputWithVariables: model.InputWithVariables{Input: model.Input{Description: "Acme API key", IsRequired: true, IsSecret: true}}},
						{Name: "WEATHER_UNITS", InputWithVariables: model.InputWithVariables{Input: model.Input{Description: "metric or imperial", Default: "metric"}}},
					},
				}},
			},
			Meta: official(latest),
		}
	}
	return []apiv0.ServerResponse{
		weather("1.0.0", false),
		weather("1.2.0", true),
		{
			Server: apiv0.ServerJSON{
				Schema: model.CurrentSchemaURL, Name: "io.github.acme/pysearch", Description: "Search files", Version: "0.3.1",
				Packages: []model.Package{{
					RegistryType: model.RegistryTypePyPI, RegistryBaseURL: model.RegistryURLPyPI, Identifier: "acme-pysearch", Version: "0.3.1",
					Transport: model.Transport{Type: model.TransportTypeStdio},
				}},
			},
			Meta: official(true),
		},
		{
			Server: apiv0.ServerJSON{
				Schema: model.CurrentSchemaURL, Name: "io.github.acme/boxed", Description: "Containerised tools", Version: "2.0.0",
				Packages: []model.Package{{
					RegistryType: model.RegistryTypeOCI, Identifier: "ghcr.io/acme/boxed:2.0.0",
					Transport: model.Transport{Type: model.TransportTypeStdio},
					EnvironmentVariables: []model.KeyValueInput{
						{Name: "BOXED_TOKEN", InputWithVariables: model.InputWithVariables{Input: model.Input{IsRequired: true, IsSecret: true}}},
					},
				}},
			},
			Meta: official(true),
		},
		{
			Server: apiv0.ServerJSON{
				Schema: model.CurrentSchemaURL, Name: "com.acme/notes", Title: "Acme Notes", Description: "Hosted notes", Version: "1.0.0",
				Remotes: []model.Transport{{
					Type: model.TransportTypeStreamableHTTP, URL: remoteURL,
					Headers: []model.KeyValueInput{{
						Name: "Authorization",
						InputWithVariables: model.InputWithVariables{
							Input:     model.Input{Value: "Bearer {notes_token}", IsRequired: true, IsSecret: true},
							Variables: map[string]model.Input{"notes_token": {IsRequired: true, IsSecret: true}},
						},
					}},
				}},
			},
			Meta: official(true),
		},
	}
}
