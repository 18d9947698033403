package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/pgtest"
)

func get(t *testing.T, url string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "GET", url, nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}
}

func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, p := range []string{"/health", "/api/health"} {
		h := s.must(200, "GET", p, "", nil).JSON(t)
		require.Equal(t, "healthy", h["status"])
		require.Equal(t, map[string]any{"status": "healthy"}, h["checks"].(map[string]any)["database"])
		require.NotEmpty(t, h["version"])
		require.NotEmpty(t, h["uptime"])
		_, err := time.Parse(time.RFC3339Nano, h["timestamp"].(string))
		require.NoError(t, err)
	}
	require.Equal(t, map[string]any{"status": "ready"}, s.must(200, "GET", "/ready", "", nil).JSON(t))
	require.Equal(t, "alive", s.must(200, "GET", "/healthz", "", nil).JSON(t)["status"])
}

func TestDebug(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, user := s.newUser("u@example.com", allScopes, "")
	s.must(401, "GET", "/debug", "", nil)
	s.must(403, "GET", "/debug", user, nil)
	d := s.must(200, "GET", "/debug", s.admin, nil).JSON(t)
	require.Equal(t, "development", d["environment"])
	require.Equal(t, true, d["debug"])
	require.True(t, strings.HasPrefix(d["go_version"].(string), "go"))
	require.Greater(t, d["goroutines"].(float64), float64(1))
	db := d["database"].(map[string]any)
	require.Equal(t, "127.0.0.1", db["host"])
	require.Greater(t, db["pool_total"].(float64), float64(0))
	require.Contains(t, d["memory"].(map[string]any), "sys_mb")
	require.NotContains(t, string(s.must(200, "GET", "/debug", s.admin, nil).Body), "password")

	prod := newServer(t, func(c *config.Config) { c.Environment = config.EnvProduction })
	require.Equal(t, "not_found", prod.must(404, "GET", "/debug", prod.admin, nil).JSON(t)["code"])
}

func TestProblemBodies(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := s.must(404, "GET", "/api/nothing-here", s.admin, nil, header{"X-Request-ID", "req-123"})
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
	require.Equal(t, "req-123", r.Header.Get("X-Request-ID"))
	p := r.JSON(t)
	require.Equal(t, "not_found", p["code"])
	require.Equal(t, "req-123", p["requestId"])
	require.Equal(t, float64(404), p["status"])

	r = s.must(405, "PUT", "/api/orgs", s.admin, nil)
	require.Equal(t, "invalid_argument", r.JSON(t)["code"])
	require.Equal(t, "method PUT is not allowed on /api/orgs (allowed: GET, POST)", r.Detail(t))
	require.Equal(t, "GET, POST", r.Header.Get("Allow"))

	// A generated request id when the client sends none (or a bad one).
	r = s.must(401, "GET", "/api/orgs", "", nil, header{"X-Request-ID", "bad id with spaces"})
	require.Len(t, r.Header.Get("X-Request-ID"), 36)
	require.Equal(t, r.Header.Get("X-Request-ID"), r.JSON(t)["requestId"])
	require.Contains(t, r.Header.Get("WWW-Authenticate"), "Bearer")

	// Bodies over 1 MiB.
	big := `{"name":"` + strings.Repeat("a", 1<<20) + `"}`
	r = s.must(413, "POST", "/api/orgs", s.admin, big)
	require.Equal(t, "payload_too_large", r.JSON(t)["code"])

	// Values are never echoed back in validation errors.
	r = s.must(400, "POST", "/api/tokens", s.admin, map[string]any{"name": "x", "scopes": "secret-value"})
	require.NotContains(t, string(r.Body), "secret-value")
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	doc := s.must(200, "GET", "/api/openapi.json", "", nil)
	var spec struct {
		OpenAPI    string                    `json:"openapi"`
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas         map[string]any `json:"schemas"`
			SecuritySchemes map[string]any `json:"securitySchemes"`
		} `json:"components"`
	}
	doc.Decode(t, &spec)
	require.Equal(t, "3.1.0", spec.OpenAPI)
	for _, p := range []string{"/api/projects", "/api/superadmin/users", "/health", "/api/projects/{projectId}/tokens"} {
		require.Contains(t, spec.Paths, p)
	}
	require.Contains(t, spec.Components.SecuritySchemes, "bearer")
	require.Contains(t, spec.Components.Schemas, "TenancyProject")
	require.Contains(t, spec.Components.Schemas, "SuperadminProject")
	require.NotContains(t, string(doc.Body), `"$schema"`)
	// Responses carry no $schema member either.
	require.NotContains(t, string(s.must(200, "GET", "/api/projects", s.admin, nil).Body), "$schema")
}

func TestOpsEndpoint(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must(200, "GET", "/api/projects", s.admin, nil)
	m := get(t, "http://"+s.m.OpsAddr()+"/metrics")
	require.Equal(t, 200, m.Status)
	body := string(m.Body)
	require.Contains(t, body, `graphmill_http_requests_total{method="GET",route="/api/projects",status="200"} 1`)
	require.Contains(t, body, "graphmill_http_request_duration_seconds_bucket")
	require.Contains(t, body, "graphmill_db_pool_max_connections")
	require.Equal(t, 200, get(t, "http://"+s.m.OpsAddr()+"/debug/pprof/").Status)
	// The ops routes are not on the public address.
	require.Equal(t, 404, s.do("GET", "/metrics", "", nil).Status)
}

// TestOpsRefusesCrossSiteBrowsers: a page of another site open in a
// browser on the operator's machine could POST (a simple request, no
// preflight) to the ops address on loopback and pause the embedding
// workers. A request a browser marks as coming from another site
// (Sec-Fetch-Site, else an Origin other than the ops address) is refused
// with 403 and changes nothing; curl, Prometheus and an operator typing
// the address in the browser (Sec-Fetch-Site: none) are served.
func TestOpsRefusesCrossSiteBrowsers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ops := "http://" + s.m.OpsAddr()
	post := func(path string, headers map[string]string) response {
		req, err := http.NewRequest(http.MethodPost, ops+path, strings.NewReader("x"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/plain")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = res.Body.Close() }()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return response{Status: res.StatusCode, Body: body}
	}
	for _, h := range []map[string]string{
		{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Origin": "https://evil.example"},
		{"Sec-Fetch-Site": "same-site"},
		{"Origin": "null"},
	} {
		r := post("/api/embeddings/pause", h)
		require.Equal(t, 403, r.Status, "%v: %s", h, r.Body)
		require.Contains(t, r.Detail(t), "another site", "%v", h)
	}
	var st struct {
		Paused bool `json:"paused"`
	}
	require.NoError(t, json.Unmarshal(get(t, ops+"/api/embeddings/status").Body, &st))
	require.False(t, st.Paused, "a refused pause paused the workers")
	require.Equal(t, 200, post("/api/embeddings/pause", map[string]string{"Sec-Fetch-Site": "none"}).Status)
	require.Equal(t, 200, post("/api/embeddings/resume", map[string]string{"Origin": ops}).Status)
	require.Equal(t, 200, post("/api/embeddings/pause", nil).Status)
}

func TestBootstrapToken(t *testing.T) {
	t.Parallel()
	fixed := "gm_" + strings.Repeat("abcd", 10)
	dbURL := pgtest.NewURL(t)
	s := startServer(t, dbURL, func(c *config.Config) { c.BootstrapToken = fixed })
	require.Equal(t, fixed, s.m.AdminToken)
	require.Equal(t, true, s.must(200, "GET", "/api/superadmin/me", fixed, nil).JSON(t)["isSuperadmin"])
	// The fixed token was given by the operator: it is not written out.
	_, err := os.Stat(filepath.Join(s.m.Config.DataDir, "admin-token"))
	require.ErrorIs(t, err, os.ErrNotExist)
	// A second server on the same database creates nothing new.
	s2 := startServer(t, dbURL)
	require.Empty(t, s2.m.AdminToken)
	var users pagedBody
	s2.must(200, "GET", "/api/superadmin/users", fixed, nil).Decode(t, &users)
	require.Equal(t, 1, users.Meta.Total)

	cfg := testConfig(t, pgtest.NewURL(t))
	cfg.BootstrapToken = "not-a-token"
	m := &Main{Config: cfg, Logger: slog.New(slog.DiscardHandler)}
	err = m.Start(context.Background())
	require.ErrorContains(t, err, "GRAPHMILL_BOOTSTRAP_TOKEN")
}

// The embedded default end to end: first start creates the cluster and the
// admin token, health follows the database down and up, and a restart keeps
// the data and the token.
func TestEmbeddedDatabase(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp(pgtest.TempRoot(), "graphmill-embedded-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cfg := testConfig(t, "")
	cfg.DataDir = filepath.Join(dir, "data")

	var out bytes.Buffer
	m := &Main{Config: cfg, Logger: slog.New(slog.DiscardHandler), Stdout: &out}
	require.NoError(t, m.Start(context.Background()))
	t.Cleanup(func() { m.Stop(context.Background()) })
	token := m.AdminToken
	require.Contains(t, out.String(), token)
	saved, err := os.ReadFile(filepath.Join(cfg.DataDir, "admin-token"))
	require.NoError(t, err)
	require.Equal(t, token+"\n", string(saved))
	st, err := os.Stat(filepath.Join(cfg.DataDir, "admin-token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	st, err = os.Stat(filepath.Join(cfg.DataDir, "pg", ".password"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	s := &testServer{t: t, m: m, base: "http://" + m.APIAddr(), admin: token, client: http.DefaultClient}
	var org idBody
	s.must(201, "POST", "/api/orgs", token, map[string]any{"name": "kept"}).Decode(t, &org)

	// A second server on the same data directory is refused.
	m2 := &Main{Config: cfg, Logger: slog.New(slog.DiscardHandler)}
	require.ErrorContains(t, m2.Start(context.Background()), "another graphmill server")

	// Database down: health and readiness say so with 503; back up: 200.
	require.NoError(t, m.db.cluster.Stop(context.Background()))
	h := s.must(503, "GET", "/health", "", nil).JSON(t)
	require.Equal(t, "unhealthy", h["status"])
	require.Equal(t, "unhealthy", h["checks"].(map[string]any)["database"].(map[string]any)["status"])
	s.must(503, "GET", "/api/health", "", nil)
	require.Equal(t, "not_ready", s.must(503, "GET", "/ready", "", nil).JSON(t)["status"])
	s.must(200, "GET", "/healthz", "", nil)
	require.NoError(t, m.db.cluster.Start(context.Background()))
	require.Eventually(t, func() bool { return s.do("GET", "/health", "", nil).Status == 200 }, 10*time.Second, 50*time.Millisecond)
	s.must(200, "GET", "/ready", "", nil)

	// Restart: same data, same token, no new token printed.
	m.Stop(context.Background())
	out.Reset()
	m3 := &Main{Config: cfg, Logger: slog.New(slog.DiscardHandler), Stdout: &out}
	require.NoError(t, m3.Start(context.Background()))
	t.Cleanup(func() { m3.Stop(context.Background()) })
	require.Empty(t, m3.AdminToken)
	require.Empty(t, out.String())
	s3 := &testServer{t: t, m: m3, base: "http://" + m3.APIAddr(), admin: token, client: http.DefaultClient}
	var orgs listBody
	s3.must(200, "GET", "/api/orgs", token, nil).Decode(t, &orgs)
	require.Contains(t, ids(orgs), org.ID)
}

func TestSchedulerMetrics(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, noScope := s.newUser("n@example.com", []string{"documents:read"}, "")
	s.must(401, "GET", "/api/metrics/scheduler", "", nil)
	s.must(403, "GET", "/api/metrics/scheduler", noScope, nil)
	// The expiry tasks, the digest, the model catalog refresh, scheduled
	// re-extraction, the integration sync schedule and the agent schedule
	// run at start.
	require.Eventually(t, func() bool {
		var m struct {
			Message string `json:"message"`
			Tasks   []struct {
				Name string `json:"name"`
				Runs int    `json:"runs"`
			} `json:"tasks"`
		}
		s.must(200, "GET", "/api/metrics/scheduler", s.admin, nil).Decode(t, &m)
		runs := map[string]int{}
		for _, task := range m.Tasks {
			runs[task.Name] = task.Runs
		}
		return len(m.Tasks) == 8 && runs["events-expiry"] >= 1 && runs["notifications-expiry"] >= 1 && runs["notifications-digest"] >= 1 &&
			runs["console-sessions-expiry"] >= 1 &&
			runs["provider-models-sync"] >= 1 && runs["scheduled-reextraction"] >= 1 && runs["integration-sync-schedule"] >= 1 &&
			runs["agent-schedule"] >= 1 && m.Message != ""
	}, 10*time.Second, 50*time.Millisecond)
}

// TestSchedulerMetricsSanitized: tenants see that a task failed, not why
// (raw errors name hosts, addresses and queries), nor which process runs
// the scheduler; superadmins see everything.
func TestSchedulerMetricsSanitized(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	_, tenant := s.newMember("tenant@example.com", []string{"admin:read"}, project, "admin")
	type metrics struct {
		Message string           `json:"message"`
		Tasks   []map[string]any `json:"tasks"`
	}
	// Wait for the models sync's first run: a run after the UPDATE below
	// would clear the error it plants; the next is a day away.
	require.Eventually(t, func() bool {
		var m metrics
		s.must(200, "GET", "/api/metrics/scheduler", s.admin, nil).Decode(t, &m)
		for _, task := range m.Tasks {
			if task["name"] == "provider-models-sync" {
				return len(m.Tasks) == 8 && task["runs"].(float64) >= 1
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond)
	const raw = "refresh models: dial tcp 10.20.30.40:443: connect: connection refused (db-primary.internal)"
	_, err := s.pool().Exec(context.Background(), `UPDATE scheduler_tasks SET last_error = $1, leader = 'graphmill-host-7-4242', failures = failures + 1
		WHERE name = 'provider-models-sync'`, raw)
	require.NoError(t, err)

	byName := func(m metrics) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, task := range m.Tasks {
			out[task["name"].(string)] = task
		}
		return out
	}
	r := s.must(200, "GET", "/api/metrics/scheduler", tenant, nil)
	for _, leak := range []string{"10.20.30.40", "db-primary", "graphmill-host-7", "4242", "dial tcp"} {
		require.NotContains(t, string(r.Body), leak)
	}
	var m metrics
	r.Decode(t, &m)
	task := byName(m)["provider-models-sync"]
	require.Equal(t, "task failed", task["lastError"])
	require.NotContains(t, task, "leader")
	require.InDelta(t, 1, task["failures"], 0.5, "the counts stay")
	require.Contains(t, m.Message, "1 failing")
	for _, task := range m.Tasks {
		require.NotContains(t, task, "leader")
	}

	s.must(200, "GET", "/api/metrics/scheduler", s.admin, nil).Decode(t, &m)
	task = byName(m)["provider-models-sync"]
	require.Equal(t, raw, task["lastError"], "superadmins see the error")
	require.Equal(t, "graphmill-host-7-4242", task["leader"])
}
