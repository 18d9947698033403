package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/vectorindex"
)

// Config holds what a Service needs. Embed may be nil (no embeddings are
// queued).
type Config struct {
	Pool  *pgxpool.Pool
	Types TypesSource
	Embed EmbedQueue
	// Activity, when set, forgets the users' uses of deleted objects.
	Activity Activity
	Now      func() time.Time
}

// Service holds the graph rules.
type Service struct {
	pool     *pgxpool.Pool
	types    TypesSource
	embed    EmbedQueue
	activity Activity
	now      func() time.Time
}

// NewService returns a Service.
func NewService(c Config) *Service {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Service{pool: c.Pool, types: c.Types, embed: c.Embed, activity: c.Activity, now: c.Now}
}

func newID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

// forget removes the users' recent-activity items of deleted objects ids
// of project, if there is an Activity. Called after the objects' rows
// changed in tx: a recording that held one (HoldInTx) has committed.
func (s *Service) forget(ctx context.Context, tx pgx.Tx, project uuid.UUID, ids []uuid.UUID) error {
	if s.activity == nil || len(ids) == 0 {
		return nil
	}
	return s.activity.ForgetInTx(ctx, tx, project, ids...)
}

// enqueue hands ids to the embedding queue, if there is one.
func (s *Service) enqueue(ctx context.Context, tx pgx.Tx, project uuid.UUID, ids []uuid.UUID) error {
	if s.embed == nil || len(ids) == 0 {
		return nil
	}
	if err := s.embed.Enqueue(ctx, tx, project, ids); err != nil {
		return fmt.Errorf("queue graph embeddings: %w", err)
	}
	return nil
}

func checkText(field, v string, maxLen int, required bool) error {
	if required && strings.TrimSpace(v) == "" {
		return errs.Errorf(errs.Invalid, "%s is required", field)
	}
	if !utf8.ValidString(v) {
		return errs.Errorf(errs.Invalid, "%s is not valid UTF-8", field)
	}
	if utf8.RuneCountInString(v) > maxLen {
		return errs.Errorf(errs.Invalid, "%s must be at most %d characters", field, maxLen)
	}
	return nil
}

// checkObject checks the fields of an object to create or apply (its key
// and name already defaulted), defaults its status to accepted, rounds its
// confidence, cleans its labels and normalises its properties in place,
// and returns its normalised key.
func checkObject(o *Object) (string, error) {
	if o.Status == "" {
		o.Status = StatusAccepted
	}
	for _, c := range []struct {
		field, v string
		max      int
	}{{"type", o.Type, TypeMax}, {"name", o.Name, NameMax}, {"key", o.Key, KeyMax}} {
		if err := checkText(c.field, c.v, c.max, true); err != nil {
			return "", err
		}
	}
	if err := checkText("description", o.Description, DescriptionMax, false); err != nil {
		return "", err
	}
	if !validStatus(o.Status) {
		return "", ErrBadStatus
	}
	nkey := NormalizeKey(o.Key)
	if nkey == "" {
		return "", errs.New(errs.Invalid, "key must contain a letter or a digit")
	}
	var err error
	if o.Confidence, err = roundConfidence(o.Confidence); err != nil {
		return "", err
	}
	if o.Labels, err = cleanLabels(o.Labels); err != nil {
		return "", err
	}
	if o.Properties, err = normalizeProps("properties", o.Properties); err != nil {
		return "", err
	}
	return nkey, nil
}

// cleanLabels trims labels, drops empty and repeated ones, and checks
// their limits.
func cleanLabels(labels []string) ([]string, error) {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		l = strings.TrimSpace(l)
		if l == "" || slices.Contains(out, l) {
			continue
		}
		if err := checkText("a label", l, LabelMax, false); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	if len(out) > LabelsMax {
		return nil, errs.Errorf(errs.Invalid, "an object has at most %d labels", LabelsMax)
	}
	return out, nil
}

// normalizeProps returns props as JSON decoding would give them (so that
// stored and new values compare alike); nil becomes empty.
func normalizeProps(field string, props map[string]any) (map[string]any, error) {
	if len(props) == 0 {
		return map[string]any{}, nil
	}
	raw, err := json.Marshal(props)
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "%s must be JSON-encodable", field)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", field, err)
	}
	return out, nil
}

// roundConfidence checks a confidence and rounds it as the database
// stores it.
func roundConfidence(c *float64) (*float64, error) {
	if !validConfidence(c) {
		return nil, ErrBadConfidence
	}
	return fromReal(toReal(c)), nil
}

// CreateObject adds an object to project after validating its properties
// against its type. Errors: invalid_argument (bad fields, unknown type,
// properties failing the schema), conflict (a live object of that type
// and key exists; the message names it).
func (s *Service) CreateObject(ctx context.Context, project uuid.UUID, p CreateObjectParams) (Object, error) {
	o := Object{
		ID: newID(), ProjectID: project, Type: p.Type, Key: strings.TrimSpace(p.Key), Name: strings.TrimSpace(p.Name),
		Description: p.Description, Status: p.Status, CreatedBy: p.CreatedBy,
		Confidence: p.Confidence, Labels: p.Labels, Properties: p.Properties,
	}
	if o.Key == "" {
		o.Key = o.Name
	}
	nkey, err := checkObject(&o)
	if err != nil {
		return Object{}, err
	}
	types, err := s.types.TypesFor(ctx, project)
	if err != nil {
		return Object{}, err
	}
	if err := types.Validate(o.Type, o.Properties); err != nil {
		return Object{}, err
	}
	o.CreatedAt = s.now().UTC()
	o.UpdatedAt = o.CreatedAt
	err = postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		ok, err := objectInsert(ctx, tx, o, nkey)
		if err != nil {
			return err
		}
		if !ok {
			id, err := objectIDByKey(ctx, tx, project, o.Type, nkey)
			if err != nil {
				return err
			}
			return errs.Errorf(errs.Conflict, "an object of type %s with this key already exists: %s", o.Type, id)
		}
		if err := callEffectInsert(ctx, tx, p.CallKey, project, effectObject, o.ID, o.CreatedAt); err != nil {
			return err
		}
		return s.enqueue(ctx, tx, project, []uuid.UUID{o.ID})
	})
	if err != nil {
		return Object{}, err
	}
	return o, nil
}

// GetObject returns a live object of project. Errors: not_found.
func (s *Service) GetObject(ctx context.Context, project, id uuid.UUID) (Object, error) {
	return objectGet(ctx, s.pool, project, id, false)
}

// ObjectOfCall returns the live object that the agent tool call key
// created (CreateObjectParams.CallKey) in project. Errors: not_found.
func (s *Service) ObjectOfCall(ctx context.Context, project uuid.UUID, key string) (Object, error) {
	id, err := callEffectOf(ctx, s.pool, project, key, effectObject, ErrObjectNotFound)
	if err != nil {
		return Object{}, err
	}
	return objectGet(ctx, s.pool, project, id, false)
}

func checkPage(limit, offset int) error {
	if limit < 1 || limit > ListLimitMax {
		return errs.Errorf(errs.Invalid, "limit must be between 1 and %d", ListLimitMax)
	}
	if offset < 0 {
		return errs.New(errs.Invalid, "offset must not be negative")
	}
	return nil
}

// ListObjects pages the live objects of project, newest first. Errors:
// invalid_argument.
func (s *Service) ListObjects(ctx context.Context, project uuid.UUID, f ObjectFilter) ([]Object, int, error) {
	if err := checkPage(f.Limit, f.Offset); err != nil {
		return nil, 0, err
	}
	if f.Status != "" && !validStatus(f.Status) {
		return nil, 0, ErrBadStatus
	}
	if utf8.RuneCountInString(f.Query) > QueryMax {
		return nil, 0, errs.Errorf(errs.Invalid, "q must be at most %d characters", QueryMax)
	}
	return objectList(ctx, s.pool, project, f)
}

// UpdateObject changes the fields u sets on a live object of project;
// new properties are validated against the object's type and replace the
// old ones. Errors: not_found, invalid_argument.
func (s *Service) UpdateObject(ctx context.Context, project, id uuid.UUID, u ObjectUpdate) (Object, error) {
	if u.Name != nil {
		n := strings.TrimSpace(*u.Name)
		if err := checkText("name", n, NameMax, true); err != nil {
			return Object{}, err
		}
		u.Name = &n
	}
	if u.Description != nil {
		if err := checkText("description", *u.Description, DescriptionMax, false); err != nil {
			return Object{}, err
		}
	}
	if u.Status != nil && !validStatus(*u.Status) {
		return Object{}, ErrBadStatus
	}
	var err error
	if u.Labels != nil {
		if u.Labels, err = cleanLabels(u.Labels); err != nil {
			return Object{}, err
		}
	}
	if u.Properties != nil {
		if u.Properties, err = normalizeProps("properties", u.Properties); err != nil {
			return Object{}, err
		}
	}
	var out Object
	err = postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		o, err := objectGet(ctx, tx, project, id, true)
		if err != nil {
			return err
		}
		if u.Properties != nil {
			types, err := s.types.TypesFor(ctx, project)
			if err != nil {
				return err
			}
			if err := types.Validate(o.Type, u.Properties); err != nil {
				return err
			}
		}
		before := o
		content := false
		if u.Name != nil && *u.Name != o.Name {
			o.Name, content = *u.Name, true
		}
		if u.Description != nil && *u.Description != o.Description {
			o.Description, content = *u.Description, true
		}
		if u.Properties != nil && !jsonEqual(u.Properties, o.Properties) {
			o.Properties, content = u.Properties, true
		}
		if u.Labels != nil && !slices.Equal(u.Labels, o.Labels) {
			o.Labels, content = u.Labels, true
		}
		if u.Status != nil {
			o.Status = *u.Status
		}
		if !content && o.Status == before.Status {
			out = o
			return nil
		}
		o.UpdatedAt = s.now().UTC()
		if err := objectUpdate(ctx, tx, o); err != nil {
			return err
		}
		out = o
		if content {
			return s.enqueue(ctx, tx, project, []uuid.UUID{o.ID})
		}
		return nil
	})
	return out, err
}

// DeleteObject soft-deletes a live object of project and removes its
// relationships and the users' recent-activity items of it; its natural
// key is free again. Errors: not_found.
func (s *Service) DeleteObject(ctx context.Context, project, id uuid.UUID) error {
	return postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		ok, err := objectSoftDelete(ctx, tx, project, id, s.now().UTC())
		if err != nil {
			return err
		}
		if !ok {
			return ErrObjectNotFound
		}
		if err := s.forget(ctx, tx, project, []uuid.UUID{id}); err != nil {
			return err
		}
		// The embedding worker drops the vectors of a deleted object.
		if s.embed != nil {
			return s.embed.Enqueue(ctx, tx, project, []uuid.UUID{id})
		}
		return nil
	})
}

// ListObjectRelationships pages the relationships of a live object of
// project in direction d (of type typ when not empty), newest first.
// Errors: not_found, invalid_argument.
func (s *Service) ListObjectRelationships(ctx context.Context, project, id uuid.UUID, d Direction, typ string, limit, offset int) ([]Relationship, int, error) {
	if err := checkPage(limit, offset); err != nil {
		return nil, 0, err
	}
	if d == "" {
		d = Both
	}
	if d != Both && d != Outgoing && d != Incoming {
		return nil, 0, ErrBadDirection
	}
	if _, err := objectGet(ctx, s.pool, project, id, false); err != nil {
		return nil, 0, err
	}
	return relationshipListOf(ctx, s.pool, project, id, d, typ, limit, offset)
}

// Neighbourhoods returns the latest per relationships (either direction)
// of each object of ids in project, in one query; an object without
// relationships is absent from the map. Errors: invalid_argument (per out
// of 1..ListLimitMax).
func (s *Service) Neighbourhoods(ctx context.Context, project uuid.UUID, ids []uuid.UUID, per int) (map[uuid.UUID][]Relationship, error) {
	if err := checkPage(per, 0); err != nil {
		return nil, err
	}
	return relationshipsAround(ctx, s.pool, project, ids, per)
}

// CreateRelationship adds a relationship between two live objects of
// project. The type must be one of the project's relationship types and
// allow the endpoints' object types. Errors: invalid_argument (unknown
// type, missing endpoint, endpoint types not allowed), conflict (the same
// relationship exists; the message names it).
func (s *Service) CreateRelationship(ctx context.Context, project uuid.UUID, p CreateRelationshipParams) (Relationship, error) {
	if err := checkText("type", p.Type, TypeMax, true); err != nil {
		return Relationship{}, err
	}
	conf, err := roundConfidence(p.Confidence)
	if err != nil {
		return Relationship{}, err
	}
	props, err := normalizeProps("properties", p.Properties)
	if err != nil {
		return Relationship{}, err
	}
	types, err := s.types.TypesFor(ctx, project)
	if err != nil {
		return Relationship{}, err
	}
	rt, ok := types.Relationship(p.Type)
	if !ok {
		names := make([]string, len(types.Relationships))
		for i, r := range types.Relationships {
			names[i] = r.Name
		}
		return Relationship{}, errs.Errorf(errs.Invalid, "unknown relationship type %q; known types: %s", p.Type, strings.Join(names, ", "))
	}
	now := s.now().UTC()
	r := Relationship{
		ID: newID(), ProjectID: project, Type: p.Type, SourceID: p.SourceID, TargetID: p.TargetID,
		Properties: props, Confidence: conf, CreatedAt: now, UpdatedAt: now,
	}
	err = postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		src, err := objectGet(ctx, tx, project, p.SourceID, false)
		if errs.CodeOf(err) == errs.NotFound {
			return errs.New(errs.Invalid, "sourceId: no live object with this id in the project")
		}
		if err != nil {
			return err
		}
		tgt, err := objectGet(ctx, tx, project, p.TargetID, false)
		if errs.CodeOf(err) == errs.NotFound {
			return errs.New(errs.Invalid, "targetId: no live object with this id in the project")
		}
		if err != nil {
			return err
		}
		if !types.AllowsRelationship(p.Type, src.Type, tgt.Type) {
			return errs.Errorf(errs.Invalid, "relationship type %s goes from %s to %s, not from %s to %s",
				p.Type, rt.SourceType, rt.TargetType, src.Type, tgt.Type)
		}
		ok, err := relationshipInsert(ctx, tx, r)
		if err != nil {
			return err
		}
		if !ok {
			id, err := relationshipIDByEnds(ctx, tx, project, p.Type, p.SourceID, p.TargetID)
			if err != nil {
				return err
			}
			return errs.Errorf(errs.Conflict, "this relationship already exists: %s", id)
		}
		return callEffectInsert(ctx, tx, p.CallKey, project, effectRelationship, r.ID, now)
	})
	if err != nil {
		return Relationship{}, err
	}
	return r, nil
}

// ListRelationships pages project's relationships, newest first. Errors:
// invalid_argument.
func (s *Service) ListRelationships(ctx context.Context, project uuid.UUID, f RelationshipFilter) ([]Relationship, int, error) {
	if err := checkPage(f.Limit, f.Offset); err != nil {
		return nil, 0, err
	}
	return relationshipList(ctx, s.pool, project, f)
}

// GetRelationship returns a relationship of project. Errors: not_found.
func (s *Service) GetRelationship(ctx context.Context, project, id uuid.UUID) (Relationship, error) {
	return relationshipGet(ctx, s.pool, project, id)
}

// RelationshipOfCall returns the relationship that the agent tool call
// key created (CreateRelationshipParams.CallKey) in project. Errors:
// not_found.
func (s *Service) RelationshipOfCall(ctx context.Context, project uuid.UUID, key string) (Relationship, error) {
	id, err := callEffectOf(ctx, s.pool, project, key, effectRelationship, ErrRelationshipNotFound)
	if err != nil {
		return Relationship{}, err
	}
	return relationshipGet(ctx, s.pool, project, id)
}

// DeleteRelationship removes a relationship of project. Errors:
// not_found.
func (s *Service) DeleteRelationship(ctx context.Context, project, id uuid.UUID) error {
	ok, err := relationshipDelete(ctx, s.pool, project, id)
	if err != nil {
		return err
	}
	if !ok {
		return ErrRelationshipNotFound
	}
	return nil
}

// SetObjectsStatus sets the status of the live objects of project among
// ids in the caller's transaction (ids that are gone are skipped). No
// embedding is queued: the status is not part of an object's text.
// Errors: invalid_argument.
func (s *Service) SetObjectsStatus(ctx context.Context, tx pgx.Tx, project uuid.UUID, ids []uuid.UUID, status string) error {
	if !validStatus(status) {
		return ErrBadStatus
	}
	if len(ids) == 0 {
		return nil
	}
	return objectsSetStatus(ctx, tx, project, ids, status, s.now().UTC())
}

// DeleteSuggestions hard-deletes, in the caller's transaction, the objects
// of project among ids that are still suggestions of extraction job job
// (a rejected review): an object accepted since, or taken over by another
// job, stays. Their relationships, provenance, embeddings and embedding
// jobs go with them, and the users' recent-activity items of them.
func (s *Service) DeleteSuggestions(ctx context.Context, tx pgx.Tx, project, job uuid.UUID, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	gone, err := objectsDeleteSuggestions(ctx, tx, project, job, ids)
	if err != nil || len(gone) == 0 {
		return err
	}
	if err := s.forget(ctx, tx, project, gone); err != nil {
		return err
	}
	// Their vectors went with them (cascade).
	return vectorindex.Removed(ctx, tx, project, vectorindex.KindObjects)
}

// HoldInTx checks, in tx, that live object id of project exists, and
// keeps it from being deleted until tx ends. A deletion is an update
// (deleted_at), so the lock is a share lock, not a key-share one: a
// deletion or update in progress is waited for, then seen, and updates
// wait for tx. Errors: not_found.
func (s *Service) HoldInTx(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error {
	return objectHold(ctx, tx, project, id)
}

// LockObjects keeps the objects among ids from being deleted until tx
// ends (a key-share lock, taken in id order; updates are not blocked). A
// transaction that writes rows referencing objects whose own rows a delete
// cascades to (embedding jobs and vectors) takes it before locking those
// rows: deletes lock the objects first, in the same order, so the two
// cannot deadlock.
func (s *Service) LockObjects(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	return objectsLock(ctx, tx, ids)
}

// ObjectsByID returns the live objects among ids, of any project, ordered
// by id (for the graph embedding worker).
func (s *Service) ObjectsByID(ctx context.Context, db postgres.DBTX, ids []uuid.UUID) ([]Object, error) {
	if len(ids) == 0 {
		return []Object{}, nil
	}
	return objectsByID(ctx, db, ids)
}

// ObjectIDsByType lists the live objects of project whose type is one of
// types (for re-embedding when an embedding policy changes).
func (s *Service) ObjectIDsByType(ctx context.Context, db postgres.DBTX, project uuid.UUID, types []string) ([]uuid.UUID, error) {
	return objectIDsByType(ctx, db, project, types)
}

// jsonEqual compares two JSON values by their encoding (object keys are
// encoded sorted).
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// ObjectProject returns the project of object id, for the routes that
// name an object. Errors: not_found.
func (s *Service) ObjectProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return objectProject(ctx, s.pool, id)
}

// RelationshipProject returns the project of relationship id, for the
// routes that name a relationship. Errors: not_found.
func (s *Service) RelationshipProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return relationshipProject(ctx, s.pool, id)
}
