package embeddingpolicy

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
)

// Queue queues re-embeddings and drops a deleted policy's vectors
// (embedding.Service).
type Queue interface {
	EnqueueTypes(ctx context.Context, tx pgx.Tx, project uuid.UUID, types []string) error
	DeletePolicyVectors(ctx context.Context, tx pgx.Tx, project, policy uuid.UUID) (int64, error)
}

// Catalog lists the providers' models (provider.Service).
type Catalog interface {
	Models(ctx context.Context, org uuid.UUID, provider, modelType string) ([]provider.Model, error)
}

// Service holds the embedding policy rules.
type Service struct {
	pool    *pgxpool.Pool
	queue   Queue
	catalog Catalog
	now     func() time.Time
}

// NewService returns a Service.
func NewService(pool *pgxpool.Pool, queue Queue, catalog Catalog, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{pool: pool, queue: queue, catalog: catalog, now: now}
}

// List returns project's policies, oldest first.
func (s *Service) List(ctx context.Context, project uuid.UUID) ([]Policy, error) {
	return policiesList(ctx, s.pool, project)
}

// PolicyProject returns the project of policy id, for the routes that name
// a policy. Errors: not_found.
func (s *Service) PolicyProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return policyProject(ctx, s.pool, id)
}

// Get returns a policy of project.
//
// Errors: errs.NotFound.
func (s *Service) Get(ctx context.Context, project, id uuid.UUID) (Policy, error) {
	return policyGet(ctx, s.pool, project, id, false)
}

// Create adds a policy to project and, when it is active, queues the
// re-embedding of the objects of its types in the same transaction.
//
// Errors: errs.Invalid (a field is missing or malformed, the template does
// not parse or names an unknown field, the model is not an embedding model
// of the catalog), errs.Conflict (the name is taken in the project).
func (s *Service) Create(ctx context.Context, project uuid.UUID, in CreateParams) (Policy, error) {
	now := s.now().UTC()
	p := Policy{
		ID: uuid.Must(uuid.NewV7()), ProjectID: project, Name: in.Name, Description: in.Description,
		ObjectTypes: in.ObjectTypes, Fields: in.Fields, Template: in.Template, Model: in.Model, Active: true,
		ChunkingConfig: in.ChunkingConfig, CreatedAt: now, UpdatedAt: now,
	}
	if in.Active != nil {
		p.Active = *in.Active
	}
	if isNull(p.ChunkingConfig) {
		p.ChunkingConfig = nil
	}
	if err := s.check(ctx, &p, true); err != nil {
		return Policy{}, err
	}
	var out Policy
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if out, err = policyInsert(ctx, tx, p); err != nil {
			return err
		}
		if p.Active {
			return s.queue.EnqueueTypes(ctx, tx, project, p.ObjectTypes)
		}
		return nil
	})
	return out, err
}

// Update changes the given fields of a policy of project. When the
// objects' texts may change (object types, fields, template, model or
// active changed), the objects of the types it covered and of the types it
// covers now are queued for re-embedding in the same transaction.
//
// Errors: errs.NotFound, and those of Create.
func (s *Service) Update(ctx context.Context, project, id uuid.UUID, in Update) (Policy, error) {
	var out Policy
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		old, err := policyGet(ctx, tx, project, id, true)
		if err != nil {
			return err
		}
		p := old
		apply(&p, in)
		// A model is checked when it is set: one that left the catalog
		// since does not block other changes (the worker then uses the
		// provider's default).
		if err := s.check(ctx, &p, in.Model != nil); err != nil {
			return err
		}
		if !changed(old, p) {
			out = old
			return nil
		}
		p.UpdatedAt = s.now().UTC()
		if out, err = policyUpdate(ctx, tx, p); err != nil {
			return err
		}
		if !textsChanged(old, p) {
			return nil
		}
		return s.queue.EnqueueTypes(ctx, tx, project, coveredTypes(old, p))
	})
	return out, err
}

// Delete deletes a policy of project and its vectors; when it was active,
// the objects it covered are queued for re-embedding (they may fall back
// to the default text), in the same transaction.
//
// Errors: errs.NotFound.
func (s *Service) Delete(ctx context.Context, project, id uuid.UUID) error {
	return postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		old, err := policyDelete(ctx, tx, project, id)
		if err != nil {
			return err
		}
		if _, err := s.queue.DeletePolicyVectors(ctx, tx, project, id); err != nil {
			return err
		}
		if old.Active {
			return s.queue.EnqueueTypes(ctx, tx, project, old.ObjectTypes)
		}
		return nil
	})
}

// ActivePolicies returns the active policies of projects, for the
// embedding worker (embedding.Policies).
func (s *Service) ActivePolicies(ctx context.Context, projects []uuid.UUID) ([]embedding.Policy, error) {
	return policiesActive(ctx, s.pool, projects)
}

func apply(p *Policy, in Update) {
	if in.Name != nil {
		p.Name = *in.Name
	}
	if in.Description != nil {
		p.Description = *in.Description
	}
	if in.ObjectTypes != nil {
		p.ObjectTypes = *in.ObjectTypes
	}
	if in.Fields != nil {
		p.Fields = *in.Fields
	}
	if in.Template != nil {
		p.Template = *in.Template
	}
	if in.Model != nil {
		p.Model = *in.Model
	}
	if in.Active != nil {
		p.Active = *in.Active
	}
	if in.ChunkingConfig != nil {
		p.ChunkingConfig = *in.ChunkingConfig
		if isNull(p.ChunkingConfig) {
			p.ChunkingConfig = nil
		}
	}
}

// textsChanged reports whether the change from old to p may change the
// texts or vectors of objects.
func textsChanged(old, p Policy) bool {
	return !slices.Equal(old.ObjectTypes, p.ObjectTypes) || !slices.Equal(old.Fields, p.Fields) ||
		old.Template != p.Template || old.Model != p.Model || old.Active != p.Active
}

func changed(old, p Policy) bool {
	return textsChanged(old, p) || old.Name != p.Name || old.Description != p.Description ||
		!bytes.Equal(old.ChunkingConfig, p.ChunkingConfig)
}

// coveredTypes are the types old covered (when active) and p covers (when
// active), without repeats.
func coveredTypes(old, p Policy) []string {
	var types []string
	for _, q := range []Policy{old, p} {
		if !q.Active {
			continue
		}
		for _, t := range q.ObjectTypes {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	return types
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// check validates p, normalising its lists (trimmed, without repeats);
// the model against the catalog when withModel is set.
func (s *Service) check(ctx context.Context, p *Policy, withModel bool) error {
	p.Name = strings.TrimSpace(p.Name)
	if p.Name == "" {
		return errs.New(errs.Invalid, "name: required")
	}
	if utf8.RuneCountInString(p.Name) > NameMaxLen {
		return errs.Errorf(errs.Invalid, "name: at most %d characters", NameMaxLen)
	}
	if utf8.RuneCountInString(p.Description) > DescriptionMaxLen {
		return errs.Errorf(errs.Invalid, "description: at most %d characters", DescriptionMaxLen)
	}
	var err error
	if p.ObjectTypes, err = cleanList("object_types", p.ObjectTypes); err != nil {
		return err
	}
	if len(p.ObjectTypes) == 0 {
		return errs.New(errs.Invalid, "object_types: at least one object type is required")
	}
	if p.Fields, err = cleanList("fields", p.Fields); err != nil {
		return err
	}
	if strings.TrimSpace(p.Template) == "" {
		return errs.New(errs.Invalid, "template: required")
	}
	if utf8.RuneCountInString(p.Template) > TemplateMaxLen {
		return errs.Errorf(errs.Invalid, "template: at most %d characters", TemplateMaxLen)
	}
	if err := embedding.CheckTemplate(p.Template, p.Fields); err != nil {
		return err
	}
	if p.ChunkingConfig != nil {
		var obj map[string]any
		if json.Unmarshal(p.ChunkingConfig, &obj) != nil || obj == nil {
			return errs.New(errs.Invalid, "chunking_config: must be a JSON object")
		}
	}
	p.Model = strings.TrimSpace(p.Model)
	if p.Model == "" {
		return errs.New(errs.Invalid, "model: required")
	}
	if !withModel {
		return nil
	}
	return s.checkModel(ctx, p.Model)
}

// cleanList trims the entries of a list and drops repeats; empty and
// overlong entries are refused.
func cleanList(field string, list []string) ([]string, error) {
	if len(list) > ListMaxItems {
		return nil, errs.Errorf(errs.Invalid, "%s: at most %d entries", field, ListMaxItems)
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, errs.Errorf(errs.Invalid, "%s: entries must not be empty", field)
		}
		if utf8.RuneCountInString(v) > ItemMaxLen {
			return nil, errs.Errorf(errs.Invalid, "%s: entries have at most %d characters", field, ItemMaxLen)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// checkModel requires name to be an embedding model in the catalog of one
// of the providers.
func (s *Service) checkModel(ctx context.Context, name string) error {
	for _, p := range []string{provider.KeyAI, provider.AccountAI, provider.Local} {
		models, err := s.catalog.Models(ctx, uuid.Nil, p, provider.Embedding)
		if err != nil {
			return err
		}
		for _, m := range models {
			if m.ModelName == name {
				return nil
			}
		}
	}
	return errs.New(errs.Invalid, "model: not an embedding model of any provider's catalog (see GET /api/v1/providers/{provider}/models?modelType=embedding)")
}
