package vectorindex

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

// spacesList returns the spaces project has vectors of kind in.
func spacesList(ctx context.Context, db postgres.DBTX, project uuid.UUID, kind string) ([]Space, error) {
	var q string
	switch kind {
	case KindChunks:
		q = `SELECT embedding_model, embedding_dim FROM document_chunks
WHERE project_id = $1 AND embedded_at IS NOT NULL AND embedding IS NOT NULL AND embedding_model IS NOT NULL AND embedding_dim IS NOT NULL
GROUP BY 1, 2 ORDER BY 1, 2`
	case KindObjects:
		q = `SELECT e.model, e.dimension FROM graph_object_embeddings e
JOIN graph_objects o ON o.id = e.object_id AND o.deleted_at IS NULL
WHERE e.project_id = $1
GROUP BY 1, 2 ORDER BY 1, 2`
	default:
		return nil, fmt.Errorf("%w: %q", ErrKind, kind)
	}
	rows, err := db.Query(ctx, q, project)
	if err != nil {
		return nil, fmt.Errorf("list %s spaces: %w", kind, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Space, error) {
		s := Space{Kind: kind}
		err := r.Scan(&s.Model, &s.Dimension)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s spaces: %w", kind, err)
	}
	return out, nil
}

// vectorsLoad calls fn with every vector of project in space.
func vectorsLoad(ctx context.Context, db postgres.DBTX, project uuid.UUID, sp Space, fn func(row)) error {
	var q string
	switch sp.Kind {
	case KindChunks:
		q = `SELECT id, '00000000-0000-0000-0000-000000000000'::uuid, true, embedding, embedded_at FROM document_chunks
WHERE project_id = $1 AND embedding_model = $2 AND embedding_dim = $3
  AND embedded_at IS NOT NULL AND embedding IS NOT NULL`
	case KindObjects:
		q = `SELECT e.object_id, e.policy_id, true, e.embedding, e.embedded_at FROM graph_object_embeddings e
JOIN graph_objects o ON o.id = e.object_id
WHERE e.project_id = $1 AND e.model = $2 AND e.dimension = $3 AND o.deleted_at IS NULL`
	default:
		return fmt.Errorf("%w: %q", ErrKind, sp.Kind)
	}
	return scanRows(ctx, db, fn, q, project, sp.Model, sp.Dimension)
}

// vectorsLoadSince calls fn with every vector of project's kind embedded at
// or after since, whatever its space: those of sp with their embedding,
// the others (moved to another model, or of a deleted object) as not in
// the space.
func vectorsLoadSince(ctx context.Context, db postgres.DBTX, project uuid.UUID, sp Space, since time.Time, fn func(row)) error {
	var q string
	switch sp.Kind {
	case KindChunks:
		q = `SELECT id, '00000000-0000-0000-0000-000000000000'::uuid, in_space, CASE WHEN in_space THEN embedding END, embedded_at FROM (
  SELECT id, embedding, embedded_at,
         coalesce(embedding_model = $2 AND embedding_dim = $3 AND embedding IS NOT NULL, false) AS in_space
  FROM document_chunks WHERE project_id = $1 AND embedded_at >= $4) c
ORDER BY embedded_at`
	case KindObjects:
		q = `SELECT object_id, policy_id, in_space, CASE WHEN in_space THEN embedding END, embedded_at FROM (
  SELECT e.object_id, e.policy_id, e.embedding, e.embedded_at,
         (e.model = $2 AND e.dimension = $3 AND o.deleted_at IS NULL) AS in_space
  FROM graph_object_embeddings e JOIN graph_objects o ON o.id = e.object_id
  WHERE e.project_id = $1 AND e.embedded_at >= $4) x
ORDER BY embedded_at`
	default:
		return fmt.Errorf("%w: %q", ErrKind, sp.Kind)
	}
	return scanRows(ctx, db, fn, q, project, sp.Model, sp.Dimension, since)
}

// vectorsStamps calls fn with the key and embedded_at of every vector of
// project in space, without the vectors.
func vectorsStamps(ctx context.Context, db postgres.DBTX, project uuid.UUID, sp Space, fn func(rowKey, time.Time)) error {
	var q string
	switch sp.Kind {
	case KindChunks:
		q = `SELECT id, '00000000-0000-0000-0000-000000000000'::uuid, embedded_at FROM document_chunks
WHERE project_id = $1 AND embedding_model = $2 AND embedding_dim = $3
  AND embedded_at IS NOT NULL AND embedding IS NOT NULL`
	case KindObjects:
		q = `SELECT e.object_id, e.policy_id, e.embedded_at FROM graph_object_embeddings e
JOIN graph_objects o ON o.id = e.object_id
WHERE e.project_id = $1 AND e.model = $2 AND e.dimension = $3 AND o.deleted_at IS NULL`
	default:
		return fmt.Errorf("%w: %q", ErrKind, sp.Kind)
	}
	rows, err := db.Query(ctx, q, project, sp.Model, sp.Dimension)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k rowKey
		var at time.Time
		if err := rows.Scan(&k.id, &k.policy, &at); err != nil {
			return err
		}
		fn(k, at)
	}
	return rows.Err()
}

// vectorsByID calls fn with the vectors of project in space of the chunks
// or objects ids (every policy of an object).
func vectorsByID(ctx context.Context, db postgres.DBTX, project uuid.UUID, sp Space, ids []uuid.UUID, fn func(row)) error {
	var q string
	switch sp.Kind {
	case KindChunks:
		q = `SELECT id, '00000000-0000-0000-0000-000000000000'::uuid, true, embedding, embedded_at FROM document_chunks
WHERE project_id = $1 AND embedding_model = $2 AND embedding_dim = $3
  AND embedded_at IS NOT NULL AND embedding IS NOT NULL AND id = ANY($4)`
	case KindObjects:
		q = `SELECT e.object_id, e.policy_id, true, e.embedding, e.embedded_at FROM graph_object_embeddings e
JOIN graph_objects o ON o.id = e.object_id
WHERE e.project_id = $1 AND e.model = $2 AND e.dimension = $3 AND o.deleted_at IS NULL AND e.object_id = ANY($4)`
	default:
		return fmt.Errorf("%w: %q", ErrKind, sp.Kind)
	}
	return scanRows(ctx, db, fn, q, project, sp.Model, sp.Dimension, ids)
}

func scanRows(ctx context.Context, db postgres.DBTX, fn func(row), q string, args ...any) error {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.key.id, &r.key.policy, &r.inSpace, &r.embedding, &r.embeddedAt); err != nil {
			return err
		}
		fn(r)
	}
	return rows.Err()
}
