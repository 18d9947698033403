// Package jobqueue is the one job engine for every queue. Jobs are rows of
// ordinary domain tables that share a common column block (CommonColumns);
// the engine claims them with FOR UPDATE SKIP LOCKED, runs them in batches
// under a lease kept alive by heartbeats, retries failures with backoff,
// returns the jobs of crashed workers to the queue, and cancels running
// jobs across processes through LISTEN/NOTIFY.
//
// Domains insert job rows themselves, in the transaction that creates the
// data the job needs, and call Notify in that transaction so that an idle
// worker wakes at once. Handlers read their domain columns themselves.
package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/postgres"
)

// CommonColumns is the column block every job table starts with. Domain
// migrations copy it verbatim, then add their own columns,
// TraceParentColumn and the two indexes (QueuedIndex, RunningIndex):
//
//	CREATE TABLE document_parsing_jobs (
//	    id            uuid PRIMARY KEY,
//	    project_id    uuid,
//	    ... (the rest of CommonColumns) ...
//	    updated_at    timestamptz NOT NULL,
//	    document_id   uuid NOT NULL REFERENCES documents (id),
//	    trace_parent  text
//	);
//	CREATE INDEX document_parsing_jobs_queued_idx ON document_parsing_jobs (priority DESC, run_at, id) WHERE status = 'queued';
//	CREATE INDEX document_parsing_jobs_running_idx ON document_parsing_jobs (locked_until) WHERE status = 'running';
//
// project_id is nullable only for platform jobs (email); tenant queues add
// `ALTER TABLE ... ALTER COLUMN project_id SET NOT NULL` and a foreign key
// to projects. The engine never fills defaults from the database clock:
// inserts give run_at, created_at and updated_at from the injected clock.
const CommonColumns = `id            uuid PRIMARY KEY,
    project_id    uuid,
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled','requires_review')),
    priority      int NOT NULL DEFAULT 0,
    run_at        timestamptz NOT NULL,
    attempt       int NOT NULL DEFAULT 0,
    retry_count   int NOT NULL DEFAULT 0,
    max_retries   int NOT NULL DEFAULT 3,
    locked_by     text,
    locked_until  timestamptz,
    heartbeat_at  timestamptz,
    error_msg     text,
    started_at    timestamptz,
    completed_at  timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL`

// TraceParentColumn is the column every job table has besides
// CommonColumns, after its domain columns (migration 00033 added it to the
// tables made before): the W3C traceparent of the span that queued the
// job, which domains insert with TraceParent(ctx), NULL outside a trace.
const TraceParentColumn = `trace_parent  text`

// QueuedIndex is the key and predicate of the partial index that claims
// walk: `CREATE INDEX <table>_queued_idx ON <table> ` + QueuedIndex.
const QueuedIndex = `(priority DESC, run_at, id) WHERE status = 'queued'`

// RunningIndex is the key and predicate of the partial index that keeps
// lease reaping and the per-project cap cheap however many finished rows the
// table holds: `CREATE INDEX <table>_running_idx ON <table> ` + RunningIndex.
const RunningIndex = `(locked_until) WHERE status = 'running'`

// CreateTableSQL returns the statements creating a job table with the
// common columns followed by extra (domain columns, may be empty),
// TraceParentColumn and both indexes. Migrations are plain SQL and spell
// this out; tests and the benchmark use it.
func CreateTableSQL(table, extra string) string {
	t := pgx.Identifier{table}.Sanitize()
	cols := CommonColumns
	if extra != "" {
		cols += ",\n    " + extra
	}
	cols += ",\n    " + TraceParentColumn
	return fmt.Sprintf("CREATE TABLE %s (\n    %s\n);\nCREATE INDEX %s ON %s %s;\nCREATE INDEX %s ON %s %s;",
		t, cols,
		pgx.Identifier{table + "_queued_idx"}.Sanitize(), t, QueuedIndex,
		pgx.Identifier{table + "_running_idx"}.Sanitize(), t, RunningIndex)
}

// Status is a job's state, as stored in the status column.
type Status string

// The job states. Completed, Failed, Cancelled and RequiresReview are final.
const (
	StatusQueued         Status = "queued"
	StatusRunning        Status = "running"
	StatusCompleted      Status = "completed"
	StatusFailed         Status = "failed"
	StatusCancelled      Status = "cancelled"
	StatusRequiresReview Status = "requires_review"
)

// Statuses are the job states, in lifecycle order: the one list every
// validation, message and schema of a job's status derives from.
func Statuses() []Status {
	return []Status{StatusQueued, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled, StatusRequiresReview}
}

// FinalStatuses are the states Final reports, in lifecycle order.
func FinalStatuses() []Status {
	return slices.DeleteFunc(Statuses(), func(s Status) bool { return !s.Final() })
}

// Valid reports whether s is a job state.
func (s Status) Valid() bool {
	return slices.Contains(Statuses(), s)
}

// Final reports whether s is a state a job does not leave by itself.
func (s Status) Final() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled || s == StatusRequiresReview
}

// Describe lists ss for a message: "queued, running or failed".
func Describe(ss []Status) string {
	if len(ss) == 0 {
		return ""
	}
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Job is the common part of a claimed job row. Handlers load their domain
// columns by ID themselves.
type Job struct {
	ID         uuid.UUID
	Queue      string
	ProjectID  *uuid.UUID // nil for platform jobs
	Priority   int
	RunAt      time.Time
	Attempt    int // starts so far, this one included
	RetryCount int // failed attempts that were retried
	MaxRetries int
	StartedAt  time.Time // first start since the job was queued or manually retried
	CreatedAt  time.Time
	// TraceParent is the W3C traceparent stored when the job was queued
	// ("" when none): the batch's span continues that trace.
	TraceParent string
}

// Handler works a batch of jobs of one queue. It returns one result per job,
// in order: nil for success, ErrRequiresReview to end the job in
// requires_review, Permanent(err) to fail it without retrying,
// RateLimited(err, d) to run it again after d without consuming a retry, any
// other error to retry it with backoff. ctx ends when a job of the batch is
// cancelled (context.Cause is ErrCancelled) or the client shuts down hard
// (ErrShutdown); writes a handler makes belong in a transaction on ctx, so
// that they are rolled back then.
//
// Exactly once: a handler that writes results commits them with the final
// status of their jobs, calling FinishInTx (or FinishBatchInTx for a batch)
// in the transaction that writes them, and returns nil for those jobs. A
// crash can then never leave committed results under a job that runs
// again. ErrCancelled (or an error wrapping it) as a job's result puts the
// job back in the queue without counting a failure.
type Handler interface {
	Work(ctx context.Context, jobs []Job) []error
}

type jobsKey struct{}

// JobsFrom returns the jobs that the handler owning ctx works on, nil
// outside a handler; code deep in a handler's call tree (the provider
// ledger) uses it to attribute its work to a job.
func JobsFrom(ctx context.Context) []Job {
	jobs, _ := ctx.Value(jobsKey{}).([]Job)
	return jobs
}

// ContextWithJobs returns ctx carrying jobs, as a handler's context does
// (for code that runs work outside the engine, and for tests).
func ContextWithJobs(ctx context.Context, jobs []Job) context.Context {
	return context.WithValue(ctx, jobsKey{}, jobs)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, jobs []Job) []error

// Work calls f.
func (f HandlerFunc) Work(ctx context.Context, jobs []Job) []error { return f(ctx, jobs) }

// EachFunc is a Handler that runs f for each job of the batch in turn.
func EachFunc(f func(ctx context.Context, job Job) error) HandlerFunc {
	return func(ctx context.Context, jobs []Job) []error {
		out := make([]error, len(jobs))
		for i, j := range jobs {
			out[i] = f(ctx, j)
		}
		return out
	}
}

// FailAll is the result of a batch that failed as a whole: err for each
// of its n jobs.
func FailAll(n int, err error) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// IDs are the ids of jobs, in order.
func IDs(jobs []Job) []uuid.UUID {
	ids := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// Sentinel errors and context causes.
var (
	// ErrRequiresReview, returned (or wrapped) as a job's result, ends the
	// job successfully in requires_review.
	ErrRequiresReview = errors.New("job requires review")
	// ErrCancelled is the context cause a handler sees when a job of its
	// batch was cancelled (or its lease was lost to the reaper).
	ErrCancelled = errors.New("job cancelled")
	// ErrShutdown is the context cause a handler sees when the client stops
	// and the grace period ran out; its jobs go back to the queue.
	ErrShutdown = errors.New("job engine shutting down")
	// ErrLeaseExpired is the error recorded for a job whose worker stopped
	// heartbeating.
	ErrLeaseExpired = errors.New("lease expired: the worker stopped heartbeating")
)

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying (bad input, unsupported file):
// the job fails at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err was marked with Permanent, or is text
// PostgreSQL refuses to store (a NUL character, an invalid byte sequence):
// another attempt would write the same bytes.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p) || postgres.IsUnstorableText(err)
}

type rateLimitedError struct {
	err        error
	retryAfter time.Duration
}

func (e *rateLimitedError) Error() string { return e.err.Error() }
func (e *rateLimitedError) Unwrap() error { return e.err }

// RateLimited marks err as a rate limit: the job runs again after retryAfter
// without consuming a retry, until it has been waiting for RateLimitMaxWait
// since it first started; then it fails with err's message.
func RateLimited(err error, retryAfter time.Duration) error {
	if err == nil {
		return nil
	}
	return &rateLimitedError{err: err, retryAfter: retryAfter}
}

// RetryAfterOf reports whether err was marked with RateLimited, and its
// delay.
func RetryAfterOf(err error) (time.Duration, bool) {
	var rl *rateLimitedError
	if errors.As(err, &rl) {
		return rl.retryAfter, true
	}
	return 0, false
}

// Defaults.
const (
	// LeaseDefault is how long a claimed job stays owned without a
	// heartbeat. Heartbeats come every third of it.
	LeaseDefault = 30 * time.Second
	// PollIntervalDefault is the fallback poll for lost notifications and
	// jobs whose run_at was in the future.
	PollIntervalDefault = 2 * time.Second
	// ReapIntervalDefault is how often each client looks for expired leases.
	ReapIntervalDefault = time.Second
	// DepthIntervalDefault is how often the queue depth gauge is refreshed.
	DepthIntervalDefault = 5 * time.Second
	// SettingsIntervalDefault is the fallback reload of runtime settings.
	SettingsIntervalDefault = 10 * time.Second
	// RateLimitMaxWait bounds the time a job keeps waiting on rate limits.
	RateLimitMaxWait = time.Hour
	// RateLimitRetryDefault is used when RateLimited is given no delay.
	RateLimitRetryDefault = 30 * time.Second
	// AutoConcurrencyMax bounds a concurrency derived by
	// QueueConfig.ConcurrencyFunc.
	AutoConcurrencyMax = 64
	// MaxBatch bounds concurrency and batch size.
	MaxBatch = 1000
	// errorMsgMax bounds the stored error message.
	errorMsgMax = 4000
)

// Outcome is what became of one job attempt, handed to QueueConfig.OutcomeFunc.
type Outcome struct {
	Job Job
	// Status is the job's new state: completed or requires_review on
	// success, queued when it will run again (retry or rate limit), failed
	// when it gave up.
	Status Status
	// Err is the handler's error (or ErrLeaseExpired for a reaped job);
	// nil on success.
	Err error
	// RunAt is when a re-queued job runs again.
	RunAt time.Time
}

// FinalFailure reports whether the job gave up: it failed after its last
// retry, at once on a permanent error, or after waiting on rate limits for
// too long. A failure that will be retried has Status queued instead; a
// cancelled job has no outcome.
func (o Outcome) FinalFailure() bool { return o.Status == StatusFailed }

// PublishCompleted publishes job.completed (queue, job id, status and the
// error if any) in tx when o is final and belongs to a project; otherwise
// it does nothing.
func (o Outcome) PublishCompleted(ctx context.Context, tx pgx.Tx, queue string, now time.Time) error {
	if !o.Status.Final() || o.Job.ProjectID == nil {
		return nil
	}
	data := map[string]any{"queue": queue, "jobId": o.Job.ID, "status": o.Status}
	if o.Err != nil {
		data["error"] = o.Err.Error()
	}
	if _, err := events.Publish(ctx, tx, events.TypeJobCompleted, o.Job.ProjectID, nil, data, now); err != nil {
		return fmt.Errorf("publish job.completed: %w", err)
	}
	return nil
}

// PublishStarted publishes job.started on db (a pool or the caller's
// transaction) for a claimed batch of queue: one event per project of the
// batch (its jobs' ids, status running), none for jobs without a project;
// one statement. It is what job.completed is to a job's end, per batch
// rather than per job: claims are frequent.
func PublishStarted(ctx context.Context, db postgres.DBTX, queue string, jobs []Job, now time.Time) error {
	var evs []events.ProjectEvent
	byProject := map[uuid.UUID]*startedData{}
	for _, j := range jobs {
		if j.ProjectID == nil {
			continue
		}
		d := byProject[*j.ProjectID]
		if d == nil {
			d = &startedData{Queue: queue, Status: StatusRunning, StartedAt: now.UTC()}
			byProject[*j.ProjectID] = d
			evs = append(evs, events.ProjectEvent{Type: events.TypeJobStarted, Project: *j.ProjectID, Data: d})
		}
		d.JobIDs = append(d.JobIDs, j.ID)
	}
	if err := events.PublishProjects(ctx, db, evs, now); err != nil {
		return fmt.Errorf("publish job.started: %w", err)
	}
	return nil
}

// startedData is the data of a job.started event.
type startedData struct {
	Queue     string      `json:"queue"`
	JobIDs    []uuid.UUID `json:"jobIds"`
	Status    Status      `json:"status"`
	StartedAt time.Time   `json:"startedAt"`
}

// OutcomeFunc is called with the outcomes of a batch (or of reaped jobs) in
// the transaction that records them.
type OutcomeFunc func(ctx context.Context, tx pgx.Tx, outcomes []Outcome) error
