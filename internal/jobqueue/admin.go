package jobqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Notify wakes the workers of queue. Call it in the transaction that
// inserted the jobs (PostgreSQL delivers it at commit), at most once per
// queue per transaction: NOTIFY serialises commits.
func Notify(ctx context.Context, db postgres.DBTX, queue string) error {
	if _, err := db.Exec(ctx, `SELECT pg_notify($1, '')`, ChannelPrefix+queue); err != nil {
		return fmt.Errorf("notify %s: %w", queue, err)
	}
	return nil
}

// Cancel cancels a job of queue: a queued job at once; a running job in the
// database at once and in its worker (any process) within a second, its
// handler's context being cancelled with cause ErrCancelled. db is a pool or
// the caller's transaction (the worker hears of it at commit).
//
// Errors: errs.NotFound for an unknown id; errs.FailedPrecondition when the
// job already ended.
func (c *Client) Cancel(ctx context.Context, db postgres.DBTX, queue string, id uuid.UUID) error {
	q, err := c.queue(queue)
	if err != nil {
		return err
	}
	prev, changed, found, err := jobTransition(ctx, db, q.sql.cancel, c.now(), id, channelCancel)
	if err != nil {
		return fmt.Errorf("cancel %s job %s: %w", queue, id, err)
	}
	if !found {
		return errs.Errorf(errs.NotFound, "job %s not found", id)
	}
	if !changed {
		return errs.Errorf(errs.FailedPrecondition, "job %s is %s; only queued or running jobs can be cancelled", id, prev)
	}
	if prev == StatusRunning {
		c.cancelJobs(id) // ours: no need to wait for the notification
	}
	return nil
}

// Retry puts a failed job of queue back in the queue with its retry count
// reset and its error cleared, and wakes the workers. db is a pool or the
// caller's transaction (so a domain can log "manual retry" with it).
//
// Errors: errs.NotFound for an unknown id; errs.FailedPrecondition when the
// job is not failed.
func (c *Client) Retry(ctx context.Context, db postgres.DBTX, queue string, id uuid.UUID) error {
	q, err := c.queue(queue)
	if err != nil {
		return err
	}
	prev, changed, found, err := jobTransition(ctx, db, q.sql.retry, c.now(), id, ChannelPrefix+queue)
	if err != nil {
		return fmt.Errorf("retry %s job %s: %w", queue, id, err)
	}
	if !found {
		return errs.Errorf(errs.NotFound, "job %s not found", id)
	}
	if !changed {
		return errs.Errorf(errs.FailedPrecondition, "job %s is %s; only failed jobs can be retried", id, prev)
	}
	return nil
}

// Settings is a queue's effective runtime configuration in this process.
type Settings struct {
	Concurrency int
	BatchSize   int
	Paused      bool
	InFlight    int // batches running now in this process
}

// Settings returns queue's effective settings in this process.
func (c *Client) Settings(queue string) (Settings, error) {
	q, err := c.queue(queue)
	if err != nil {
		return Settings{}, err
	}
	if q.cfg.Handler == nil {
		// No producer loop reloads a declared queue's settings: do it here.
		q.mu.Lock()
		stale := time.Since(q.settingsAt) > c.cfg.SettingsInterval
		q.mu.Unlock()
		if q.settingsDirty.Swap(false) || stale {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := q.reloadSettings(ctx)
			cancel()
			if err != nil {
				return Settings{}, err
			}
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return Settings{Concurrency: q.concurrency, BatchSize: q.batchSize, Paused: q.paused, InFlight: q.inflight}, nil
}

// SetConcurrency sets the batches in flight per process for queue, in every
// process, persistently. Errors: errs.Invalid outside 1..MaxBatch.
func (c *Client) SetConcurrency(ctx context.Context, queue string, n int) error {
	if n < 1 || n > MaxBatch {
		return errs.Errorf(errs.Invalid, "concurrency must be between 1 and %d", MaxBatch)
	}
	return c.setSetting(ctx, queue, "concurrency", n)
}

// SetBatchSize sets the jobs claimed per batch for queue, in every process,
// persistently. Errors: errs.Invalid outside 1..MaxBatch.
func (c *Client) SetBatchSize(ctx context.Context, queue string, n int) error {
	if n < 1 || n > MaxBatch {
		return errs.Errorf(errs.Invalid, "batch size must be between 1 and %d", MaxBatch)
	}
	return c.setSetting(ctx, queue, "batch_size", n)
}

// Pause stops every process claiming jobs of queue; batches in flight
// finish.
func (c *Client) Pause(ctx context.Context, queue string) error {
	return c.setSetting(ctx, queue, "paused", true)
}

// Resume lets every process claim jobs of queue again.
func (c *Client) Resume(ctx context.Context, queue string) error {
	return c.setSetting(ctx, queue, "paused", false)
}

func (c *Client) setSetting(ctx context.Context, queue, column string, value any) error {
	q, err := c.queue(queue)
	if err != nil {
		return err
	}
	if err := settingsUpsert(ctx, c.pool, c.now(), queue, column, value); err != nil {
		return err
	}
	// Apply here at once rather than waiting for our own notification.
	if err := q.reloadSettings(ctx); err != nil {
		return err
	}
	q.wakeUp(true)
	return nil
}

// QueueStats counts one queue's jobs. LastHour and Last24Hours count jobs
// created in that window.
type QueueStats struct {
	Queue       string
	Pending     int64 // queued
	Processing  int64 // running
	Completed   int64 // completed or requires_review
	Failed      int64
	Cancelled   int64
	Total       int64
	LastHour    int64
	Last24Hours int64
}

// Stats counts the jobs of every queue of the client, of one project when
// projectID is not nil. It scans the job tables: for an API, not a loop.
func (c *Client) Stats(ctx context.Context, projectID *uuid.UUID) ([]QueueStats, error) {
	now := c.now()
	out := make([]QueueStats, 0, len(c.order))
	for _, q := range c.order {
		s := QueueStats{Queue: q.cfg.Name}
		err := c.pool.QueryRow(ctx, q.sql.stats, now, projectID).Scan(
			&s.Pending, &s.Processing, &s.Completed, &s.Failed, &s.Cancelled, &s.Total, &s.LastHour, &s.Last24Hours)
		if err != nil {
			return nil, fmt.Errorf("job stats of %s: %w", q.cfg.Name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// FinishInTx records the success of job j (StatusCompleted or
// StatusRequiresReview) in tx, the handler's own transaction, so that the
// job's results and its final status commit together: a crash between the
// two cannot leave committed results under a job that runs again, and a
// cancel arriving while tx commits finds the job final instead of marking
// committed work as cancelled. Every handler finishes its successful jobs
// this way (FinishBatchInTx for a batch). The queue's outcome hooks run in
// tx too. When the job is no longer running at this attempt under this
// client (cancelled or reaped), it answers ErrCancelled and the caller
// rolls tx back. The handler then returns as usual (the error, or nil);
// the engine finds the job already final.
func (c *Client) FinishInTx(ctx context.Context, tx pgx.Tx, queue string, j Job, status Status) error {
	return c.FinishBatchInTx(ctx, tx, queue, []Job{j}, status)
}

// FinishBatchInTx is FinishInTx for several jobs of one queue, in one
// statement: a batched handler finishes, in the transaction that writes
// their results, the jobs whose results that transaction writes (all of the
// batch, or the successful part of it; the others get their errors from
// the handler's return value as usual). It is all or nothing: unless every
// job is still running at its attempt under this client, it answers
// ErrCancelled and the caller rolls tx back, then returns ErrCancelled (or
// an error wrapping it) for those jobs; the engine puts the ones it still
// owns back in the queue without counting a failure.
func (c *Client) FinishBatchInTx(ctx context.Context, tx pgx.Tx, queue string, jobs []Job, status Status) error {
	if status != StatusCompleted && status != StatusRequiresReview {
		return fmt.Errorf("finish in tx: %s is not a success status", status)
	}
	q, err := c.queue(queue)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		return nil
	}
	now := c.now()
	ups := make([]update, 0, len(jobs))
	seen := make(map[uuid.UUID]bool, len(jobs))
	for _, j := range jobs {
		if j.Queue != "" && j.Queue != queue {
			return fmt.Errorf("finish in tx: job %s belongs to queue %s, not %s", j.ID, j.Queue, queue)
		}
		if seen[j.ID] {
			continue
		}
		seen[j.ID] = true
		ups = append(ups, update{job: j, decision: decision{status: status, retryCount: j.RetryCount, completed: &now}})
	}
	ids, err := q.jobFinish(ctx, tx, now, &c.workerID, ups)
	if err != nil {
		return err
	}
	if len(ids) != len(ups) {
		return ErrCancelled
	}
	q.account(ups, ids)
	q.callHooks(ctx, tx, ups, ids)
	return nil
}
