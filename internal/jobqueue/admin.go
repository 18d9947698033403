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

// Changed is a job as a transition (Cancel, Retry, CancelWhere,
// RetryWhere) left it, with what the transition replaced, so that the
// caller needs no second read (river's JobCancel and JobRetry return the
// row too).
type Changed struct {
	Job
	Status    Status
	UpdatedAt time.Time // the transition's clock reading
	Previous  Previous
}

// Previous is what a transition replaced.
type Previous struct {
	Status     Status
	ErrorMsg   *string
	RetryCount int
}

// Cancel cancels a job of queue and returns it: a queued job at once; a
// running job in the database at once and in its worker (any process)
// within a second, its handler's context being cancelled with cause
// ErrCancelled. db is a pool or the caller's transaction (the worker hears
// of it at commit). It is one statement.
//
// Errors: errs.NotFound for an unknown id; errs.FailedPrecondition when the
// job already ended.
func (c *Client) Cancel(ctx context.Context, db postgres.DBTX, queue string, id uuid.UUID) (Changed, error) {
	return c.transitionOne(ctx, db, queue, cancelling(), id)
}

// Retry puts a failed job of queue back in the queue with its retry count
// reset and its error cleared, wakes the workers and returns the job (its
// Previous holds the error and retry count it had). db is a pool or the
// caller's transaction (so a domain can log "manual retry" with it). It
// is one statement.
//
// Errors: errs.NotFound for an unknown id; errs.FailedPrecondition when the
// job is not failed.
func (c *Client) Retry(ctx context.Context, db postgres.DBTX, queue string, id uuid.UUID) (Changed, error) {
	return c.transitionOne(ctx, db, queue, retrying(), id)
}

// Where selects the jobs of a queue for CancelWhere and RetryWhere.
type Where struct {
	// ProjectID limits the jobs to one project; nil: every project.
	ProjectID *uuid.UUID
	// Statuses limits the jobs to these states, among those the
	// transition applies to; empty: all of those.
	Statuses []Status
	// Column, when set, limits the jobs to those whose domain column of
	// that name equals Equals (document_id = a document).
	Column string
	Equals any
	// IDs, when set, limits the jobs to these ids.
	IDs []uuid.UUID
}

// CancelWhere cancels, in one statement, the jobs of queue that w selects
// (queued or running) and returns them, as Cancel does one job. db is a
// pool or the caller's transaction. Errors: errs.Invalid for a status that
// cannot be cancelled.
func (c *Client) CancelWhere(ctx context.Context, db postgres.DBTX, queue string, w Where) ([]Changed, error) {
	return c.transitionWhere(ctx, db, queue, cancelling(), w)
}

// RetryWhere retries, in one statement, the failed jobs of queue that w
// selects and returns them, as Retry does one job. db is a pool or the
// caller's transaction. Errors: errs.Invalid for a status other than
// failed.
func (c *Client) RetryWhere(ctx context.Context, db postgres.DBTX, queue string, w Where) ([]Changed, error) {
	return c.transitionWhere(ctx, db, queue, retrying(), w)
}

// transitionOne runs t on job id; it alone decides "not found" and "in the
// wrong state".
func (c *Client) transitionOne(ctx context.Context, db postgres.DBTX, queue string, t transition, id uuid.UUID) (Changed, error) {
	q, err := c.queue(queue)
	if err != nil {
		return Changed{}, err
	}
	rows, err := q.jobTransition(ctx, db, t, c.now(), `id = $4`, id)
	if err != nil {
		return Changed{}, err
	}
	if len(rows) == 0 {
		return Changed{}, errs.Errorf(errs.NotFound, "job %s not found", id)
	}
	if !rows[0].changed {
		return Changed{}, errs.Errorf(errs.FailedPrecondition, "job %s is %s; %s", id, rows[0].Status, t.refusal)
	}
	return c.changed(rows)[0], nil
}

func (c *Client) transitionWhere(ctx context.Context, db postgres.DBTX, queue string, t transition, w Where) ([]Changed, error) {
	q, err := c.queue(queue)
	if err != nil {
		return nil, err
	}
	statuses, err := w.statuses(t.from, t.verb, t.refusal)
	if err != nil {
		return nil, err
	}
	where, args := w.clause(5)
	where = `status = ANY($4) AND ` + where
	args = append([]any{names(statuses)}, args...)
	rows, err := q.jobTransition(ctx, db, t, c.now(), where, args...)
	if err != nil {
		return nil, err
	}
	return c.changed(rows), nil
}

// changed returns the jobs of rows the transition changed. The handlers
// of those that were running are not cancelled here: the caller's
// transaction may still roll back. Their workers, this process's
// included, hear of it by the notification delivered at commit.
func (c *Client) changed(rows []transitionRow) []Changed {
	out := make([]Changed, 0, len(rows))
	for _, r := range rows {
		if r.changed {
			out = append(out, r.Changed)
		}
	}
	return out
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
// the engine finds the job already final. When a hook loses a deadlock or
// a serialization conflict (postgres.IsTxConflict), it answers that error
// and tx, aborted, must be rolled back: the handler runs its transaction
// in postgres.WithTxRetryDeadlock, which runs it again, so that results,
// status and the hooks' writes commit together or not at all; the
// transaction's function must then be safe to run again (its inputs
// computed before it, nothing kept in memory from a run that rolled
// back).
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
	return q.settleInTx(ctx, tx, now, &c.workerID, ups, "finish in tx")
}

// WaitInTx puts the running job j back in the queue until until, in tx,
// the handler's transaction, without counting a failure: a job that waits
// for something outside the engine (an agent run's question to a person)
// records what it waits for and gives its worker back in one commit. Wake
// (or until coming) runs it again, from its handler's start. As with
// FinishInTx, the queue's outcome hooks run in tx (with status queued),
// ErrCancelled means the job is no longer running at this attempt under
// this client (the caller rolls tx back), and the handler then returns nil:
// the engine finds the job no longer running and leaves it.
func (c *Client) WaitInTx(ctx context.Context, tx pgx.Tx, queue string, j Job, until time.Time) error {
	q, err := c.queue(queue)
	if err != nil {
		return err
	}
	if j.Queue != "" && j.Queue != queue {
		return fmt.Errorf("wait in tx: job %s belongs to queue %s, not %s", j.ID, j.Queue, queue)
	}
	ups := []update{{job: j, decision: decision{status: StatusQueued, retryCount: j.RetryCount, runAt: &until}}}
	return q.settleInTx(ctx, tx, c.now(), &c.workerID, ups, "wait in tx")
}

// settleInTx writes ups, a handler's own outcome for jobs worker runs, in
// tx, the handler's transaction (FinishBatchInTx, WaitInTx): all or
// nothing, ErrCancelled unless every job is still running at its attempt
// under worker. Then it publishes their job.started first where needed
// (startedFirst), runs the outcome hooks in tx and notes the jobs for
// accounting (noteInTx). op prefixes the hooks' errors.
func (q *queue) settleInTx(ctx context.Context, tx pgx.Tx, now time.Time, worker *string, ups []update, op string) error {
	ids, err := q.jobFinish(ctx, tx, now, worker, ups)
	if err != nil {
		return err
	}
	if len(ids) != len(ups) {
		return ErrCancelled
	}
	if err := q.startedFirst(ctx, tx, jobsOf(ups)); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := q.callHooks(ctx, tx, ups, ids); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	q.noteInTx(ups)
	return nil
}

// Wake makes a queued job of queue due now and wakes the workers: the end
// of a wait (WaitInTx) before its time. The job starts afresh: its
// started_at is cleared, so that the rate-limit hour (RateLimitMaxWait)
// counts from its next start, not from before a wait of any length. db is
// a pool or the caller's transaction. It is one statement.
//
// Errors: errs.NotFound for an unknown id; errs.FailedPrecondition when the
// job is not queued.
func (c *Client) Wake(ctx context.Context, db postgres.DBTX, queue string, id uuid.UUID) (Changed, error) {
	return c.transitionOne(ctx, db, queue, waking(), id)
}
