package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/postgres"
)

// queue is one registered queue in one client: its producer claims batches
// and runs each on its own goroutine.
type queue struct {
	c   *Client
	cfg QueueConfig
	sql queries

	wake          chan struct{}
	more          atomic.Bool // jobs may be waiting: claim when a slot is free
	settingsDirty atomic.Bool

	mu          sync.Mutex
	concurrency int
	fixed       bool // concurrency set at runtime: ConcurrencyFunc is ignored
	batchSize   int
	paused      bool
	inflight    int       // batches
	nextRunAt   time.Time // earliest run_at this client re-queued a job at
	settingsAt  time.Time // wall time of the last settings load
}

// batch is a set of jobs worked by one handler call.
type batch struct {
	queue     string
	jobs      []Job
	cancel    context.CancelCauseFunc
	cancelled map[uuid.UUID]bool // guarded by Client.mu
}

// entry is a running job of a client.
type entry struct {
	b   *batch
	job Job
}

func newQueue(c *Client, cfg QueueConfig) *queue {
	return &queue{
		c:           c,
		cfg:         cfg,
		sql:         buildQueries(cfg.Table, cfg.ClearOnFinal, cfg.QueuedKey),
		wake:        make(chan struct{}, 1),
		concurrency: cfg.Concurrency,
		batchSize:   cfg.BatchSize,
	}
}

// wakeUp makes the producer look again; more says jobs may have arrived.
func (q *queue) wakeUp(more bool) {
	if more {
		q.more.Store(true)
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) settingsChanged() {
	q.settingsDirty.Store(true)
	q.wakeUp(true)
}

func (q *queue) reloadSettings(ctx context.Context) error {
	s, err := settingsGet(ctx, q.c.pool, q.cfg.Name)
	if err != nil {
		return err
	}
	q.mu.Lock()
	q.concurrency, q.batchSize, q.paused = q.cfg.Concurrency, q.cfg.BatchSize, s.Paused
	q.fixed = s.Concurrency != nil
	if s.Concurrency != nil {
		q.concurrency = *s.Concurrency
	}
	if s.BatchSize != nil {
		q.batchSize = *s.BatchSize
	}
	q.settingsAt = time.Now()
	q.mu.Unlock()
	return nil
}

// produce is the producer loop: claim while slots are free and jobs may be
// waiting, then sleep until a notification, a finished batch or the poll.
func (q *queue) produce() {
	q.more.Store(true)
	timer := time.NewTimer(q.c.cfg.PollInterval)
	defer timer.Stop()
	for {
		if q.claimStopped() {
			return
		}
		q.mu.Lock()
		stale := time.Since(q.settingsAt) > q.c.cfg.SettingsInterval
		q.mu.Unlock()
		if q.settingsDirty.Swap(false) || stale {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := q.reloadSettings(ctx); err != nil {
				q.c.logger.Warn("loading queue settings failed", "queue", q.cfg.Name, "err", err)
			}
			cancel()
		}
		q.fill()
		timer.Reset(q.sleep())
		select {
		case <-q.c.stopClaim:
			return
		case <-q.wake:
		case <-timer.C:
			q.more.Store(true)
		}
	}
}

// claimStopped reports whether the client has stopped claiming.
func (q *queue) claimStopped() bool {
	select {
	case <-q.c.stopClaim:
		return true
	default:
		return false
	}
}

// sleep is how long to wait for the next poll: the poll interval, or less
// when a job this client re-queued becomes due sooner.
func (q *queue) sleep() time.Duration {
	d := q.c.cfg.PollInterval
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.nextRunAt.IsZero() {
		// Cleared only once due: an earlier wake-up must not lose it.
		until := q.nextRunAt.Sub(q.c.now())
		if until <= 0 {
			q.nextRunAt = time.Time{}
			q.more.Store(true)
			d = time.Millisecond
		} else {
			d = min(d, until)
		}
	}
	return d
}

// fill claims batches until the slots are full or the queue has nothing due.
func (q *queue) fill() {
	for {
		if q.claimStopped() {
			return
		}
		q.mu.Lock()
		free := !q.paused && q.inflight < slots(q.concurrency, q.fixed, q.cfg.ConcurrencyFunc)
		n := q.batchSize
		q.mu.Unlock()
		if !free || !q.more.Load() {
			return
		}
		// Cleared before claiming, so that a notification arriving during
		// the claim sets it again.
		q.more.Store(false)
		jobs, err := q.claim(n)
		if err != nil {
			q.c.logger.Warn("claiming jobs failed", "queue", q.cfg.Name, "err", err)
			return // the poll retries
		}
		if len(jobs) == 0 {
			return
		}
		if len(jobs) == n {
			q.more.Store(true)
		}
		q.launch(jobs)
	}
}

// slots is the number of batches a queue may run: its concurrency, raised
// to what derived asks (at most AutoConcurrencyMax) unless the concurrency
// was fixed at runtime.
func slots(concurrency int, fixed bool, derived func() int) int {
	if fixed || derived == nil {
		return concurrency
	}
	return max(concurrency, min(derived(), AutoConcurrencyMax))
}

func (q *queue) claim(n int) ([]Job, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if q.cfg.ProjectMax > 0 {
		return q.jobClaimCapped(ctx, q.c, q.c.now(), n)
	}
	return q.jobClaim(ctx, q.c.pool, q.c.now(), q.c.workerID, n)
}

// announce publishes job.started for a launched batch before its handler
// runs, so the event comes before the jobs' job.completed. The jobs are
// registered for heartbeats already, and the wait for the events publish
// lock is bounded (lock_timeout, a fifth of the lease): the event only
// informs, so one that cannot be published in time, or fails, is dropped
// with a log line and the jobs run anyway.
func (q *queue) announce(jobs []Job) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wait := max(q.cfg.Lease/5, time.Millisecond)
	err := pgx.BeginFunc(ctx, q.c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, strconv.FormatInt(wait.Milliseconds(), 10)+"ms"); err != nil {
			return fmt.Errorf("set lock timeout: %w", err)
		}
		return PublishStarted(ctx, tx, q.cfg.Name, jobs, q.c.now())
	})
	if err != nil {
		q.c.logger.Warn("announcing started jobs failed; job.started dropped", "queue", q.cfg.Name, "jobs", len(jobs), "err", err)
	}
}

func (q *queue) launch(jobs []Job) {
	c := q.c
	ctx, cancel := context.WithCancelCause(c.workCtx)
	b := &batch{queue: q.cfg.Name, jobs: jobs, cancel: cancel, cancelled: map[uuid.UUID]bool{}}
	c.mu.Lock()
	for _, j := range jobs {
		c.inflight[j.ID] = entry{b: b, job: j}
	}
	c.mu.Unlock()
	q.mu.Lock()
	q.inflight++
	q.mu.Unlock()
	c.metrics.claimed.WithLabelValues(q.cfg.Name).Add(float64(len(jobs)))
	c.batches.Add(1)
	go func() {
		defer c.batches.Done()
		if q.cfg.AnnounceStarted {
			q.announce(jobs)
		}
		q.runBatch(ctx, b)
	}()
}

func (q *queue) runBatch(ctx context.Context, b *batch) {
	c := q.c
	start := time.Now()
	ctx, span := q.startBatch(ctx, b.jobs)
	results := q.work(ctx, b.jobs)
	endBatch(span, results)
	c.metrics.duration.WithLabelValues(q.cfg.Name).Observe(time.Since(start).Seconds())
	var cause error
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	c.mu.Lock()
	cancelled := make(map[uuid.UUID]bool, len(b.cancelled))
	for id := range b.cancelled {
		cancelled[id] = true
	}
	for _, j := range b.jobs {
		delete(c.inflight, j.ID)
	}
	c.mu.Unlock()
	b.cancel(nil)

	now := c.now()
	ups := make([]update, 0, len(b.jobs))
	for i, j := range b.jobs {
		err := results[i]
		u := update{job: j, err: err}
		switch {
		case cancelled[j.ID]:
			c.metrics.cancelled.WithLabelValues(q.cfg.Name).Inc()
			continue // already cancelled (or reaped) in the database
		case err == nil:
			u.decision = decision{status: StatusCompleted, retryCount: j.RetryCount, completed: &now}
		case errors.Is(err, ErrRequiresReview):
			u.err = nil
			u.decision = decision{status: StatusRequiresReview, retryCount: j.RetryCount, completed: &now}
		case errors.Is(cause, ErrShutdown) || errors.Is(cause, ErrCancelled) || errors.Is(err, ErrCancelled):
			// Cut short by shutdown or by a cancelled sibling (whose loss
			// FinishBatchInTx may be first to see): not its fault.
			u.release = true
			u.decision = decision{status: StatusQueued, retryCount: j.RetryCount, keepError: true}
		default:
			u.decision = decide(j, err, now, q.cfg.BackoffFunc)
		}
		ups = append(ups, u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	me := c.workerID
	if err := q.record(ctx, &pgxPoolOrTx{pool: c.pool}, now, &me, ups); err != nil {
		// The jobs stay running under our name until their lease expires;
		// the reaper then retries them.
		c.logger.Error("recording job outcomes failed", "queue", q.cfg.Name, "jobs", len(ups), "err", err)
	}

	q.mu.Lock()
	q.inflight--
	q.mu.Unlock()
	// Under a project cap a short claim does not mean the queue is empty:
	// a finished job may have freed its project's slot.
	q.wakeUp(q.cfg.ProjectMax > 0)
}

// work calls the handler, turning a panic or a wrong number of results into
// an error for every job.
func (q *queue) work(ctx context.Context, jobs []Job) (results []error) {
	defer func() {
		if r := recover(); r != nil {
			q.c.logger.Error("job handler panicked", "queue", q.cfg.Name, "panic", r)
			results = FailAll(len(jobs), fmt.Errorf("handler panic: %v", r))
		}
	}()
	results = q.cfg.Handler.Work(ContextWithJobs(ctx, jobs), jobs)
	if len(results) != len(jobs) {
		return FailAll(len(jobs), fmt.Errorf("handler returned %d results for %d jobs", len(results), len(jobs)))
	}
	return results
}

// record writes the updates of still-owned jobs (owned by worker; any
// worker when nil, for the reaper that holds the row locks) and, when the
// queue has an OutcomeFunc or the client has observers, calls them in the
// same transaction.
func (q *queue) record(ctx context.Context, db *pgxPoolOrTx, now time.Time, worker *string, ups []update) error {
	if len(ups) == 0 {
		return nil
	}
	if !q.hooked() && db.pool != nil {
		ids, err := q.jobFinish(ctx, db.pool, now, worker, ups)
		if err != nil {
			return err
		}
		q.account(ups, ids)
		return nil
	}
	run := func(tx pgx.Tx) error {
		ids, err := q.jobFinish(ctx, tx, now, worker, ups)
		if err != nil {
			return err
		}
		q.account(ups, ids)
		q.callHooks(ctx, tx, ups, ids)
		return nil
	}
	if db.tx != nil {
		return run(db.tx)
	}
	return postgres.WithTx(ctx, db.pool, run)
}

// hooked reports whether anything wants this queue's outcomes.
func (q *queue) hooked() bool { return q.cfg.OutcomeFunc != nil || len(q.c.observers) > 0 }

// pgxPoolOrTx is where record writes: a pool (its own transaction when a
// hook runs) or a transaction already open.
type pgxPoolOrTx struct {
	pool *pgxpool.Pool
	tx   pgx.Tx
}

// callHooks runs the queue's OutcomeFunc, then the client's observers, each
// in a savepoint: a failing hook loses its own writes, never the status
// changes.
func (q *queue) callHooks(ctx context.Context, tx pgx.Tx, ups []update, ids []uuid.UUID) {
	if !q.hooked() {
		return
	}
	applied := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		applied[id] = true
	}
	var outs []Outcome
	for _, u := range ups {
		if !applied[u.job.ID] || u.release {
			continue
		}
		o := Outcome{Job: u.job, Status: u.status, Err: u.err}
		if u.runAt != nil {
			o.RunAt = *u.runAt
		}
		outs = append(outs, o)
	}
	if len(outs) == 0 {
		return
	}
	if q.cfg.OutcomeFunc != nil {
		q.callHook(ctx, tx, "job outcome hook", q.cfg.OutcomeFunc, outs)
	}
	for _, fn := range q.c.observers {
		q.callHook(ctx, tx, "job outcome observer", fn, outs)
	}
}

func (q *queue) callHook(ctx context.Context, tx pgx.Tx, what string, fn OutcomeFunc, outs []Outcome) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		q.c.logger.Error(what+": savepoint failed", "queue", q.cfg.Name, "err", err)
		return
	}
	if err := fn(ctx, sp, outs); err != nil {
		_ = sp.Rollback(ctx)
		q.c.logger.Error(what+" failed", "queue", q.cfg.Name, "err", err)
		return
	}
	if err := sp.Commit(ctx); err != nil {
		q.c.logger.Error(what+": release savepoint failed", "queue", q.cfg.Name, "err", err)
	}
}

// account updates metrics and the next wake-up for the updates applied.
func (q *queue) account(ups []update, ids []uuid.UUID) {
	applied := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		applied[id] = true
	}
	m, name := q.c.metrics, q.cfg.Name
	for _, u := range ups {
		if !applied[u.job.ID] {
			continue
		}
		switch {
		case u.status == StatusCompleted || u.status == StatusRequiresReview:
			m.completed.WithLabelValues(name).Inc()
		case u.status == StatusFailed:
			m.failed.WithLabelValues(name).Inc()
		case u.release:
			m.released.WithLabelValues(name).Inc()
		case u.status == StatusQueued:
			m.retried.WithLabelValues(name).Inc()
		}
		if u.runAt != nil {
			q.mu.Lock()
			if q.nextRunAt.IsZero() || u.runAt.Before(q.nextRunAt) {
				q.nextRunAt = *u.runAt
			}
			q.mu.Unlock()
		}
	}
	if len(ids) > 0 {
		q.wakeUp(false)
	}
}

// reap returns this queue's jobs whose lease expired to the queue (or fails
// them when their retries are used up): the one rule for crashed workers.
func (q *queue) reap(ctx context.Context) (int, error) {
	now := q.c.now()
	var n int
	err := postgres.WithTx(ctx, q.c.pool, func(tx pgx.Tx) error {
		expired, err := q.jobExpiredLock(ctx, tx, now, 500)
		if err != nil || len(expired) == 0 {
			return err
		}
		ups := make([]update, len(expired))
		for i, e := range expired {
			owner := "unknown"
			if e.lockedBy != nil {
				owner = *e.lockedBy
			}
			err := fmt.Errorf("%w (worker %s)", ErrLeaseExpired, owner)
			ups[i] = update{job: e.Job, err: err, decision: decide(e.Job, err, now, q.cfg.BackoffFunc)}
		}
		n = len(ups)
		return q.record(ctx, &pgxPoolOrTx{tx: tx}, now, nil, ups)
	})
	if err != nil {
		return 0, fmt.Errorf("reap %s: %w", q.cfg.Name, err)
	}
	if n > 0 {
		q.c.logger.Warn("returned jobs with expired leases", "queue", q.cfg.Name, "jobs", n)
	}
	return n, nil
}
