package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// Bounds and defaults of a job's request (the issue's).
const (
	DocumentsMax         = 500
	BatchSizeDefault     = 5
	BatchSizeMax         = 50
	MinConfidenceDefault = 0.5
	MaxIterationsDefault = 3
	MaxIterationsMax     = 10
)

// Options are a job's settings, as stored with it.
type Options struct {
	BatchSize            int     `json:"batch_size"`
	MinConfidence        float64 `json:"min_confidence"`
	IncludeRelationships bool    `json:"include_relationships"`
	MaxIterations        int     `json:"max_iterations"`
}

// StartParams start a job; nil options take their defaults.
type StartParams struct {
	DocumentIDs          []uuid.UUID
	BatchSize            *int
	MinConfidence        *float64
	IncludeRelationships *bool
	MaxIterations        *int
	// CreatedBy is the user who started the job (nil for none).
	CreatedBy *uuid.UUID
}

// ListItem is the spec's discovery job list item: the status response
// without started_at and error_message.
type ListItem struct {
	ID                      uuid.UUID      `json:"id"`
	Status                  string         `json:"status" enum:"pending,running,completed,failed,cancelled"`
	Progress                Progress       `json:"progress"`
	CreatedAt               time.Time      `json:"created_at"`
	CompletedAt             *time.Time     `json:"completed_at,omitempty"`
	DiscoveredTypes         []Type         `json:"discovered_types"`
	DiscoveredRelationships []Relationship `json:"discovered_relationships"`
	TemplatePackID          *uuid.UUID     `json:"template_pack_id,omitempty"`
}

// Job is the spec's discovery job status response.
type Job struct {
	ListItem
	StartedAt    *time.Time `json:"started_at,omitempty"`
	ErrorMessage string     `json:"error_message,omitempty"`
}

// Started is the answer of POST /api/discovery-jobs (DESIGN 5).
type Started struct {
	JobID uuid.UUID `json:"jobId"`
}

// vocabulary maps the job engine's statuses to the spec's discovery
// statuses (DESIGN 6: queued is shown as pending).
var vocabulary = jobqueue.Vocabulary{ //nolint:gochecknoglobals // constant table
	{Name: StatusPending, Status: jobqueue.StatusQueued},
	{Name: StatusRunning, Status: jobqueue.StatusRunning},
	{Name: StatusCompleted, Status: jobqueue.StatusCompleted},
	{Name: StatusFailed, Status: jobqueue.StatusFailed},
	{Name: StatusCancelled, Status: jobqueue.StatusCancelled},
}

// Errors of this domain.
var (
	ErrNotFound     = errs.New(errs.NotFound, "discovery job not found")
	ErrNotCompleted = errs.New(errs.FailedPrecondition, "only completed discovery jobs can be finalized")
)

// Documents is what discovery reads of the document domain
// (document.Service).
type Documents interface {
	Get(ctx context.Context, project, id uuid.UUID) (document.Document, error)
	Statuses(ctx context.Context, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error)
	ChunksToExtract(ctx context.Context, project, document uuid.UUID, onlyNew bool) ([]document.ChunkText, error)
}

// Packs is what discovery needs of the template pack domain
// (templatepack.Service): the project's types to seed and validate
// with, and the packs a finalize creates, extends and installs.
type Packs interface {
	TypesFor(ctx context.Context, project uuid.UUID) (*templatepack.Types, error)
	GetPack(ctx context.Context, p *auth.Principal, id uuid.UUID) (templatepack.Pack, error)
	CreatePack(ctx context.Context, tx pgx.Tx, project uuid.UUID, in templatepack.PackInput, by *uuid.UUID) (templatepack.Pack, error)
	ExtendPack(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, in templatepack.PackInput, by *uuid.UUID) (templatepack.Extended, error)
	InstallInTx(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, by *uuid.UUID) (bool, error)
}

// Extractions queues re-extraction of documents (extraction.Service).
type Extractions interface {
	EnqueueReextraction(ctx context.Context, tx pgx.Tx, project uuid.UUID, documents []uuid.UUID, by *uuid.UUID) (int, error)
}

// GeneratorFunc resolves the generative model of a project
// (provider.Service.Resolve with provider.Generative).
type GeneratorFunc func(ctx context.Context, project uuid.UUID) (provider.Generator, error)

// EmbedderFunc resolves the embedding model of a project, for merging
// near-duplicate types by their descriptions; nil, or an error, merges
// without embeddings.
type EmbedderFunc func(ctx context.Context, project uuid.UUID) (llm.Embedder, error)

// Config wires the discovery domain.
type Config struct {
	Pool        *pgxpool.Pool
	Jobs        *jobqueue.Client
	Documents   Documents
	Packs       Packs
	Extractions Extractions
	Generators  GeneratorFunc
	Embedders   EmbedderFunc
	Logger      *slog.Logger
	Now         func() time.Time
	// Lease is the jobs' lease (0: jobqueue.LeaseDefault): a job whose
	// process died runs again, from its last finished batch, once it has
	// expired.
	Lease time.Duration
	// Backoff is the retry delay of failed jobs (nil: jobqueue's).
	Backoff func(retry int) time.Duration
}

// Service is the discovery domain.
type Service struct {
	cfg Config
}

// NewService returns the service.
func NewService(c Config) (*Service, error) {
	if c.Pool == nil || c.Jobs == nil || c.Documents == nil || c.Packs == nil || c.Extractions == nil || c.Generators == nil {
		return nil, errors.New("discovery: incomplete configuration")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Service{cfg: c}, nil
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// options checks p's options and fills the defaults. Errors:
// invalid_argument.
func options(p StartParams) (Options, error) {
	o := Options{BatchSize: BatchSizeDefault, MinConfidence: MinConfidenceDefault, IncludeRelationships: true, MaxIterations: MaxIterationsDefault}
	if p.BatchSize != nil {
		if *p.BatchSize < 1 || *p.BatchSize > BatchSizeMax {
			return o, errs.Errorf(errs.Invalid, "batch_size must be between 1 and %d, not %d", BatchSizeMax, *p.BatchSize)
		}
		o.BatchSize = *p.BatchSize
	}
	if p.MinConfidence != nil {
		// NaN compares false with everything: refused by name (the
		// console's form parses "NaN"; JSON cannot carry it).
		if math.IsNaN(*p.MinConfidence) || *p.MinConfidence < 0 || *p.MinConfidence > 1 {
			return o, errs.Errorf(errs.Invalid, "min_confidence must be between 0 and 1, not %g", *p.MinConfidence)
		}
		o.MinConfidence = *p.MinConfidence
	}
	if p.IncludeRelationships != nil {
		o.IncludeRelationships = *p.IncludeRelationships
	}
	if p.MaxIterations != nil {
		if *p.MaxIterations < 1 || *p.MaxIterations > MaxIterationsMax {
			return o, errs.Errorf(errs.Invalid, "max_iterations must be between 1 and %d, not %d", MaxIterationsMax, *p.MaxIterations)
		}
		o.MaxIterations = *p.MaxIterations
	}
	return o, nil
}

// Start queues a discovery job over documents of project. Errors:
// invalid_argument (no documents or more than DocumentsMax, a
// duplicate, an id that is not a parsed document of the project, an
// option out of range).
func (s *Service) Start(ctx context.Context, project uuid.UUID, p StartParams) (Started, error) {
	o, err := options(p)
	if err != nil {
		return Started{}, err
	}
	switch n := len(p.DocumentIDs); {
	case n == 0:
		return Started{}, errs.New(errs.Invalid, "document_ids must name at least one document")
	case n > DocumentsMax:
		return Started{}, errs.Errorf(errs.Invalid, "document_ids names %d documents; at most %d", n, DocumentsMax)
	}
	states, err := s.cfg.Documents.Statuses(ctx, project, p.DocumentIDs)
	if err != nil {
		return Started{}, err
	}
	seen := make(map[uuid.UUID]bool, len(p.DocumentIDs))
	for _, id := range p.DocumentIDs {
		if seen[id] {
			return Started{}, errs.Errorf(errs.Invalid, "document_ids names %s twice", id)
		}
		seen[id] = true
		switch st, ok := states[id]; {
		case !ok:
			return Started{}, errs.Errorf(errs.Invalid, "document_ids: %s is not a document of this project", id)
		case st != document.StatusParsed:
			return Started{}, errs.Errorf(errs.Invalid, "document_ids: document %s is %s, not parsed: discovery reads its text", id, st)
		}
	}
	batches := (len(p.DocumentIDs) + o.BatchSize - 1) / o.BatchSize
	r := jobRow{
		ID: uuid.Must(uuid.NewV7()), ProjectID: project, CreatedBy: p.CreatedBy, DocumentIDs: p.DocumentIDs, Options: o, CreatedAt: s.now(),
		Progress: Progress{
			Phase: PhaseAnalyzing, TotalSteps: totalSteps(batches, o), DocumentsTotal: len(p.DocumentIDs),
			Message: fmt.Sprintf("queued: %d documents in %d batches", len(p.DocumentIDs), batches),
		},
	}
	err = postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if err := jobInsert(ctx, tx, r); err != nil {
			return err
		}
		return jobqueue.Notify(ctx, tx, Queue)
	})
	if err != nil {
		return Started{}, err
	}
	return Started{JobID: r.ID}, nil
}

// totalSteps is a job's step count: one per batch, the merge, each
// refine iteration and, when asked for, the relationships pass.
func totalSteps(batches int, o Options) int {
	n := batches + o.MaxIterations
	if o.IncludeRelationships {
		n++
	}
	return n
}

func (r jobRow) job() Job {
	j := Job{ListItem: ListItem{
		ID: r.ID, Status: vocabulary.Name(r.Status), Progress: r.Progress, CreatedAt: r.CreatedAt, CompletedAt: r.CompletedAt,
		DiscoveredTypes: r.Types, DiscoveredRelationships: r.Relationships, TemplatePackID: r.TemplatePackID,
	}, StartedAt: r.StartedAt}
	if r.ErrorMsg != nil {
		j.ErrorMessage = *r.ErrorMsg
	}
	if j.DiscoveredTypes == nil {
		j.DiscoveredTypes = []Type{}
	}
	if j.DiscoveredRelationships == nil {
		j.DiscoveredRelationships = []Relationship{}
	}
	return j
}

// JobProject returns the project of job id, for the routes that name a
// job. Errors: not_found.
func (s *Service) JobProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return jobProject(ctx, s.cfg.Pool, id)
}

// Get returns a job of project. Errors: not_found.
func (s *Service) Get(ctx context.Context, project, id uuid.UUID) (Job, error) {
	r, err := jobGet(ctx, s.cfg.Pool, project, id)
	if err != nil {
		return Job{}, err
	}
	return r.job(), nil
}

// List pages the jobs of project, newest first.
func (s *Service) List(ctx context.Context, project uuid.UUID, limit, offset int) ([]ListItem, int, error) {
	rows, total, err := jobList(ctx, s.cfg.Pool, project, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]ListItem, len(rows))
	for i, r := range rows {
		out[i] = r.job().ListItem
	}
	return out, total, nil
}

// Cancel cancels a pending or running job of project and returns it; a
// running one stops within seconds. Errors: not_found,
// failed_precondition (the job ended).
func (s *Service) Cancel(ctx context.Context, project, id uuid.UUID) (Job, error) {
	var out Job
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		r, err := jobLock(ctx, tx, project, id)
		if err != nil {
			return err
		}
		if r.Status.Final() {
			return errs.Errorf(errs.FailedPrecondition, "discovery job %s is %s; only pending or running jobs can be cancelled", id, vocabulary.Name(r.Status))
		}
		if _, err := s.cfg.Jobs.Cancel(ctx, tx, Queue, id); err != nil {
			return err
		}
		r, err = jobGet(ctx, tx, project, id)
		out = r.job()
		return err
	})
	return out, err
}
