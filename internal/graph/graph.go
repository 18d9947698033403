// Package graph owns the knowledge graph of a project: typed objects,
// unique per (type, normalized key) among the live ones, relationships
// between them, and their provenance (the chunks they were extracted
// from). Extraction writes through Apply in its own transaction; people
// read and edit through the HTTP API. Object properties are validated
// against the project's template pack types.
package graph

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// Object statuses.
const (
	StatusAccepted  = "accepted"
	StatusSuggested = "suggested"
)

// Limits of object and relationship fields and lists.
const (
	TypeMax        = 200
	KeyMax         = 500
	NameMax        = 500
	DescriptionMax = 10000
	LabelMax       = 100
	LabelsMax      = 100
	QueryMax       = 200
	ListLimitMax   = 200
)

// Object is a graph object.
type Object struct {
	ID              uuid.UUID      `json:"id"`
	ProjectID       uuid.UUID      `json:"projectId"`
	Type            string         `json:"type"`
	Key             string         `json:"key" doc:"Natural key; unique per type after normalisation (case, spaces and punctuation folded)."`
	Name            string         `json:"name"`
	Description     string         `json:"description,omitempty"`
	Properties      map[string]any `json:"properties"`
	Labels          []string       `json:"labels"`
	Status          string         `json:"status" enum:"accepted,suggested"`
	Confidence      *float64       `json:"confidence,omitempty"`
	ExtractionJobID *uuid.UUID     `json:"extractionJobId,omitempty" doc:"The extraction job that last wrote the object."`
	CreatedBy       *uuid.UUID     `json:"createdBy,omitempty"`
	CreatedAt       time.Time      `json:"createdAt"`
	UpdatedAt       time.Time      `json:"updatedAt"`
}

// Relationship is a typed, directed edge between two objects.
type Relationship struct {
	ID              uuid.UUID      `json:"id"`
	ProjectID       uuid.UUID      `json:"projectId"`
	Type            string         `json:"type"`
	SourceID        uuid.UUID      `json:"sourceId"`
	TargetID        uuid.UUID      `json:"targetId"`
	Properties      map[string]any `json:"properties"`
	Confidence      *float64       `json:"confidence,omitempty"`
	ExtractionJobID *uuid.UUID     `json:"extractionJobId,omitempty"`
	CreatedAt       time.Time      `json:"createdAt"`
	UpdatedAt       time.Time      `json:"updatedAt"`
}

// ObjectFilter selects and pages objects. Empty fields select any.
type ObjectFilter struct {
	Type   string
	Status string
	Label  string
	Query  string      // text matched (case-insensitive substring) on name, key and description
	IDs    []uuid.UUID // only these objects (nil: any)
	Limit  int
	Offset int
}

// Direction selects the relationships of an object.
type Direction string

// Directions.
const (
	Both     Direction = "both"
	Outgoing Direction = "outgoing"
	Incoming Direction = "incoming"
)

// RelationshipFilter selects and pages relationships. Nil ids select any.
type RelationshipFilter struct {
	Type     string
	SourceID *uuid.UUID
	TargetID *uuid.UUID
	Limit    int
	Offset   int
}

// ParseEnds sets f's SourceID and TargetID from the ids as a relationship
// list's caller gives them, sourceId and targetId (the API's query, the
// MCP tool's arguments; empty: any). Errors: invalid_argument naming the
// malformed one.
func (f *RelationshipFilter) ParseEnds(sourceID, targetID string) error {
	src, err := httpapi.ParseOptionalID("sourceId", sourceID)
	if err != nil {
		return err
	}
	tgt, err := httpapi.ParseOptionalID("targetId", targetID)
	if err != nil {
		return err
	}
	f.SourceID, f.TargetID = src, tgt
	return nil
}

// CreateObjectParams describes an object created through the API. An
// empty Key defaults to Name; an empty Status to accepted.
type CreateObjectParams struct {
	Type        string
	Key         string
	Name        string
	Description string
	Properties  map[string]any
	Labels      []string
	Status      string
	Confidence  *float64
	CreatedBy   *uuid.UUID
	// CallKey, when set, is the agent tool call that creates the object
	// ("<run>/<step>"): recorded with it (ObjectOfCall).
	CallKey string
}

// ObjectUpdate is a partial update: nil fields stay as they are;
// Properties replaces the properties.
type ObjectUpdate struct {
	Name        *string
	Description *string
	Properties  map[string]any
	Labels      []string
	Status      *string
}

// CreateRelationshipParams describes a relationship created through the
// API.
type CreateRelationshipParams struct {
	Type       string
	SourceID   uuid.UUID
	TargetID   uuid.UUID
	Properties map[string]any
	Confidence *float64
	// CallKey, when set, is the agent tool call that creates the
	// relationship: recorded with it (RelationshipOfCall).
	CallKey string
}

// ObjectInput is one object of an extraction result, for Apply. Key is
// the natural key (empty: Name); Status accepted or suggested (empty:
// accepted); ChunkIDs the chunks it was found in.
type ObjectInput struct {
	Type, Key, Name, Description string
	Properties                   map[string]any
	Labels                       []string
	Status                       string
	Confidence                   *float64
	ChunkIDs                     []uuid.UUID
}

// RelationshipInput is one relationship of an extraction result, for
// Apply; its endpoints are named by natural keys, normalised inside.
type RelationshipInput struct {
	Type                                         string
	SourceType, SourceKey, TargetType, TargetKey string
	Properties                                   map[string]any
	Confidence                                   *float64
	ChunkIDs                                     []uuid.UUID
}

// AppliedObject is what Apply did with one object input.
type AppliedObject struct {
	ID      uuid.UUID
	Type    string
	Key     string
	Status  string
	Created bool
}

// ApplyResult reports what Apply did. Objects has one entry per object
// input (inputs naming the same object share it) and RelationshipIDs one
// per relationship input (uuid.Nil for the unresolved ones, whose indexes
// are in UnresolvedRelationships). The counts are of distinct rows.
type ApplyResult struct {
	Objects                                                                    []AppliedObject
	RelationshipIDs                                                            []uuid.UUID
	ObjectsCreated, ObjectsUpdated, RelationshipsCreated, RelationshipsUpdated int
	UnresolvedRelationships                                                    []int
}

// EmbedQueue is implemented by the embedding domain: graph calls it, in
// the writing transaction, with the objects whose embedding text may have
// changed (created, or name, description, properties or labels changed).
type EmbedQueue interface {
	Enqueue(ctx context.Context, tx pgx.Tx, project uuid.UUID, objectIDs []uuid.UUID) error
}

// Activity removes the users' recent-activity items of deleted objects
// (activity.Forgetter), in the deleting transaction.
type Activity interface {
	ForgetInTx(ctx context.Context, tx pgx.Tx, project uuid.UUID, ids ...uuid.UUID) error
}

// TypesSource gives a project's effective types (templatepack.Service).
type TypesSource interface {
	TypesFor(ctx context.Context, project uuid.UUID) (*templatepack.Types, error)
}

// Errors of this domain.
var (
	ErrObjectNotFound       = errs.New(errs.NotFound, "object not found")
	ErrRelationshipNotFound = errs.New(errs.NotFound, "relationship not found")
	ErrBadStatus            = errs.New(errs.Invalid, "status must be accepted or suggested")
	ErrBadConfidence        = errs.New(errs.Invalid, "confidence must be between 0 and 1")
	ErrBadDirection         = errs.New(errs.Invalid, "direction must be both, outgoing or incoming")
)

// NormalizeKey folds a natural key for comparison: Unicode compatibility
// normalisation (NFKC), full case folding, apostrophes dropped, every run
// of other characters that are not letters, digits or marks (spaces,
// punctuation, symbols) turned into one space, trimmed. "Ada  Lovelace!"
// and "ada lovelace" give the same key; an empty result means the key has
// no letter or digit.
func NormalizeKey(s string) string {
	s = cases.Fold().String(norm.NFKC.String(s))
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case r == '\'' || r == '\u2019' || r == '\u02bc' || r == '`':
			continue
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		default:
			space = true
		}
	}
	return b.String()
}

func validStatus(s string) bool { return s == StatusAccepted || s == StatusSuggested }

func validConfidence(c *float64) bool { return c == nil || (*c >= 0 && *c <= 1) }
