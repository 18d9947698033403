package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

type objectRow struct {
	ID              uuid.UUID      `db:"id"`
	ProjectID       uuid.UUID      `db:"project_id"`
	Type            string         `db:"type"`
	Key             string         `db:"key"`
	NormalizedKey   string         `db:"normalized_key"`
	Name            string         `db:"name"`
	Description     *string        `db:"description"`
	Properties      map[string]any `db:"properties"`
	Labels          []string       `db:"labels"`
	Status          string         `db:"status"`
	Confidence      *float32       `db:"confidence"`
	ExtractionJobID *uuid.UUID     `db:"extraction_job_id"`
	CreatedBy       *uuid.UUID     `db:"created_by"`
	CreatedAt       time.Time      `db:"created_at"`
	UpdatedAt       time.Time      `db:"updated_at"`
}

func (r objectRow) toObject() Object {
	o := Object{
		ID: r.ID, ProjectID: r.ProjectID, Type: r.Type, Key: r.Key, Name: r.Name, Description: postgres.Value(r.Description),
		Properties: r.Properties, Labels: r.Labels, Status: r.Status, Confidence: fromReal(r.Confidence),
		ExtractionJobID: r.ExtractionJobID, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if o.Properties == nil {
		o.Properties = map[string]any{}
	}
	if o.Labels == nil {
		o.Labels = []string{}
	}
	return o
}

type objectPageRow struct {
	objectRow
	postgres.Total
}

func (r objectPageRow) toObject() Object { return r.objectRow.toObject() }

type relationshipRow struct {
	ID              uuid.UUID      `db:"id"`
	ProjectID       uuid.UUID      `db:"project_id"`
	Type            string         `db:"type"`
	SourceID        uuid.UUID      `db:"source_id"`
	TargetID        uuid.UUID      `db:"target_id"`
	Properties      map[string]any `db:"properties"`
	Confidence      *float32       `db:"confidence"`
	ExtractionJobID *uuid.UUID     `db:"extraction_job_id"`
	CreatedAt       time.Time      `db:"created_at"`
	UpdatedAt       time.Time      `db:"updated_at"`
	postgres.Total
}

func (r relationshipRow) toRelationship() Relationship {
	rel := Relationship{
		ID: r.ID, ProjectID: r.ProjectID, Type: r.Type, SourceID: r.SourceID, TargetID: r.TargetID, Properties: r.Properties,
		Confidence: fromReal(r.Confidence), ExtractionJobID: r.ExtractionJobID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if rel.Properties == nil {
		rel.Properties = map[string]any{}
	}
	return rel
}

// fromReal reads a real column as the shortest decimal that rounds to it,
// so that 0.9 stored reads back as 0.9.
func fromReal(f *float32) *float64 {
	if f == nil {
		return nil
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(*f), 'g', -1, 32), 64)
	return &v
}

// toReal rounds a confidence as the column stores it.
func toReal(f *float64) *float32 {
	if f == nil {
		return nil
	}
	v := float32(*f)
	return &v
}

const objectColumns = `id, project_id, type, key, normalized_key, name, description, properties, labels, status, confidence,
	extraction_job_id, created_by, created_at, updated_at`

const relationshipColumns = `id, project_id, type, source_id, target_id, properties, confidence, extraction_job_id, created_at, updated_at`

func jsonText(v any) (string, error) {
	if v == nil {
		return "{}", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode json: %w", err)
	}
	return string(b), nil
}

// objectInsert stores a new object; it reports false when a live object
// of the same type and normalized key exists.
func objectInsert(ctx context.Context, db postgres.DBTX, o Object, nkey string) (bool, error) {
	props, err := jsonText(o.Properties)
	if err != nil {
		return false, err
	}
	return postgres.ExecOne(ctx, db, "insert object", `INSERT INTO graph_objects (id, project_id, type, key, normalized_key, name, description, properties, labels,
			status, confidence, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)
		ON CONFLICT (project_id, type, normalized_key) WHERE deleted_at IS NULL DO NOTHING`,
		o.ID, o.ProjectID, o.Type, o.Key, nkey, o.Name, postgres.NullIfEmpty(o.Description), props, o.Labels, o.Status, toReal(o.Confidence),
		o.CreatedBy, o.CreatedAt)
}

// objectIDByKey returns the id of the live object of project with type and
// normalized key.
func objectIDByKey(ctx context.Context, db postgres.DBTX, project uuid.UUID, typ, nkey string) (uuid.UUID, error) {
	id, err := postgres.One[uuid.UUID](ctx, db, ErrObjectNotFound,
		`SELECT id FROM graph_objects WHERE project_id = $1 AND type = $2 AND normalized_key = $3 AND deleted_at IS NULL`, project, typ, nkey)
	if err != nil {
		return uuid.Nil, fmt.Errorf("find object by key: %w", err)
	}
	return id, nil
}

// objectGet returns a live object of project; lock takes a row lock.
func objectGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID, lock bool) (Object, error) {
	q := `SELECT ` + objectColumns + ` FROM graph_objects WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL`
	if lock {
		q += ` FOR UPDATE`
	}
	r, err := postgres.One[objectRow](ctx, db, ErrObjectNotFound, q, project, id)
	if err != nil {
		return Object{}, fmt.Errorf("get object: %w", err)
	}
	return r.toObject(), nil
}

// escapeLike quotes the LIKE wildcards of s.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// objectList pages the live objects of project matching f, newest first.
// The condition names only the filters set, so that even a cached plan
// reads the page's ids in order from an index (graph_objects_project_created,
// or graph_objects_project_type with a type) instead of sorting the
// project's objects; only the page's rows are read whole. The total is
// counted over an index alone, except for a text query, which reads every
// object anyway: its matches (few) are counted with the page's, in one scan.
func objectList(ctx context.Context, db postgres.DBTX, project uuid.UUID, f ObjectFilter) ([]Object, int, error) {
	cond, args := `project_id = $1 AND deleted_at IS NULL`, []any{project}
	add := func(c string, v any) {
		args = append(args, v)
		cond += fmt.Sprintf(c, len(args))
	}
	if f.Type != "" {
		add(` AND type = $%d`, f.Type)
	}
	if f.Status != "" {
		add(` AND status = $%d`, f.Status)
	}
	if f.Label != "" {
		add(` AND labels @> ARRAY[$%d::text]`, f.Label)
	}
	if f.Query != "" {
		add(` AND (name ILIKE $%[1]d OR key ILIKE $%[1]d OR description ILIKE $%[1]d)`, "%"+escapeLike(f.Query)+"%")
	}
	if f.IDs != nil {
		add(` AND id = ANY($%d)`, f.IDs)
	}
	countSQL := `SELECT count(*) FROM graph_objects WHERE ` + cond
	total, window := 0, "count(*) OVER ()"
	if f.Query == "" {
		if err := db.QueryRow(ctx, countSQL, args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count objects: %w", err)
		}
		window = "0"
	}
	rows, _ := db.Query(ctx, `WITH page AS (
			SELECT id, created_at, `+window+` AS total FROM graph_objects WHERE `+cond+fmt.Sprintf(`
			ORDER BY created_at DESC, id DESC LIMIT $%d OFFSET $%d)`, len(args)+1, len(args)+2)+`
		SELECT `+postgres.Qualify("o", objectColumns)+`, page.total FROM page JOIN graph_objects o ON o.id = page.id
		ORDER BY page.created_at DESC, page.id DESC`, append(args[:len(args):len(args)], f.Limit, f.Offset)...)
	out, pageTotal, err := postgres.CollectPage(rows, objectPageRow.toObject)
	if err == nil && f.Query != "" {
		total, err = postgres.TotalPastEnd(ctx, db, len(out), f.Offset, pageTotal, countSQL, args...)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list objects: %w", err)
	}
	return out, total, nil
}

// objectUpdate writes an object's mutable fields.
func objectUpdate(ctx context.Context, db postgres.DBTX, o Object) error {
	props, err := jsonText(o.Properties)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `UPDATE graph_objects SET name = $3, description = $4, properties = $5, labels = $6, status = $7, updated_at = $8
		WHERE project_id = $1 AND id = $2`, o.ProjectID, o.ID, o.Name, postgres.NullIfEmpty(o.Description), props, o.Labels, o.Status, o.UpdatedAt)
	if err != nil {
		return fmt.Errorf("update object: %w", err)
	}
	return nil
}

// objectSoftDelete marks a live object of project deleted and removes its
// relationships; false when there is no such object.
func objectSoftDelete(ctx context.Context, db postgres.DBTX, project, id uuid.UUID, now time.Time) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE graph_objects SET deleted_at = $3, updated_at = $3 WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL`,
		project, id, now)
	if err != nil {
		return false, fmt.Errorf("delete object: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	if _, err := db.Exec(ctx, `DELETE FROM graph_relationships WHERE project_id = $1 AND (source_id = $2 OR target_id = $2)`, project, id); err != nil {
		return false, fmt.Errorf("delete relationships of object: %w", err)
	}
	return true, nil
}

// objectsByID returns the live objects among ids (of any project).
func objectsByID(ctx context.Context, db postgres.DBTX, ids []uuid.UUID) ([]Object, error) {
	rows, _ := db.Query(ctx, `SELECT `+objectColumns+` FROM graph_objects WHERE id = ANY($1) AND deleted_at IS NULL ORDER BY id`, ids)
	out, err := postgres.CollectAs(rows, objectRow.toObject)
	if err != nil {
		return nil, fmt.Errorf("get objects: %w", err)
	}
	return out, nil
}

// objectIDsByType lists the live objects of project of the given types.
func objectIDsByType(ctx context.Context, db postgres.DBTX, project uuid.UUID, types []string) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `SELECT id FROM graph_objects WHERE project_id = $1 AND type = ANY($2) AND deleted_at IS NULL ORDER BY id`, project, types)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("list objects by type: %w", err)
	}
	return ids, nil
}

// objectsSetStatus sets the status of the live objects of project among
// ids.
func objectsSetStatus(ctx context.Context, db postgres.DBTX, project uuid.UUID, ids []uuid.UUID, status string, now time.Time) error {
	_, err := db.Exec(ctx, `UPDATE graph_objects SET status = $3, updated_at = $4
		WHERE project_id = $1 AND id = ANY($2) AND deleted_at IS NULL AND status <> $3`, project, ids, status, now)
	if err != nil {
		return fmt.Errorf("set object status: %w", err)
	}
	return nil
}

// objectsDeleteSuggestions hard-deletes the objects of project among ids
// still suggested by extraction job job and returns the ones that went;
// relationships, provenance, embeddings and embedding jobs go with them
// (foreign keys).
func objectsDeleteSuggestions(ctx context.Context, db postgres.DBTX, project, job uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	// Locked in id order first, as writers of rows that reference objects
	// lock them (LockObjects): deleting in scan order would take the row
	// locks in another order and deadlock with them.
	rows, _ := db.Query(ctx, `WITH doomed AS (
			SELECT id FROM graph_objects
			WHERE project_id = $1 AND id = ANY($2) AND status = 'suggested' AND extraction_job_id = $3
			ORDER BY id FOR UPDATE)
		DELETE FROM graph_objects WHERE id IN (SELECT id FROM doomed) RETURNING id`, project, ids, job)
	gone, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("delete suggestions: %w", err)
	}
	return gone, nil
}

// objectHold share-locks live object id of project. Errors:
// ErrObjectNotFound.
func objectHold(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error {
	_, err := postgres.One[int](ctx, tx, ErrObjectNotFound,
		`SELECT 1 FROM graph_objects WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL FOR SHARE`, project, id)
	return err
}

// relationshipInsert stores a new relationship; false when one of the
// same type between the same objects exists.
func relationshipInsert(ctx context.Context, db postgres.DBTX, r Relationship) (bool, error) {
	props, err := jsonText(r.Properties)
	if err != nil {
		return false, err
	}
	return postgres.ExecOne(ctx, db, "insert relationship", `INSERT INTO graph_relationships (id, project_id, type, source_id, target_id, properties, confidence, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (project_id, type, source_id, target_id) DO NOTHING`,
		r.ID, r.ProjectID, r.Type, r.SourceID, r.TargetID, props, toReal(r.Confidence), r.CreatedAt)
}

// relationshipIDByEnds returns the id of project's relationship of type
// from source to target.
func relationshipIDByEnds(ctx context.Context, db postgres.DBTX, project uuid.UUID, typ string, source, target uuid.UUID) (uuid.UUID, error) {
	id, err := postgres.One[uuid.UUID](ctx, db, ErrRelationshipNotFound,
		`SELECT id FROM graph_relationships WHERE project_id = $1 AND type = $2 AND source_id = $3 AND target_id = $4`, project, typ, source, target)
	if err != nil {
		return uuid.Nil, fmt.Errorf("find relationship: %w", err)
	}
	return id, nil
}

// relationshipGet returns a relationship of project.
func relationshipGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (Relationship, error) {
	r, err := postgres.One[relationshipRow](ctx, db, ErrRelationshipNotFound,
		`SELECT `+relationshipColumns+`, 0 AS total FROM graph_relationships WHERE project_id = $1 AND id = $2`, project, id)
	if err != nil {
		return Relationship{}, fmt.Errorf("get relationship: %w", err)
	}
	return r.toRelationship(), nil
}

// relationshipList pages project's relationships matching f, newest
// first.
func relationshipList(ctx context.Context, db postgres.DBTX, project uuid.UUID, f RelationshipFilter) ([]Relationship, int, error) {
	const where = `WHERE project_id = $1 AND ($2 = '' OR type = $2) AND ($3::uuid IS NULL OR source_id = $3) AND ($4::uuid IS NULL OR target_id = $4)`
	rows, _ := db.Query(ctx, `SELECT `+relationshipColumns+`, count(*) OVER () AS total FROM graph_relationships `+where+`
		ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6`, project, f.Type, f.SourceID, f.TargetID, f.Limit, f.Offset)
	out, total, err := postgres.CollectPage(rows, relationshipRow.toRelationship)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(out), f.Offset, total, `SELECT count(*) FROM graph_relationships `+where,
			project, f.Type, f.SourceID, f.TargetID)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list relationships: %w", err)
	}
	return out, total, nil
}

// relationshipListOf pages the relationships of object in direction d.
func relationshipListOf(ctx context.Context, db postgres.DBTX, project, object uuid.UUID, d Direction, typ string, limit, offset int) ([]Relationship, int, error) {
	const where = `WHERE project_id = $1 AND ($4 = '' OR type = $4)
		  AND (($3 IN ('both', 'outgoing') AND source_id = $2) OR ($3 IN ('both', 'incoming') AND target_id = $2))`
	rows, _ := db.Query(ctx, `SELECT `+relationshipColumns+`, count(*) OVER () AS total FROM graph_relationships `+where+`
		ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6`, project, object, string(d), typ, limit, offset)
	out, total, err := postgres.CollectPage(rows, relationshipRow.toRelationship)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(out), offset, total, `SELECT count(*) FROM graph_relationships `+where,
			project, object, string(d), typ)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list relationships of object: %w", err)
	}
	return out, total, nil
}

// relationshipsAround returns, in one query, the latest per relationships
// of project that each object of ids is an end of (either direction),
// newest first, keyed by that object.
func relationshipsAround(ctx context.Context, db postgres.DBTX, project uuid.UUID, ids []uuid.UUID, per int) (map[uuid.UUID][]Relationship, error) {
	rows, _ := db.Query(ctx, `SELECT o.id AS anchor, r.*, 0 AS total FROM unnest($2::uuid[]) AS o (id)
		CROSS JOIN LATERAL (SELECT `+relationshipColumns+` FROM graph_relationships
			WHERE project_id = $1 AND (source_id = o.id OR target_id = o.id)
			ORDER BY created_at DESC, id DESC LIMIT $3) r`, project, ids, per)
	type anchored struct {
		Anchor uuid.UUID `db:"anchor"`
		relationshipRow
	}
	out := map[uuid.UUID][]Relationship{}
	_, err := postgres.CollectAs(rows, func(r anchored) struct{} {
		out[r.Anchor] = append(out[r.Anchor], r.toRelationship())
		return struct{}{}
	})
	if err != nil {
		return nil, fmt.Errorf("list relationships around objects: %w", err)
	}
	return out, nil
}

// relationshipDelete removes a relationship of project; false when there
// is none.
func relationshipDelete(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (bool, error) {
	return postgres.ExecOne(ctx, db, "delete relationship", `DELETE FROM graph_relationships WHERE project_id = $1 AND id = $2`, project, id)
}

// objectsLock takes a key-share lock on the objects among ids, in id order.
func objectsLock(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
	if _, err := tx.Exec(ctx, `SELECT id FROM graph_objects WHERE id = ANY($1) ORDER BY id FOR KEY SHARE`, ids); err != nil {
		return fmt.Errorf("lock objects: %w", err)
	}
	return nil
}

func objectProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrObjectNotFound, `SELECT project_id FROM graph_objects WHERE id = $1`, id)
}

func relationshipProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrRelationshipNotFound, `SELECT project_id FROM graph_relationships WHERE id = $1`, id)
}

// Kinds of graph_call_effects.
const (
	effectObject       = "object"
	effectRelationship = "relationship"
)

// callEffectInsert records, in the create's transaction, what the agent
// tool call key created (nothing without a key). A key recorded already
// is a conflict: one call creates one thing.
func callEffectInsert(ctx context.Context, tx pgx.Tx, key string, project uuid.UUID, kind string, id uuid.UUID, now time.Time) error {
	if key == "" {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO graph_call_effects (call_key, project_id, kind, target_id, created_at)
		VALUES ($1, $2, $3, $4, $5)`, key, project, kind, id, now)
	if postgres.IsUniqueViolation(err, "graph_call_effects_pkey") {
		return errs.Errorf(errs.Conflict, "tool call %s created something already", key)
	}
	if err != nil {
		return fmt.Errorf("record the call's effect: %w", err)
	}
	return nil
}

// callEffectOf is the id of what call key created in project, of kind.
func callEffectOf(ctx context.Context, db postgres.DBTX, project uuid.UUID, key, kind string, notFound error) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, notFound, `SELECT target_id FROM graph_call_effects
		WHERE call_key = $1 AND project_id = $2 AND kind = $3`, key, project, kind)
}
