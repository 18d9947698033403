// Package task owns review tasks: human-review items of a project that
// other domains create (a suggested object to accept, a document to check)
// and that people resolve. A domain that creates tasks registers a resolver
// for its source type, called in the transaction that resolves one of its
// tasks, so that accepting or rejecting a task and its effect commit
// together.
package task

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
)

// Task statuses (the spec's Task status table).
const (
	StatusPending   = "pending"
	StatusAccepted  = "accepted"
	StatusRejected  = "rejected"
	StatusCancelled = "cancelled"
)

// Limits of task fields and lists.
const (
	TitleMax       = 500
	TypeMax        = 100
	DescriptionMax = 10000
	NotesMax       = 10000
	SourceMax      = 200
)

// Task is a human-review item.
type Task struct {
	ID              uuid.UUID       `json:"id" db:"id"`
	ProjectID       uuid.UUID       `json:"projectId" db:"project_id"`
	Title           string          `json:"title" db:"title"`
	Description     string          `json:"description,omitempty" db:"description"`
	Type            string          `json:"type" db:"type" doc:"Category, for example suggestion or review."`
	Status          string          `json:"status" db:"status" enum:"pending,accepted,rejected,cancelled"`
	ResolvedAt      *time.Time      `json:"resolvedAt,omitempty" db:"resolved_at"`
	ResolvedBy      *uuid.UUID      `json:"resolvedBy,omitempty" db:"resolved_by" doc:"Id of the resolving user."`
	ResolutionNotes string          `json:"resolutionNotes,omitempty" db:"resolution_notes"`
	SourceType      string          `json:"sourceType,omitempty" db:"source_type" doc:"Kind of resource that generated the task."`
	SourceID        string          `json:"sourceId,omitempty" db:"source_id"`
	Metadata        json.RawMessage `json:"metadata,omitempty" db:"metadata"`
	CreatedAt       time.Time       `json:"createdAt" db:"created_at"`
	UpdatedAt       time.Time       `json:"updatedAt" db:"updated_at"`
}

// Counts are the numbers of tasks in each status.
type Counts struct {
	Pending   int64 `json:"pending"`
	Accepted  int64 `json:"accepted"`
	Rejected  int64 `json:"rejected"`
	Cancelled int64 `json:"cancelled"`
}

// CreateParams describes a new task. Metadata is any JSON-encodable value
// (nil: none).
type CreateParams struct {
	ProjectID   uuid.UUID
	Title       string
	Description string
	Type        string
	SourceType  string
	SourceID    string
	Metadata    any
}

// Filter selects and pages tasks. Empty Status and Type select any.
type Filter struct {
	Status string
	Type   string
	Limit  int
	Offset int
}

// ResolverFunc is told, in the resolving transaction, that a task of its
// source type was resolved (resolution is accepted or rejected). An error
// rolls the resolution back and is returned to the caller of Resolve.
type ResolverFunc func(ctx context.Context, tx pgx.Tx, task Task, resolution string) error

// Errors of this domain.
var (
	ErrNotFound        = errs.New(errs.NotFound, "task not found")
	ErrBadResolution   = errs.New(errs.Invalid, "resolution must be accepted or rejected")
	ErrBadStatus       = errs.New(errs.Invalid, "status must be pending, accepted, rejected or cancelled")
	ErrNotesTooLong    = errs.Errorf(errs.Invalid, "resolutionNotes must be at most %d characters", NotesMax)
	ErrNotesInvalid    = errs.New(errs.Invalid, "resolutionNotes must be valid UTF-8 without the NUL character (U+0000)")
	ErrTitleRequired   = errs.New(errs.Invalid, "a task needs a title")
	ErrTypeRequired    = errs.New(errs.Invalid, "a task needs a type")
	ErrProjectRequired = errs.New(errs.Invalid, "a task needs a project")
	ErrFieldTooLong    = errs.New(errs.Invalid, "a task field is too long")
	ErrMetadataNotJSON = errs.New(errs.Invalid, "task metadata must be JSON-encodable")
)

// validStatus reports whether s is a task status.
func validStatus(s string) bool {
	switch s {
	case StatusPending, StatusAccepted, StatusRejected, StatusCancelled:
		return true
	}
	return false
}
