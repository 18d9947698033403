package scheduler

import (
	"context"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// Metrics is the body of GET /api/metrics/scheduler.
type Metrics struct {
	Message string      `json:"message,omitempty"`
	Tasks   []TaskState `json:"tasks"`
}

// FailedMessage is the lastError tenants see: a task's raw error may name
// hosts, addresses and queries of the deployment.
const FailedMessage = "task failed"

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

// Report is the periodic tasks' state as p may see it. Superadmins see
// every task's raw last error and the process that ran it (leader);
// everyone else (project-scoped tokens of superadmins included, as on
// superadmin routes) sees FailedMessage and no leader.
func (s *Scheduler) Report(ctx context.Context, p *auth.Principal) (Metrics, error) {
	states, err := States(ctx, s.cfg.Pool)
	if err != nil {
		return Metrics{}, err
	}
	failing := 0
	for _, t := range states {
		if t.LastError != "" {
			failing++
		}
	}
	if p == nil || !p.Superadmin || p.BoundProject != uuid.Nil {
		for i := range states {
			states[i] = sanitized(states[i])
		}
	}
	msg := fmt.Sprintf("%d periodic tasks, %d failing on their last run", len(states), failing)
	return Metrics{Message: msg, Tasks: states}, nil
}

// sanitized is what a tenant may see of t.
func sanitized(t TaskState) TaskState {
	if t.LastError != "" {
		t.LastError = FailedMessage
	}
	t.Leader = ""
	return t
}
