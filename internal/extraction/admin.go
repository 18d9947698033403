package extraction

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// AdminJob is an extraction job as the superadmin list shows it: with what
// an operator needs to act without another call.
type AdminJob struct {
	ID                   uuid.UUID  `json:"id" db:"id"`
	ProjectID            uuid.UUID  `json:"projectId" db:"project_id"`
	ProjectName          string     `json:"projectName" db:"project_name"`
	OrganizationName     string     `json:"organizationName" db:"org_name"`
	DocumentID           *uuid.UUID `json:"documentId,omitempty" db:"document_id"`
	FileName             *string    `json:"fileName,omitempty" db:"filename"`
	JobType              string     `json:"jobType" db:"job_type"`
	Status               string     `json:"status" db:"status"`
	Attempt              int        `json:"attempt" db:"attempt"`
	RetryCount           int        `json:"retryCount" db:"retry_count"`
	MaxRetries           int        `json:"maxRetries" db:"max_retries"`
	ErrorMessage         *string    `json:"errorMessage,omitempty" db:"error_msg"`
	Priority             int        `json:"priority" db:"priority"`
	CreatedAt            time.Time  `json:"createdAt" db:"created_at"`
	StartedAt            *time.Time `json:"startedAt,omitempty" db:"started_at"`
	CompletedAt          *time.Time `json:"completedAt,omitempty" db:"completed_at"`
	DurationMs           *int64     `json:"durationMs,omitempty" db:"duration_ms"`
	ObjectsCreated       int        `json:"objectsCreated" db:"objects_created"`
	RelationshipsCreated int        `json:"relationshipsCreated" db:"relationships_created"`
}

// AdminFilter narrows the superadmin list of every project's jobs.
type AdminFilter struct {
	Status    string
	JobType   string
	ProjectID *uuid.UUID
	HasError  *bool
	Limit     int
	Offset    int
}

// StatusCount is how many jobs of a status there are, and how many of
// them carry an error.
type StatusCount struct {
	Status     jobqueue.Status
	Count      int
	WithErrors int
}

// AdminJobs lists every project's jobs, newest first, with the total, and
// counts them per status over the same filters except status. Errors:
// invalid_argument (unknown status or job type).
func (s *Service) AdminJobs(ctx context.Context, f AdminFilter) ([]AdminJob, int, []StatusCount, error) {
	if f.Status != "" && !jobqueue.Status(f.Status).Valid() {
		return nil, 0, nil, ErrBadStatus
	}
	if f.JobType != "" && !validJobType(f.JobType) {
		return nil, 0, nil, ErrBadJobType
	}
	return adminJobList(ctx, s.pool, f)
}

// CancelJobs cancels, in one statement in tx, the queued and running jobs
// among ids (any project), logging each, and returns how many it
// cancelled. Unknown and finished ids count zero. The caller's transaction
// carries what else records the action (the superadmin audit row).
func (s *Service) CancelJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, user *uuid.UUID) (int, error) {
	return bulkInTx(ctx, tx, jobqueue.Where{IDs: ids}, user, s.jobs.CancelWhere, cancelLog)
}

// DeleteJobs deletes, in one statement in tx, the finished jobs among ids
// (any project) with their logs and call records. It returns how many it
// deleted and how many it skipped because they are queued or running.
func (s *Service) DeleteJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) (deleted, skipped int, err error) {
	err = tx.QueryRow(ctx, `
		WITH sel AS (SELECT id, status FROM object_extraction_jobs WHERE id = ANY($1)),
		del AS (DELETE FROM object_extraction_jobs j USING sel WHERE j.id = sel.id AND sel.status = ANY($2) RETURNING j.id)
		SELECT (SELECT count(*) FROM del)::int, (SELECT count(*) FROM sel WHERE status <> ALL($2))::int`,
		ids, finalNames()).Scan(&deleted, &skipped)
	if err != nil {
		return 0, 0, fmt.Errorf("delete extraction jobs: %w", err)
	}
	return deleted, skipped, nil
}

func finalNames() []string {
	var out []string
	for _, st := range jobqueue.FinalStatuses() {
		out = append(out, string(st))
	}
	return out
}

// adminWhere is the filter of the superadmin list and its stats (which
// leave out the status, $4 of the list).
const adminWhere = `($1 = '' OR j.job_type = $1) AND ($2::uuid IS NULL OR j.project_id = $2)
	AND ($3::bool IS NULL OR (j.error_msg IS NOT NULL) = $3)`

func adminJobList(ctx context.Context, db postgres.DBTX, f AdminFilter) ([]AdminJob, int, []StatusCount, error) {
	rows, _ := db.Query(ctx, `
		SELECT j.id, j.project_id, p.name AS project_name, o.name AS org_name, j.document_id, d.filename,
		       j.job_type, j.status, j.attempt, j.retry_count, j.max_retries, j.error_msg, j.priority,
		       j.created_at, j.started_at, j.completed_at,
		       (extract(epoch FROM j.completed_at - j.started_at) * 1000)::bigint AS duration_ms,
		       j.objects_created, j.relationships_created
		FROM object_extraction_jobs j
		JOIN projects p ON p.id = j.project_id JOIN orgs o ON o.id = p.org_id
		LEFT JOIN documents d ON d.id = j.document_id
		WHERE `+adminWhere+` AND ($4 = '' OR j.status = $4)
		ORDER BY j.created_at DESC, j.id DESC LIMIT $5 OFFSET $6`,
		f.JobType, f.ProjectID, f.HasError, f.Status, f.Limit, f.Offset)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AdminJob])
	if err != nil {
		return nil, 0, nil, fmt.Errorf("list extraction jobs: %w", err)
	}
	srows, err := db.Query(ctx, `
		SELECT j.status, count(*)::int, count(j.error_msg)::int FROM object_extraction_jobs j
		WHERE `+adminWhere+` GROUP BY j.status`, f.JobType, f.ProjectID, f.HasError)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("count extraction jobs: %w", err)
	}
	defer srows.Close()
	counts := map[jobqueue.Status]StatusCount{}
	for srows.Next() {
		var c StatusCount
		if err := srows.Scan(&c.Status, &c.Count, &c.WithErrors); err != nil {
			return nil, 0, nil, fmt.Errorf("count extraction jobs: %w", err)
		}
		counts[c.Status] = c
	}
	if err := srows.Err(); err != nil {
		return nil, 0, nil, fmt.Errorf("count extraction jobs: %w", err)
	}
	// The list's total is the stats' count of the status filtered to (of
	// every status without one): no second count over the same rows.
	total := 0
	stats := make([]StatusCount, 0, len(jobqueue.Statuses()))
	for _, st := range jobqueue.Statuses() {
		c := counts[st]
		c.Status = st
		stats = append(stats, c)
		if f.Status == "" || f.Status == string(st) {
			total += c.Count
		}
	}
	return list, total, stats, nil
}
