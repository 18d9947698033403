package integration

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

// syncVocabulary pairs every sync job status (the spec's) with its job
// status: queued is pending. A sync never asks for review.
var syncVocabulary = jobqueue.Vocabulary{ //nolint:gochecknoglobals // constant table
	{Name: "pending", Status: jobqueue.StatusQueued},
	{Name: "running", Status: jobqueue.StatusRunning},
	{Name: "completed", Status: jobqueue.StatusCompleted},
	{Name: "failed", Status: jobqueue.StatusFailed},
	{Name: "cancelled", Status: jobqueue.StatusCancelled},
}

// ErrBadSyncStatus answers a status filter outside SyncStatuses.
var ErrBadSyncStatus = errs.New(errs.Invalid, "status must be one of pending, running, completed, failed, cancelled")

// AdminSyncJob is a sync job as the superadmin list shows it: the job
// record (status in the sync vocabulary) with its integration, trigger,
// phase and counters.
type AdminSyncJob struct {
	jobqueue.Record
	IntegrationID   uuid.UUID `json:"integrationId" db:"integration_id"`
	IntegrationName string    `json:"integrationName" db:"integration_name"`
	ProviderType    string    `json:"providerType" db:"provider_type"`
	TriggerType     string    `json:"triggerType" db:"trigger_type" enum:"manual,scheduled"`
	Phase           string    `json:"phase" db:"phase" enum:"pending,listing,deleting,done"`
	TotalItems      int       `json:"totalItems" db:"total_items"`
	ProcessedItems  int       `json:"processedItems" db:"processed_items"`
	CreatedItems    int       `json:"createdItems" db:"created_items"`
	UpdatedItems    int       `json:"updatedItems" db:"updated_items"`
	UnchangedItems  int       `json:"unchangedItems" db:"unchanged_items"`
	DeletedItems    int       `json:"deletedItems" db:"deleted_items"`
	FailedItems     int       `json:"failedItems" db:"failed_items"`
}

// AdminSyncJobs lists every project's sync jobs, newest first, with their
// status in the sync vocabulary, and counts them per status over the same
// filters except status (f.Status is a sync status). Errors:
// invalid_argument (unknown status).
func (s *Service) AdminSyncJobs(ctx context.Context, f jobqueue.ListFilter) ([]AdminSyncJob, int, []jobqueue.NamedCount, error) {
	status := ""
	if f.Status != "" {
		st, ok := syncVocabulary.Status(f.Status)
		if !ok {
			return nil, 0, nil, ErrBadSyncStatus
		}
		status = string(st)
	}
	// The page's ids first: only its jobs are joined to their integration
	// and project, however deep the offset.
	list, err := syncJobsQuery(ctx, s.cfg.Pool, `WHERE j.id IN (SELECT j.id FROM integration_sync_jobs j
		WHERE `+jobqueue.ListWhere+` AND ($3 = '' OR j.status = $3)
		ORDER BY j.created_at DESC, j.id DESC LIMIT $4 OFFSET $5) ORDER BY j.created_at DESC, j.id DESC`,
		f.ProjectID, f.HasError, status, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, nil, err
	}
	counts, err := jobqueue.CountByStatus(ctx, s.cfg.Pool, `SELECT j.status, count(*)::int, count(j.error_msg)::int
		FROM integration_sync_jobs j WHERE `+jobqueue.ListWhere+` GROUP BY j.status`, f.ProjectID, f.HasError)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("count sync jobs: %w", err)
	}
	return list, jobqueue.CountOf(counts, status), syncVocabulary.Counts(counts), nil
}

// syncJobsQuery lists sync jobs with their integration and counters (the
// condition and order in where), their status in the sync vocabulary.
func syncJobsQuery(ctx context.Context, db postgres.DBTX, where string, args ...any) ([]AdminSyncJob, error) {
	rows, _ := db.Query(ctx, `
		SELECT `+jobqueue.RecordColumns+`, j.integration_id, i.name AS integration_name, i.provider_type, j.trigger_type, j.phase,
			j.total_items, j.processed_items, j.created_items, j.updated_items, j.unchanged_items, j.deleted_items, j.failed_items
		FROM integration_sync_jobs j
		JOIN integrations i ON i.id = j.integration_id JOIN projects p ON p.id = j.project_id JOIN orgs o ON o.id = p.org_id
		`+where, args...)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AdminSyncJob])
	if err != nil {
		return nil, fmt.Errorf("list sync jobs: %w", err)
	}
	for i := range list {
		list[i].Status = syncVocabulary.Name(jobqueue.Status(list[i].Status))
	}
	return list, nil
}

// LogEntry is one entry of a sync job's log.
type LogEntry struct {
	Timestamp time.Time      `json:"timestamp" db:"created_at"`
	Level     string         `json:"level" db:"level" enum:"debug,info,warn,error"`
	Message   string         `json:"message" db:"message"`
	Details   map[string]any `json:"details,omitempty" db:"details"`
}

// SyncJobLog is the answer of GET /api/superadmin/sync-jobs/{jobID}/logs.
type SyncJobLog struct {
	JobID uuid.UUID  `json:"jobId"`
	Logs  []LogEntry `json:"logs"`
}

// SyncJobLogs returns a sync job's log, oldest first. Errors: not_found.
func (s *Service) SyncJobLogs(ctx context.Context, id uuid.UUID) (SyncJobLog, error) {
	if _, err := postgres.One[uuid.UUID](ctx, s.cfg.Pool, ErrSyncNotFound, `SELECT id FROM integration_sync_jobs WHERE id = $1`, id); err != nil {
		return SyncJobLog{}, err
	}
	return s.syncLog(ctx, id)
}

// syncLog reads a sync job's log, oldest first.
func (s *Service) syncLog(ctx context.Context, id uuid.UUID) (SyncJobLog, error) {
	rows, _ := s.cfg.Pool.Query(ctx, `SELECT created_at, level, message, details FROM integration_sync_logs WHERE job_id = $1 ORDER BY created_at, id`, id)
	logs, err := pgx.CollectRows(rows, pgx.RowToStructByName[LogEntry])
	if err != nil {
		return SyncJobLog{}, fmt.Errorf("read sync log: %w", err)
	}
	if logs == nil {
		logs = []LogEntry{}
	}
	return SyncJobLog{JobID: id, Logs: logs}, nil
}

// ErrSyncType answers a bulk action naming a type: sync jobs are of one
// kind.
var ErrSyncType = errs.New(errs.Invalid, "type is not accepted: sync jobs have no type")

// CancelSyncJobs cancels, in tx, the queued and running sync jobs among
// ids (any project); a running one stops within seconds. It returns how
// many it cancelled.
func (s *Service) CancelSyncJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, kind string) (int, error) {
	if kind != "" {
		return 0, ErrSyncType
	}
	chs, err := s.cfg.Jobs.CancelWhere(ctx, tx, Queue, jobqueue.Where{IDs: ids})
	return len(chs), err
}

// DeleteSyncJobs deletes, in tx, the finished sync jobs among ids (any
// project) with their logs; it returns how many it deleted and how many
// it skipped (queued or running).
func (s *Service) DeleteSyncJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, kind string) (deleted, skipped int, err error) {
	if kind != "" {
		return 0, 0, ErrSyncType
	}
	return s.cfg.Jobs.DeleteWhere(ctx, tx, Queue, jobqueue.Where{IDs: ids})
}
