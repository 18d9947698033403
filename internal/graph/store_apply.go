package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

// The batched statements of Apply: every list goes to the server as
// arrays and is expanded with unnest, one statement per step whatever the
// batch size.

// chunksCount counts the chunks of project among ids.
func chunksCount(ctx context.Context, db postgres.DBTX, project uuid.UUID, ids []uuid.UUID) (int, error) {
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM document_chunks WHERE project_id = $1 AND id = ANY($2)`, project, ids).Scan(&n); err != nil {
		return 0, fmt.Errorf("check chunks: %w", err)
	}
	return n, nil
}

// objectsLockByKeys returns, locked, the live objects of project with
// the keys of pending.
func objectsLockByKeys(ctx context.Context, db postgres.DBTX, project uuid.UUID, pending []*pendingObject) (map[objKey]Object, error) {
	types := make([]string, len(pending))
	nkeys := make([]string, len(pending))
	for i, p := range pending {
		types[i], nkeys[i] = p.key.typ, p.key.nkey
	}
	rows, _ := db.Query(ctx, `SELECT o.id, o.project_id, o.type, o.key, o.normalized_key, o.name, o.description, o.properties, o.labels,
			o.status, o.confidence, o.extraction_job_id, o.created_by, o.created_at, o.updated_at
		FROM unnest($2::text[], $3::text[]) AS k(type, nkey)
		JOIN graph_objects o ON o.project_id = $1 AND o.type = k.type AND o.normalized_key = k.nkey AND o.deleted_at IS NULL
		ORDER BY o.id FOR NO KEY UPDATE OF o`, project, types, nkeys)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[objectRow])
	if err != nil {
		return nil, fmt.Errorf("lock objects: %w", err)
	}
	out := make(map[objKey]Object, len(list))
	for _, r := range list {
		out[objKey{typ: r.Type, nkey: r.NormalizedKey}] = r.toObject()
	}
	return out, nil
}

// objectIDsByKeys returns the ids of the live objects of project with
// keys.
func objectIDsByKeys(ctx context.Context, db postgres.DBTX, project uuid.UUID, keys []objKey) (map[objKey]uuid.UUID, error) {
	types := make([]string, len(keys))
	nkeys := make([]string, len(keys))
	for i, k := range keys {
		types[i], nkeys[i] = k.typ, k.nkey
	}
	rows, _ := db.Query(ctx, `SELECT o.id, o.type, o.normalized_key
		FROM unnest($2::text[], $3::text[]) AS k(type, nkey)
		JOIN graph_objects o ON o.project_id = $1 AND o.type = k.type AND o.normalized_key = k.nkey AND o.deleted_at IS NULL`,
		project, types, nkeys)
	out := map[objKey]uuid.UUID{}
	var id uuid.UUID
	var k objKey
	_, err := pgx.ForEachRow(rows, []any{&id, &k.typ, &k.nkey}, func() error {
		out[k] = id
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find objects by key: %w", err)
	}
	return out, nil
}

// objectArrays are the columns of a batch of objects, as statement
// parameters.
type objectArrays struct {
	ids          []uuid.UUID
	types, keys  []string
	nkeys, names []string
	descriptions []*string
	props        []string
	labels       []string
	statuses     []string
	confidences  []*float32
}

func objectArraysOf(list []*pendingObject) (objectArrays, error) {
	a := objectArrays{
		ids: make([]uuid.UUID, len(list)), types: make([]string, len(list)), keys: make([]string, len(list)),
		nkeys: make([]string, len(list)), names: make([]string, len(list)), descriptions: make([]*string, len(list)),
		props: make([]string, len(list)), labels: make([]string, len(list)), statuses: make([]string, len(list)),
		confidences: make([]*float32, len(list)),
	}
	for i, p := range list {
		props, err := jsonText(p.props)
		if err != nil {
			return objectArrays{}, err
		}
		labels := p.labels
		if labels == nil {
			labels = []string{}
		}
		lj, err := jsonText(labels)
		if err != nil {
			return objectArrays{}, err
		}
		a.ids[i], a.types[i], a.keys[i], a.nkeys[i], a.names[i] = p.id, p.key.typ, p.keyText, p.key.nkey, p.name
		a.descriptions[i], a.props[i], a.labels[i], a.statuses[i], a.confidences[i] = postgres.NullIfEmpty(p.description), props, lj, p.status, toReal(p.confidence)
	}
	return a, nil
}

// objectsInsertBatch inserts objects of project and returns the ids it
// inserted (an object whose key a concurrent transaction took first is
// skipped).
func objectsInsertBatch(ctx context.Context, db postgres.DBTX, project uuid.UUID, jobID *uuid.UUID, list []*pendingObject, now time.Time) (map[uuid.UUID]bool, error) {
	if len(list) == 0 {
		return nil, nil
	}
	a, err := objectArraysOf(list)
	if err != nil {
		return nil, err
	}
	rows, _ := db.Query(ctx, `INSERT INTO graph_objects (id, project_id, type, key, normalized_key, name, description, properties, labels,
			status, confidence, extraction_job_id, created_at, updated_at)
		SELECT u.id, $1, u.type, u.key, u.nkey, u.name, u.description, u.properties,
			ARRAY(SELECT jsonb_array_elements_text(u.labels)), u.status, u.confidence, $2, $3, $3
		FROM unnest($4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::jsonb[], $12::text[], $13::real[])
			AS u(id, type, key, nkey, name, description, properties, labels, status, confidence)
		ON CONFLICT (project_id, type, normalized_key) WHERE deleted_at IS NULL DO NOTHING
		RETURNING id`,
		project, jobID, now, a.ids, a.types, a.keys, a.nkeys, a.names, a.descriptions, a.props, a.labels, a.statuses, a.confidences)
	return insertedIDs(rows, "objects")
}

// objectsUpdateBatch writes merged objects.
func objectsUpdateBatch(ctx context.Context, db postgres.DBTX, project uuid.UUID, jobID *uuid.UUID, list []*pendingObject, now time.Time) error {
	if len(list) == 0 {
		return nil
	}
	a, err := objectArraysOf(list)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `UPDATE graph_objects o SET name = u.name, description = u.description, properties = u.properties,
			labels = ARRAY(SELECT jsonb_array_elements_text(u.labels)), status = u.status, confidence = u.confidence,
			extraction_job_id = COALESCE($2, o.extraction_job_id), updated_at = $3
		FROM unnest($4::uuid[], $5::text[], $6::text[], $7::jsonb[], $8::jsonb[], $9::text[], $10::real[])
			AS u(id, name, description, properties, labels, status, confidence)
		WHERE o.project_id = $1 AND o.id = u.id`,
		project, jobID, now, a.ids, a.names, a.descriptions, a.props, a.labels, a.statuses, a.confidences)
	if err != nil {
		return fmt.Errorf("update objects: %w", err)
	}
	return nil
}

// linked is a pending object or relationship: links is its id and the
// chunks it came from.
type linked interface {
	links() (uuid.UUID, []uuid.UUID)
}

// provenanceInsert links each pending object or relationship of list to
// its chunks in a provenance table whose id column is column; pairs
// already there are kept.
func provenanceInsert[P linked](ctx context.Context, db postgres.DBTX, table, column string,
	project uuid.UUID, jobID *uuid.UUID, list []P, now time.Time,
) error {
	var ids, chunks []uuid.UUID
	for _, p := range list {
		id, cs := p.links()
		for _, c := range cs {
			ids, chunks = append(ids, id), append(chunks, c)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, `INSERT INTO `+table+` (`+column+`, chunk_id, project_id, extraction_job_id, created_at)
		SELECT u.id, u.chunk_id, $1, $2, $3 FROM unnest($4::uuid[], $5::uuid[]) AS u(id, chunk_id)
		ON CONFLICT (`+column+`, chunk_id) DO NOTHING`, project, jobID, now, ids, chunks)
	if err != nil {
		return fmt.Errorf("insert %s: %w", table, err)
	}
	return nil
}

// relationshipsLockByKeys returns, locked, the relationships of project
// with the keys of pending.
func relationshipsLockByKeys(ctx context.Context, db postgres.DBTX, project uuid.UUID, pending []*pendingRel) (map[relKey]Relationship, error) {
	types := make([]string, len(pending))
	sources := make([]uuid.UUID, len(pending))
	targets := make([]uuid.UUID, len(pending))
	for i, p := range pending {
		types[i], sources[i], targets[i] = p.key.typ, p.key.source, p.key.target
	}
	rows, _ := db.Query(ctx, `SELECT r.id, r.project_id, r.type, r.source_id, r.target_id, r.properties, r.confidence, r.extraction_job_id,
			r.created_at, r.updated_at, 0 AS total
		FROM unnest($2::text[], $3::uuid[], $4::uuid[]) AS k(type, source_id, target_id)
		JOIN graph_relationships r ON r.project_id = $1 AND r.type = k.type AND r.source_id = k.source_id AND r.target_id = k.target_id
		ORDER BY r.id FOR NO KEY UPDATE OF r`, project, types, sources, targets)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[relationshipRow])
	if err != nil {
		return nil, fmt.Errorf("lock relationships: %w", err)
	}
	out := make(map[relKey]Relationship, len(list))
	for _, r := range list {
		out[relKey{typ: r.Type, source: r.SourceID, target: r.TargetID}] = r.toRelationship()
	}
	return out, nil
}

// relArrays are the columns of a batch of relationships, as statement
// parameters.
type relArrays struct {
	ids              []uuid.UUID
	types            []string
	sources, targets []uuid.UUID
	props            []string
	confidences      []*float32
}

func relArraysOf(list []*pendingRel) (relArrays, error) {
	a := relArrays{
		ids: make([]uuid.UUID, len(list)), types: make([]string, len(list)), sources: make([]uuid.UUID, len(list)),
		targets: make([]uuid.UUID, len(list)), props: make([]string, len(list)), confidences: make([]*float32, len(list)),
	}
	for i, p := range list {
		props, err := jsonText(p.props)
		if err != nil {
			return relArrays{}, err
		}
		a.ids[i], a.types[i], a.sources[i], a.targets[i], a.props[i], a.confidences[i] = p.id, p.key.typ, p.key.source, p.key.target, props, toReal(p.confidence)
	}
	return a, nil
}

// relationshipsInsertBatch inserts relationships of project and returns
// the ids it inserted.
func relationshipsInsertBatch(ctx context.Context, db postgres.DBTX, project uuid.UUID, jobID *uuid.UUID, list []*pendingRel, now time.Time) (map[uuid.UUID]bool, error) {
	if len(list) == 0 {
		return nil, nil
	}
	a, err := relArraysOf(list)
	if err != nil {
		return nil, err
	}
	rows, _ := db.Query(ctx, `INSERT INTO graph_relationships (id, project_id, type, source_id, target_id, properties, confidence, extraction_job_id, created_at, updated_at)
		SELECT u.id, $1, u.type, u.source_id, u.target_id, u.properties, u.confidence, $2, $3, $3
		FROM unnest($4::uuid[], $5::text[], $6::uuid[], $7::uuid[], $8::jsonb[], $9::real[]) AS u(id, type, source_id, target_id, properties, confidence)
		ON CONFLICT (project_id, type, source_id, target_id) DO NOTHING
		RETURNING id`, project, jobID, now, a.ids, a.types, a.sources, a.targets, a.props, a.confidences)
	return insertedIDs(rows, "relationships")
}

// relationshipsUpdateBatch writes merged relationships.
func relationshipsUpdateBatch(ctx context.Context, db postgres.DBTX, project uuid.UUID, jobID *uuid.UUID, list []*pendingRel, now time.Time) error {
	if len(list) == 0 {
		return nil
	}
	a, err := relArraysOf(list)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `UPDATE graph_relationships r SET properties = u.properties, confidence = u.confidence,
			extraction_job_id = COALESCE($2, r.extraction_job_id), updated_at = $3
		FROM unnest($4::uuid[], $5::jsonb[], $6::real[]) AS u(id, properties, confidence)
		WHERE r.project_id = $1 AND r.id = u.id`, project, jobID, now, a.ids, a.props, a.confidences)
	if err != nil {
		return fmt.Errorf("update relationships: %w", err)
	}
	return nil
}

// insertedIDs collects the ids an INSERT ... RETURNING id returned, as a
// set (what names the rows in errors).
func insertedIDs(rows pgx.Rows, what string) (map[uuid.UUID]bool, error) {
	set, err := postgres.CollectIDSet(rows)
	if err != nil {
		return nil, fmt.Errorf("insert %s: %w", what, err)
	}
	return set, nil
}
