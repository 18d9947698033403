package jobqueue

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// PublishCompletedFunc is the OutcomeFunc of a queue whose outcomes need
// nothing but their announcement: job.completed (Outcome.PublishCompleted)
// for every job of queue that ended, dated now() once per batch.
func PublishCompletedFunc(queue string, now func() time.Time) OutcomeFunc {
	return func(ctx context.Context, tx pgx.Tx, outcomes []Outcome) error {
		at := now()
		for _, o := range outcomes {
			if err := o.PublishCompleted(ctx, tx, queue, at); err != nil {
				return err
			}
		}
		return nil
	}
}
