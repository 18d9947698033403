package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/events"
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
	// inTx are the jobs FinishBatchInTx or WaitInTx recorded in the
	// handler's transaction (guarded by Client.mu): runBatch accounts for
	// them once the handler returned, so that a transaction run again
	// counts them once and one rolled back (its jobs then get the
	// handler's outcome) not at all.
	inTx map[uuid.UUID]update
	// announced, when the queue announces its batches, is closed once the
	// announcement ended (published or dropped); published is set when
	// its events are written, before its commit.
	announced chan struct{}
	published atomic.Bool
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
		sql:         buildQueries(cfg.Table, cfg.ClearOnFinal, cfg.QueuedKey, cfg.QueuedKeyNoun),
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

// announce publishes job.started for a launched batch beside its
// handler, which it does not hold up, on ctx (the client's work context:
// a hard stop ends it). It takes the events publish lock first, waiting at
// most a fifth of the lease (lock_timeout), then announces the jobs of
// the batch still running at the attempt claimed: a job's job.completed
// is published under that lock too, after the announcement (the engine's
// record waits for it; a handler's FinishInTx waits for it, or publishes
// the job.started itself when its transaction holds the lock already:
// startedFirst), so it never precedes its job.started. The event only
// informs: one that cannot be published in time, or fails, is dropped
// with a log line.
func (q *queue) announce(ctx context.Context, b *batch) {
	if !slices.ContainsFunc(b.jobs, func(j Job) bool { return j.ProjectID != nil }) {
		return // nothing to announce
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	wait := max(q.cfg.Lease/5, time.Millisecond)
	err := pgx.BeginFunc(ctx, q.c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, strconv.FormatInt(wait.Milliseconds(), 10)+"ms"); err != nil {
			return fmt.Errorf("set lock timeout: %w", err)
		}
		if err := events.Lock(ctx, tx); err != nil {
			return err
		}
		// A statement of its own after the lock, so that its snapshot
		// sees every job.completed published before.
		running, err := q.jobsRunning(ctx, tx, b.jobs)
		if err != nil {
			return err
		}
		if err := PublishStarted(ctx, tx, q.cfg.Name, running, q.c.now()); err != nil {
			return err
		}
		// Set before the commit: a transaction that holds the publish
		// lock after this one finds the events written (startedFirst).
		b.published.Store(true)
		return nil
	})
	if err != nil {
		q.c.logger.Warn("announcing started jobs failed; job.started dropped", "queue", q.cfg.Name, "jobs", len(b.jobs), "err", err)
	}
}

// jobsRunning returns the jobs still running at the attempt they were
// claimed at, in order.
func (q *queue) jobsRunning(ctx context.Context, db postgres.DBTX, jobs []Job) ([]Job, error) {
	ups := make([]update, len(jobs))
	for i, j := range jobs {
		ups[i] = update{job: j, decision: decision{status: StatusRunning}}
	}
	still, err := q.jobsAt(ctx, db, ups)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(jobs), func(j Job) bool { return !slices.Contains(still, j.ID) }), nil
}

// jobsAt returns the ids of the jobs of ups whose row is at the update's
// status, at the attempt they were claimed at.
func (q *queue) jobsAt(ctx context.Context, db postgres.DBTX, ups []update) ([]uuid.UUID, error) {
	ids, attempts, statuses := make([]uuid.UUID, len(ups)), make([]int32, len(ups)), make([]string, len(ups))
	for i, u := range ups {
		ids[i], attempts[i], statuses[i] = u.job.ID, int32(u.job.Attempt), string(u.status) //nolint:gosec // small counter
	}
	rows, _ := db.Query(ctx, q.sql.at, ids, attempts, statuses)
	at, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("%s jobs at their status: %w", q.cfg.Name, err)
	}
	return at, nil
}

// startedFirst is called by settleInTx (FinishBatchInTx, WaitInTx) before
// its hooks publish job.completed for jobs in tx: when the announcement of a
// batch of jobs may not have been published yet, it publishes their
// job.started in tx if tx holds the events publish lock already (that
// announcement, waiting for the lock, then finds them no longer running
// once tx commits, or still running if tx rolls back), else it waits for
// the announcement to end.
func (q *queue) startedFirst(ctx context.Context, tx pgx.Tx, jobs []Job) error {
	if !q.cfg.AnnounceStarted {
		return nil
	}
	pending := q.c.announcing(jobs)
	if len(pending) == 0 {
		return nil
	}
	held, err := events.LockHeld(ctx, tx)
	if err != nil {
		return err
	}
	if !held {
		for _, e := range pending {
			select {
			case <-e.b.announced:
			case <-ctx.Done():
				return fmt.Errorf("wait for job.started: %w", context.Cause(ctx))
			}
		}
		return nil
	}
	// The announcements cannot commit before tx ends: those whose events
	// are not written yet will find the jobs tx makes final gone.
	var unannounced []Job
	for _, e := range pending {
		if !e.b.published.Load() {
			unannounced = append(unannounced, e.job)
		}
	}
	return PublishStarted(ctx, tx, q.cfg.Name, unannounced, q.c.now())
}

// announcing returns the entries of those of jobs (running here at their
// attempt) whose batch's announcement has not ended.
func (c *Client) announcing(jobs []Job) []entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []entry
	for _, j := range jobs {
		e, ok := c.inflight[j.ID]
		if !ok || e.job.Attempt != j.Attempt || e.b.announced == nil {
			continue
		}
		select {
		case <-e.b.announced:
		default:
			out = append(out, e)
		}
	}
	return out
}

func (q *queue) launch(jobs []Job) {
	c := q.c
	ctx, cancel := context.WithCancelCause(c.workCtx)
	b := &batch{queue: q.cfg.Name, jobs: jobs, cancel: cancel, cancelled: map[uuid.UUID]bool{}, inTx: map[uuid.UUID]update{}}
	if q.cfg.AnnounceStarted {
		b.announced = make(chan struct{})
	}
	c.mu.Lock()
	for _, j := range jobs {
		c.inflight[j.ID] = entry{b: b, job: j}
	}
	c.mu.Unlock()
	q.mu.Lock()
	q.inflight++
	q.mu.Unlock()
	c.metrics.claimed.WithLabelValues(q.cfg.Name).Add(float64(len(jobs)))
	if b.announced != nil {
		c.batches.Add(1)
		go func() {
			defer c.batches.Done()
			defer close(b.announced)
			q.announce(c.workCtx, b)
		}()
	}
	c.batches.Add(1)
	go func() {
		defer c.batches.Done()
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
	inTx := b.inTx
	b.inTx = nil
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
	if b.announced != nil {
		// The jobs' job.completed comes after their job.started; the
		// announcement's own wait is bounded (announce).
		<-b.announced
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	me := c.workerID
	applied, err := q.record(ctx, now, &me, ups)
	if err != nil {
		// The jobs stay running under our name until their lease expires;
		// the reaper then retries them.
		c.logger.Error("recording job outcomes failed", "queue", q.cfg.Name, "jobs", len(ups), "err", err)
	}
	// A job the handler did not report done, or that was cancelled, may
	// have been noted by a transaction that rolled back.
	doubt := make(map[uuid.UUID]bool)
	for i, j := range b.jobs {
		if results[i] != nil || cancelled[j.ID] {
			doubt[j.ID] = true
		}
	}
	q.accountInTx(ctx, inTx, applied, doubt)

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

// record writes the updates of jobs still owned by worker and, when the
// queue has an OutcomeFunc or the client has observers, calls them in the
// same transaction, which runs again when it loses a deadlock or a
// serialization conflict (the hooks' writes commit with the statuses or
// not at all). It accounts for the jobs it changed once that committed
// and returns their ids.
func (q *queue) record(ctx context.Context, now time.Time, worker *string, ups []update) ([]uuid.UUID, error) {
	if len(ups) == 0 {
		return nil, nil
	}
	var ids []uuid.UUID
	var err error
	if q.hooked() {
		err = postgres.WithTxRetryDeadlock(ctx, q.c.pool, func(tx pgx.Tx) error {
			ids, err = q.recordInTx(ctx, tx, now, worker, ups)
			return err
		})
	} else {
		ids, err = q.jobFinish(ctx, q.c.pool, now, worker, ups)
	}
	if err != nil {
		return nil, err
	}
	q.account(ups, ids)
	return ids, nil
}

// recordInTx writes the updates of jobs still owned by worker (any worker
// when nil, for the reaper that holds the row locks) in tx and calls the
// hooks; it returns the ids changed. Its error (a hook's deadlock
// included) means tx must be rolled back.
func (q *queue) recordInTx(ctx context.Context, tx pgx.Tx, now time.Time, worker *string, ups []update) ([]uuid.UUID, error) {
	ids, err := q.jobFinish(ctx, tx, now, worker, ups)
	if err != nil {
		return nil, err
	}
	if err := q.callHooks(ctx, tx, ups, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// hooked reports whether anything wants this queue's outcomes.
func (q *queue) hooked() bool { return q.cfg.OutcomeFunc != nil || len(q.c.observers) > 0 }

// callHooks runs the queue's OutcomeFunc, then the client's observers, each
// in a savepoint: a failing hook loses its own writes, never the status
// changes. A hook that loses a deadlock or a serialization conflict
// (postgres.IsTxConflict) is the exception: running it again in its
// savepoint would wait for the same lock, so callHooks returns its error,
// tx (left aborted) must be rolled back, and the whole transaction runs
// again (postgres.WithTxRetryDeadlock).
func (q *queue) callHooks(ctx context.Context, tx pgx.Tx, ups []update, ids []uuid.UUID) error {
	if !q.hooked() {
		return nil
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
		return nil
	}
	if q.cfg.OutcomeFunc != nil {
		if err := q.callHook(ctx, tx, "job outcome hook", q.cfg.OutcomeFunc, outs); err != nil {
			return err
		}
	}
	for _, fn := range q.c.observers {
		if err := q.callHook(ctx, tx, "job outcome observer", fn, outs); err != nil {
			return err
		}
	}
	return nil
}

// callHook runs fn in a savepoint of tx; it returns only an error that
// must roll tx back (postgres.IsTxConflict), and logs the others.
func (q *queue) callHook(ctx context.Context, tx pgx.Tx, what string, fn OutcomeFunc, outs []Outcome) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		if postgres.IsTxConflict(err) {
			return fmt.Errorf("%s: savepoint: %w", what, err)
		}
		q.c.logger.Error(what+": savepoint failed", "queue", q.cfg.Name, "err", err)
		return nil
	}
	if err := fn(ctx, sp, outs); err != nil {
		if postgres.IsTxConflict(err) {
			// Not rolled back to the savepoint: tx stays aborted, so
			// that it cannot commit the statuses without the hook.
			return fmt.Errorf("%s: %w", what, err)
		}
		_ = sp.Rollback(ctx)
		q.c.logger.Error(what+" failed", "queue", q.cfg.Name, "err", err)
		return nil
	}
	if err := sp.Commit(ctx); err != nil {
		if postgres.IsTxConflict(err) {
			return fmt.Errorf("%s: release savepoint: %w", what, err)
		}
		q.c.logger.Error(what+": release savepoint failed", "queue", q.cfg.Name, "err", err)
	}
	return nil
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

// noteInTx accounts for ups, which FinishBatchInTx or WaitInTx changed in
// a handler's transaction: later (runBatch, accountInTx) for the jobs of
// a batch this client runs, at once for others (a handler's transaction
// outside the engine).
func (q *queue) noteInTx(ups []update) {
	c := q.c
	var now []update
	c.mu.Lock()
	for _, u := range ups {
		if e, ok := c.inflight[u.job.ID]; ok && e.job.Attempt == u.job.Attempt && e.b.inTx != nil {
			e.b.inTx[u.job.ID] = u
		} else {
			now = append(now, u)
		}
	}
	c.mu.Unlock()
	q.account(now, IDs(jobsOf(now)))
}

// accountInTx accounts for the jobs a batch's handler recorded in its
// transaction (noteInTx), except those record changed after it (applied):
// their transaction did not commit, and record accounted for the
// handler's outcome instead. A job in doubt (the handler did not report
// it done, or it was cancelled) is counted only when its row is at the
// status noted: a transaction that noted it and then rolled back (a run
// that lost a deadlock after FinishInTx, say) may be followed by a cancel
// or a reap, which record does not see as its own.
func (q *queue) accountInTx(ctx context.Context, inTx map[uuid.UUID]update, applied []uuid.UUID, doubt map[uuid.UUID]bool) {
	for _, id := range applied {
		delete(inTx, id)
	}
	var ups, check []update
	for id, u := range inTx {
		if doubt[id] {
			check = append(check, u)
		} else {
			ups = append(ups, u)
		}
	}
	if len(check) > 0 {
		at, err := q.jobsAt(ctx, q.c.pool, check)
		if err != nil {
			q.c.logger.Warn("checking jobs finished in a handler's transaction failed; not counted", "queue", q.cfg.Name, "jobs", len(check), "err", err)
		}
		for _, u := range check {
			if slices.Contains(at, u.job.ID) {
				ups = append(ups, u)
			}
		}
	}
	q.account(ups, IDs(jobsOf(ups)))
}

// jobsOf are the jobs of ups, in order.
func jobsOf(ups []update) []Job {
	jobs := make([]Job, len(ups))
	for i, u := range ups {
		jobs[i] = u.job
	}
	return jobs
}

// reap returns this queue's jobs whose lease expired to the queue (or fails
// them when their retries are used up): the one rule for crashed workers.
func (q *queue) reap(ctx context.Context) (int, error) {
	now := q.c.now()
	var ups []update
	var ids []uuid.UUID
	err := postgres.WithTxRetryDeadlock(ctx, q.c.pool, func(tx pgx.Tx) error {
		ups, ids = nil, nil
		expired, err := q.jobExpiredLock(ctx, tx, now, 500)
		if err != nil || len(expired) == 0 {
			return err
		}
		ups = make([]update, len(expired))
		for i, e := range expired {
			owner := "unknown"
			if e.lockedBy != nil {
				owner = *e.lockedBy
			}
			err := fmt.Errorf("%w (worker %s)", ErrLeaseExpired, owner)
			ups[i] = update{job: e.Job, err: err, decision: decide(e.Job, err, now, q.cfg.BackoffFunc)}
		}
		ids, err = q.recordInTx(ctx, tx, now, nil, ups)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reap %s: %w", q.cfg.Name, err)
	}
	q.account(ups, ids)
	n := len(ups)
	if n > 0 {
		q.c.logger.Warn("returned jobs with expired leases", "queue", q.cfg.Name, "jobs", n)
	}
	return n, nil
}
