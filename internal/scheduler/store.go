package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

// TaskState is what /api/metrics/scheduler reports of one task.
type TaskState struct {
	Name           string     `json:"name"`
	IntervalMs     int64      `json:"intervalMs"`
	LastRunAt      *time.Time `json:"lastRunAt,omitempty"`
	LastDurationMs *int64     `json:"lastDurationMs,omitempty"`
	LastError      string     `json:"lastError,omitempty"`
	NextRunAt      time.Time  `json:"nextRunAt"`
	Runs           int64      `json:"runs"`
	Failures       int64      `json:"failures"`
	Leader         string     `json:"leader,omitempty" doc:"The process that ran it last."`
}

func taskRegister(ctx context.Context, db postgres.DBTX, t Task, now time.Time) error {
	_, err := db.Exec(ctx, `
		INSERT INTO scheduler_tasks (name, interval_ms, next_run_at, updated_at) VALUES ($1, $2, $3, $3)
		ON CONFLICT (name) DO UPDATE SET interval_ms = EXCLUDED.interval_ms, updated_at = EXCLUDED.updated_at,
		  next_run_at = LEAST(scheduler_tasks.next_run_at, EXCLUDED.next_run_at + make_interval(secs => EXCLUDED.interval_ms / 1000.0))`,
		t.Name, t.Interval.Milliseconds(), now)
	if err != nil {
		return fmt.Errorf("register task %s: %w", t.Name, err)
	}
	return nil
}

func tasksDue(ctx context.Context, db postgres.DBTX, now time.Time) (map[string]bool, error) {
	rows, _ := db.Query(ctx, `SELECT name FROM scheduler_tasks WHERE next_run_at <= $1`, now)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("due tasks: %w", err)
	}
	due := make(map[string]bool, len(names))
	for _, n := range names {
		due[n] = true
	}
	return due, nil
}

// taskLockDue locks a task's row in tx and reports whether it is due at
// now: a run started by a former leader that committed meanwhile made it
// not due.
func taskLockDue(ctx context.Context, tx pgx.Tx, name string, now time.Time) (bool, error) {
	var due bool
	err := tx.QueryRow(ctx, `SELECT next_run_at <= $2 FROM scheduler_tasks WHERE name = $1 FOR UPDATE`, name, now).Scan(&due)
	if err != nil {
		return false, fmt.Errorf("lock task %s: %w", name, err)
	}
	return due, nil
}

// taskClaim makes a due task not due until until, and reports whether it
// was due (whether this run is ours).
func taskClaim(ctx context.Context, db postgres.DBTX, name string, now, until time.Time) (bool, error) {
	return postgres.ExecOne(ctx, db, "claim task "+name, `UPDATE scheduler_tasks SET next_run_at = $3, updated_at = $2 WHERE name = $1 AND next_run_at <= $2`, name, now, until)
}

func taskRecord(ctx context.Context, db postgres.DBTX, t Task, start time.Time, dur time.Duration, runErr error, worker string) error {
	var msg *string
	if runErr != nil {
		m := postgres.Text(runErr.Error()) // it may quote a provider's answer
		msg = &m
	}
	_, err := db.Exec(ctx, `
		UPDATE scheduler_tasks SET last_run_at = $2::timestamptz, last_duration_ms = $3, last_error = $4,
		  next_run_at = $2::timestamptz + make_interval(secs => interval_ms / 1000.0), runs = runs + 1,
		  failures = failures + CASE WHEN $4::text IS NULL THEN 0 ELSE 1 END, leader = $5, updated_at = $2
		WHERE name = $1`, t.Name, start, dur.Milliseconds(), msg, worker)
	if err != nil {
		return fmt.Errorf("record task %s: %w", t.Name, err)
	}
	return nil
}

// States lists every task's state, by name.
func States(ctx context.Context, db postgres.DBTX) ([]TaskState, error) {
	rows, _ := db.Query(ctx, `SELECT name, interval_ms, last_run_at, last_duration_ms, COALESCE(last_error, ''),
		next_run_at, runs, failures, COALESCE(leader, '') FROM scheduler_tasks ORDER BY name`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TaskState, error) {
		var s TaskState
		err := r.Scan(&s.Name, &s.IntervalMs, &s.LastRunAt, &s.LastDurationMs, &s.LastError, &s.NextRunAt, &s.Runs, &s.Failures, &s.Leader)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler states: %w", err)
	}
	for i := range out {
		out[i].NextRunAt = out[i].NextRunAt.UTC()
		if out[i].LastRunAt != nil {
			u := out[i].LastRunAt.UTC()
			out[i].LastRunAt = &u
		}
	}
	if out == nil {
		out = []TaskState{}
	}
	return out, nil
}
