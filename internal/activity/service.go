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

// Documents finds a project's documents (document.Service).
type Documents interface {
	// HoldInTx checks, in tx, that document id of project exists and
	// keeps it from being deleted until tx ends; errs.NotFound when there
	// is none.
	HoldInTx(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error
}

// Service holds the recent-activity rules.
type Service struct {
	pool   *pgxpool.Pool
	docs   Documents
	now    func() time.Time
	retain int
}

// NewService returns a Service that keeps RetentionMax items per user.
func NewService(pool *pgxpool.Pool, docs Documents, now func() time.Time) *Service {
	return &Service{pool: pool, docs: docs, now: now, retain: RetentionMax}
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
// RetentionMax being trimmed). A document's use is recorded only while
// the document exists, checked in the same transaction (a late record
// racing its deletion commits before it or sees it gone). Errors:
// invalid_argument, not_found (ErrNoDocument).
func (s *Service) Record(ctx context.Context, r Record) (Item, error) {
	r, err := validate(r)
	if err != nil {
		return Item{}, err
	}
	var out Item
	err = postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if r.ResourceType == ResourceDocument {
			id, err := s.holdDocument(ctx, tx, r.ProjectID, r.ResourceID)
			if err != nil {
				return err
			}
			r.ResourceID = id.String() // one spelling per document
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

// holdDocument checks that the document a record names exists in
// project, keeps it until tx ends and returns its id. Errors:
// ErrNoDocument.
func (s *Service) holdDocument(ctx context.Context, tx pgx.Tx, project uuid.UUID, resourceID string) (uuid.UUID, error) {
	id, err := uuid.Parse(resourceID)
	if err != nil {
		return uuid.Nil, ErrNoDocument
	}
	err = s.docs.HoldInTx(ctx, tx, project, id)
	if errs.CodeOf(err) == errs.NotFound {
		return uuid.Nil, ErrNoDocument
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

// Remove deletes o's item of one resource: a document's by the id as
// given and in its canonical spelling (Record stores that one). Errors:
// not_found.
func (s *Service) Remove(ctx context.Context, o Owner, typ, id string) error {
	ids := []string{id}
	if doc, err := uuid.Parse(id); err == nil && typ == ResourceDocument && doc.String() != id {
		ids = append(ids, doc.String())
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
