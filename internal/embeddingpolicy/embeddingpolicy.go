// Package embeddingpolicy manages a project's embedding policies: which
// graph object types are embedded, from which text (a template over the
// object's standard fields and chosen properties) and with which model.
// Every change that alters the texts queues the re-embedding of the
// objects concerned, through the embedding domain, in the same
// transaction.
package embeddingpolicy

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// Policy is the spec's embedding policy (snake_case on the wire).
type Policy struct {
	ID          uuid.UUID `json:"id" db:"id"`
	ProjectID   uuid.UUID `json:"project_id" db:"project_id"`
	Name        string    `json:"name" db:"name"`
	Description string    `json:"description,omitempty" db:"description"`
	ObjectTypes []string  `json:"object_types" db:"object_types" doc:"Object type names the policy applies to (exact names)."`
	Fields      []string  `json:"fields" db:"fields" doc:"Object property names the template may use besides the standard fields."`
	Template    string    `json:"template" db:"template" doc:"Go text/template of the embedding text; {{.name}} etc."`
	Model       string    `json:"model" db:"model" doc:"Embedding model; used when the project's provider offers it."`
	Active      bool      `json:"active" db:"active"`
	// ChunkingConfig is kept for clients; object texts are embedded whole.
	ChunkingConfig json.RawMessage `json:"chunking_config,omitempty" db:"chunking_config" doc:"Provider-specific JSON object, stored as given."`
	CreatedAt      time.Time       `json:"created_at" db:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at" db:"updated_at"`
}

// CreateParams are a new policy's fields; Active defaults to true.
type CreateParams struct {
	Name           string
	Description    string
	ObjectTypes    []string
	Fields         []string
	Template       string
	Model          string
	Active         *bool
	ChunkingConfig json.RawMessage
}

// Update is a partial update: nil fields stay as they are. ChunkingConfig
// set to JSON null clears it.
type Update struct {
	Name           *string
	Description    *string
	ObjectTypes    *[]string
	Fields         *[]string
	Template       *string
	Model          *string
	Active         *bool
	ChunkingConfig *json.RawMessage
}

// Limits of a policy's fields.
const (
	NameMaxLen        = 200
	DescriptionMaxLen = 2000
	TemplateMaxLen    = 10000
	ListMaxItems      = 100
	ItemMaxLen        = 200
)

// Errors.
var (
	ErrNotFound  = errs.New(errs.NotFound, "embedding policy not found")
	ErrNameTaken = errs.New(errs.Conflict, "this project already has an embedding policy of that name")
)
