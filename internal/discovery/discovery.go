// Package discovery is schema discovery (issue 16): durable jobs on the
// schema_discovery queue that read a project's documents in batches, ask
// the project's generative provider to propose object and relationship
// types (seeded with the types the project already has), merge the
// proposals across batches and iterations, and finalize the result into a
// versioned template pack.
package discovery

import (
	"github.com/google/uuid"
)

// Queue is the discovery queue's name (DESIGN 6).
const Queue = "schema_discovery"

// IsQueue reports whether queue, as an event names it, is the discovery
// queue (readers such as the console match events without naming it).
func IsQueue(queue string) bool { return queue == Queue }

// Job statuses on the wire (the spec's vocabulary; the job engine's
// queued is shown as pending).
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Progress phases.
const (
	PhaseAnalyzing     = "analyzing"
	PhaseMerging       = "merging"
	PhaseRelationships = "relationships"
	PhaseDone          = "done"
)

// Relationship cardinalities on the wire (the spec's discovery
// vocabulary, with underscores).
const (
	OneToOne   = "one_to_one"
	OneToMany  = "one_to_many"
	ManyToMany = "many_to_many"
)

// ExamplesMax bounds a type's example instances.
const ExamplesMax = 5

// Instance is one example of a discovered type, quoted from a document.
type Instance struct {
	Name       string    `json:"name"`
	Quote      string    `json:"quote" doc:"The passage of the document the instance was found in, verbatim."`
	DocumentID uuid.UUID `json:"document_id"`
}

// Type is one discovered object type.
type Type struct {
	TypeName    string `json:"type_name"`
	Description string `json:"description"`
	// Properties is a JSON Schema property map (name to property schema).
	Properties         map[string]any `json:"properties" doc:"JSON Schema property map: property name to its schema."`
	RequiredProperties []string       `json:"required_properties"`
	ExampleInstances   []Instance     `json:"example_instances" maxItems:"5"`
	// Frequency is the number of documents in which instances were found.
	Frequency  int     `json:"frequency" doc:"Number of documents in which instances of the type were found."`
	Confidence float64 `json:"confidence" minimum:"0" maximum:"1"`
	// MatchesExistingType names the installed type the candidate
	// corresponds to ("" when it is new).
	MatchesExistingType string `json:"matches_existing_type,omitempty" doc:"Name of the installed object type this type corresponds to, if any."`
	// Documents are all the documents instances were found in (the
	// examples are capped; Frequency is its length), carried by the
	// worker through merging and refinement; not on the wire.
	Documents []uuid.UUID `json:"-"`
}

// Relationship is one discovered relationship type.
type Relationship struct {
	SourceType   string  `json:"source_type"`
	TargetType   string  `json:"target_type"`
	RelationType string  `json:"relation_type"`
	Description  string  `json:"description"`
	Cardinality  string  `json:"cardinality" enum:"one_to_one,one_to_many,many_to_many"`
	Confidence   float64 `json:"confidence" minimum:"0" maximum:"1"`
	// Frequency is the number of the job's documents holding instances
	// of both end types (0 for an end that is an installed type
	// discovery found no instance of).
	Frequency int `json:"frequency" doc:"Number of the job's documents in which instances of both end types were found."`
}

// Progress is a job's progress, updated as it goes and published as
// discovery.progress events.
type Progress struct {
	Phase              string `json:"phase" enum:"analyzing,merging,relationships,done"`
	CurrentStep        int    `json:"current_step"`
	TotalSteps         int    `json:"total_steps"`
	DocumentsProcessed int    `json:"documents_processed"`
	DocumentsTotal     int    `json:"documents_total"`
	Message            string `json:"message"`
}
