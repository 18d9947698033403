package scheduler

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// Register adds GET /api/metrics/scheduler (Scheduler.Report).
func Register(api huma.API, s *Scheduler) {
	huma.Register(api, httpapi.Op("scheduler-metrics", http.MethodGet, "/api/metrics/scheduler", "Periodic tasks: last and next runs, durations, errors",
		auth.Rule{Scope: auth.AdminRead, Resource: auth.Authenticated}), handlers{s: s}.metrics)
}

// handlers are the scheduler's API handlers.
type handlers struct {
	s *Scheduler
}

func (h handlers) metrics(ctx context.Context, _ *struct{}) (*httpapi.Out[Metrics], error) {
	return httpapi.Reply(h.s.Report(ctx, auth.PrincipalFrom(ctx)))
}
