package task

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Projects tells which projects a caller can see (tenancy.Service).
type Projects interface {
	VisibleProjects(ctx context.Context, p *auth.Principal, org *uuid.UUID) ([]uuid.UUID, error)
}

// Service holds the task rules.
type Service struct {
	pool     *pgxpool.Pool
	projects Projects
	now      func() time.Time

	mu        sync.RWMutex
	resolvers map[string]ResolverFunc
}

// NewService returns a Service.
func NewService(pool *pgxpool.Pool, projects Projects, now func() time.Time) *Service {
	return &Service{pool: pool, projects: projects, now: now, resolvers: map[string]ResolverFunc{}}
}

// RegisterResolver makes fn the resolver of tasks whose source type is
// sourceType. It is meant for start-up wiring: registering a second
// resolver for the same source type is a programming error and panics.
func (s *Service) RegisterResolver(sourceType string, fn ResolverFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.resolvers[sourceType]; dup || sourceType == "" || fn == nil {
		panic(fmt.Sprintf("task: bad or duplicate resolver for source type %q", sourceType))
	}
	s.resolvers[sourceType] = fn
}

func (s *Service) resolver(sourceType string) ResolverFunc {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.resolvers[sourceType]
}

func checkText(s string, maxLen int) error {
	if utf8.RuneCountInString(s) > maxLen || !utf8.ValidString(s) {
		return ErrFieldTooLong
	}
	return nil
}

// Create adds a pending task in the caller's transaction (so that the task
// and what it reviews commit together). Errors: invalid_argument.
func (s *Service) Create(ctx context.Context, tx pgx.Tx, p CreateParams) (Task, error) {
	t := Task{
		ID: uuid.Must(uuid.NewV7()), ProjectID: p.ProjectID, Title: strings.TrimSpace(p.Title), Description: p.Description,
		Type: strings.TrimSpace(p.Type), Status: StatusPending, SourceType: p.SourceType, SourceID: p.SourceID,
	}
	switch {
	case t.ProjectID == uuid.Nil:
		return Task{}, ErrProjectRequired
	case t.Title == "":
		return Task{}, ErrTitleRequired
	case t.Type == "":
		return Task{}, ErrTypeRequired
	}
	for _, c := range []struct {
		v   string
		max int
	}{{t.Title, TitleMax}, {t.Type, TypeMax}, {t.Description, DescriptionMax}, {t.SourceType, SourceMax}, {t.SourceID, SourceMax}} {
		if err := checkText(c.v, c.max); err != nil {
			return Task{}, err
		}
	}
	if p.Metadata != nil {
		raw, err := json.Marshal(p.Metadata)
		if err != nil {
			return Task{}, ErrMetadataNotJSON
		}
		if string(raw) != "null" {
			t.Metadata = raw
		}
	}
	t.CreatedAt = s.now().UTC()
	return taskInsert(ctx, tx, t)
}

// Get returns a task of project. Errors: not_found.
func (s *Service) Get(ctx context.Context, project, id uuid.UUID) (Task, error) {
	return taskGet(ctx, s.pool, project, id)
}

func checkFilter(f Filter) error {
	if f.Status != "" && !validStatus(f.Status) {
		return ErrBadStatus
	}
	return nil
}

// List pages the tasks of project, newest first. Errors: invalid_argument.
func (s *Service) List(ctx context.Context, project uuid.UUID, f Filter) ([]Task, int, error) {
	if err := checkFilter(f); err != nil {
		return nil, 0, err
	}
	return taskList(ctx, s.pool, []uuid.UUID{project}, f)
}

// ListAll pages the tasks of every project p can see (of one organization
// when org is set), newest first. Errors: invalid_argument, not_found (an
// organization p does not belong to).
func (s *Service) ListAll(ctx context.Context, p *auth.Principal, org *uuid.UUID, f Filter) ([]Task, int, error) {
	if err := checkFilter(f); err != nil {
		return nil, 0, err
	}
	projects, err := s.projects.VisibleProjects(ctx, p, org)
	if err != nil {
		return nil, 0, err
	}
	return taskList(ctx, s.pool, projects, f)
}

// Counts counts the tasks of project per status.
func (s *Service) Counts(ctx context.Context, project uuid.UUID) (Counts, error) {
	return taskCounts(ctx, s.pool, []uuid.UUID{project})
}

// CountsAll counts per status the tasks of every project p can see (of one
// organization when org is set). Errors: not_found (an organization p does
// not belong to).
func (s *Service) CountsAll(ctx context.Context, p *auth.Principal, org *uuid.UUID) (Counts, error) {
	projects, err := s.projects.VisibleProjects(ctx, p, org)
	if err != nil {
		return Counts{}, err
	}
	return taskCounts(ctx, s.pool, projects)
}

// Resolve accepts or rejects a pending task of project on behalf of user,
// and calls the resolver of the task's source type in the same
// transaction; an error from it rolls the resolution back. Of concurrent
// resolutions and cancellations exactly one succeeds. Errors:
// invalid_argument, not_found, failed_precondition (not pending), and
// whatever the resolver returns.
func (s *Service) Resolve(ctx context.Context, project, id, user uuid.UUID, resolution, notes string) (Task, error) {
	if resolution != StatusAccepted && resolution != StatusRejected {
		return Task{}, ErrBadResolution
	}
	if !postgres.ValidText(notes) {
		return Task{}, ErrNotesInvalid // PostgreSQL stores neither
	}
	if utf8.RuneCountInString(notes) > NotesMax {
		return Task{}, ErrNotesTooLong
	}
	var out Task
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		t, ok, err := taskFinish(ctx, tx, project, id, resolution, &user, notes, s.now().UTC())
		if err != nil {
			return err
		}
		if !ok {
			return notPending(ctx, tx, project, id, "resolved")
		}
		if fn := s.resolver(t.SourceType); fn != nil {
			if err := fn(ctx, tx, t, resolution); err != nil {
				return fmt.Errorf("resolver of %s tasks: %w", t.SourceType, err)
			}
		}
		out = t
		return nil
	})
	return out, err
}

// Cancel cancels a pending task of project. Resolvers are not called: a
// cancelled task was never decided. Errors: not_found, failed_precondition
// (not pending).
func (s *Service) Cancel(ctx context.Context, project, id uuid.UUID) (Task, error) {
	var out Task
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		t, ok, err := taskFinish(ctx, tx, project, id, StatusCancelled, nil, "", s.now().UTC())
		if err != nil {
			return err
		}
		if !ok {
			return notPending(ctx, tx, project, id, "cancelled")
		}
		out = t
		return nil
	})
	return out, err
}

// notPending explains why a transition found no pending task.
func notPending(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, verb string) error {
	t, err := taskGet(ctx, tx, project, id)
	if err != nil {
		return err
	}
	return errs.Errorf(errs.FailedPrecondition, "task %s is %s; only pending tasks can be %s", id, t.Status, verb)
}

// TaskProject returns the project of task id, for the routes that name a
// task. Errors: not_found.
func (s *Service) TaskProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return taskProject(ctx, s.pool, id)
}
