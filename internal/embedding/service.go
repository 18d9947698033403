package embedding

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/vectorindex"
)

// Config wires a Service.
type Config struct {
	Pool *pgxpool.Pool
	// Jobs is the job engine the queue is added to.
	Jobs *jobqueue.Client
	// Objects reads graph objects.
	Objects ObjectSource
	// Models resolves each project's embedding provider and model.
	Models Resolver
	Logger *slog.Logger
	Now    func() time.Time
	// RenderTimeout bounds one execution of a policy template
	// (RenderTimeoutDefault when zero).
	RenderTimeout time.Duration
	// RenderBatchBudget bounds the rendering of one batch
	// (RenderBatchBudgetDefault when zero).
	RenderBatchBudget time.Duration
}

// Service queues graph objects for embedding and works the queue.
type Service struct {
	pool     *pgxpool.Pool
	jobs     *jobqueue.Client
	objects  ObjectSource
	models   Resolver
	policies Policies // set by AddQueue, before the engine starts
	logger   *slog.Logger
	now      func() time.Time
	// renderTimeout bounds one template execution, renderBudget a
	// batch's rendering.
	renderTimeout time.Duration
	renderBudget  time.Duration
}

// NewService returns a Service.
func NewService(c Config) (*Service, error) {
	if c.Pool == nil || c.Jobs == nil || c.Objects == nil || c.Models == nil {
		return nil, errors.New("embedding: Pool, Jobs, Objects and Models are required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.RenderTimeout <= 0 {
		c.RenderTimeout = RenderTimeoutDefault
	}
	if c.RenderBatchBudget <= 0 {
		c.RenderBatchBudget = RenderBatchBudgetDefault
	}
	return &Service{
		pool: c.Pool, jobs: c.Jobs, objects: c.Objects, models: c.Models, logger: c.Logger, now: c.Now,
		renderTimeout: c.RenderTimeout, renderBudget: c.RenderBatchBudget,
	}, nil
}

// AddQueue registers the graph_embedding queue and its worker, which reads
// the active policies through policies (the embedding policy service, which
// itself queues through this Service: hence given here rather than to
// NewService). projectMax caps one project's running jobs (0: no cap).
func (s *Service) AddQueue(policies Policies, projectMax int) error {
	if policies == nil {
		return errors.New("embedding: AddQueue needs the policies")
	}
	s.policies = policies
	return s.jobs.AddQueue(jobqueue.QueueConfig{
		Name: Queue, Table: "graph_embedding_jobs", QueuedKey: "object_id", QueuedKeyNoun: "object", Concurrency: ConcurrencyDefault, BatchSize: BatchDefault, ProjectMax: projectMax,
		Handler: jobqueue.HandlerFunc(s.work), OutcomeFunc: jobqueue.PublishCompletedFunc(Queue, s.now), AnnounceStarted: true,
	})
}

// Enqueue queues the embedding of objects of project in tx (the caller's
// transaction, so the jobs exist exactly when the data they embed does)
// and wakes the workers at commit. An object that already has a queued
// job gets no second one; a running job does not count (it may have read
// the object before the change), so a change during a run is embedded
// again. The objects must exist.
func (s *Service) Enqueue(ctx context.Context, tx pgx.Tx, project uuid.UUID, objectIDs []uuid.UUID) error {
	seen := make(map[uuid.UUID]bool, len(objectIDs))
	ids := make([]uuid.UUID, 0, len(objectIDs))
	for _, id := range objectIDs {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	jobIDs := make([]uuid.UUID, len(ids))
	for i := range jobIDs {
		jobIDs[i] = uuid.Must(uuid.NewV7())
	}
	n, err := jobsInsert(ctx, tx, project, jobIDs, ids, s.now().UTC())
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	// PostgreSQL folds identical notifications of one transaction into
	// one, so several Enqueue calls in a transaction still send one.
	return jobqueue.Notify(ctx, tx, Queue)
}

// EnqueueTypes queues the embedding of project's live objects whose type
// is one of types, in tx (re-embedding after an embedding policy change).
func (s *Service) EnqueueTypes(ctx context.Context, tx pgx.Tx, project uuid.UUID, types []string) error {
	if len(types) == 0 {
		return nil
	}
	ids, err := s.objects.ObjectIDsByType(ctx, tx, project, types)
	if err != nil {
		return err
	}
	return s.Enqueue(ctx, tx, project, ids)
}

// DeletePolicyVectors deletes the vectors computed for policy in tx (the
// policy is being deleted) and returns how many there were.
func (s *Service) DeletePolicyVectors(ctx context.Context, tx pgx.Tx, project, policy uuid.UUID) (int64, error) {
	n, err := embeddingsDeletePolicy(ctx, tx, project, policy)
	if err != nil || n == 0 {
		return n, err
	}
	return n, vectorindex.Removed(ctx, tx, project, vectorindex.KindObjects)
}
