package graph

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

// Reads for browsing a project's graph (the web console's explorer): an
// object's neighbours with the objects at their other ends, the chunks it
// was extracted from, and counts. Chunk and document rows are read with
// SQL (reads only, as chat and search do).

// ObjectRef names an object: what a list of neighbours shows of the
// other end of a relationship.
type ObjectRef struct {
	ID     uuid.UUID `json:"id"`
	Type   string    `json:"type"`
	Name   string    `json:"name"`
	Status string    `json:"status"`
}

// Neighbour is a relationship of an object seen from that object: the
// relationship, whether it leaves the object (Outgoing) or arrives at
// it, and the live object at its other end (the object itself for a
// relationship to itself).
type Neighbour struct {
	Relationship Relationship `json:"relationship"`
	Outgoing     bool         `json:"outgoing"`
	Other        ObjectRef    `json:"other"`
}

// Provenance is a chunk an object was extracted from, with its place in
// its document.
type Provenance struct {
	ChunkID    uuid.UUID `json:"chunkId"`
	DocumentID uuid.UUID `json:"documentId"`
	Filename   string    `json:"filename"`
	ChunkIndex int       `json:"chunkIndex"`
	Text       string    `json:"text"`
}

// Counts are a project's live objects and relationships.
type Counts struct {
	Objects       int `json:"objects" db:"objects"`
	Relationships int `json:"relationships" db:"relationships"`
}

// Neighbours pages the relationships of a live object of project in both
// directions, newest first, each with the object at its other end.
// Errors: not_found, invalid_argument.
func (s *Service) Neighbours(ctx context.Context, project, id uuid.UUID, limit, offset int) ([]Neighbour, int, error) {
	if err := checkPage(limit, offset); err != nil {
		return nil, 0, err
	}
	if _, err := objectGet(ctx, s.pool, project, id, false); err != nil {
		return nil, 0, err
	}
	const from = `FROM graph_relationships r
		JOIN graph_objects o ON o.id = CASE WHEN r.source_id = $2 THEN r.target_id ELSE r.source_id END AND o.deleted_at IS NULL
		WHERE r.project_id = $1 AND (r.source_id = $2 OR r.target_id = $2)`
	rows, _ := s.pool.Query(ctx, `SELECT `+postgres.Qualify("r", relationshipColumns)+`,
			o.id AS other_id, o.type AS other_type, o.name AS other_name, o.status AS other_status, count(*) OVER () AS total
		`+from+`
		ORDER BY r.created_at DESC, r.id DESC LIMIT $3 OFFSET $4`, project, id, limit, offset)
	type neighbourRow struct {
		relationshipRow
		OtherID     uuid.UUID `db:"other_id"`
		OtherType   string    `db:"other_type"`
		OtherName   string    `db:"other_name"`
		OtherStatus string    `db:"other_status"`
	}
	out, total, err := postgres.CollectPage(rows, func(r neighbourRow) Neighbour {
		return Neighbour{
			Relationship: r.toRelationship(), Outgoing: r.SourceID == id,
			Other: ObjectRef{ID: r.OtherID, Type: r.OtherType, Name: r.OtherName, Status: r.OtherStatus},
		}
	})
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, s.pool, len(out), offset, total, `SELECT count(*) `+from, project, id)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list neighbours: %w", err)
	}
	return out, total, nil
}

// ObjectProvenance pages the chunks a live object of project was
// extracted from, by document name and place in the document. Errors:
// not_found, invalid_argument.
func (s *Service) ObjectProvenance(ctx context.Context, project, id uuid.UUID, limit, offset int) ([]Provenance, int, error) {
	if err := checkPage(limit, offset); err != nil {
		return nil, 0, err
	}
	if _, err := objectGet(ctx, s.pool, project, id, false); err != nil {
		return nil, 0, err
	}
	const from = `FROM graph_object_provenance p
		JOIN document_chunks c ON c.id = p.chunk_id
		JOIN documents d ON d.id = c.document_id
		WHERE p.project_id = $1 AND p.object_id = $2`
	rows, _ := s.pool.Query(ctx, `SELECT c.id AS chunk_id, c.document_id, d.filename, c.chunk_index, c.text, count(*) OVER () AS total
		`+from+`
		ORDER BY d.filename, d.id, c.chunk_index LIMIT $3 OFFSET $4`, project, id, limit, offset)
	type provenanceRow struct {
		ChunkID    uuid.UUID `db:"chunk_id"`
		DocumentID uuid.UUID `db:"document_id"`
		Filename   string    `db:"filename"`
		ChunkIndex int       `db:"chunk_index"`
		Text       string    `db:"text"`
		postgres.Total
	}
	out, total, err := postgres.CollectPage(rows, func(r provenanceRow) Provenance {
		return Provenance{ChunkID: r.ChunkID, DocumentID: r.DocumentID, Filename: r.Filename, ChunkIndex: r.ChunkIndex, Text: r.Text}
	})
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, s.pool, len(out), offset, total, `SELECT count(*) `+from, project, id)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list object provenance: %w", err)
	}
	return out, total, nil
}

// ObjectTypes lists the types of project's live objects, by name: one
// index probe per type (a skip scan of graph_objects_project_type), so a
// project of many objects and few types answers at once.
func (s *Service) ObjectTypes(ctx context.Context, project uuid.UUID) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `WITH RECURSIVE types AS (
			(SELECT type FROM graph_objects WHERE project_id = $1 AND deleted_at IS NULL ORDER BY type LIMIT 1)
			UNION ALL
			SELECT (SELECT o.type FROM graph_objects o WHERE o.project_id = $1 AND o.deleted_at IS NULL AND o.type > t.type
				ORDER BY o.type LIMIT 1)
			FROM types t WHERE t.type IS NOT NULL)
		SELECT type FROM types WHERE type IS NOT NULL`, project)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list object types: %w", err)
	}
	return out, nil
}

// Count counts the live objects and the relationships of project.
func (s *Service) Count(ctx context.Context, project uuid.UUID) (Counts, error) {
	c, err := postgres.One[Counts](ctx, s.pool, nil, `SELECT
		(SELECT count(*) FROM graph_objects WHERE project_id = $1 AND deleted_at IS NULL) AS objects,
		(SELECT count(*) FROM graph_relationships WHERE project_id = $1) AS relationships`, project)
	if err != nil {
		return Counts{}, fmt.Errorf("count graph: %w", err)
	}
	return c, nil
}
