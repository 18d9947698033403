// Package integration is the integrations domain (issue 15): a project's
// configured sources, their sealed config, the API, and the sync jobs
// (queue integration_sync) that drive a connector.Connector through a
// Walker storing each item as a document of the project. The connectors
// themselves live in internal/connector/<name>; this package holds the
// rows, the rules (config checks, secret masking, the deletion guard,
// one active sync per integration), the schedule and the events.
package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/errs"
)

// Queue is the sync queue's name (DESIGN 6); its job table is
// integration_sync_jobs.
const Queue = "integration_sync"

// Integration statuses.
const (
	StatusActive   = "active"
	StatusInactive = "inactive"
	StatusError    = "error"
)

// Sync triggers.
const (
	TriggerManual    = "manual"
	TriggerScheduled = "scheduled"
)

// Defaults and bounds of the sync settings.
const (
	// MaxDeleteFractionDefault is the share of an integration's documents
	// one sync may delete unless it is a full sync.
	MaxDeleteFractionDefault = 0.5
	// SyncIntervalMin is the shortest schedule, in minutes.
	SyncIntervalMin = 5
	// SyncIntervalMax is the longest schedule, in minutes (a year).
	SyncIntervalMax = 365 * 24 * 60
)

// Integration is the spec's Integration record. Config is set only in the
// full view, with its secret fields masked.
type Integration struct {
	ID           uuid.UUID      `json:"id"`
	Name         string         `json:"name"`
	DisplayName  string         `json:"display_name"`
	ProviderType string         `json:"provider_type"`
	OrgID        uuid.UUID      `json:"org_id"`
	ProjectID    uuid.UUID      `json:"project_id"`
	Status       string         `json:"status" enum:"active,inactive,error"`
	Config       map[string]any `json:"config,omitempty" doc:"Present only in the full view; credentials masked."`
	LastSyncAt   *time.Time     `json:"last_sync_at,omitempty"`
	// LastSyncStatus is the status of the integration's latest sync job.
	LastSyncStatus string     `json:"last_sync_status,omitempty" enum:"pending,running,completed,failed,cancelled"`
	NextSyncAt     *time.Time `json:"next_sync_at,omitempty" doc:"When the scheduler queues the next sync (sync_interval_minutes)."`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

// Public is the spec's public integration: never the config.
type Public struct {
	ID           uuid.UUID  `json:"id"`
	Name         string     `json:"name"`
	DisplayName  string     `json:"display_name"`
	ProviderType string     `json:"provider_type"`
	Status       string     `json:"status" enum:"active,inactive,error"`
	LastSyncAt   *time.Time `json:"last_sync_at,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
}

// Available is the spec's available integration.
type Available struct {
	Name             string   `json:"name"`
	DisplayName      string   `json:"display_name"`
	Description      string   `json:"description"`
	Category         string   `json:"category"`
	AuthType         string   `json:"auth_type"`
	RequiredFields   []string `json:"required_fields"`
	OptionalFields   []string `json:"optional_fields,omitempty"`
	DocumentationURL string   `json:"documentation_url,omitempty"`
}

// CreateParams create an integration.
type CreateParams struct {
	Name         string
	DisplayName  string
	ProviderType string
	Config       map[string]json.RawMessage
}

// UpdateParams change an integration; nil fields are unchanged. A given
// Config replaces the stored one.
type UpdateParams struct {
	DisplayName *string
	Config      map[string]json.RawMessage
	Status      *string
}

// TestResult is the answer of POST .../test.
type TestResult struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// SyncResult is the answer of POST .../sync.
type SyncResult struct {
	Success bool      `json:"success"`
	Message string    `json:"message"`
	JobID   uuid.UUID `json:"job_id,omitzero"`
}

// SyncOptions is the optional body of POST .../sync, as stored on the job.
type SyncOptions struct {
	FullSync        bool     `json:"full_sync,omitempty"`
	SourceTypes     []string `json:"source_types,omitempty"`
	SpaceIDs        []string `json:"space_ids,omitempty"`
	IncludeArchived bool     `json:"includeArchived,omitempty"`
	BatchSize       int      `json:"batchSize,omitempty"`
}

func (o SyncOptions) connector() connector.Options {
	return connector.Options{FullSync: o.FullSync, SourceTypes: o.SourceTypes, SpaceIDs: o.SpaceIDs, IncludeArchived: o.IncludeArchived, BatchSize: o.BatchSize}
}

// Errors of this domain.
var (
	ErrNotFound     = errs.New(errs.NotFound, "integration not found")
	ErrNameTaken    = errs.New(errs.Conflict, "an integration of this name exists in the project")
	ErrSyncNotFound = errs.New(errs.NotFound, "sync job not found")
)

// Registry holds the connectors this server offers, by provider type.
type Registry struct {
	byName map[string]connector.Connector
	names  []string
}

// NewRegistry returns a registry of cs; two connectors of one name are an
// error.
func NewRegistry(cs ...connector.Connector) (*Registry, error) {
	r := &Registry{byName: map[string]connector.Connector{}}
	for _, c := range cs {
		name := c.Descriptor().Name
		if name == "" {
			return nil, fmt.Errorf("integration registry: a connector has no name")
		}
		if _, dup := r.byName[name]; dup {
			return nil, fmt.Errorf("integration registry: two connectors named %q", name)
		}
		r.byName[name] = c
		r.names = append(r.names, name)
	}
	slices.Sort(r.names)
	return r, nil
}

// Get returns the connector of a provider type.
func (r *Registry) Get(name string) (connector.Connector, bool) {
	c, ok := r.byName[name]
	return c, ok
}

// Available lists the available integrations, by name. Every one also
// takes the domain's own optional fields (sync_interval_minutes,
// max_delete_fraction).
func (r *Registry) Available() []Available {
	out := make([]Available, 0, len(r.names))
	for _, n := range r.names {
		d := r.byName[n].Descriptor()
		a := Available{
			Name: d.Name, DisplayName: d.DisplayName, Description: d.Description, Category: d.Category,
			AuthType: d.AuthType, DocumentationURL: d.DocumentationURL, RequiredFields: []string{},
		}
		for _, f := range d.RequiredFields {
			a.RequiredFields = append(a.RequiredFields, f.Name)
		}
		for _, f := range d.OptionalFields {
			a.OptionalFields = append(a.OptionalFields, f.Name)
		}
		a.OptionalFields = append(a.OptionalFields, FieldSyncInterval, FieldMaxDeleteFraction)
		out = append(out, a)
	}
	return out
}
