// Package templatepack owns template packs: the object types (with a JSON
// Schema for their properties) and relationship types that a project's
// graph is made of. Packs are installed per project; a built-in default
// pack applies to projects that installed none. Other domains ask
// Service.TypesFor for a project's effective types and validate with them.
package templatepack

import (
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// Pack sources (template_packs.source).
const (
	SourceBuiltin   = "builtin"
	SourceDiscovery = "discovery"
	SourceManual    = "manual"
)

// Any is the SourceType or TargetType of a relationship type that accepts
// objects of every type.
const Any = "*"

// Relationship cardinalities. They describe the types for prompts and
// readers; the graph does not enforce them.
const (
	OneToOne   = "one-to-one"
	OneToMany  = "one-to-many"
	ManyToOne  = "many-to-one"
	ManyToMany = "many-to-many"
)

// Limits of pack definitions.
const (
	NameMax        = 200
	DescriptionMax = 10000
	TypesMax       = 500
	VersionInitial = "1.0.0"
)

// ObjectType is a type of graph object: its name (case-sensitive), what
// it means, the JSON Schema its properties must satisfy and example
// objects.
type ObjectType struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Schema      map[string]any   `json:"schema" doc:"JSON Schema (2020-12) of the object's properties."`
	Examples    []map[string]any `json:"examples"`
}

// RelationshipType is a type of relationship from objects of SourceType to
// objects of TargetType (Any: every type).
type RelationshipType struct {
	Name        string `json:"name"`
	SourceType  string `json:"sourceType" doc:"Object type of the source, or * for any."`
	TargetType  string `json:"targetType" doc:"Object type of the target, or * for any."`
	Description string `json:"description"`
	Cardinality string `json:"cardinality" enum:"one-to-one,one-to-many,many-to-one,many-to-many"`
}

// Pack is a stored template pack. ProjectID is nil for built-in packs.
type Pack struct {
	ID                uuid.UUID          `json:"id"`
	ProjectID         *uuid.UUID         `json:"projectId,omitempty" doc:"The project that made the pack; absent for built-in packs."`
	Name              string             `json:"name"`
	Version           string             `json:"version"`
	Description       string             `json:"description,omitempty"`
	Source            string             `json:"source" enum:"builtin,discovery,manual"`
	ObjectTypes       []ObjectType       `json:"objectTypes"`
	RelationshipTypes []RelationshipType `json:"relationshipTypes"`
	CreatedAt         time.Time          `json:"createdAt"`
	UpdatedAt         time.Time          `json:"updatedAt"`
}

// InstalledPack is a pack installed in a project.
type InstalledPack struct {
	Pack
	InstalledAt time.Time  `json:"installedAt"`
	InstalledBy *uuid.UUID `json:"installedBy,omitempty"`
}

// PackInput is the definition of a project's own pack, for CreatePack and
// UpdatePack, or the types ExtendPack merges into one. Source is discovery
// or manual (empty: manual).
type PackInput struct {
	Name              string
	Description       string
	Source            string
	ObjectTypes       []ObjectType
	RelationshipTypes []RelationshipType
}

// Errors of this domain.
var (
	ErrNotFound         = errs.New(errs.NotFound, "template pack not found")
	ErrNotInstalled     = errs.New(errs.NotFound, "template pack is not installed in this project")
	ErrNameTaken        = errs.New(errs.Conflict, "the project already has a template pack of this name")
	ErrBuiltinReadOnly  = errs.New(errs.FailedPrecondition, "built-in template packs cannot be changed")
	ErrProjectRequired  = errs.New(errs.Invalid, "a project pack needs a project")
	ErrUnknownType      = errs.New(errs.Invalid, "unknown object type")
	ErrBadSource        = errs.New(errs.Invalid, "source must be discovery or manual")
	ErrPackNameRequired = errs.New(errs.Invalid, "a template pack needs a name")
)

// DefaultPackName is the name of the built-in default pack.
const DefaultPackName = "Default"
