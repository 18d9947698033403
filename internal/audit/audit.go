// Package audit is the log of superadmin actions that changed something:
// who did what to which records, how many of them it changed, and the
// request that asked. A row is written in the transaction of the change
// it records (a change rolled back leaves none); the superadmin routes
// list them.
package audit

import (
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// Action is a stable dotted name of what was done: the records' kind,
// then the verb.
type Action string

// The actions recorded.
const (
	ExtractionJobsCancel        Action = "extraction_jobs.cancel"
	ExtractionJobsDelete        Action = "extraction_jobs.delete"
	DocumentParsingJobsDelete   Action = "document_parsing_jobs.delete"
	DocumentParsingJobsRetry    Action = "document_parsing_jobs.retry"
	EmbeddingJobsDelete         Action = "embedding_jobs.delete"
	EmbeddingJobsCleanupOrphans Action = "embedding_jobs.cleanup_orphans"
	UserCreate                  Action = "user.create"
	UserTokenCreate             Action = "user.token_create" //nolint:gosec // an action's name, not a credential
	UserDelete                  Action = "user.delete"
	OrganizationDelete          Action = "organization.delete"
	ProjectDelete               Action = "project.delete"
	SyncJobsCancel              Action = "sync_jobs.cancel"
	SyncJobsDelete              Action = "sync_jobs.delete"
)

// Actions returns every action, in the order the API documents them.
func Actions() []Action {
	return []Action{
		ExtractionJobsCancel, ExtractionJobsDelete, DocumentParsingJobsDelete, DocumentParsingJobsRetry,
		EmbeddingJobsDelete, EmbeddingJobsCleanupOrphans, UserCreate, UserTokenCreate, UserDelete, OrganizationDelete, ProjectDelete,
		SyncJobsCancel, SyncJobsDelete,
	}
}

// Valid reports whether a is one of Actions.
func (a Action) Valid() bool { return slices.Contains(Actions(), a) }

// Event is one recorded action.
type Event struct {
	ID uuid.UUID `json:"id" db:"id"`
	// ActorID is the user who acted, or the nil UUID for graphmill's
	// command line (RecordCommand); ActorEmail the user's primary email,
	// when they have one.
	ActorID    uuid.UUID `json:"actorId" db:"actor_id"`
	ActorEmail string    `json:"actorEmail,omitempty" db:"actor_email"`
	// TokenID is the API token the actor used, when they used one.
	TokenID *uuid.UUID `json:"tokenId,omitempty" db:"token_id"`
	Action  Action     `json:"action" db:"action"`
	// TargetIDs are the records the action named.
	TargetIDs []uuid.UUID `json:"targetIds" db:"target_ids"`
	// Requested is how many records were named, Affected how many the
	// action changed.
	Requested int `json:"requested" db:"requested"`
	Affected  int `json:"affected" db:"affected"`
	// RequestID is the id of the HTTP request (its X-Request-ID).
	RequestID string    `json:"requestId,omitempty" db:"request_id"`
	CreatedAt time.Time `json:"createdAt" db:"created_at"`
}

// Filter narrows the list: each set field must match; From and To bound
// the creation time, both inclusive.
type Filter struct {
	ActorID  *uuid.UUID
	Action   Action
	From, To *time.Time
	Limit    int
	Offset   int
}

// ErrBadAction refuses an action filter that names no action.
var ErrBadAction = errs.Errorf(errs.Invalid, "action must be one of %s", actionNames())

func actionNames() string {
	names := make([]string, 0, len(Actions()))
	for _, a := range Actions() {
		names = append(names, string(a))
	}
	return strings.Join(names, ", ")
}
