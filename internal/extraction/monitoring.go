package extraction

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Monitoring vocabulary and limits (the spec's Extraction monitoring).
const (
	MonitorPending   = "pending"
	MonitorRunning   = "running"
	MonitorCompleted = "completed"
	MonitorFailed    = "failed"

	SourceDocument   = "document"
	SourceDatasource = "datasource"

	// detailItemsMax bounds the logs and calls embedded in a job detail.
	detailItemsMax = 500
)

// monitorStatus maps an admin status to the monitoring vocabulary.
func monitorStatus(s string) string {
	switch jobqueue.Status(s) {
	case jobqueue.StatusQueued:
		return MonitorPending
	case jobqueue.StatusRunning:
		return MonitorRunning
	case jobqueue.StatusCompleted, jobqueue.StatusRequiresReview:
		return MonitorCompleted
	default:
		return MonitorFailed
	}
}

// adminStatuses maps a monitoring status back to the admin statuses it
// covers.
func adminStatuses(s string) ([]string, bool) {
	switch s {
	case MonitorPending, MonitorRunning, MonitorCompleted, MonitorFailed:
	default:
		return nil, false
	}
	var out []string
	for _, st := range jobqueue.Statuses() {
		if monitorStatus(string(st)) == s {
			out = append(out, string(st))
		}
	}
	return out, true
}

// MonitorJobBase holds the fields of a monitoring job summary shared with
// the job detail.
type MonitorJobBase struct {
	ID                   uuid.UUID  `json:"id"`
	SourceType           string     `json:"source_type" enum:"document,datasource"`
	SourceID             string     `json:"source_id"`
	Status               string     `json:"status" enum:"pending,running,completed,failed"`
	StartedAt            *time.Time `json:"started_at,omitempty" doc:"Absent while the job waits in the queue."`
	CompletedAt          *time.Time `json:"completed_at,omitempty"`
	DurationMs           *int64     `json:"duration_ms,omitempty" doc:"From start to end, or to now while running."`
	ObjectsCreated       int        `json:"objects_created"`
	RelationshipsCreated int        `json:"relationships_created"`
	SuggestionsCreated   int        `json:"suggestions_created"`
	ErrorMessage         string     `json:"error_message,omitempty" doc:"The last error; \"cancelled\" for a cancelled job."`
}

// MonitorJob is the spec's job summary.
type MonitorJob struct {
	MonitorJobBase
	TotalLLMCalls int     `json:"total_llm_calls"`
	TotalCostUSD  float64 `json:"total_cost_usd"`
}

// Metrics are the spec's job metrics, computed from the call log.
type Metrics struct {
	TotalLLMCalls     int     `json:"total_llm_calls"`
	TotalCostUSD      float64 `json:"total_cost_usd"`
	TotalTokens       int     `json:"total_tokens"`
	AvgCallDurationMs float64 `json:"avg_call_duration_ms"`
	SuccessRate       float64 `json:"success_rate" doc:"Share of calls that succeeded, 0 to 1; 0 without calls."`
}

// ProcessLog is the spec's process log entry.
type ProcessLog struct {
	ID          uuid.UUID       `json:"id"`
	Timestamp   time.Time       `json:"timestamp"`
	Level       string          `json:"level" enum:"debug,info,warn,error"`
	Message     string          `json:"message"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	ProcessType string          `json:"processType,omitempty" doc:"The log entry's operation."`
}

// CallLog is the spec's LLM call log entry.
type CallLog struct {
	ID              uuid.UUID       `json:"id" db:"id"`
	ModelName       string          `json:"model_name" db:"model_name"`
	Status          string          `json:"status" db:"status" enum:"success,error"`
	InputTokens     int             `json:"input_tokens" db:"input_tokens"`
	OutputTokens    int             `json:"output_tokens" db:"output_tokens"`
	TotalTokens     int             `json:"total_tokens" db:"total_tokens"`
	CostUSD         float64         `json:"cost_usd" db:"cost_usd"`
	DurationMs      int             `json:"duration_ms" db:"duration_ms"`
	StartedAt       time.Time       `json:"started_at" db:"started_at"`
	CompletedAt     *time.Time      `json:"completed_at,omitempty" db:"completed_at"`
	RequestPayload  json.RawMessage `json:"request_payload,omitempty" db:"request_payload"`
	ResponsePayload json.RawMessage `json:"response_payload,omitempty" db:"response_payload"`
	ErrorMessage    string          `json:"error_message,omitempty" db:"error_message"`
}

// MonitorDetail is the spec's job detail.
type MonitorDetail struct {
	MonitorJobBase
	Logs     []ProcessLog `json:"logs"`
	LLMCalls []CallLog    `json:"llm_calls"`
	Metrics  Metrics      `json:"metrics"`
}

// MonitorFilter selects, sorts and pages the monitoring job list.
type MonitorFilter struct {
	Status     string
	SourceType string
	DateFrom   *time.Time
	DateTo     *time.Time
	SortBy     string
	SortOrder  string
	Limit      int
	Offset     int
}

// sortColumn is the sort key of the job list for by, as the page's
// query (monitorPage) names it.
func sortColumn(by string) (string, bool) {
	switch by {
	case "", "created_at":
		return "created_at", true
	case "started_at":
		return "started_at", true
	case "duration_ms":
		return "duration_ms", true
	case "total_cost_usd":
		return "total_cost_usd", true
	}
	return "", false
}

// sortKey is the expression of monitorSelect that sorts by col.
func sortKey(col string) string {
	switch col {
	case "total_cost_usd":
		return "j.llm_cost_usd"
	case "duration_ms":
		return "duration_ms"
	}
	return "j." + col
}

type monitorRow struct {
	ID                   uuid.UUID  `db:"id"`
	DocumentID           *uuid.UUID `db:"document_id"`
	DatasourceID         *uuid.UUID `db:"datasource_id"`
	Status               string     `db:"status"`
	StartedAt            *time.Time `db:"started_at"`
	CompletedAt          *time.Time `db:"completed_at"`
	ErrorMsg             *string    `db:"error_msg"`
	ObjectsCreated       int        `db:"objects_created"`
	RelationshipsCreated int        `db:"relationships_created"`
	SuggestionsCreated   int        `db:"suggestions_created"`
	TotalLLMCalls        int        `db:"total_llm_calls"`
	TotalCostUSD         float64    `db:"total_cost_usd"`
	DurationMs           *int64     `db:"duration_ms"`
	postgres.Total
}

const monitorSelect = `SELECT j.id, j.document_id, j.datasource_id, j.status, j.started_at, j.completed_at, j.error_msg,
	j.objects_created, j.relationships_created, j.suggestions_created,
	j.llm_calls AS total_llm_calls, j.llm_cost_usd::float8 AS total_cost_usd,
	CASE WHEN j.started_at IS NULL THEN NULL
	     ELSE (extract(epoch FROM coalesce(j.completed_at, $2::timestamptz) - j.started_at) * 1000)::bigint END AS duration_ms,
	0 AS total
	FROM object_extraction_jobs j`

func monitorFromRow(r monitorRow) MonitorJob {
	b := MonitorJobBase{
		ID: r.ID, Status: monitorStatus(r.Status), StartedAt: r.StartedAt, CompletedAt: r.CompletedAt,
		DurationMs: r.DurationMs, ObjectsCreated: r.ObjectsCreated, RelationshipsCreated: r.RelationshipsCreated,
		SuggestionsCreated: r.SuggestionsCreated, ErrorMessage: postgres.Value(r.ErrorMsg),
	}
	switch {
	case r.DocumentID != nil:
		b.SourceType, b.SourceID = SourceDocument, r.DocumentID.String()
	case r.DatasourceID != nil:
		b.SourceType, b.SourceID = SourceDatasource, r.DatasourceID.String()
	}
	if r.Status == string(jobqueue.StatusCancelled) {
		b.ErrorMessage = "cancelled"
	}
	return MonitorJob{MonitorJobBase: b, TotalLLMCalls: r.TotalLLMCalls, TotalCostUSD: r.TotalCostUSD}
}

// MonitorJobs pages a project's jobs in the monitoring vocabulary.
// Errors: invalid_argument.
func (s *Service) MonitorJobs(ctx context.Context, project uuid.UUID, f MonitorFilter) ([]MonitorJob, int, error) {
	var statuses []string
	if f.Status != "" {
		var ok bool
		if statuses, ok = adminStatuses(f.Status); !ok {
			return nil, 0, errs.New(errs.Invalid, "status must be pending, running, completed or failed")
		}
	}
	if f.SourceType != "" && f.SourceType != SourceDocument && f.SourceType != SourceDatasource {
		return nil, 0, errs.New(errs.Invalid, "source_type must be document or datasource")
	}
	col, ok := sortColumn(f.SortBy)
	if !ok {
		return nil, 0, errs.New(errs.Invalid, "sort_by must be started_at, created_at, duration_ms or total_cost_usd")
	}
	dir := "DESC"
	switch f.SortOrder {
	case "", "desc":
	case "asc":
		dir = "ASC"
	default:
		return nil, 0, errs.New(errs.Invalid, "sort_order must be asc or desc")
	}
	// col and dir come from the fixed lists above. A job's call totals are
	// kept on its row (migration 00037: triggers on the call log), so the
	// page is read in order from an index, cost included. Creation time
	// and cost are never NULL: their order omits NULLS LAST so that the
	// index, read forwards or backwards, gives it.
	nulls := ` NULLS LAST`
	if col == "created_at" || col == "total_cost_usd" {
		nulls = ``
	}
	sql := monitorSelect + ` WHERE ` + monitorWhere(3) + `
		ORDER BY ` + sortKey(col) + ` ` + dir + nulls + `, j.id ` + dir + ` LIMIT $7 OFFSET $8`
	rows, err := s.pool.Query(ctx, sql, project, s.now().UTC(), statuses, f.SourceType, f.DateFrom, f.DateTo, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list monitored jobs: %w", err)
	}
	list, _, err := postgres.CollectPage(rows, monitorFromRow)
	if err != nil {
		return nil, 0, fmt.Errorf("list monitored jobs: %w", err)
	}
	// Counted apart (the index answers it): a window count would sort
	// every job of the project where the page needs only its top rows.
	var total int
	err = s.pool.QueryRow(ctx, `SELECT count(*) FROM object_extraction_jobs j WHERE `+monitorWhere(2),
		project, statuses, f.SourceType, f.DateFrom, f.DateTo).Scan(&total)
	if err != nil {
		return nil, 0, fmt.Errorf("count monitored jobs: %w", err)
	}
	return list, total, nil
}

// monitorWhere is the condition of the job list's filters: $1 the
// project, then from $first the statuses, the source type and the
// creation period's bounds (the page and its count name them alike).
func monitorWhere(first int) string {
	return fmt.Sprintf(`j.project_id = $1 AND ($%[1]d::text[] IS NULL OR j.status = ANY($%[1]d))
		  AND ($%[2]d = '' OR ($%[2]d = 'document' AND j.document_id IS NOT NULL) OR ($%[2]d = 'datasource' AND j.datasource_id IS NOT NULL))
		  AND ($%[3]d::timestamptz IS NULL OR j.created_at >= $%[3]d) AND ($%[4]d::timestamptz IS NULL OR j.created_at <= $%[4]d)`,
		first, first+1, first+2, first+3)
}

// monitorJob returns one of project's jobs in the monitoring vocabulary.
// Errors: not_found.
func (s *Service) monitorJob(ctx context.Context, project, id uuid.UUID) (MonitorJob, error) {
	rows, err := s.pool.Query(ctx, monitorSelect+` WHERE j.project_id = $1 AND j.id = $3`, project, s.now().UTC(), id)
	if err != nil {
		return MonitorJob{}, fmt.Errorf("get monitored job: %w", err)
	}
	list, _, err := postgres.CollectPage(rows, monitorFromRow)
	if err != nil {
		return MonitorJob{}, fmt.Errorf("get monitored job: %w", err)
	}
	if len(list) == 0 {
		return MonitorJob{}, ErrNotFound
	}
	return list[0], nil
}

// MonitorDetail returns one of project's jobs with its logs, calls (the
// first detailItemsMax of each) and metrics. Errors: not_found.
func (s *Service) MonitorDetail(ctx context.Context, project, id uuid.UUID) (MonitorDetail, error) {
	j, err := s.monitorJob(ctx, project, id)
	if err != nil {
		return MonitorDetail{}, err
	}
	logs, _, err := s.MonitorLogs(ctx, project, id, "", detailItemsMax, 0)
	if err != nil {
		return MonitorDetail{}, err
	}
	calls, _, err := s.MonitorCalls(ctx, project, id, detailItemsMax, 0)
	if err != nil {
		return MonitorDetail{}, err
	}
	m, err := callMetrics(ctx, s.pool, id)
	if err != nil {
		return MonitorDetail{}, err
	}
	return MonitorDetail{MonitorJobBase: j.MonitorJobBase, Logs: logs, LLMCalls: calls, Metrics: m}, nil
}

// checkJob makes sure id is a job of project. Errors: not_found.
func (s *Service) checkJob(ctx context.Context, project, id uuid.UUID) error {
	_, err := postgres.One[int](ctx, s.pool, ErrNotFound, `SELECT 1 FROM object_extraction_jobs WHERE id = $1 AND project_id = $2`, id, project)
	if err != nil {
		return fmt.Errorf("get monitored job: %w", err)
	}
	return nil
}

// MonitorLogs pages a job's process log in order. Errors: not_found,
// invalid_argument.
func (s *Service) MonitorLogs(ctx context.Context, project, id uuid.UUID, level string, limit, offset int) ([]ProcessLog, int, error) {
	switch level {
	case "", LevelDebug, LevelInfo, LevelWarn, LevelError:
	default:
		return nil, 0, errs.New(errs.Invalid, "level must be debug, info, warn or error")
	}
	if err := s.checkJob(ctx, project, id); err != nil {
		return nil, 0, err
	}
	entries, total, err := logList(ctx, s.pool, id, level, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]ProcessLog, len(entries))
	for i, e := range entries {
		out[i] = ProcessLog{ID: e.ID, Timestamp: e.CreatedAt, Level: e.Level, Message: e.Message, Metadata: e.Metadata, ProcessType: e.Operation}
	}
	return out, total, nil
}

// MonitorCalls pages a job's LLM call log in order. Errors: not_found.
func (s *Service) MonitorCalls(ctx context.Context, project, id uuid.UUID, limit, offset int) ([]CallLog, int, error) {
	if err := s.checkJob(ctx, project, id); err != nil {
		return nil, 0, err
	}
	return callList(ctx, s.pool, id, limit, offset)
}

// MonitorMetrics returns the metrics of one of project's jobs, from its
// whole call log (as in MonitorDetail), without its logs and calls.
// Errors: not_found.
func (s *Service) MonitorMetrics(ctx context.Context, project, id uuid.UUID) (Metrics, error) {
	if err := s.checkJob(ctx, project, id); err != nil {
		return Metrics{}, err
	}
	return callMetrics(ctx, s.pool, id)
}
