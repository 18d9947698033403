package scheduler

import (
	"context"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// Metrics is the body of GET /api/metrics/scheduler.
type Metrics struct {
	Message string      `json:"message,omitempty"`
	Tasks   []TaskState `json:"tasks"`
}

// Register adds GET /api/metrics/scheduler.
func Register(api huma.API, s *Scheduler) {
	huma.Register(api, httpapi.Op("scheduler-metrics", http.MethodGet, "/api/metrics/scheduler", "Periodic tasks: last and next runs, durations, errors",
		auth.Rule{Scope: auth.AdminRead, Resource: auth.Authenticated}),
		func(ctx context.Context, _ *struct{}) (*httpapi.Out[Metrics], error) {
			states, err := States(ctx, s.cfg.Pool)
			if err != nil {
				return nil, err
			}
			failing := 0
			for _, t := range states {
				if t.LastError != "" {
					failing++
				}
			}
			msg := fmt.Sprintf("%d periodic tasks, %d failing on their last run", len(states), failing)
			return &httpapi.Out[Metrics]{Body: Metrics{Message: msg, Tasks: states}}, nil
		})
}
