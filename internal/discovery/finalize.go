package discovery

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// Finalize modes.
const (
	ModeCreate = "create"
	ModeUpdate = "update"
)

// IncludedType is a type a finalize puts in the pack (the spec's
// included type).
type IncludedType struct {
	TypeName           string         `json:"type_name"`
	Description        string         `json:"description"`
	Properties         map[string]any `json:"properties" doc:"JSON Schema property map: property name to its schema."`
	RequiredProperties []string       `json:"required_properties,omitempty"`
	ExampleInstances   []Instance     `json:"example_instances,omitempty"`
	Frequency          int            `json:"frequency,omitempty"`
}

// IncludedRelationship is a relationship type a finalize puts in the
// pack (the spec's included relationship).
type IncludedRelationship struct {
	SourceType   string `json:"source_type"`
	TargetType   string `json:"target_type"`
	RelationType string `json:"relation_type"`
	Description  string `json:"description,omitempty"`
	Cardinality  string `json:"cardinality" enum:"one_to_one,one_to_many,many_to_many"`
}

// FinalizeParams finalize a completed job into a template pack.
type FinalizeParams struct {
	PackName              string
	Mode                  string
	ExistingPackID        *uuid.UUID
	IncludedTypes         []IncludedType
	IncludedRelationships []IncludedRelationship
	// Install installs the pack in the job's project.
	Install bool
	// Reextract queues a reextraction of the job's documents.
	Reextract bool
	// Principal is the caller (an update's pack must be visible to it).
	Principal *auth.Principal
	// By is the user finalizing (nil for none).
	By *uuid.UUID
}

// Finalized is the answer of a finalize.
type Finalized struct {
	TemplatePackID uuid.UUID `json:"template_pack_id"`
	Message        string    `json:"message"`
}

// cardinalities maps the discovery cardinalities to the template pack's.
func cardinality(c string) (string, bool) {
	switch c {
	case OneToOne:
		return templatepack.OneToOne, true
	case OneToMany:
		return templatepack.OneToMany, true
	case ManyToMany:
		return templatepack.ManyToMany, true
	}
	return "", false
}

// packInput checks the included types and relationships and returns the
// pack's definition; known holds the names of the types relationships may
// reference besides the included ones. Errors: invalid_argument.
func packInput(job uuid.UUID, p FinalizeParams, known map[string]bool) (templatepack.PackInput, error) {
	in := templatepack.PackInput{
		Name: strings.TrimSpace(p.PackName), Source: templatepack.SourceDiscovery,
		Description:       "Object and relationship types found by schema discovery (job " + job.String() + ").",
		ObjectTypes:       []templatepack.ObjectType{},
		RelationshipTypes: []templatepack.RelationshipType{},
	}
	if in.Name == "" {
		return in, errs.New(errs.Invalid, "packName is required")
	}
	if len(p.IncludedTypes) == 0 {
		return in, errs.New(errs.Invalid, "includedTypes must hold at least one type")
	}
	included := map[string]bool{}
	for i, t := range p.IncludedTypes {
		name := t.TypeName
		switch {
		case strings.TrimSpace(name) == "" || strings.TrimSpace(name) != name:
			return in, errs.Errorf(errs.Invalid, "includedTypes[%d]: type_name must be non-empty, without surrounding spaces", i)
		case utf8.RuneCountInString(name) > templatepack.NameMax:
			return in, errs.Errorf(errs.Invalid, "includedTypes[%d]: type_name is longer than %d characters", i, templatepack.NameMax)
		case included[name]:
			return in, errs.Errorf(errs.Invalid, "includedTypes: %q appears twice", name)
		}
		included[name] = true
		required := make([]any, 0, len(t.RequiredProperties))
		for _, r := range t.RequiredProperties {
			if _, ok := t.Properties[r]; !ok {
				return in, errs.Errorf(errs.Invalid, "includedTypes[%d] (%s): required property %q is not among its properties", i, name, r)
			}
			required = append(required, r)
		}
		props := map[string]any{}
		for k, v := range t.Properties {
			if _, ok := v.(map[string]any); !ok || strings.TrimSpace(k) == "" {
				return in, errs.Errorf(errs.Invalid, "includedTypes[%d] (%s): property %q must be a named JSON Schema object", i, name, k)
			}
			props[k] = v
		}
		schema := map[string]any{"type": "object", "properties": props, "additionalProperties": true}
		if len(required) > 0 {
			schema["required"] = required
		}
		examples := make([]map[string]any, 0, len(t.ExampleInstances))
		for _, e := range t.ExampleInstances {
			examples = append(examples, map[string]any{"name": e.Name, "description": e.Quote, "documentId": e.DocumentID})
		}
		in.ObjectTypes = append(in.ObjectTypes, templatepack.ObjectType{Name: name, Description: t.Description, Schema: schema, Examples: examples})
	}
	byName := map[string]int{}
	for i, r := range p.IncludedRelationships {
		for _, end := range []string{r.SourceType, r.TargetType} {
			if !included[end] && !known[end] {
				return in, errs.Errorf(errs.Invalid, "includedRelationships[%d] (%s): type %q is neither included nor an existing type", i, r.RelationType, end)
			}
		}
		c, ok := cardinality(r.Cardinality)
		if !ok {
			return in, errs.Errorf(errs.Invalid, "includedRelationships[%d] (%s): cardinality must be one_to_one, one_to_many or many_to_many", i, r.RelationType)
		}
		name := strings.TrimSpace(r.RelationType)
		if name == "" {
			return in, errs.Errorf(errs.Invalid, "includedRelationships[%d]: relation_type is required", i)
		}
		rt := templatepack.RelationshipType{Name: name, SourceType: r.SourceType, TargetType: r.TargetType, Description: r.Description, Cardinality: c}
		k, dup := byName[name]
		if !dup {
			byName[name] = len(in.RelationshipTypes)
			in.RelationshipTypes = append(in.RelationshipTypes, rt)
			continue
		}
		// A pack's relationship type has one source and one target type:
		// the same relation between other types widens the differing end
		// to any type.
		in.RelationshipTypes[k] = widen(in.RelationshipTypes[k], rt)
	}
	return in, nil
}

// widen is relationship type a, of the same name as b, covering b's
// ends too: a differing end becomes any type (templatepack.Any), a
// differing cardinality many-to-many, an empty description b's.
func widen(a, b templatepack.RelationshipType) templatepack.RelationshipType {
	if a.SourceType != b.SourceType {
		a.SourceType = templatepack.Any
	}
	if a.TargetType != b.TargetType {
		a.TargetType = templatepack.Any
	}
	if a.Cardinality != b.Cardinality {
		a.Cardinality = templatepack.ManyToMany
	}
	if a.Description == "" {
		a.Description = b.Description
	}
	return a
}

// Finalize makes a template pack of a completed job of project: a new
// pack (mode create, version 1) or a new version of an existing one
// (mode update), in one transaction with the job's template_pack_id, the
// pack's installation (Install) and the reextraction of the job's
// documents (Reextract). The job stays completed. Errors: not_found (the
// job; the existing pack), invalid_argument (mode, pack name, included
// types and relationships; update without existingPackId),
// failed_precondition (the job is not completed), conflict (the pack
// name is taken).
func (s *Service) Finalize(ctx context.Context, project, id uuid.UUID, p FinalizeParams) (Finalized, error) {
	switch p.Mode {
	case ModeCreate:
		if p.ExistingPackID != nil {
			return Finalized{}, errs.New(errs.Invalid, "existingPackId is only for mode update")
		}
	case ModeUpdate:
		if p.ExistingPackID == nil {
			return Finalized{}, errs.New(errs.Invalid, "existingPackId is required when mode is update")
		}
	default:
		return Finalized{}, errs.Errorf(errs.Invalid, "mode must be create or update, not %q", p.Mode)
	}
	r, err := jobGet(ctx, s.cfg.Pool, project, id)
	if err != nil {
		return Finalized{}, err
	}
	if r.Status != jobqueue.StatusCompleted {
		return Finalized{}, errs.Errorf(errs.FailedPrecondition, "discovery job %s is %s; only completed jobs can be finalized", id, vocabulary.Name(r.Status))
	}
	types, err := s.cfg.Packs.TypesFor(ctx, project)
	if err != nil {
		return Finalized{}, err
	}
	known := map[string]bool{}
	for _, o := range types.Objects {
		known[o.Name] = true
	}
	if p.Mode == ModeUpdate {
		old, err := s.cfg.Packs.GetPack(ctx, p.Principal, *p.ExistingPackID)
		if err != nil {
			return Finalized{}, err
		}
		for _, o := range old.ObjectTypes {
			known[o.Name] = true
		}
	}
	in, err := packInput(id, p, known)
	if err != nil {
		return Finalized{}, err
	}
	var out Finalized
	err = postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if r, err := jobLock(ctx, tx, project, id); err != nil {
			return err
		} else if r.Status != jobqueue.StatusCompleted {
			return ErrNotCompleted
		}
		var pack templatepack.Pack
		var err error
		if p.Mode == ModeCreate {
			pack, err = s.cfg.Packs.CreatePack(ctx, tx, project, in, p.By)
			out.Message = fmt.Sprintf("created template pack %q (version %s) with %d object types and %d relationship types",
				pack.Name, pack.Version, len(in.ObjectTypes), len(in.RelationshipTypes))
		} else {
			pack, err = s.cfg.Packs.ExtendPack(ctx, tx, project, *p.ExistingPackID, in, p.By)
			out.Message = fmt.Sprintf("updated template pack %q to version %s with %d object types and %d relationship types",
				pack.Name, pack.Version, len(in.ObjectTypes), len(in.RelationshipTypes))
		}
		if err != nil {
			return err
		}
		out.TemplatePackID = pack.ID
		if err := jobSetPack(ctx, tx, id, pack.ID, s.now()); err != nil {
			return err
		}
		if p.Install {
			if _, err := s.cfg.Packs.InstallInTx(ctx, tx, project, pack.ID, p.By); err != nil {
				return err
			}
			out.Message += "; installed in the project"
		}
		if p.Reextract {
			n, err := s.cfg.Extractions.EnqueueReextraction(ctx, tx, project, r.DocumentIDs, p.By)
			if err != nil {
				return err
			}
			out.Message += fmt.Sprintf("; %d documents queued for reextraction", n)
		}
		return nil
	})
	if err != nil {
		return Finalized{}, err
	}
	return out, nil
}
