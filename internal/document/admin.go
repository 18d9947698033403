package document

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// AdminParsingJob is a document parsing job as the superadmin list shows
// it: with its document, project and organization.
type AdminParsingJob struct {
	jobqueue.Record
	DocumentID uuid.UUID `json:"documentId" db:"document_id"`
	FileName   string    `json:"fileName" db:"filename"`
}

// ErrParsingType answers a bulk action on parsing jobs that names a type:
// parsing jobs are of one kind.
var ErrParsingType = errs.New(errs.Invalid, "type is not accepted: document parsing jobs have no type")

// AdminParsingJobs lists every project's parsing jobs, newest first, and
// counts them per status over the same filters except status. Errors:
// invalid_argument (unknown status).
func (s *Service) AdminParsingJobs(ctx context.Context, f jobqueue.ListFilter) ([]AdminParsingJob, []jobqueue.StatusCount, error) {
	if err := f.Check(); err != nil {
		return nil, nil, err
	}
	rows, _ := s.pool.Query(ctx, parsingJobsSQL(""), f.ProjectID, f.HasError, f.Status, f.Limit, f.Offset)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AdminParsingJob])
	if err != nil {
		return nil, nil, fmt.Errorf("list parsing jobs: %w", err)
	}
	counts, err := jobqueue.CountByStatus(ctx, s.pool, `SELECT j.status, count(*)::int, count(j.error_msg)::int
		FROM document_parsing_jobs j WHERE `+jobqueue.ListWhere+` GROUP BY j.status`, f.ProjectID, f.HasError)
	if err != nil {
		return nil, nil, fmt.Errorf("count parsing jobs: %w", err)
	}
	return list, counts, nil
}

// parsingJobsSQL is the page of parsing jobs of the superadmin list: $1
// project, $2 hasError, $3 status, $4 limit, $5 offset, and cond, a
// further condition on the jobs (j). The page's ids come first (by the
// (created_at, id) index): only its jobs are joined to their project and
// document, however deep the offset.
func parsingJobsSQL(cond string) string {
	return `
		WITH page AS (SELECT j.id FROM document_parsing_jobs j WHERE ` + jobqueue.ListWhere + ` AND ($3 = '' OR j.status = $3)` + cond + `
			ORDER BY j.created_at DESC, j.id DESC LIMIT $4 OFFSET $5)
		SELECT ` + jobqueue.RecordColumns + `, j.document_id, d.filename
		FROM page JOIN document_parsing_jobs j ON j.id = page.id
		JOIN projects p ON p.id = j.project_id JOIN orgs o ON o.id = p.org_id JOIN documents d ON d.id = j.document_id
		ORDER BY j.created_at DESC, j.id DESC`
}

// ErrParsingJobNotFound answers a parsing job not in the project.
var ErrParsingJobNotFound = errs.New(errs.NotFound, "document parsing job not found")

// ParsingJob is the project's parsing job id, as the superadmin list
// shows it (the console's project job page). Errors: not_found (another
// project's job too).
func (s *Service) ParsingJob(ctx context.Context, project, id uuid.UUID) (AdminParsingJob, error) {
	return postgres.One[AdminParsingJob](ctx, s.pool, ErrParsingJobNotFound, parsingJobsSQL(` AND j.id = $6`), project, nil, "", 1, 0, id)
}

// DeleteParsingJobs deletes, in one statement in tx, the finished parsing
// jobs among ids (any project). It returns how many it deleted and how
// many it skipped because they are queued or running. kind must be empty.
// Errors: invalid_argument.
func (s *Service) DeleteParsingJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, kind string) (deleted, skipped int, err error) {
	if kind != "" {
		return 0, 0, ErrParsingType
	}
	return s.jobs.DeleteWhere(ctx, tx, QueueParsing, jobqueue.Where{IDs: ids})
}

// RetryParsingJobs puts the failed parsing jobs among ids (any project)
// back in the queue, in one statement in tx, and their documents back to
// "parsing"; it returns how many it retried. The workers parse them again
// once tx commits. kind must be empty. Errors: invalid_argument.
func (s *Service) RetryParsingJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, kind string) (int, error) {
	if kind != "" {
		return 0, ErrParsingType
	}
	chs, err := s.jobs.RetryWhere(ctx, tx, QueueParsing, jobqueue.Where{IDs: ids})
	if err != nil || len(chs) == 0 {
		return 0, err
	}
	jobIDs := make([]uuid.UUID, len(chs))
	for i, ch := range chs {
		jobIDs[i] = ch.ID
	}
	return len(chs), documentsReparse(ctx, tx, jobIDs, chs[0].UpdatedAt)
}

// documentsReparse sets the failed documents of the given parsing jobs
// back to parsing, their error cleared.
func documentsReparse(ctx context.Context, tx pgx.Tx, jobIDs []uuid.UUID, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE documents SET status = $2, error = NULL, updated_at = $3
		WHERE status = $4 AND id IN (SELECT document_id FROM document_parsing_jobs WHERE id = ANY($1))`,
		jobIDs, StatusParsing, now, StatusFailed)
	if err != nil {
		return fmt.Errorf("set documents parsing: %w", err)
	}
	return nil
}

// DeleteChunkEmbeddingJobs deletes, in one statement in tx, the finished
// chunk embedding jobs among ids (any project), as DeleteParsingJobs does.
func (s *Service) DeleteChunkEmbeddingJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) (deleted, skipped int, err error) {
	return s.jobs.DeleteWhere(ctx, tx, QueueChunkEmbedding, jobqueue.Where{IDs: ids})
}

// DeleteOrphanChunkEmbeddingJobs deletes, in one statement in tx, the chunk
// embedding jobs that are not running and whose chunk is soft-deleted
// with its project (or organization), and returns how many. A hard-deleted
// chunk takes its jobs with it (foreign key), and chunks have no soft
// delete of their own.
func (s *Service) DeleteOrphanChunkEmbeddingJobs(ctx context.Context, tx pgx.Tx) (int, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM chunk_embedding_jobs j USING projects p
		WHERE p.id = j.project_id AND p.deleted_at IS NOT NULL AND j.status <> 'running'`)
	if err != nil {
		return 0, fmt.Errorf("delete orphan chunk embedding jobs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
