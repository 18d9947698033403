// Package extraction turns document chunks into graph objects and
// relationships: the object_extraction queue's worker (windows of chunks,
// one structured-output call per window through the provider resolver,
// validation against the project's types, all graph writes of a job in one
// transaction, review of low-confidence objects), the extraction job
// administration API, the extraction monitoring API and the project's
// extraction settings.
package extraction

import (
	"encoding/json"
	"math"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/provider"
)

// Queue is the job queue of extraction jobs (table
// object_extraction_jobs); only this package enqueues, cancels or retries
// them.
const Queue = "object_extraction"

// IsQueue reports whether queue, as an event names it, is the extraction
// queue (readers such as the console match events without naming it).
func IsQueue(queue string) bool { return queue == Queue }

// Job types (the spec's jobType).
const (
	JobTypeFull         = "full_extraction"
	JobTypeReextraction = "reextraction"
	JobTypeIncremental  = "incremental"
)

// Trigger types (the spec's triggerType).
const (
	TriggerManual    = "manual"
	TriggerScheduled = "scheduled"
	TriggerWebhook   = "webhook"
)

// Log operations (the spec's Extraction job log entry).
const (
	OpLLMCall              = "llm_call"
	OpChunkProcessing      = "chunk_processing"
	OpObjectCreation       = "object_creation"
	OpRelationshipCreation = "relationship_creation"
	OpSuggestionCreation   = "suggestion_creation"
	OpValidation           = "validation"
	OpError                = "error"
)

// Log levels (the monitoring API's process log levels).
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// Review vocabulary: the task created for a job's suggestions.
const (
	TaskType       = "suggestion"
	TaskSourceType = "extraction_job"
)

// Defaults and limits.
const (
	// ReviewThresholdDefault is the review threshold of a new project.
	ReviewThresholdDefault = 0.7
	// InputBudgetDefault is the input budget assumed for a model whose
	// catalog entry gives none.
	InputBudgetDefault = 32000
	// WindowTokensMax caps the tokens of one window (chunks plus prompt), so
	// that every call stays fast whatever the model's budget.
	WindowTokensMax = 8000
	// PriorityMax bounds priority for callers other than superadmins.
	PriorityMax = 100
)

// Job is an extraction job (the spec's ObjectExtractionJob) with the
// worker's counters.
type Job struct {
	ID                   uuid.UUID  `json:"id" db:"id"`
	ProjectID            uuid.UUID  `json:"projectId" db:"project_id"`
	DocumentID           *uuid.UUID `json:"documentId,omitempty" db:"document_id"`
	DatasourceID         *uuid.UUID `json:"datasourceId,omitempty" db:"datasource_id"`
	JobType              string     `json:"jobType" db:"job_type" enum:"full_extraction,reextraction,incremental"`
	TriggerType          string     `json:"triggerType" db:"trigger_type" enum:"manual,scheduled,webhook"`
	Status               string     `json:"status" db:"status"` // a jobqueue.Status; see TransformSchema
	Priority             int        `json:"priority" db:"priority" doc:"Higher values are processed first."`
	ErrorMsg             string     `json:"errorMsg,omitempty" db:"error_msg" doc:"Last error message."`
	RetryCount           int        `json:"retryCount" db:"retry_count"`
	MaxRetries           int        `json:"maxRetries" db:"max_retries"`
	ObjectsCreated       int        `json:"objectsCreated" db:"objects_created" doc:"Objects the job stored, new or already in the graph (a re-run reports the same figure)."`
	RelationshipsCreated int        `json:"relationshipsCreated" db:"relationships_created" doc:"Relationships the job stored, new or already in the graph."`
	SuggestionsCreated   int        `json:"suggestionsCreated" db:"suggestions_created" doc:"Objects stored as suggestions for review."`
	CreatedBy            *uuid.UUID `json:"createdBy,omitempty" db:"created_by"`
	StartedAt            *time.Time `json:"startedAt,omitempty" db:"started_at"`
	CompletedAt          *time.Time `json:"completedAt,omitempty" db:"completed_at"`
	CreatedAt            time.Time  `json:"createdAt" db:"created_at"`
	UpdatedAt            time.Time  `json:"updatedAt" db:"updated_at"`
}

// TransformSchema implements huma.SchemaTransformer: status is one of
// jobqueue's statuses.
func (Job) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.Properties["status"].Enum = jobqueue.Enum(jobqueue.Statuses())
	return s
}

// LogEntry is an extraction job log entry.
type LogEntry struct {
	ID        uuid.UUID       `json:"id" db:"id"`
	JobID     uuid.UUID       `json:"jobId" db:"job_id"`
	Operation string          `json:"operation" db:"operation" enum:"llm_call,chunk_processing,object_creation,relationship_creation,suggestion_creation,validation,error"`
	Level     string          `json:"level" db:"level" enum:"debug,info,warn,error"`
	Message   string          `json:"message" db:"message"`
	Metadata  json.RawMessage `json:"metadata" db:"metadata"`
	CreatedAt time.Time       `json:"createdAt" db:"created_at"`
}

// LLMCall is one LLM call of an extraction job, as the call log keeps it:
// the provider's record of the call, its job and what was asked.
type LLMCall struct {
	provider.Call
	JobID          uuid.UUID
	RequestPayload json.RawMessage
}

// LLM call statuses.
const (
	CallSuccess = provider.CallSuccess
	CallError   = provider.CallError
)

// Statistics summarises a project's extraction jobs.
type Statistics struct {
	Total                int64            `json:"total"`
	ByStatus             map[string]int64 `json:"byStatus" doc:"Jobs per status; every status is present."`
	ByJobType            map[string]int64 `json:"byJobType" doc:"Jobs per job type; every job type is present."`
	JobsLastHour         int64            `json:"jobsLastHour" doc:"Jobs that finished processing (completed, requires_review or failed) in the last hour."`
	JobsLast24Hours      int64            `json:"jobsLast24Hours" doc:"Jobs that finished processing in the last 24 hours."`
	AvgDurationMs        float64          `json:"avgDurationMs" doc:"Average time from start to end of the jobs that completed (completed or requires_review); 0 when none."`
	ObjectsCreated       int64            `json:"objectsCreated"`
	RelationshipsCreated int64            `json:"relationshipsCreated"`
	SuggestionsCreated   int64            `json:"suggestionsCreated"`
}

// Settings are a project's extraction settings.
type Settings struct {
	ProjectID       uuid.UUID `json:"projectId"`
	ReviewThreshold float64   `json:"reviewThreshold" doc:"Objects extracted with a lower confidence are stored as suggestions for review."`
	// ReextractionIntervalHours is the age, in hours, at which the last
	// extraction of a document is redone by a scheduled reextraction job.
	ReextractionIntervalHours int `json:"reextractionIntervalHours" doc:"Hours after which the scheduler re-extracts a document whose last extraction finished (a reextraction job, trigger scheduled); 0: never."`
}

// ReextractionIntervalMax bounds reextractionIntervalHours (a year).
const ReextractionIntervalMax = 8760

// SettingsUpdate changes a project's extraction settings; a nil field is
// left as it is.
type SettingsUpdate struct {
	ReviewThreshold           *float64
	ReextractionIntervalHours *int
}

// CreateParams describes a job created through the API.
type CreateParams struct {
	ProjectID  uuid.UUID
	DocumentID *uuid.UUID
	JobType    string
	Priority   int
	CreatedBy  *uuid.UUID
	// Superadmin lifts the priority bound.
	Superadmin bool
}

// JobFilter selects and pages a project's jobs.
type JobFilter struct {
	Status  string
	JobType string
	Limit   int
	Offset  int
}

// BulkResult counts what a bulk operation changed (the spec's superadmin
// bulk results, with the count named by the operation).
type BulkResult struct {
	Success        bool   `json:"success"`
	CancelledCount *int   `json:"cancelledCount,omitempty"`
	RetriedCount   *int   `json:"retriedCount,omitempty"`
	DeletedCount   *int   `json:"deletedCount,omitempty"`
	Message        string `json:"message"`
}

// Errors of this domain.
var (
	ErrNotFound         = errs.New(errs.NotFound, "extraction job not found")
	ErrDocumentNotFound = errs.New(errs.NotFound, "document not found in this project")
	ErrDocumentRequired = errs.New(errs.Invalid, "documentId is required: extraction jobs run on a document")
	ErrBadJobType       = errs.New(errs.Invalid, "jobType must be full_extraction, reextraction or incremental")
	ErrBadStatus        = errs.Errorf(errs.Invalid, "status must be %s", jobqueue.Describe(jobqueue.Statuses()))
	ErrNotFinal         = errs.Errorf(errs.Invalid, "status must be %s: only finished jobs can be deleted", jobqueue.Describe(jobqueue.FinalStatuses()))
	ErrBadPriority      = errs.Errorf(errs.Invalid, "priority must be between 0 and %d", PriorityMax)
	ErrPriorityRange    = errs.Errorf(errs.Invalid, "priority must be between %d and %d", math.MinInt32, math.MaxInt32)
	ErrBadThreshold     = errs.New(errs.Invalid, "reviewThreshold must be between 0 and 1")
	ErrBadInterval      = errs.Errorf(errs.Invalid, "reextractionIntervalHours must be between 0 (off) and %d hours", ReextractionIntervalMax)
	ErrNoSettings       = errs.New(errs.Invalid, "give reviewThreshold and/or reextractionIntervalHours: the body changes nothing")
	ErrNotParsed        = errs.New(errs.FailedPrecondition, "the document is not parsed (yet): extraction needs its chunks")
)

func validJobType(t string) bool {
	return t == JobTypeFull || t == JobTypeReextraction || t == JobTypeIncremental
}
