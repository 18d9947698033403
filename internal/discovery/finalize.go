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
// pack's definition; known maps the case-folded names of the types
// relationships may reference besides the included ones to their
// spelling. Type names are templatepack's (CheckTypeName) and compare
// case-insensitively, as ExtendPack matches them: two included types
// that differ only in case are refused, and a relationship's end takes
// the included (else the existing) spelling. Errors: invalid_argument.
func packInput(job uuid.UUID, p FinalizeParams, known map[string]string) (templatepack.PackInput, error) {
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
	included := map[string]string{} // folded name to spelling
	for i, t := range p.IncludedTypes {
		name := t.TypeName
		if err := templatepack.CheckTypeName("object type", name); err != nil {
			return in, errs.Errorf(errs.Invalid, "includedTypes[%d]: %s", i, errs.MessageOf(err))
		}
		if first, dup := included[strings.ToLower(name)]; dup {
			if first == name {
				return in, errs.Errorf(errs.Invalid, "includedTypes: %q appears twice", name)
			}
			return in, errs.Errorf(errs.Invalid, "includedTypes: %q and %q are one type (type names compare case-insensitively)", first, name)
		}
		included[strings.ToLower(name)] = name
		required := make([]any, 0, len(t.RequiredProperties))
		for _, r := range t.RequiredProperties {
			if _, ok := t.Properties[r]; !ok {
				return in, errs.Errorf(errs.Invalid, "includedTypes[%d] (%s): required property %s is not among its properties", i, name, errs.Quoted(r))
			}
			required = append(required, r)
		}
		props := map[string]any{}
		for k, v := range t.Properties {
			if _, ok := v.(map[string]any); !ok || strings.TrimSpace(k) == "" {
				return in, errs.Errorf(errs.Invalid, "includedTypes[%d] (%s): property %s must be a named JSON Schema object", i, name, errs.Quoted(k))
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
	spelling := func(name string) (string, bool) {
		if s, ok := included[strings.ToLower(name)]; ok {
			return s, true
		}
		s, ok := known[strings.ToLower(name)]
		return s, ok
	}
	byName := map[string]int{}
	for i, r := range p.IncludedRelationships {
		ends := [2]string{r.SourceType, r.TargetType}
		for j, end := range ends {
			s, ok := spelling(end)
			if !ok {
				return in, errs.Errorf(errs.Invalid, "includedRelationships[%d] (%s): type %s is neither included nor an existing type",
					i, errs.Quoted(r.RelationType), errs.Quoted(end))
			}
			ends[j] = s
		}
		c, ok := cardinality(r.Cardinality)
		if !ok {
			return in, errs.Errorf(errs.Invalid, "includedRelationships[%d] (%s): cardinality must be one_to_one, one_to_many or many_to_many", i, errs.Quoted(r.RelationType))
		}
		name := strings.TrimSpace(r.RelationType)
		if name == "" {
			return in, errs.Errorf(errs.Invalid, "includedRelationships[%d]: relation_type is required", i)
		}
		rt := templatepack.RelationshipType{Name: name, SourceType: ends[0], TargetType: ends[1], Description: r.Description, Cardinality: c}
		k, dup := byName[strings.ToLower(name)]
		if !dup {
			byName[strings.ToLower(name)] = len(in.RelationshipTypes)
			in.RelationshipTypes = append(in.RelationshipTypes, rt)
			continue
		}
		// A pack's relationship type has one source and one target type:
		// the same relation between other types widens the differing end
		// to any type, as ExtendPack does with the pack's own.
		in.RelationshipTypes[k] = in.RelationshipTypes[k].Widen(rt)
	}
	return in, nil
}

// checkExamples checks the included types' example instances: at most
// ExamplesMax per type, a name and a quote of at most quoteMax
// characters each, and a document of project (jobDocs, the job's
// documents, are; others are looked up). Errors: invalid_argument.
func (s *Service) checkExamples(ctx context.Context, project uuid.UUID, jobDocs []uuid.UUID, types []IncludedType) error {
	ok := map[uuid.UUID]bool{}
	for _, d := range jobDocs {
		ok[d] = true
	}
	for i, t := range types {
		if len(t.ExampleInstances) > ExamplesMax {
			return errs.Errorf(errs.Invalid, "includedTypes[%d] (%s): at most %d example_instances", i, t.TypeName, ExamplesMax)
		}
		for j, e := range t.ExampleInstances {
			switch {
			case strings.TrimSpace(e.Name) == "" || utf8.RuneCountInString(e.Name) > quoteMax:
				return errs.Errorf(errs.Invalid, "includedTypes[%d] (%s): example_instances[%d]: name must be 1 to %d characters", i, t.TypeName, j, quoteMax)
			case utf8.RuneCountInString(e.Quote) > quoteMax:
				return errs.Errorf(errs.Invalid, "includedTypes[%d] (%s): example_instances[%d]: quote is longer than %d characters", i, t.TypeName, j, quoteMax)
			case ok[e.DocumentID]:
				continue
			}
			if _, err := s.cfg.Documents.Get(ctx, project, e.DocumentID); errs.CodeOf(err) == errs.NotFound {
				return errs.Errorf(errs.Invalid, "includedTypes[%d] (%s): example_instances[%d]: document_id %s is not a document of the project", i, t.TypeName, j, e.DocumentID)
			} else if err != nil {
				return err
			}
			ok[e.DocumentID] = true
		}
	}
	return nil
}

// Finalize makes a template pack of a completed job of project: a new
// pack (mode create, version 1) or a new version of an existing one
// (mode update: ExtendPack, which only adds), in one transaction with
// the job's template_pack_id, the pack's installation (Install) and the
// reextraction of the job's documents (Reextract, which needs Install:
// the extraction reads the project's installed types). In update mode
// packName must be the pack's name (a pack keeps its name), and the pack
// must be the project's own: another project's pack, even one the
// caller sees, is not changed (its types are live in every project that
// installed it). The job stays completed. Errors: not_found (the job; an
// existing pack the caller cannot see), permission_denied (a visible
// pack of another project), invalid_argument (mode, pack name, included
// types, examples and relationships; update without existingPackId;
// reextract without install), failed_precondition (the job is not
// completed; a built-in pack), conflict (the pack name is taken).
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
	if p.Reextract && !p.Install {
		return Finalized{}, errs.New(errs.Invalid, "reextract needs install: the reextraction uses the project's installed types, so set install to true (or leave it out)")
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
	known := map[string]string{}
	for _, o := range types.Objects {
		known[strings.ToLower(o.Name)] = o.Name
	}
	if p.Mode == ModeUpdate {
		old, err := s.cfg.Packs.GetPack(ctx, p.Principal, *p.ExistingPackID)
		if err != nil {
			return Finalized{}, err
		}
		if err := updatable(old, project, p.PackName); err != nil {
			return Finalized{}, err
		}
		for _, o := range old.ObjectTypes {
			known[strings.ToLower(o.Name)] = o.Name
		}
	}
	in, err := packInput(id, p, known)
	if err != nil {
		return Finalized{}, err
	}
	if err := s.checkExamples(ctx, project, r.DocumentIDs, p.IncludedTypes); err != nil {
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
		if p.Mode == ModeCreate {
			var err error
			if pack, err = s.cfg.Packs.CreatePack(ctx, tx, project, in, p.By); err != nil {
				return err
			}
			out.Message = fmt.Sprintf("created template pack %q (version %s) with %d object types and %d relationship types",
				pack.Name, pack.Version, len(in.ObjectTypes), len(in.RelationshipTypes))
		} else {
			ext, err := s.cfg.Packs.ExtendPack(ctx, tx, project, *p.ExistingPackID, in, p.By)
			if err != nil {
				return err
			}
			pack = ext.Pack
			out.Message = updateMessage(ext, in)
		}
		out.TemplatePackID = pack.ID
		if err := jobSetPack(ctx, tx, project, id, pack.ID, s.now()); err != nil {
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

// updatable checks that project may write a version of pack old (which
// the caller sees) named packName. Errors: failed_precondition (a
// built-in pack), permission_denied (another project's pack),
// invalid_argument (packName is not the pack's name).
func updatable(old templatepack.Pack, project uuid.UUID, packName string) error {
	name := strings.TrimSpace(packName)
	switch {
	case old.ProjectID == nil:
		return templatepack.ErrBuiltinReadOnly
	case *old.ProjectID != project:
		return errs.Errorf(errs.PermissionDenied,
			"template pack %q belongs to another project of the organization: only its own project writes its versions (its types are live wherever it is installed); finalize with mode create to make a pack of this project", old.Name)
	case name != "" && name != old.Name:
		return errs.Errorf(errs.Invalid, "packName %q is not the name of the pack to update (%q): an update keeps the pack's name", name, old.Name)
	}
	return nil
}

// updateMessage says what an update did: the new version, or that
// nothing was new, and the properties whose proposed type differed from
// the pack's (kept).
func updateMessage(ext templatepack.Extended, in templatepack.PackInput) string {
	msg := fmt.Sprintf("nothing new: the template pack %q is unchanged at version %s", ext.Pack.Name, ext.Pack.Version)
	if ext.Changed {
		msg = fmt.Sprintf("updated template pack %q to version %s with %d object types and %d relationship types",
			ext.Pack.Name, ext.Pack.Version, len(in.ObjectTypes), len(in.RelationshipTypes))
	}
	if len(ext.Conflicts) > 0 {
		msg += "; kept the pack's property types where discovery proposed others: " + strings.Join(ext.Conflicts, "; ")
	}
	return msg
}
