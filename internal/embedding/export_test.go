package embedding

import (
	"context"

	"github.com/graphmill/graphmill/internal/jobqueue"
)

// Work runs the worker's handler on claimed jobs, as the job engine would,
// so that a test can stop there (a crash before the engine records).
func Work(s *Service, ctx context.Context, jobs []jobqueue.Job) []error { //nolint:revive // test export
	return s.work(ctx, jobs)
}
