package extraction

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/task"
	"github.com/graphmill/graphmill/internal/templatepack"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// TypeSource gives a project's object and relationship types
// (templatepack.Service).
type TypeSource interface {
	TypesFor(ctx context.Context, project uuid.UUID) (*templatepack.Types, error)
}

// GraphWriter writes extraction results into the graph (graph.Service).
type GraphWriter interface {
	Apply(ctx context.Context, tx pgx.Tx, project uuid.UUID, jobID *uuid.UUID, objs []graph.ObjectInput, rels []graph.RelationshipInput) (graph.ApplyResult, error)
	SetObjectsStatus(ctx context.Context, tx pgx.Tx, project uuid.UUID, ids []uuid.UUID, status string) error
	DeleteSuggestions(ctx context.Context, tx pgx.Tx, project, job uuid.UUID, ids []uuid.UUID) error
}

// Generator is a resolved generative model (provider.Handle): every call
// goes through the rate governor and the usage ledger.
type Generator interface {
	Generate(ctx context.Context, req llm.GenerateRequest) (*llm.GenerateResult, error)
	Cost(u llm.Usage) float64
	InputTokenLimit() int
	Model() string
	Provider() string
}

// GeneratorFunc resolves the generative model of a project.
type GeneratorFunc func(ctx context.Context, project uuid.UUID) (Generator, error)

// Tasks creates review tasks and calls back when they are resolved
// (task.Service).
type Tasks interface {
	Create(ctx context.Context, tx pgx.Tx, p task.CreateParams) (task.Task, error)
	RegisterResolver(sourceType string, fn task.ResolverFunc)
}

// Notifier tells a project's admins (notification.Service).
type Notifier interface {
	NotifyProjectAdmins(ctx context.Context, tx pgx.Tx, project uuid.UUID, p notification.Params) ([]notification.Notification, error)
}

// Documents gives extraction the chunks of documents and records which
// were extracted (document.Service).
type Documents interface {
	Get(ctx context.Context, project, id uuid.UUID) (document.Document, error)
	ChunksToExtract(ctx context.Context, project, document uuid.UUID, onlyNew bool) ([]document.ChunkText, error)
	MarkExtracted(ctx context.Context, tx pgx.Tx, project uuid.UUID, chunks []uuid.UUID, now time.Time) error
}

// Projects keeps the extraction settings on the project (tenancy.Service).
type Projects interface {
	ExtractionSettings(ctx context.Context, project uuid.UUID) (tenancy.ExtractionSettings, error)
	SetExtractionSettings(ctx context.Context, project uuid.UUID, reviewThreshold *float64, reextractionIntervalHours *int) (tenancy.ExtractionSettings, error)
	ReextractionIntervals(ctx context.Context, db postgres.DBTX) ([]tenancy.ReextractionInterval, error)
}

// Config wires a Service.
type Config struct {
	Pool       *pgxpool.Pool
	Jobs       *jobqueue.Client
	Documents  Documents
	Projects   Projects
	Types      TypeSource
	Graph      GraphWriter
	Generators GeneratorFunc
	Tasks      Tasks
	Notifier   Notifier
	Logger     *slog.Logger
	Now        func() time.Time
	// WindowTokens caps a window's tokens (WindowTokensMax when 0).
	WindowTokens int
	// InFlight, when set, is the number of generation calls that must be
	// under way to use the providers' rates (provider.Service.InFlight):
	// the queue's concurrency rises to it (jobqueue.QueueConfig.ConcurrencyFunc).
	InFlight func() int
}

// Service is the extraction domain.
type Service struct {
	cfg  Config
	pool *pgxpool.Pool
	jobs *jobqueue.Client
	now  func() time.Time
	log  *slog.Logger
}

// NewService returns the service and registers its task resolver.
func NewService(c Config) (*Service, error) {
	if c.Pool == nil || c.Jobs == nil || c.Documents == nil || c.Projects == nil || c.Types == nil || c.Graph == nil || c.Generators == nil || c.Tasks == nil || c.Notifier == nil {
		return nil, errors.New("extraction: incomplete configuration")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.WindowTokens <= 0 {
		c.WindowTokens = WindowTokensMax
	}
	s := &Service{cfg: c, pool: c.Pool, jobs: c.Jobs, now: c.Now, log: c.Logger}
	c.Tasks.RegisterResolver(TaskSourceType, s.resolveReview)
	return s, nil
}

// CreateJob queues a manual job on a document of the project. Errors:
// invalid_argument, not_found (the document), failed_precondition (the
// document is not parsed).
func (s *Service) CreateJob(ctx context.Context, p CreateParams) (Job, error) {
	if p.JobType == "" {
		p.JobType = JobTypeFull
	}
	if !validJobType(p.JobType) {
		return Job{}, ErrBadJobType
	}
	if !p.Superadmin && (p.Priority < 0 || p.Priority > PriorityMax) {
		return Job{}, ErrBadPriority
	}
	if p.Priority < math.MinInt32 || p.Priority > math.MaxInt32 {
		return Job{}, ErrPriorityRange
	}
	if p.DocumentID == nil {
		return Job{}, ErrDocumentRequired
	}
	now := s.now().UTC()
	j := Job{
		ID: uuid.Must(uuid.NewV7()), ProjectID: p.ProjectID, DocumentID: p.DocumentID, JobType: p.JobType,
		TriggerType: TriggerManual, Status: string(jobqueue.StatusQueued), Priority: p.Priority, CreatedBy: p.CreatedBy, CreatedAt: now,
	}
	doc, err := s.cfg.Documents.Get(ctx, p.ProjectID, *p.DocumentID)
	if errs.CodeOf(err) == errs.NotFound {
		return Job{}, ErrDocumentNotFound
	}
	if err != nil {
		return Job{}, err
	}
	if doc.Status != document.StatusParsed {
		return Job{}, ErrNotParsed
	}
	err = postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := jobInsert(ctx, tx, j); err != nil {
			return err
		}
		return jobqueue.Notify(ctx, tx, Queue)
	})
	if err != nil {
		return Job{}, err
	}
	return jobGetByID(ctx, s.pool, j.ProjectID, j.ID)
}

// JobProject returns the project of job id, for the routes that name a
// job. Errors: not_found.
func (s *Service) JobProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return jobProject(ctx, s.pool, id)
}

// Job returns job id of project. Errors: not_found.
func (s *Service) Job(ctx context.Context, project, id uuid.UUID) (Job, error) {
	return jobGetByID(ctx, s.pool, project, id)
}

// ListJobs pages a project's jobs, newest first. Errors: invalid_argument.
func (s *Service) ListJobs(ctx context.Context, project uuid.UUID, f JobFilter) ([]Job, int, error) {
	if f.Status != "" && !jobqueue.Status(f.Status).Valid() {
		return nil, 0, ErrBadStatus
	}
	if f.JobType != "" && !validJobType(f.JobType) {
		return nil, 0, ErrBadJobType
	}
	return jobList(ctx, s.pool, project, f)
}

// Statistics summarises a project's jobs.
func (s *Service) Statistics(ctx context.Context, project uuid.UUID) (Statistics, error) {
	return jobStats(ctx, s.pool, project, s.now().UTC())
}

// CancelJob cancels job id of project, queued or running: its worker
// stops within a second and writes nothing to the graph. It returns the
// job as it is now. Errors: not_found, failed_precondition (the job
// already ended).
func (s *Service) CancelJob(ctx context.Context, project, id uuid.UUID, user *uuid.UUID) (Job, error) {
	return s.actOn(ctx, project, id, user, s.jobs.Cancel, cancelLog)
}

// RetryJob puts failed job id of project back in the queue with its retry
// count reset, logging "manual retry", and returns the job as it is now.
// Errors: not_found, failed_precondition (the job is not failed).
func (s *Service) RetryJob(ctx context.Context, project, id uuid.UUID, user *uuid.UUID) (Job, error) {
	return s.actOn(ctx, project, id, user, s.jobs.Retry, retryLog)
}

// transitionLog is the log entry of a job a user changed.
type transitionLog func(ch jobqueue.Changed, user *uuid.UUID) jobLogRow

func cancelLog(ch jobqueue.Changed, user *uuid.UUID) jobLogRow {
	return changeLog(ch, user, logRow{OpError, LevelWarn, "job cancelled", map[string]any{"action": "cancel", "previousStatus": ch.Previous.Status}})
}

func retryLog(ch jobqueue.Changed, user *uuid.UUID) jobLogRow {
	prevErr := ""
	if ch.Previous.ErrorMsg != nil {
		prevErr = *ch.Previous.ErrorMsg
	}
	meta := map[string]any{"action": "manual_retry", "previousError": prevErr, "previousRetryCount": ch.Previous.RetryCount}
	return changeLog(ch, user, logRow{OpError, LevelInfo, "manual retry", meta})
}

func changeLog(ch jobqueue.Changed, user *uuid.UUID, row logRow) jobLogRow {
	if user != nil {
		row.metadata["userId"] = *user
	}
	return jobLogRow{job: ch.ID, project: *ch.ProjectID, logRow: row}
}

// actOn changes job id of project with transition, logs it and reads it
// back, in one transaction at the transition's clock reading; the
// transition decides "not found" and "in the wrong state"; the read back
// filters by project, so a job of another project is not found and the
// transaction rolls back.
func (s *Service) actOn(ctx context.Context, project, id uuid.UUID, user *uuid.UUID,
	transition func(context.Context, postgres.DBTX, string, uuid.UUID) (jobqueue.Changed, error), entry transitionLog,
) (Job, error) {
	var j Job
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		ch, err := transition(ctx, tx, Queue, id)
		if err != nil {
			return err
		}
		if err := logsInsert(ctx, tx, ch.UpdatedAt, []jobLogRow{entry(ch, user)}); err != nil {
			return err
		}
		j, err = jobGetByID(ctx, tx, project, id)
		return err
	})
	return j, err
}

// BulkCancel cancels a project's jobs in status (queued or running; both
// when empty) and returns how many it cancelled. Errors: invalid_argument.
func (s *Service) BulkCancel(ctx context.Context, project uuid.UUID, status string, user *uuid.UUID) (int, error) {
	var statuses []jobqueue.Status // queued and running
	switch jobqueue.Status(status) {
	case "":
	case jobqueue.StatusQueued, jobqueue.StatusRunning:
		statuses = []jobqueue.Status{jobqueue.Status(status)}
	default:
		return 0, errs.New(errs.Invalid, "status must be queued or running: only those jobs can be cancelled")
	}
	return s.bulk(ctx, jobqueue.Where{ProjectID: &project, Statuses: statuses}, user, s.jobs.CancelWhere, cancelLog)
}

// BulkRetry retries a project's failed jobs and returns how many. Errors:
// invalid_argument (a status other than failed).
func (s *Service) BulkRetry(ctx context.Context, project uuid.UUID, status string, user *uuid.UUID) (int, error) {
	if status != "" && jobqueue.Status(status) != jobqueue.StatusFailed {
		return 0, errs.New(errs.Invalid, "status must be failed: only failed jobs can be retried")
	}
	return s.bulk(ctx, jobqueue.Where{ProjectID: &project}, user, s.jobs.RetryWhere, retryLog)
}

// transitionFunc is a jobqueue bulk transition (CancelWhere, RetryWhere).
type transitionFunc func(context.Context, postgres.DBTX, string, jobqueue.Where) ([]jobqueue.Changed, error)

// bulk changes the jobs w selects with transition, in one statement, and
// logs each, in one transaction.
func (s *Service) bulk(ctx context.Context, w jobqueue.Where, user *uuid.UUID, transition transitionFunc, entry transitionLog) (int, error) {
	n := 0
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		n, err = bulkInTx(ctx, tx, w, user, transition, entry)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// bulkInTx is bulk in the caller's transaction.
func bulkInTx(ctx context.Context, tx pgx.Tx, w jobqueue.Where, user *uuid.UUID, transition transitionFunc, entry transitionLog) (int, error) {
	chs, err := transition(ctx, tx, Queue, w)
	if err != nil || len(chs) == 0 {
		return 0, err
	}
	logs := make([]jobLogRow, len(chs))
	for i, ch := range chs {
		logs[i] = entry(ch, user)
	}
	if err := logsInsert(ctx, tx, chs[0].UpdatedAt, logs); err != nil {
		return 0, err
	}
	return len(chs), nil
}

// BulkDelete deletes a project's final jobs (of one final status when
// status is set) that ended at least olderThanDays days ago, with their
// logs and call records. Errors: invalid_argument.
func (s *Service) BulkDelete(ctx context.Context, project uuid.UUID, status string, olderThanDays int) (int, error) {
	if status != "" && !jobqueue.Status(status).Final() {
		return 0, ErrNotFinal
	}
	var statuses []string
	for _, st := range jobqueue.FinalStatuses() {
		if status == "" || st == jobqueue.Status(status) {
			statuses = append(statuses, string(st))
		}
	}
	if olderThanDays < 0 {
		return 0, errs.New(errs.Invalid, "olderThanDays must not be negative")
	}
	cutoff := s.now().UTC().Add(-time.Duration(olderThanDays) * 24 * time.Hour)
	return jobDeleteFinal(ctx, s.pool, project, statuses, cutoff)
}

// JobLogs pages the log of job id of project in order. Errors: not_found.
func (s *Service) JobLogs(ctx context.Context, project, id uuid.UUID, limit, offset int) ([]LogEntry, int, error) {
	if err := s.checkJob(ctx, project, id); err != nil {
		return nil, 0, err
	}
	return logList(ctx, s.pool, id, "", limit, offset)
}

// Settings returns a project's extraction settings. Errors: not_found.
func (s *Service) Settings(ctx context.Context, project uuid.UUID) (Settings, error) {
	st, err := s.cfg.Projects.ExtractionSettings(ctx, project)
	return settingsOf(project, st), err
}

func settingsOf(project uuid.UUID, st tenancy.ExtractionSettings) Settings {
	return Settings{ProjectID: project, ReviewThreshold: round4(st.ReviewThreshold), ReextractionIntervalHours: st.ReextractionIntervalHours}
}

// SetSettings changes the settings u gives, leaving the others as they
// are. Errors: invalid_argument (a value out of bounds, or nothing to
// change), not_found.
func (s *Service) SetSettings(ctx context.Context, project uuid.UUID, u SettingsUpdate) (Settings, error) {
	if u.ReviewThreshold == nil && u.ReextractionIntervalHours == nil {
		return Settings{}, ErrNoSettings
	}
	if t := u.ReviewThreshold; t != nil && (*t < 0 || *t > 1 || *t != *t) {
		return Settings{}, ErrBadThreshold
	}
	if h := u.ReextractionIntervalHours; h != nil && (*h < 0 || *h > ReextractionIntervalMax) {
		return Settings{}, ErrBadInterval
	}
	st, err := s.cfg.Projects.SetExtractionSettings(ctx, project, u.ReviewThreshold, u.ReextractionIntervalHours)
	return settingsOf(project, st), err
}

// QueueScheduledReextractions queues, in tx, the scheduled reextraction
// jobs that are due (see the projects' reextractionIntervalHours, read
// through Projects), in one statement, wakes the workers at commit and
// returns how many it queued. The scheduler records its run in tx too.
func (s *Service) QueueScheduledReextractions(ctx context.Context, tx pgx.Tx) (int, error) {
	intervals, err := s.cfg.Projects.ReextractionIntervals(ctx, tx)
	if err != nil || len(intervals) == 0 {
		return 0, err
	}
	n, err := jobsInsertScheduled(ctx, tx, intervals, s.now().UTC())
	if err != nil || n == 0 {
		return n, err
	}
	return n, jobqueue.Notify(ctx, tx, Queue)
}

// RunScheduledReextraction is the scheduler task: it queues the due
// reextraction jobs in tx and logs how many.
func (s *Service) RunScheduledReextraction(ctx context.Context, tx pgx.Tx) error {
	n, err := s.QueueScheduledReextractions(ctx, tx)
	if n > 0 && err == nil {
		s.log.Info("scheduled reextraction jobs queued", "count", n)
	}
	return err
}

// round4 undoes the float4 column's noise (0.7 is stored as 0.69999...).
func round4(v float64) float64 {
	return float64(int64(v*10000+0.5)) / 10000
}

// EnqueueDocument queues, in tx, the extraction a parse of document calls
// for, with trigger as its trigger type and datasource (the integration
// that synced the document, nil for an upload) as its datasourceId, and
// wakes the workers at commit:
// the document's one full_extraction when it has none in any state (a
// re-parse never adds a second), else, when newChunks (the parse added
// chunks), an incremental extraction of the chunks not extracted yet,
// unless an extraction of the document is still queued (it will read
// them). The caller holds the document's lock.
func (s *Service) EnqueueDocument(ctx context.Context, tx pgx.Tx, project, document uuid.UUID, datasource *uuid.UUID, trigger string, newChunks bool) error {
	queued, err := jobInsertForDocument(ctx, tx, project, document, datasource, trigger, newChunks, s.now().UTC())
	if err != nil || !queued {
		return err
	}
	return jobqueue.Notify(ctx, tx, Queue)
}

// EnqueueReextraction queues, in tx, a manual reextraction of each of
// documents of project that is parsed and has no extraction queued (by
// the user by, when not nil), and wakes the workers at commit: a
// discovery finalize's new types take effect on the documents it read.
// It returns how many jobs it queued.
func (s *Service) EnqueueReextraction(ctx context.Context, tx pgx.Tx, project uuid.UUID, documents []uuid.UUID, by *uuid.UUID) (int, error) {
	n, err := jobsInsertReextraction(ctx, tx, project, documents, by, s.now().UTC())
	if err != nil || n == 0 {
		return n, err
	}
	return n, jobqueue.Notify(ctx, tx, Queue)
}

// CancelDocumentJobs cancels, in tx and one statement, the queued and
// running extraction jobs of a document (a running one's worker stops
// within a second).
func (s *Service) CancelDocumentJobs(ctx context.Context, tx pgx.Tx, project, document uuid.UUID) error {
	_, err := s.jobs.CancelWhere(ctx, tx, Queue, jobqueue.Where{ProjectID: &project, Column: "document_id", Equals: document})
	return err
}
