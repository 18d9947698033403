// Package health answers liveness, readiness and health probes, and the
// debug snapshot for operators.
package health

import (
	"context"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// CheckTimeout bounds each dependency check.
const CheckTimeout = 2 * time.Second

// Check is one subsystem's state.
type Check struct {
	Status  string `json:"status" enum:"healthy,unhealthy"`
	Message string `json:"message,omitempty"`
}

// Response is the health body.
type Response struct {
	Status    string           `json:"status" enum:"healthy,unhealthy"`
	Timestamp string           `json:"timestamp"`
	Uptime    string           `json:"uptime"`
	Version   string           `json:"version"`
	Checks    map[string]Check `json:"checks"`
}

// ReadyResponse is the readiness body.
type ReadyResponse struct {
	Status  string `json:"status" enum:"ready,not_ready"`
	Message string `json:"message,omitempty"`
}

// Memory is the debug memory block.
type Memory struct {
	AllocMB      uint64 `json:"alloc_mb"`
	TotalAllocMB uint64 `json:"total_alloc_mb"`
	SysMB        uint64 `json:"sys_mb"`
	NumGC        uint32 `json:"num_gc"`
}

// Database is the debug database block.
type Database struct {
	Host      string `json:"host"`
	Port      int    `json:"port"`
	Database  string `json:"database"`
	PoolTotal int32  `json:"pool_total"`
	PoolIdle  int32  `json:"pool_idle"`
	PoolInUse int32  `json:"pool_in_use"`
	MaxConns  int32  `json:"pool_max"`
}

// DebugResponse is the debug body.
type DebugResponse struct {
	Environment string   `json:"environment"`
	Debug       bool     `json:"debug"`
	GoVersion   string   `json:"go_version"`
	Goroutines  int      `json:"goroutines"`
	Memory      Memory   `json:"memory"`
	Database    Database `json:"database"`
}

// Service tracks readiness and runs checks.
type Service struct {
	pool        *pgxpool.Pool
	started     time.Time
	version     string
	environment string
	now         func() time.Time
	ready       atomic.Bool
	notReadyMsg atomic.Value
}

// NewService returns a health service; it is not ready until SetReady.
func NewService(pool *pgxpool.Pool, version, environment string, now func() time.Time) *Service {
	s := &Service{pool: pool, started: now(), version: version, environment: environment, now: now}
	s.notReadyMsg.Store("starting")
	return s
}

// SetReady marks the process ready (migrations applied, workers started)
// or not (msg says why, for example "shutting down").
func (s *Service) SetReady(ready bool, msg string) {
	s.notReadyMsg.Store(msg)
	s.ready.Store(ready)
}

// Version reports the module version of the running binary.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "devel-" + s.Value[:12]
			}
		}
	}
	return "devel"
}

func (s *Service) checkDatabase(ctx context.Context) Check {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return Check{Status: "unhealthy", Message: "database unreachable"}
	}
	return Check{Status: "healthy"}
}

// Health runs every check.
func (s *Service) Health(ctx context.Context) Response {
	checks := map[string]Check{"database": s.checkDatabase(ctx)}
	status := "healthy"
	for _, c := range checks {
		if c.Status != "healthy" {
			status = "unhealthy"
		}
	}
	return Response{
		Status: status, Timestamp: s.now().UTC().Format(time.RFC3339Nano),
		Uptime: s.now().Sub(s.started).Round(time.Second).String(), Version: s.version, Checks: checks,
	}
}

// Ready reports whether the process should receive traffic.
func (s *Service) Ready(ctx context.Context) ReadyResponse {
	if !s.ready.Load() {
		msg, _ := s.notReadyMsg.Load().(string)
		return ReadyResponse{Status: "not_ready", Message: msg}
	}
	if c := s.checkDatabase(ctx); c.Status != "healthy" {
		return ReadyResponse{Status: "not_ready", Message: c.Message}
	}
	return ReadyResponse{Status: "ready"}
}

// Debug is a runtime snapshot.
func (s *Service) Debug() DebugResponse {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	st := s.pool.Stat()
	cc := s.pool.Config().ConnConfig
	return DebugResponse{
		Environment: s.environment, Debug: true, GoVersion: runtime.Version(), Goroutines: runtime.NumGoroutine(),
		Memory: Memory{AllocMB: m.Alloc >> 20, TotalAllocMB: m.TotalAlloc >> 20, SysMB: m.Sys >> 20, NumGC: m.NumGC},
		Database: Database{
			Host: cc.Host, Port: int(cc.Port), Database: cc.Database,
			PoolTotal: st.TotalConns(), PoolIdle: st.IdleConns(), PoolInUse: st.AcquiredConns(), MaxConns: st.MaxConns(),
		},
	}
}

type (
	healthOut struct {
		Status int
		Body   Response
	}
	readyOut struct {
		Status int
		Body   ReadyResponse
	}
	aliveOut struct {
		Body struct {
			Status string `json:"status"`
		}
	}
)

// Register adds the probes; /debug only outside production.
func Register(api huma.API, s *Service, production bool) {
	public := auth.Rule{Resource: auth.Public}
	health := func(ctx context.Context, _ *struct{}) (*healthOut, error) {
		r := s.Health(ctx)
		status := http.StatusOK
		if r.Status != "healthy" {
			status = http.StatusServiceUnavailable
		}
		return &healthOut{Status: status, Body: r}, nil
	}
	for id, p := range map[string]string{"health": "/health", "api-health": "/api/health"} {
		op := httpapi.Op(id, http.MethodGet, p, "Health of the service and its dependencies", public)
		op.Responses = map[string]*huma.Response{"503": {Description: "Unhealthy; the body is a normal health body."}}
		huma.Register(api, op, health)
	}
	huma.Register(api, httpapi.Op("ready", http.MethodGet, "/ready", "Readiness to receive traffic", public),
		func(ctx context.Context, _ *struct{}) (*readyOut, error) {
			r := s.Ready(ctx)
			status := http.StatusOK
			if r.Status != "ready" {
				status = http.StatusServiceUnavailable
			}
			return &readyOut{Status: status, Body: r}, nil
		})
	huma.Register(api, httpapi.Op("healthz", http.MethodGet, "/healthz", "Liveness", public),
		func(context.Context, *struct{}) (*aliveOut, error) {
			out := &aliveOut{}
			out.Body.Status = "alive"
			return out, nil
		})
	if !production {
		huma.Register(api, httpapi.Op("debug", http.MethodGet, "/debug", "Runtime snapshot (superadmins; not in production)",
			auth.Rule{Scope: auth.AdminRead, Resource: auth.Superadmin}),
			func(context.Context, *struct{}) (*httpapi.Out[DebugResponse], error) {
				return &httpapi.Out[DebugResponse]{Body: s.Debug()}, nil
			})
	}
}
