package activity

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Holder is the owner of one type of resource of a project (documents,
// graph objects, agents).
type Holder interface {
	// HoldInTx checks, in tx, that resource id of project exists and
	// keeps it from being deleted until tx ends; errs.NotFound when there
	// is none.
	HoldInTx(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error
}

// SessionHolder is the owner of the users' chat sessions.
type SessionHolder interface {
	// HoldSessionInTx checks, in tx, that chat session id of project is
	// user's and keeps it from being deleted until tx ends; errs.NotFound
	// when there is none.
	HoldSessionInTx(ctx context.Context, tx pgx.Tx, project, user, id uuid.UUID) error
}

// Resources are the owners of the resource types whose use is recorded
// only while the resource exists.
type Resources struct {
	Documents    Holder
	GraphObjects Holder
	Agents       Holder
	ChatSessions SessionHolder
}

// hold checks a record's resource in tx (see Holder); ErrNotFound-like
// errors are the type's own.
type hold func(ctx context.Context, tx pgx.Tx, r Record, id uuid.UUID) error

// checked is a resource type whose use needs the resource: how to hold it
// and the 404 when it is not there.
type checked struct {
	hold     hold
	notFound error
}

// Service holds the recent-activity rules.
type Service struct {
	pool    *pgxpool.Pool
	checked map[string]checked
	now     func() time.Time
	retain  int
}

// NewService returns a Service that keeps RetentionMax items per user.
func NewService(pool *pgxpool.Pool, res Resources, now func() time.Time) *Service {
	byProject := func(h Holder) hold {
		return func(ctx context.Context, tx pgx.Tx, r Record, id uuid.UUID) error {
			return h.HoldInTx(ctx, tx, r.ProjectID, id)
		}
	}
	return &Service{pool: pool, now: now, retain: RetentionMax, checked: map[string]checked{
		ResourceDocument:    {byProject(res.Documents), ErrNoDocument},
		ResourceGraphObject: {byProject(res.GraphObjects), ErrNoGraphObject},
		ResourceAgent:       {byProject(res.Agents), ErrNoAgent},
		ResourceChatSession: {func(ctx context.Context, tx pgx.Tx, r Record, id uuid.UUID) error {
			return res.ChatSessions.HoldSessionInTx(ctx, tx, r.ProjectID, r.UserID, id)
		}, ErrNoChatSession},
	}}
}

// validate checks a record and trims its text.
func validate(r Record) (Record, error) {
	r.ResourceType = strings.TrimSpace(r.ResourceType)
	r.ActionType = strings.TrimSpace(r.ActionType)
	r.ResourceID = strings.TrimSpace(r.ResourceID)
	r.ResourceName = strings.TrimSpace(r.ResourceName)
	r.ResourceSubtype = strings.TrimSpace(r.ResourceSubtype)
	switch {
	case r.ProjectID == uuid.Nil:
		return r, ErrProjectRequired
	case !namePattern.MatchString(r.ResourceType):
		return r, ErrResourceType
	case !namePattern.MatchString(r.ActionType):
		return r, ErrActionType
	case r.ResourceID == "" || utf8.RuneCountInString(r.ResourceID) > ResourceIDMax || !utf8.ValidString(r.ResourceID):
		return r, ErrResourceID
	case utf8.RuneCountInString(r.ResourceName) > NameMax || !utf8.ValidString(r.ResourceName):
		return r, ErrResourceName
	case utf8.RuneCountInString(r.ResourceSubtype) > SubtypeMax || !utf8.ValidString(r.ResourceSubtype):
		return r, ErrResourceSubtype
	}
	return r, nil
}

// Record records that a user used a resource: the resource's item moves
// to the top of the user's history (or is added, the oldest items beyond
// RetentionMax being trimmed). The use of one of Graphmill's own
// resources (Resources) is recorded only while the resource exists,
// checked in the same transaction (a late record racing its deletion
// commits before it, and the deletion then removes the item, or sees it
// gone). Errors: invalid_argument, not_found (ErrNoDocument,
// ErrNoGraphObject, ErrNoAgent, ErrNoChatSession).
func (s *Service) Record(ctx context.Context, r Record) (Item, error) {
	r, err := validate(r)
	if err != nil {
		return Item{}, err
	}
	var out Item
	err = postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if c, ok := s.checked[r.ResourceType]; ok {
			id, err := c.holdResource(ctx, tx, r)
			if err != nil {
				return err
			}
			r.ResourceID = id.String() // one spelling per resource
		}
		out, err = activityUpsert(ctx, tx, uuid.Must(uuid.NewV7()), r, s.now().UTC())
		if err != nil {
			return err
		}
		_, err = activityTrim(ctx, tx, r.UserID, s.retain)
		return err
	})
	return out, err
}

// holdResource checks that the resource a record names exists, keeps it
// until tx ends and returns its id. Errors: c.notFound.
func (c checked) holdResource(ctx context.Context, tx pgx.Tx, r Record) (uuid.UUID, error) {
	id, err := uuid.Parse(r.ResourceID)
	if err != nil {
		return uuid.Nil, c.notFound
	}
	err = c.hold(ctx, tx, r, id)
	if errs.CodeOf(err) == errs.NotFound {
		return uuid.Nil, c.notFound
	}
	return id, err
}

// Recent lists o's most recent items, of one resource type when typ is not
// empty. Errors: invalid_argument.
func (s *Service) Recent(ctx context.Context, o Owner, typ string, limit int) ([]Item, error) {
	if typ != "" && !namePattern.MatchString(typ) {
		return nil, ErrResourceType
	}
	return activityList(ctx, s.pool, o, typ, limit)
}

// Remove deletes o's item of one resource: one of Graphmill's own by the
// id as given and in its canonical spelling (Record stores that one).
// Errors: not_found.
func (s *Service) Remove(ctx context.Context, o Owner, typ, id string) error {
	ids := []string{id}
	if own, err := uuid.Parse(id); err == nil && own.String() != id {
		if _, ok := s.checked[typ]; ok {
			ids = append(ids, own.String())
		}
	}
	n, err := activityDelete(ctx, s.pool, o, typ, ids)
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	return err
}

// Clear deletes all of o's items (never another user's) and returns how
// many it deleted.
func (s *Service) Clear(ctx context.Context, o Owner) (int64, error) {
	return activityClear(ctx, s.pool, o)
}

// Forgetter removes the items of deleted resources of one type, in the
// deleting transaction (the resource's owner calls it through an
// interface of its own).
type Forgetter struct {
	typ string
}

// ForgetterOf returns the Forgetter of resource type typ (ResourceDocument,
// ...).
func ForgetterOf(typ string) Forgetter {
	return Forgetter{typ: typ}
}

// ForgetInTx deletes, in tx, every user's items of the resources ids of
// project. Called after the resources' rows are deleted (or marked
// deleted) in tx: a recording that held one of them has committed by
// then, and its item is seen and deleted; a later one finds the resource
// gone.
func (f Forgetter) ForgetInTx(ctx context.Context, tx pgx.Tx, project uuid.UUID, ids ...uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = id.String()
	}
	_, err := activityForget(ctx, tx, project, f.typ, keys)
	return err
}
