package jobqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// QueueMetrics is one queue in GET /api/metrics/jobs (the spec's fields).
type QueueMetrics struct {
	Queue       string `json:"queue"`
	Pending     int64  `json:"pending"`
	Processing  int64  `json:"processing"`
	Completed   int64  `json:"completed"`
	Failed      int64  `json:"failed"`
	Total       int64  `json:"total"`
	LastHour    int64  `json:"last_hour"`
	Last24Hours int64  `json:"last_24_hours"`
}

// AllMetrics is the body of GET /api/metrics/jobs.
type AllMetrics struct {
	Queues    []QueueMetrics `json:"queues"`
	Timestamp string         `json:"timestamp"`
}

type metricsIn struct {
	ProjectID string `query:"projectId" doc:"Only this project's jobs; required unless the caller is a superadmin."`
}

// Enum is ss as a schema's enum values, for a status field of an API
// type (see extraction.Job's TransformSchema).
func Enum(ss []Status) []any {
	enum := make([]any, len(ss))
	for i, s := range ss {
		enum[i] = string(s)
	}
	return enum
}

// Register adds GET /api/metrics/jobs. Superadmins see every project's jobs
// unless they name one; everyone else names a project they can see (a
// project-scoped token's project is used when none is named).
func Register(api huma.API, c *Client) {
	rule := auth.Rule{Scope: auth.AdminRead, Resource: auth.ProjectOrAll, ProjectRole: auth.ProjectViewer}
	huma.Register(api, httpapi.Op("job-metrics", http.MethodGet, "/api/metrics/jobs", "Job counts per queue", rule), handlers{c: c}.metrics)
}

// handlers are jobqueue's API handlers.
type handlers struct {
	c *Client
}

func (h handlers) metrics(ctx context.Context, _ *metricsIn) (*httpapi.Out[AllMetrics], error) {
	var project *uuid.UUID
	if a := auth.AccessFrom(ctx); a.ProjectID != uuid.Nil {
		project = &a.ProjectID
	}
	stats, err := h.c.Stats(ctx, project)
	if err != nil {
		return nil, err
	}
	out := AllMetrics{Queues: make([]QueueMetrics, len(stats)), Timestamp: h.c.now().UTC().Format(time.RFC3339Nano)}
	for i, s := range stats {
		out.Queues[i] = QueueMetrics{
			Queue: s.Queue, Pending: s.Pending, Processing: s.Processing, Completed: s.Completed,
			Failed: s.Failed + s.Cancelled, Total: s.Total, LastHour: s.LastHour, Last24Hours: s.Last24Hours,
		}
	}
	return &httpapi.Out[AllMetrics]{Body: out}, nil
}

// WorkerStatus is GET /api/embeddings/status on the ops address.
type WorkerStatus struct {
	Paused      bool                   `json:"paused"`
	BatchSize   int                    `json:"batchSize"`
	Concurrency int                    `json:"concurrency"`
	Queues      map[string]QueueStatus `json:"queues"`
	// ThroughputLastMinute counts jobs of these queues finished in the
	// last minute, by every process.
	ThroughputLastMinute int64 `json:"throughputLastMinute"`
}

// QueueStatus is one queue of a WorkerStatus.
type QueueStatus struct {
	Paused              bool  `json:"paused"`
	BatchSize           int   `json:"batchSize"`
	Concurrency         int   `json:"concurrency"`
	InFlight            int   `json:"inFlightBatches" doc:"Batches running in this process."`
	Pending             int64 `json:"pending"`
	Processing          int64 `json:"processing"`
	Failed              int64 `json:"failed"`
	CompletedLastMinute int64 `json:"completedLastMinute"`
}

// Limits of PATCH /api/embeddings/config.
const (
	OpsBatchMax       = 1024
	OpsConcurrencyMax = 64
)

// WorkerControl serves the spec's embedding worker control endpoints for a
// group of queues (chunk and graph embedding) on the ops address: status,
// pause, resume and config, relative to where it is mounted
// (/api/embeddings; a chi router mounting it lends its problem answers for
// unknown routes and methods). Changes are stored and reach every process
// within a second.
func WorkerControl(c *Client, queues ...string) http.Handler {
	wc := workerControl{c: c, queues: queues}
	mux := chi.NewRouter()
	mux.Get("/status", wc.status)
	mux.Post("/pause", wc.pause)
	mux.Post("/resume", wc.resume)
	mux.Patch("/config", wc.config)
	return mux
}

// workerControl serves WorkerControl's endpoints for its queues.
type workerControl struct {
	c      *Client
	queues []string
}

func (wc workerControl) status(w http.ResponseWriter, r *http.Request) {
	wc.each(w, r, func(string) error { return nil })
}

func (wc workerControl) pause(w http.ResponseWriter, r *http.Request) {
	wc.each(w, r, func(q string) error { return wc.c.Pause(r.Context(), q) })
}

func (wc workerControl) resume(w http.ResponseWriter, r *http.Request) {
	wc.each(w, r, func(q string) error { return wc.c.Resume(r.Context(), q) })
}

func (wc workerControl) config(w http.ResponseWriter, r *http.Request) {
	var body struct {
		BatchSize   *int `json:"batchSize"`
		Concurrency *int `json:"concurrency"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		httpapi.WriteProblem(w, r, errs.Errorf(errs.Invalid, "body must be JSON {batchSize, concurrency}: %v", err))
		return
	}
	if body.BatchSize == nil && body.Concurrency == nil {
		httpapi.WriteProblem(w, r, errs.New(errs.Invalid, "give batchSize, concurrency or both"))
		return
	}
	if b := body.BatchSize; b != nil && (*b < 1 || *b > OpsBatchMax) {
		httpapi.WriteProblem(w, r, errs.Errorf(errs.Invalid, "batchSize must be between 1 and %d", OpsBatchMax))
		return
	}
	if n := body.Concurrency; n != nil && (*n < 1 || *n > OpsConcurrencyMax) {
		httpapi.WriteProblem(w, r, errs.Errorf(errs.Invalid, "concurrency must be between 1 and %d", OpsConcurrencyMax))
		return
	}
	wc.each(w, r, func(q string) error {
		if body.BatchSize != nil {
			if err := wc.c.SetBatchSize(r.Context(), q, *body.BatchSize); err != nil {
				return err
			}
		}
		if body.Concurrency != nil {
			return wc.c.SetConcurrency(r.Context(), q, *body.Concurrency)
		}
		return nil
	})
}

// each applies fn to every queue, then answers the queues' status.
func (wc workerControl) each(w http.ResponseWriter, r *http.Request, fn func(q string) error) {
	for _, q := range wc.queues {
		if err := fn(q); err != nil {
			httpapi.WriteProblem(w, r, err)
			return
		}
	}
	st, err := workerStatus(r.Context(), wc.c, wc.queues)
	if err != nil {
		httpapi.WriteProblem(w, r, err)
		return
	}
	writeJSON(w, st)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func workerStatus(ctx context.Context, c *Client, queues []string) (WorkerStatus, error) {
	out := WorkerStatus{Queues: map[string]QueueStatus{}, Paused: true}
	stats, err := c.Stats(ctx, nil)
	if err != nil {
		return out, err
	}
	byQueue := map[string]QueueStats{}
	for _, s := range stats {
		byQueue[s.Queue] = s
	}
	for i, name := range queues {
		set, err := c.Settings(name)
		if err != nil {
			return out, err
		}
		q, _ := c.queue(name)
		var lastMinute int64
		err = c.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE status = ANY($1) AND completed_at > $2`,
			pgx.Identifier{q.cfg.Table}.Sanitize()), []Status{StatusCompleted, StatusRequiresReview}, c.now().Add(-time.Minute)).Scan(&lastMinute)
		if err != nil && !errors.Is(err, context.Canceled) {
			return out, fmt.Errorf("throughput of %s: %w", name, err)
		}
		s := byQueue[name]
		out.Queues[name] = QueueStatus{
			Paused: set.Paused, BatchSize: set.BatchSize, Concurrency: set.Concurrency, InFlight: set.InFlight,
			Pending: s.Pending, Processing: s.Processing, Failed: s.Failed, CompletedLastMinute: lastMinute,
		}
		out.ThroughputLastMinute += lastMinute
		out.Paused = out.Paused && set.Paused
		if i == 0 {
			out.BatchSize, out.Concurrency = set.BatchSize, set.Concurrency
		}
	}
	return out, nil
}
