// Package activity records the resources each user used recently
// (documents, graph objects, agents, ...) so that a UI can offer them
// again: one entry per resource, moved to the top when used again, at most
// RetentionMax per user.
package activity

import (
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// Limits.
const (
	// RetentionMax is how many items a user keeps; older ones are trimmed
	// when new ones are recorded.
	RetentionMax = 500
	// ResourceIDMax, NameMax and SubtypeMax bound the free-text fields.
	ResourceIDMax = 500
	NameMax       = 500
	SubtypeMax    = 200
)

// Item is one recently used resource.
type Item struct {
	ID              uuid.UUID `json:"id" db:"id"`
	ResourceType    string    `json:"resourceType" db:"resource_type" doc:"For example document, graph-object, agent."`
	ResourceID      string    `json:"resourceId" db:"resource_id"`
	ResourceName    string    `json:"resourceName,omitempty" db:"resource_name"`
	ResourceSubtype string    `json:"resourceSubtype,omitempty" db:"resource_subtype" doc:"For example an object type."`
	ActionType      string    `json:"actionType" db:"action_type" doc:"For example view, edit."`
	AccessedAt      time.Time `json:"accessedAt" db:"accessed_at"`
	ProjectID       uuid.UUID `json:"projectId" db:"project_id"`
}

// Record is a use of a resource by a user in a project.
type Record struct {
	UserID          uuid.UUID
	ProjectID       uuid.UUID
	ResourceType    string
	ResourceID      string
	ResourceName    string
	ResourceSubtype string
	ActionType      string
}

// Owner selects whose history an operation acts on: a user's, and only
// that of one project when ProjectID is set.
type Owner = auth.OwnRecords

// namePattern is what resource and action types look like (they are used
// in paths).
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) //nolint:gochecknoglobals // compiled pattern, constant

// The resource types of Graphmill's own resources: their resource ids
// are the resources' ids, a use is recorded only while the resource
// exists (a chat session: the recorder's own) and its deletion removes
// every user's item of it. Other resource types are free text.
const (
	ResourceDocument    = "document"
	ResourceGraphObject = "graph-object"
	ResourceAgent       = "agent"
	ResourceChatSession = "chat-session"
)

// Errors of this domain.
var (
	ErrNotFound        = errs.New(errs.NotFound, "no recent activity for this resource")
	ErrNoDocument      = errs.New(errs.NotFound, "resourceId: no document with this id in the project")
	ErrNoGraphObject   = errs.New(errs.NotFound, "resourceId: no graph object with this id in the project")
	ErrNoAgent         = errs.New(errs.NotFound, "resourceId: no agent with this id in the project")
	ErrNoChatSession   = errs.New(errs.NotFound, "resourceId: no chat session of yours with this id in the project")
	ErrProjectRequired = errs.New(errs.Invalid, "the projectId query parameter is required")
	ErrResourceType    = errs.New(errs.Invalid, "resourceType must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	ErrActionType      = errs.New(errs.Invalid, "actionType must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	ErrResourceID      = errs.Errorf(errs.Invalid, "resourceId must not be empty and at most %d characters", ResourceIDMax)
	ErrResourceName    = errs.Errorf(errs.Invalid, "resourceName must be at most %d characters", NameMax)
	ErrResourceSubtype = errs.Errorf(errs.Invalid, "resourceSubtype must be at most %d characters", SubtypeMax)
)
