package scheduler

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
)

// Metrics is the body of GET /api/metrics/scheduler.
type Metrics struct {
	Message string      `json:"message,omitempty"`
	Tasks   []TaskState `json:"tasks"`
}

// FailedMessage is the lastError tenants see: a task's raw error may name
// hosts, addresses and queries of the deployment.
const FailedMessage = "task failed"

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
