package jobqueue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

// Channel names. Queue wake-ups go to ChannelPrefix+queue with an empty
// payload; cancellations of running jobs to channelCancel with the job id;
// settings changes to channelSettings with the queue name.
const (
	ChannelPrefix   = "jobqueue_"
	channelCancel   = "jobqueue_cancel"
	channelSettings = "jobqueue_settings"
)

// queries holds the SQL of one queue's table, built once.
type queries struct {
	claim, claimCapped, finish, heartbeat, renewHeld, at, expired, depth, stats string
}

const jobReturning = `j.id, j.project_id, j.priority, j.run_at, j.attempt, j.retry_count, j.max_retries, j.started_at, j.created_at, j.trace_parent`

// buildQueries builds the SQL of table; clear are the columns set to NULL
// when a job becomes final (QueueConfig.ClearOnFinal); key is the column
// of QueueConfig.QueuedKey ("" for none), noun what its values are.
func buildQueries(table string, clear []string, key, noun string) queries {
	t := pgx.Identifier{table}.Sanitize()
	final := `e.status IN ('` + strings.Join(names(FinalStatuses()), `', '`) + `')`
	clearFinal := ""
	for _, col := range clear {
		c := pgx.Identifier{col}.Sanitize()
		clearFinal += `, ` + c + ` = CASE WHEN ` + final + ` THEN NULL ELSE j.` + c + ` END`
	}
	// e is each job's status as written: the one asked for, except that
	// with a QueuedKey a job asked back to queued (a retry, a reaped
	// lease, a release) while another job of its key is queued, or behind
	// an earlier one of this statement (by id), is cancelled: the queued
	// job does its work, and a second queued job of the key would break
	// the table's unique index (and with it the whole statement).
	effective := `SELECT u.id, u.status, false AS superseded FROM u JOIN mine ON mine.id = u.id`
	if key != "" {
		k := pgx.Identifier{key}.Sanitize()
		effective = `SELECT r.id, CASE WHEN r.superseded THEN '` + string(StatusCancelled) + `' ELSE r.status END AS status, r.superseded
    FROM (SELECT u.id, u.status, u.status = '` + string(StatusQueued) + `' AND (
            row_number() OVER (PARTITION BY j.` + k + `, u.status = '` + string(StatusQueued) + `' ORDER BY j.id) > 1
            OR EXISTS (SELECT 1 FROM ` + t + ` AS o WHERE o.` + k + ` = j.` + k + ` AND o.status = '` + string(StatusQueued) + `' AND o.id <> j.id)) AS superseded
        FROM u JOIN mine ON mine.id = u.id JOIN ` + t + ` AS j ON j.id = u.id) AS r`
	}
	var q queries
	// $1 now, $2 worker, $3 lease end, $4 limit.
	q.claim = `UPDATE ` + t + ` AS j
SET status = 'running', attempt = j.attempt + 1, locked_by = $2, locked_until = $3,
    heartbeat_at = $1, started_at = COALESCE(j.started_at, $1), updated_at = $1
FROM (SELECT id FROM ` + t + `
      WHERE status = 'queued' AND run_at <= $1
      ORDER BY priority DESC, run_at, id
      LIMIT $4 FOR UPDATE SKIP LOCKED) AS c
WHERE j.id = c.id
RETURNING ` + jobReturning
	// The capped claim runs under a per-table advisory lock, so the running
	// counts it reads are exact. $5 project max, $6 scan window.
	q.claimCapped = `WITH capped AS (
    SELECT project_id FROM ` + t + `
    WHERE status = 'running' AND project_id IS NOT NULL
    GROUP BY project_id HAVING count(*) >= $5
), cand AS (
    SELECT id, project_id, priority, run_at FROM ` + t + `
    WHERE status = 'queued' AND run_at <= $1
      AND (project_id IS NULL OR project_id NOT IN (SELECT project_id FROM capped))
    ORDER BY priority DESC, run_at, id
    LIMIT $6 FOR UPDATE SKIP LOCKED
), running AS (
    SELECT project_id, count(*) AS n FROM ` + t + `
    WHERE status = 'running' AND project_id IN (SELECT project_id FROM cand)
    GROUP BY project_id
), chosen AS (
    SELECT r.id FROM (
        SELECT cand.*, row_number() OVER (PARTITION BY cand.project_id ORDER BY priority DESC, run_at, id) AS rn
        FROM cand) AS r
    LEFT JOIN running USING (project_id)
    WHERE r.project_id IS NULL OR r.rn + COALESCE(running.n, 0) <= $5
    ORDER BY r.priority DESC, r.run_at, r.id
    LIMIT $4
)
UPDATE ` + t + ` AS j
SET status = 'running', attempt = j.attempt + 1, locked_by = $2, locked_until = $3,
    heartbeat_at = $1, started_at = COALESCE(j.started_at, $1), updated_at = $1
FROM chosen WHERE j.id = chosen.id
RETURNING ` + jobReturning
	// Finish and heartbeat change several jobs: they lock them first, in
	// id order (as transitionSQL and DeleteWhere do; no stronger than the
	// update's own lock), so that they cannot deadlock with a bulk cancel
	// or delete of the same jobs; the update's own order is the join's.
	// $1 now, $2 worker (NULL: the reaper, which holds the row locks).
	q.finish = `WITH u AS (
    SELECT * FROM unnest($3::uuid[], $4::int[], $5::text[], $6::int[], $7::timestamptz[], $8::text[], $9::timestamptz[], $10::bool[])
        AS u(id, attempt, status, retry_count, run_at, error_msg, completed_at, keep_error)
), mine AS (
    SELECT j.id FROM ` + t + ` AS j JOIN u ON j.id = u.id AND j.attempt = u.attempt
    WHERE j.status = 'running' AND ($2::text IS NULL OR j.locked_by = $2)
    ORDER BY j.id FOR NO KEY UPDATE OF j
), e AS (
    ` + effective + `
)
UPDATE ` + t + ` AS j
SET status = e.status, retry_count = u.retry_count, run_at = COALESCE(u.run_at, j.run_at),
    error_msg = CASE WHEN e.superseded THEN '` + supersededMsg(noun) + `'
        WHEN u.keep_error THEN j.error_msg ELSE u.error_msg END,
    completed_at = CASE WHEN e.superseded THEN $1 ELSE u.completed_at END,
    locked_by = NULL, locked_until = NULL, updated_at = $1` + clearFinal + `
FROM e JOIN u ON u.id = e.id
WHERE j.id = e.id
RETURNING j.id, e.superseded`
	// The heartbeat waits for no row: a job row another transaction holds
	// (a bulk cancel, a cascading delete, a long finishing transaction) is
	// left, so one held row neither delays the other jobs' leases nor can
	// deadlock. The answer is the jobs still ours as of the statement's
	// start, each with whether it was renewed; one that a committed cancel
	// or the reaper took is not among them. A held one is renewed by
	// renewHeld.
	q.heartbeat = `WITH u AS (
    SELECT * FROM unnest($4::uuid[], $5::int[]) AS u(id, attempt)
), mine AS (
    SELECT j.id FROM ` + t + ` AS j JOIN u ON j.id = u.id AND j.attempt = u.attempt
    WHERE j.status = 'running' AND j.locked_by = $2
    ORDER BY j.id FOR NO KEY UPDATE OF j SKIP LOCKED
), renewed AS (
    UPDATE ` + t + ` AS j
    SET locked_until = $3, heartbeat_at = $1
    FROM mine WHERE j.id = mine.id
    RETURNING j.id
)
SELECT j.id, j.id IN (SELECT id FROM renewed) FROM ` + t + ` AS j JOIN u ON j.id = u.id AND j.attempt = u.attempt
WHERE j.status = 'running' AND j.locked_by = $2`
	// renewHeld renews one job's lease, waiting for its row: it holds no
	// other row meanwhile, so it cannot deadlock, and it is in line before
	// the reaper (which skips held rows) when the holder lets the row go
	// unchanged. $4 id, $5 attempt.
	q.renewHeld = `UPDATE ` + t + `
SET locked_until = $3, heartbeat_at = $1
WHERE id = $4 AND attempt = $5 AND status = 'running' AND locked_by = $2`
	// $1 ids, $2 attempts, $3 statuses.
	q.at = `SELECT j.id FROM ` + t + ` AS j JOIN unnest($1::uuid[], $2::int[], $3::text[]) AS u(id, attempt, status)
    ON j.id = u.id AND j.attempt = u.attempt AND j.status = u.status`
	q.expired = `SELECT ` + jobReturning + `, j.locked_by FROM ` + t + ` AS j
WHERE j.status = 'running' AND j.locked_until < $1
ORDER BY j.locked_until
LIMIT $2 FOR UPDATE SKIP LOCKED`
	q.depth = `SELECT count(*) FROM ` + t + ` WHERE status = 'queued'`
	q.stats = `SELECT
    count(*) FILTER (WHERE status = 'queued'),
    count(*) FILTER (WHERE status = 'running'),
    count(*) FILTER (WHERE status IN ('completed', 'requires_review')),
    count(*) FILTER (WHERE status = 'failed'),
    count(*) FILTER (WHERE status = 'cancelled'),
    count(*),
    count(*) FILTER (WHERE created_at >= $1::timestamptz - interval '1 hour'),
    count(*) FILTER (WHERE created_at >= $1::timestamptz - interval '24 hours')
FROM ` + t + ` WHERE ($2::uuid IS NULL OR project_id = $2)`
	return q
}

func scanJob(row pgx.CollectableRow, queue string, extra ...any) (Job, error) {
	var j Job
	var started *time.Time
	var parent *string
	dest := append([]any{&j.ID, &j.ProjectID, &j.Priority, &j.RunAt, &j.Attempt, &j.RetryCount, &j.MaxRetries, &started, &j.CreatedAt, &parent}, extra...)
	if err := row.Scan(dest...); err != nil {
		return Job{}, err
	}
	j.Queue = queue
	if parent != nil {
		j.TraceParent = *parent
	}
	if started != nil {
		j.StartedAt = *started
	}
	return j, nil
}

// sortJobs orders a claimed batch as the claim did (RETURNING does not).
func sortJobs(jobs []Job) {
	slices.SortFunc(jobs, func(a, b Job) int {
		if a.Priority != b.Priority {
			return b.Priority - a.Priority
		}
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return slices.Compare(a.ID[:], b.ID[:])
	})
}

// JobClaim claims up to limit queued jobs due at now for worker.
func (q *queue) jobClaim(ctx context.Context, db postgres.DBTX, now time.Time, worker string, limit int) ([]Job, error) {
	rows, err := db.Query(ctx, q.sql.claim, now, worker, now.Add(q.cfg.Lease), limit)
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", q.cfg.Name, err)
	}
	return q.collectJobs(rows)
}

// jobClaimCapped claims like jobClaim, keeping each project at most
// ProjectMax running jobs.
func (q *queue) jobClaimCapped(ctx context.Context, c *Client, now time.Time, limit int) ([]Job, error) {
	var jobs []Job
	err := postgres.WithTx(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('jobqueue'), hashtext($1))`, q.cfg.Table); err != nil {
			return fmt.Errorf("lock %s: %w", q.cfg.Name, err)
		}
		window := min(max(limit*10, 100), 2000)
		rows, err := tx.Query(ctx, q.sql.claimCapped, now, c.workerID, now.Add(q.cfg.Lease), limit, q.cfg.ProjectMax, window)
		if err != nil {
			return fmt.Errorf("claim %s: %w", q.cfg.Name, err)
		}
		jobs, err = q.collectJobs(rows)
		return err
	})
	return jobs, err
}

func (q *queue) collectJobs(rows pgx.Rows) ([]Job, error) {
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Job, error) { return scanJob(row, q.cfg.Name) })
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", q.cfg.Name, err)
	}
	sortJobs(jobs)
	return jobs, nil
}

// update is a row change for jobFinish.
type update struct {
	job     Job
	err     error // the handler's error, for OutcomeFunc
	release bool  // put back without counting a failure
	decision
}

// jobFinish writes updates for jobs still running under worker (any worker
// when nil) at the attempt they were claimed at, returning the ids changed.
func (q *queue) jobFinish(ctx context.Context, db postgres.DBTX, now time.Time, worker *string, ups []update) ([]uuid.UUID, error) {
	n := len(ups)
	ids, attempts, statuses, retries := make([]uuid.UUID, n), make([]int32, n), make([]string, n), make([]int32, n)
	runAts, msgs, completed, keep := make([]*time.Time, n), make([]*string, n), make([]*time.Time, n), make([]bool, n)
	for i, u := range ups {
		ids[i], attempts[i], statuses[i], retries[i] = u.job.ID, int32(u.job.Attempt), string(u.status), int32(u.retryCount) //nolint:gosec // small counters
		runAts[i], msgs[i], completed[i], keep[i] = u.runAt, u.errorMsg, u.completed, u.keepError
	}
	rows, _ := db.Query(ctx, q.sql.finish, now, worker, ids, attempts, statuses, retries, runAts, msgs, completed, keep)
	var done []uuid.UUID
	superseded := map[uuid.UUID]bool{}
	var id uuid.UUID
	var sup bool
	_, err := pgx.ForEachRow(rows, []any{&id, &sup}, func() error {
		done = append(done, id)
		superseded[id] = sup
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finish %s jobs: %w", q.cfg.Name, err)
	}
	// A job cancelled for its QueuedKey is reported as what it became, and
	// written the same way should the transaction run again.
	msg := supersededMsg(q.cfg.QueuedKeyNoun)
	for i := range ups {
		if superseded[ups[i].job.ID] {
			ups[i].release = false
			ups[i].decision = decision{status: StatusCancelled, retryCount: ups[i].retryCount, errorMsg: &msg, completed: &now}
		}
	}
	return done, nil
}

// supersededMsg is the error of a job cancelled for its QueuedKey, whose
// values are nouns (QueuedKeyNoun).
func supersededMsg(noun string) string { return "superseded by a queued job for the same " + noun }

// jobHeartbeat extends the leases of jobs, skipping the rows another
// transaction holds, and returns those still owned and, among them, the
// held ones (not renewed: jobRenewHeld).
func (q *queue) jobHeartbeat(ctx context.Context, db postgres.DBTX, now time.Time, worker string, jobs []Job) (owned []uuid.UUID, held []Job, err error) {
	ids, attempts := make([]uuid.UUID, len(jobs)), make([]int32, len(jobs))
	byID := make(map[uuid.UUID]Job, len(jobs))
	for i, j := range jobs {
		ids[i], attempts[i] = j.ID, int32(j.Attempt) //nolint:gosec // small counter
		byID[j.ID] = j
	}
	rows, _ := db.Query(ctx, q.sql.heartbeat, now, worker, now.Add(q.cfg.Lease), ids, attempts)
	var id uuid.UUID
	var renewed bool
	_, err = pgx.ForEachRow(rows, []any{&id, &renewed}, func() error {
		owned = append(owned, id)
		if !renewed {
			held = append(held, byID[id])
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("heartbeat %s: %w", q.cfg.Name, err)
	}
	return owned, held, nil
}

// jobRenewHeld extends the lease of job, a running job of worker whose
// row the heartbeat found held, waiting for the row; a job no longer
// worker's stays as it is.
func (q *queue) jobRenewHeld(ctx context.Context, db postgres.DBTX, now time.Time, worker string, job Job) error {
	if _, err := db.Exec(ctx, q.sql.renewHeld, now, worker, now.Add(q.cfg.Lease), job.ID, int32(job.Attempt)); err != nil { //nolint:gosec // small counter
		return fmt.Errorf("renew held %s job: %w", q.cfg.Name, err)
	}
	return nil
}

// expiredJob is a running job whose lease ran out.
type expiredJob struct {
	Job
	lockedBy *string
}

// jobExpiredLock locks up to limit running jobs whose lease ended before now.
func (q *queue) jobExpiredLock(ctx context.Context, tx pgx.Tx, now time.Time, limit int) ([]expiredJob, error) {
	rows, err := tx.Query(ctx, q.sql.expired, now, limit)
	if err != nil {
		return nil, fmt.Errorf("find expired %s jobs: %w", q.cfg.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (expiredJob, error) {
		var e expiredJob
		j, err := scanJob(row, q.cfg.Name, &e.lockedBy)
		e.Job = j
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("find expired %s jobs: %w", q.cfg.Name, err)
	}
	return out, nil
}

// transition is a change of state asked for from outside the engine
// (Cancel, Retry and their bulk forms).
type transition struct {
	verb    string   // for errors: "cancel"
	from    []Status // the states it applies to
	set     string   // the SET list; $1 is now
	notify  string   // selects the notifications from upd and cur; $2 is the channel
	refusal string   // why a job in another state is refused
	wake    bool     // notify the queue's channel (else channelCancel)
	final   bool     // the jobs end: QueueConfig.ClearOnFinal columns are cleared
}

// cancelling is the transition of Cancel and CancelWhere.
func cancelling() transition {
	return transition{
		verb: "cancel",
		from: []Status{StatusQueued, StatusRunning},
		set:  `status = 'cancelled', completed_at = $1, updated_at = $1, locked_by = NULL, locked_until = NULL`,
		// A running job's worker (any process) hears of it at commit.
		notify:  `SELECT pg_notify($2, upd.id::text) FROM upd JOIN cur USING (id) WHERE cur.status = 'running'`,
		refusal: "only queued or running jobs can be cancelled",
		final:   true,
	}
}

// retrying is the transition of Retry and RetryWhere.
func retrying() transition {
	return transition{
		verb: "retry",
		from: []Status{StatusFailed},
		set: `status = 'queued', retry_count = 0, error_msg = NULL, run_at = $1, started_at = NULL,
        completed_at = NULL, locked_by = NULL, locked_until = NULL, updated_at = $1`,
		notify:  `SELECT pg_notify($2, '') WHERE EXISTS (SELECT 1 FROM upd)`,
		refusal: "only failed jobs can be retried",
		wake:    true,
	}
}

// waking is the transition of Wake.
func waking() transition {
	return transition{
		verb:    "wake",
		from:    []Status{StatusQueued},
		set:     `run_at = $1, started_at = NULL, updated_at = $1`,
		notify:  `SELECT pg_notify($2, '') WHERE EXISTS (SELECT 1 FROM upd)`,
		refusal: "only queued jobs can be woken",
		wake:    true,
	}
}

// transitionColumns are the columns a transition returns of each job: the
// Job's, then status and updated_at.
const transitionColumns = `id, project_id, priority, run_at, attempt, retry_count, max_retries, started_at, created_at, trace_parent, status, updated_at`

// transitionSQL is the one statement of transition t on table for the
// jobs where selects (with $1 now, $2 the channel, $3 t's from states, and
// where's own parameters from $4): it locks them (FOR UPDATE makes their
// status the latest committed one), changes those in a from state,
// notifies, and returns every locked job, changed (as it is now) or not
// (as it is), with its previous status, error and retry count. A single
// statement, it runs on a pool or inside the caller's transaction alike.
func transitionSQL(table string, t transition, where string) string {
	tb := pgx.Identifier{table}.Sanitize()
	prev := `cur.status, cur.error_msg, cur.retry_count, (SELECT count(*) FROM note)`
	return `WITH cur AS (
    SELECT ` + transitionColumns + `, error_msg FROM ` + tb + `
    WHERE ` + where + ` ORDER BY id FOR UPDATE
), upd AS (
    UPDATE ` + tb + ` AS j SET ` + t.set + `
    FROM cur WHERE j.id = cur.id AND cur.status = ANY($3)
    RETURNING ` + postgres.Qualify("j", transitionColumns) + `
), note AS (
    ` + t.notify + `
)
SELECT ` + postgres.Qualify("upd", transitionColumns) + `, true, ` + prev + ` FROM upd JOIN cur USING (id)
UNION ALL
SELECT ` + postgres.Qualify("cur", transitionColumns) + `, false, ` + prev + ` FROM cur WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.id = cur.id)
ORDER BY 9, 1`
}

// transitionRow is a job a transition statement locked.
type transitionRow struct {
	Changed
	changed bool
}

// jobTransition runs transition t on the jobs where selects (its SQL
// condition and parameters) and returns every job it locked.
func (q *queue) jobTransition(ctx context.Context, db postgres.DBTX, t transition, now time.Time, where string, args ...any) ([]transitionRow, error) {
	channel := channelCancel
	if t.wake {
		channel = ChannelPrefix + q.cfg.Name
	}
	if t.final {
		for _, col := range q.cfg.ClearOnFinal {
			t.set += `, ` + pgx.Identifier{col}.Sanitize() + ` = NULL`
		}
	}
	rows, err := db.Query(ctx, transitionSQL(q.cfg.Table, t, where), append([]any{now, channel, names(t.from)}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("%s %s jobs: %w", t.verb, q.cfg.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (transitionRow, error) {
		var r transitionRow
		var notified int64
		j, err := scanJob(row, q.cfg.Name, &r.Status, &r.UpdatedAt, &r.changed,
			&r.Previous.Status, &r.Previous.ErrorMsg, &r.Previous.RetryCount, &notified)
		r.Job = j
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s jobs: %w", t.verb, q.cfg.Name, err)
	}
	return out, nil
}

// settingsRow is a queue's row of jobqueue_settings.
// A queue without one reads as the zero value.
type settingsRow struct {
	Concurrency *int `db:"concurrency"`
	BatchSize   *int `db:"batch_size"`
	Paused      bool `db:"paused"`
}

func settingsGet(ctx context.Context, db postgres.DBTX, queue string) (settingsRow, error) {
	s, err := postgres.One[settingsRow](ctx, db, nil, `SELECT concurrency, batch_size, paused FROM jobqueue_settings WHERE queue = $1`, queue)
	if err != nil {
		return settingsRow{}, fmt.Errorf("load settings of %s: %w", queue, err)
	}
	return s, nil
}

// settingsUpsert sets one column of a queue's settings and broadcasts the
// change.
func settingsUpsert(ctx context.Context, db postgres.DBTX, now time.Time, queue, column string, value any) error {
	col := pgx.Identifier{column}.Sanitize()
	_, err := db.Exec(ctx, `WITH s AS (
    INSERT INTO jobqueue_settings (queue, `+col+`, updated_at) VALUES ($1, $2, $3)
    ON CONFLICT (queue) DO UPDATE SET `+col+` = EXCLUDED.`+col+`, updated_at = EXCLUDED.updated_at
    RETURNING queue
)
SELECT pg_notify($4, queue) FROM s`, queue, value, now, channelSettings)
	if err != nil {
		return fmt.Errorf("save %s of %s: %w", column, queue, err)
	}
	return nil
}
