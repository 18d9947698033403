package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		return time.Now()
	}
	return c.t
}

// Advance moves the clock forward (from the real time on first use).
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		c.t = time.Now()
	}
	c.t = c.t.Add(d)
}

// testServer is the whole server, started on loopback ":0" ports against a
// fresh database.
type testServer struct {
	t      testing.TB
	m      *Main
	base   string
	admin  string // bootstrap token (every scope, superadmin)
	clock  *clock
	dbURL  string
	db     *pgxpool.Pool // the test's own connections to dbURL (pool)
	client *http.Client
}

type serverOption func(*config.Config)

// testSecretKey seals secrets in tests (servers sharing a database share it).
const testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// testConfig is the configuration tests start from.
func testConfig(t testing.TB, dbURL string) config.Config {
	cfg, err := config.Load(nil)
	require.NoError(t, err)
	cfg.DatabaseURL = dbURL
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.OpsAddr = "127.0.0.1:0"
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.SecretKey = testSecretKey
	local := true
	cfg.LocalProvider = &local
	return cfg
}

func newServer(t testing.TB, opts ...serverOption) *testServer {
	t.Helper()
	return startServer(t, pgtest.NewURL(t), opts...)
}

// startServer starts a server on dbURL (which may be shared with another
// server, to test what crosses processes).
func startServer(t testing.TB, dbURL string, opts ...serverOption) *testServer {
	t.Helper()
	return startLoggedServer(t, dbURL, slog.DiscardHandler, opts...)
}

// startLoggedServer is startServer with the server's logs going to logs.
func startLoggedServer(t testing.TB, dbURL string, logs slog.Handler, opts ...serverOption) *testServer {
	t.Helper()
	cfg := testConfig(t, dbURL)
	for _, o := range opts {
		o(&cfg)
	}
	clk := &clock{}
	return serve(t, &Main{Config: cfg, Logger: slog.New(logs), Now: clk.Now}, clk)
}

// serve starts m (stopped when the test ends) and returns it as a test
// server with its test pool.
func serve(t testing.TB, m *Main, clk *clock) *testServer {
	t.Helper()
	require.NoError(t, m.Start(context.Background()))
	t.Cleanup(func() { m.Stop(context.Background()) })
	admin := m.AdminToken
	if admin == "" {
		admin = m.Config.BootstrapToken
	}
	dbURL := m.Config.DatabaseURL
	pc, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	pc.ConnConfig.RuntimeParams["application_name"] = testPoolName
	db, err := pgxpool.NewWithConfig(context.Background(), pc) // connects on first use
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return &testServer{t: t, m: m, base: "http://" + m.APIAddr(), admin: admin, clock: clk, dbURL: dbURL, db: db, client: &http.Client{Timeout: 30 * time.Second}}
}

// testPoolName is the application_name of the test pool's connections
// (pg_stat_activity tells them from the server's).
const testPoolName = "graphmill-test"

// pool is the test's own pool on the server's database, one per server
// (at most its MaxConns connections, closed when the test ends): a test
// that polls the database through it holds no more connections the
// longer it polls.
func (s *testServer) pool() *pgxpool.Pool {
	s.t.Helper()
	return s.db
}

// response is a decoded HTTP answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value.
func (r response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

// Decode decodes the body into v.
func (r response) Decode(t testing.TB, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.Body, v), "body: %s", r.Body)
}

// Detail is the problem detail of an error answer.
func (r response) Detail(t testing.TB) string {
	t.Helper()
	d, _ := r.JSON(t)["detail"].(string)
	return d
}

// header is one extra request header.
type header struct{ k, v string }

// do sends a request; body is JSON-encoded unless it is a string or nil.
func (s *testServer) do(method, path, token string, body any, headers ...header) response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(s.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.base+path, rd)
	require.NoError(s.t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, h := range headers {
		req.Header.Set(h.k, h.v)
	}
	return s.send(req)
}

// send sends req as it is and reads the whole response.
func (s *testServer) send(req *http.Request) response {
	s.t.Helper()
	res, err := s.client.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(s.t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// must sends a request and requires the status.
func (s *testServer) must(status int, method, path, token string, body any, headers ...header) response {
	s.t.Helper()
	r := s.do(method, path, token, body, headers...)
	require.Equal(s.t, status, r.Status, "%s %s: %s", method, path, r.Body)
	return r
}

// fixture ids of the bootstrap records.
func (s *testServer) defaultProject() (project, org string) {
	s.t.Helper()
	var list struct {
		Data []struct {
			ID    string `json:"id"`
			OrgID string `json:"orgId"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/projects", s.admin, nil).Decode(s.t, &list)
	require.Len(s.t, list.Data, 1)
	return list.Data[0].ID, list.Data[0].OrgID
}

// newUser creates a local user through the superadmin API and mints it an
// account token with scopes (project binds the token when not empty).
func (s *testServer) newUser(email string, scopes []string, project string) (id, token string) {
	s.t.Helper()
	var u struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": email, "displayName": email}).Decode(s.t, &u)
	body := map[string]any{"name": "t", "scopes": scopes}
	if project != "" {
		body["projectId"] = project
	}
	var tok struct {
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/superadmin/users/"+u.ID+"/tokens", s.admin, body).Decode(s.t, &tok)
	return u.ID, tok.Token
}

// newMember creates a user with an account token of scopes and gives it
// role in project.
func (s *testServer) newMember(email string, scopes []string, project, role string) (id, token string) {
	s.t.Helper()
	id, token = s.newUser(email, scopes, "")
	s.addMember(project, id, role)
	return id, token
}

// addMember gives a user a role in a project (as the admin).
func (s *testServer) addMember(project, user, role string) {
	s.t.Helper()
	s.must(200, "POST", "/api/projects/"+project+"/members", s.admin, map[string]any{"userId": user, "role": role})
}

// allScopes is every scope's wire name.
var allScopes = []string{
	"admin:read", "admin:write", "extraction:read", "extraction:write", "documents:read", "documents:write",
	"graph:read", "graph:write", "search:read", "mcp:use", "mcp:admin", "providers:read", "providers:write",
	"tasks:read", "tasks:write", "notifications:read", "notifications:write", "user-activity:read",
	"user-activity:write", "integrations:read", "integrations:write", "discovery:read", "discovery:write",
	"schema:read", "schema:write", "chat:use", "agents:read", "agents:run",
}
