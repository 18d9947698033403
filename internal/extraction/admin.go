package extraction

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// AdminJob is an extraction job as the superadmin list shows it: with what
// an operator needs to act without another call.
type AdminJob struct {
	jobqueue.Record
	DocumentID           *uuid.UUID `json:"documentId,omitempty" db:"document_id"`
	FileName             *string    `json:"fileName,omitempty" db:"filename"`
	JobType              string     `json:"jobType" db:"job_type"`
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

// ErrBadType answers a bulk action's type that is not a job type.
var ErrBadType = errs.New(errs.Invalid, "type must be full_extraction, reextraction or incremental (the extraction job type)")

// AdminJobs lists every project's jobs, newest first, and counts them per
// status over the same filters except status (the list's total is the
// count of its status). Errors: invalid_argument (unknown status or job
// type).
func (s *Service) AdminJobs(ctx context.Context, f AdminFilter) ([]AdminJob, []jobqueue.StatusCount, error) {
	if f.Status != "" && !jobqueue.Status(f.Status).Valid() {
		return nil, nil, ErrBadStatus
	}
	if f.JobType != "" && !validJobType(f.JobType) {
		return nil, nil, ErrBadJobType
	}
	return adminJobList(ctx, s.pool, f)
}

// CancelJobs cancels, in one statement in tx, the queued and running jobs
// among ids (any project; of jobType when not empty), logging each, and
// returns how many it cancelled. Unknown and finished ids count zero. The
// caller's transaction carries what else records the action (the
// superadmin audit row). Errors: invalid_argument (unknown job type).
func (s *Service) CancelJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, jobType string, user *uuid.UUID) (int, error) {
	w, err := byIDs(ids, jobType)
	if err != nil {
		return 0, err
	}
	return bulkInTx(ctx, tx, w, user, s.jobs.CancelWhere, cancelLog)
}

// DeleteJobs deletes, in one statement in tx, the finished jobs among ids
// (any project; of jobType when not empty) with their logs and call
// records. It returns how many it deleted and how many it skipped because
// they are queued or running. Errors: invalid_argument (unknown job type).
func (s *Service) DeleteJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, jobType string) (deleted, skipped int, err error) {
	w, err := byIDs(ids, jobType)
	if err != nil {
		return 0, 0, err
	}
	return s.jobs.DeleteWhere(ctx, tx, Queue, w)
}

// byIDs selects the jobs among ids, of jobType when not empty.
func byIDs(ids []uuid.UUID, jobType string) (jobqueue.Where, error) {
	w := jobqueue.Where{IDs: ids}
	if jobType != "" {
		if !validJobType(jobType) {
			return w, ErrBadType
		}
		w.Column, w.Equals = "job_type", jobType
	}
	return w, nil
}

// adminWhere is the filter of the superadmin list and its stats (which
// leave out the status, $4 of the list).
const adminWhere = `($1 = '' OR j.job_type = $1) AND ($2::uuid IS NULL OR j.project_id = $2)
	AND ($3::bool IS NULL OR (j.error_msg IS NOT NULL) = $3)`

func adminJobList(ctx context.Context, db postgres.DBTX, f AdminFilter) ([]AdminJob, []jobqueue.StatusCount, error) {
	// The page's ids first (by the (created_at, id) index): only its jobs
	// are joined to their project and document, however deep the offset.
	rows, _ := db.Query(ctx, `
		WITH page AS (SELECT j.id FROM object_extraction_jobs j WHERE `+adminWhere+` AND ($4 = '' OR j.status = $4)
			ORDER BY j.created_at DESC, j.id DESC LIMIT $5 OFFSET $6)
		SELECT `+jobqueue.RecordColumns+`, j.document_id, d.filename, j.job_type, j.objects_created, j.relationships_created
		FROM page JOIN object_extraction_jobs j ON j.id = page.id
		JOIN projects p ON p.id = j.project_id JOIN orgs o ON o.id = p.org_id
		LEFT JOIN documents d ON d.id = j.document_id
		ORDER BY j.created_at DESC, j.id DESC`,
		f.JobType, f.ProjectID, f.HasError, f.Status, f.Limit, f.Offset)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AdminJob])
	if err != nil {
		return nil, nil, fmt.Errorf("list extraction jobs: %w", err)
	}
	counts, err := jobqueue.CountByStatus(ctx, db, `
		SELECT j.status, count(*)::int, count(j.error_msg)::int FROM object_extraction_jobs j
		WHERE `+adminWhere+` GROUP BY j.status`, f.JobType, f.ProjectID, f.HasError)
	if err != nil {
		return nil, nil, fmt.Errorf("count extraction jobs: %w", err)
	}
	return list, counts, nil
}
