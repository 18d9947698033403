package jobqueue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Record is the column block of a job as the superadmin job lists show
// it, with its project's and organization's names: a domain embeds it in
// its list item and selects RecordColumns.
type Record struct {
	ID               uuid.UUID  `json:"id" db:"id"`
	ProjectID        uuid.UUID  `json:"projectId" db:"project_id"`
	ProjectName      string     `json:"projectName" db:"project_name"`
	OrganizationName string     `json:"organizationName" db:"org_name"`
	Status           string     `json:"status" db:"status"`
	Attempt          int        `json:"attempt" db:"attempt"`
	RetryCount       int        `json:"retryCount" db:"retry_count"`
	MaxRetries       int        `json:"maxRetries" db:"max_retries"`
	ErrorMessage     *string    `json:"errorMessage,omitempty" db:"error_msg"`
	Priority         int        `json:"priority" db:"priority"`
	CreatedAt        time.Time  `json:"createdAt" db:"created_at"`
	StartedAt        *time.Time `json:"startedAt,omitempty" db:"started_at"`
	CompletedAt      *time.Time `json:"completedAt,omitempty" db:"completed_at"`
	DurationMs       *int64     `json:"durationMs,omitempty" db:"duration_ms"`
}

// RecordColumns selects a Record from a job table (or subquery) aliased j
// joined to its project p and the project's organization o.
const RecordColumns = `j.id, j.project_id, p.name AS project_name, o.name AS org_name,
	j.status, j.attempt, j.retry_count, j.max_retries, j.error_msg, j.priority, j.created_at, j.started_at, j.completed_at,
	(extract(epoch FROM j.completed_at - j.started_at) * 1000)::bigint AS duration_ms`

// StatusCount is how many jobs of a status a count found, and how many of
// them carry an error.
type StatusCount struct {
	Status     Status
	Count      int
	WithErrors int
}

// CountByStatus runs query, whose rows are (status, count, count with an
// error), and returns the count of every status of Statuses, zeros
// included, in that order.
func CountByStatus(ctx context.Context, db postgres.DBTX, query string, args ...any) ([]StatusCount, error) {
	rows, _ := db.Query(ctx, query, args...)
	found := map[Status]StatusCount{}
	var c StatusCount
	if _, err := pgx.ForEachRow(rows, []any{&c.Status, &c.Count, &c.WithErrors}, func() error {
		found[c.Status] = c
		return nil
	}); err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	out := make([]StatusCount, 0, len(Statuses()))
	for _, st := range Statuses() {
		c := found[st]
		c.Status = st
		out = append(out, c)
	}
	return out, nil
}

// CountOf is the number of jobs in status among counts (of every status
// when status is empty): a list's total, taken from its stats.
func CountOf(counts []StatusCount, status string) int {
	n := 0
	for _, c := range counts {
		if status == "" || status == string(c.Status) {
			n += c.Count
		}
	}
	return n
}

// DeleteWhere deletes, in one statement, the final jobs of queue that w
// selects (w.Statuses, when set, must be final states) and returns how
// many it deleted and how many of the selected jobs it skipped because
// they are queued or running. The selected rows are locked first, so a job
// that a concurrent retry puts back in the queue is skipped, not deleted.
// db is a pool or the caller's transaction. Errors: errs.Invalid for a
// status that is not final.
func (c *Client) DeleteWhere(ctx context.Context, db postgres.DBTX, queue string, w Where) (deleted, skipped int, err error) {
	q, err := c.queue(queue)
	if err != nil {
		return 0, 0, err
	}
	statuses, err := w.statuses(FinalStatuses(), "delete", "only "+Describe(FinalStatuses())+" jobs can be deleted")
	if err != nil {
		return 0, 0, err
	}
	where, args := w.clause(2)
	tb := pgx.Identifier{q.cfg.Table}.Sanitize()
	err = db.QueryRow(ctx, `
		WITH sel AS (SELECT id, status FROM `+tb+` WHERE `+where+` ORDER BY id FOR UPDATE),
		del AS (DELETE FROM `+tb+` AS j USING sel WHERE j.id = sel.id AND sel.status = ANY($1) RETURNING j.id)
		SELECT (SELECT count(*) FROM del)::int, (SELECT count(*) FROM sel WHERE status IN ('queued', 'running'))::int`,
		append([]any{names(statuses)}, args...)...).Scan(&deleted, &skipped)
	if err != nil {
		return 0, 0, fmt.Errorf("delete %s jobs: %w", queue, err)
	}
	return deleted, skipped, nil
}

// statuses are the states w selects among from (all of from when w names
// none). Errors: errs.Invalid for a state outside from.
func (w Where) statuses(from []Status, verb, refusal string) ([]Status, error) {
	if len(w.Statuses) == 0 {
		return from, nil
	}
	for _, s := range w.Statuses {
		if !slices.Contains(from, s) {
			return nil, errs.Errorf(errs.Invalid, "%s jobs cannot be selected to %s: %s", s, verb, refusal)
		}
	}
	return w.Statuses, nil
}

// clause is w's condition, except its statuses, with its parameters
// numbered from first.
func (w Where) clause(first int) (string, []any) {
	where := fmt.Sprintf(`($%d::uuid IS NULL OR project_id = $%[1]d)`, first)
	args := []any{w.ProjectID}
	if w.Column != "" {
		where += fmt.Sprintf(` AND %s = $%d`, pgx.Identifier{w.Column}.Sanitize(), first+len(args))
		args = append(args, w.Equals)
	}
	if w.IDs != nil {
		where += fmt.Sprintf(` AND id = ANY($%d)`, first+len(args))
		args = append(args, w.IDs)
	}
	return where, args
}

func names(ss []Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// ListFilter narrows a superadmin job list: Status narrows the list only,
// the others the list and its stats.
type ListFilter struct {
	Status    string
	ProjectID *uuid.UUID
	HasError  *bool
	Limit     int
	Offset    int
}

// ListWhere is a ListFilter's condition, except its status, on a job
// table aliased j: $1 is the project, $2 hasError.
const ListWhere = `($1::uuid IS NULL OR j.project_id = $1) AND ($2::bool IS NULL OR (j.error_msg IS NOT NULL) = $2)`

// Check validates the filter's status. Errors: errs.Invalid.
func (f ListFilter) Check() error {
	if f.Status != "" && !Status(f.Status).Valid() {
		return errs.Errorf(errs.Invalid, "status must be %s", Describe(Statuses()))
	}
	return nil
}

// Vocabulary is the status words a list shows in place of the job
// column's (DESIGN 6: email's pending, processing, sent; sync's pending),
// each with the job status it stands for, in list order.
type Vocabulary []VocabularyWord

// VocabularyWord is one status word of a Vocabulary.
type VocabularyWord struct {
	Name   string
	Status Status
}

// Status is the job status of the word name (false: not a word of v).
func (v Vocabulary) Status(name string) (Status, bool) {
	for _, w := range v {
		if w.Name == name {
			return w.Status, true
		}
	}
	return "", false
}

// Name is the word for job status st (st itself when v has none).
func (v Vocabulary) Name(st Status) string {
	for _, w := range v {
		if w.Status == st {
			return w.Name
		}
	}
	return string(st)
}

// NamedCount is a StatusCount under its word in a Vocabulary.
type NamedCount struct {
	Name       string
	Count      int
	WithErrors int
}

// Counts renames counts (from CountByStatus) to v's words, in v's order.
func (v Vocabulary) Counts(counts []StatusCount) []NamedCount {
	out := make([]NamedCount, len(v))
	for i, w := range v {
		out[i].Name = w.Name
		for _, c := range counts {
			if c.Status == w.Status {
				out[i].Count, out[i].WithErrors = c.Count, c.WithErrors
			}
		}
	}
	return out
}
