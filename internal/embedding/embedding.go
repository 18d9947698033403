// Package embedding owns the graph_embedding queue: graph objects are
// queued for embedding (one queued job per object at most) when they are
// created or changed and when the embedding policies covering them change;
// the worker claims jobs in batches, builds each object's texts (one per
// active embedding policy covering its type, else a default text), embeds
// them with one provider call per project and model, and stores one vector
// per object and policy in graph_object_embeddings.
package embedding

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
)

// Queue is the graph-embedding queue's name.
const Queue = "graph_embedding"

// Worker defaults; the batch size and concurrency are runtime settings of
// the queue (the ops embedding control changes them).
const (
	BatchDefault       = 32
	ConcurrencyDefault = 1
)

// ObjectSource reads graph objects; the graph domain's service provides it.
type ObjectSource interface {
	// ObjectsByID returns the live (not deleted) objects among ids, in
	// any order; unknown and deleted ids are left out.
	ObjectsByID(ctx context.Context, db postgres.DBTX, ids []uuid.UUID) ([]graph.Object, error)
	// ObjectIDsByType returns the ids of project's live objects whose type
	// is one of types.
	ObjectIDsByType(ctx context.Context, db postgres.DBTX, project uuid.UUID, types []string) ([]uuid.UUID, error)
	// LockObjects keeps the objects among ids from being deleted until tx
	// ends; the worker takes it before locking its jobs, in the order a
	// delete (which cascades to jobs and vectors) takes its locks.
	LockObjects(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error
}

// Policy is what the worker needs of an active embedding policy.
type Policy struct {
	ID          uuid.UUID
	ProjectID   uuid.UUID
	ObjectTypes []string
	Fields      []string
	Template    string
	Model       string
}

// Policies gives the active embedding policies of projects
// (embeddingpolicy.Service).
type Policies interface {
	ActivePolicies(ctx context.Context, projects []uuid.UUID) ([]Policy, error)
}

// Resolver resolves the provider and model a project embeds with,
// preferring a model a policy names (provider.Service).
type Resolver interface {
	ResolveModel(ctx context.Context, project uuid.UUID, purpose, model string) (*provider.Handle, error)
}
