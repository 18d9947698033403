package embedding

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// The kinds of embedding job the superadmin list shows: graph object
// embeddings (this package's queue) and chunk embeddings (the document
// pipeline's).
const (
	JobTypeGraph = "graph"
	JobTypeChunk = "chunk"
)

// ErrBadType answers an embedding job type that is neither kind.
var ErrBadType = errs.New(errs.Invalid, "type must be graph or chunk")

// CheckType validates an embedding job type ("" for both kinds). Errors:
// invalid_argument.
func CheckType(kind string) error {
	if kind != "" && kind != JobTypeGraph && kind != JobTypeChunk {
		return ErrBadType
	}
	return nil
}

// AdminEmbeddingJob is a graph or chunk embedding job as the superadmin list shows
// it: with its object, or its chunk and document.
type AdminEmbeddingJob struct {
	jobqueue.Record
	Type       string     `json:"type" enum:"graph,chunk" db:"type"`
	ObjectID   *uuid.UUID `json:"objectId,omitempty" db:"object_id"`
	ObjectType *string    `json:"objectType,omitempty" db:"object_type"`
	ObjectName *string    `json:"objectName,omitempty" db:"object_name"`
	ChunkID    *uuid.UUID `json:"chunkId,omitempty" db:"chunk_id"`
	DocumentID *uuid.UUID `json:"documentId,omitempty" db:"document_id"`
	FileName   *string    `json:"fileName,omitempty" db:"filename"`
}

// embeddingJobs is the graph and chunk embedding jobs as one relation
// (type, then cols, then, with ids, chunk_id and object_id) under the
// list's filter (project $1, hasError $2, kind $3) and the extra condition
// cond; each branch ends with tail (its own grouping, order or limit).
func embeddingJobs(cols string, ids bool, cond, tail string) string {
	branch := func(kind, table, idCols string) string {
		selected := cols
		if ids {
			selected += ", " + idCols
		}
		return `SELECT '` + kind + `'::text AS type, ` + selected + ` FROM ` + table + ` j
			WHERE $3 IN ('', '` + kind + `') AND ` + jobqueue.ListWhere + cond + tail
	}
	return `(` + branch(JobTypeChunk, "chunk_embedding_jobs", "j.chunk_id, NULL::uuid AS object_id") + `)
		UNION ALL (` + branch(JobTypeGraph, "graph_embedding_jobs", "NULL::uuid AS chunk_id, j.object_id") + `)`
}

// AdminJobs lists every project's graph and chunk embedding jobs (of kind
// when not empty) as one list, newest first, and counts them per status
// over the same filters except status. Errors: invalid_argument (unknown
// status or kind).
func (s *Service) AdminJobs(ctx context.Context, f jobqueue.ListFilter, kind string) ([]AdminEmbeddingJob, []jobqueue.StatusCount, error) {
	if err := f.Check(); err != nil {
		return nil, nil, err
	}
	if err := CheckType(kind); err != nil {
		return nil, nil, err
	}
	rows, _ := s.pool.Query(ctx, adminListSQL(""),
		f.ProjectID, f.HasError, kind, f.Status, f.Limit, f.Offset)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AdminEmbeddingJob])
	if err != nil {
		return nil, nil, fmt.Errorf("list embedding jobs: %w", err)
	}
	counts, err := jobqueue.CountByStatus(ctx, s.pool, adminStatsSQL(), f.ProjectID, f.HasError, kind)
	if err != nil {
		return nil, nil, fmt.Errorf("count embedding jobs: %w", err)
	}
	return list, counts, nil
}

// ErrJobNotFound answers an embedding job not in the project.
var ErrJobNotFound = errs.New(errs.NotFound, "embedding job not found")

// ProjectJob is the project's embedding job id of kind (JobTypeGraph or
// JobTypeChunk), as the superadmin list shows it (the console's project
// job page). Errors: not_found (another project's job too),
// invalid_argument (kind).
func (s *Service) ProjectJob(ctx context.Context, project, id uuid.UUID, kind string) (AdminEmbeddingJob, error) {
	if kind != JobTypeGraph && kind != JobTypeChunk {
		return AdminEmbeddingJob{}, ErrBadType
	}
	return postgres.One[AdminEmbeddingJob](ctx, s.pool, ErrJobNotFound, adminListSQL(` AND j.id = $7`), project, nil, kind, "", 1, 0, id)
}

// DeleteJobs deletes, in one statement in tx, the finished graph
// embedding jobs among ids (any project). It returns how many it deleted
// and how many it skipped because they are queued or running.
func (s *Service) DeleteJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) (deleted, skipped int, err error) {
	return s.jobs.DeleteWhere(ctx, tx, Queue, jobqueue.Where{IDs: ids})
}

// DeleteOrphanJobs deletes, in one statement in tx, the graph embedding jobs
// whose object is soft-deleted and returns how many: the finished ones (a
// queued job of a deleted object still has to drop the object's vectors),
// and every job but a running one when the whole project is soft-deleted.
// A hard-deleted object takes its jobs with it (foreign key).
func (s *Service) DeleteOrphanJobs(ctx context.Context, tx pgx.Tx) (int, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM graph_embedding_jobs j USING graph_objects g, projects p
		WHERE g.id = j.object_id AND p.id = j.project_id AND j.status <> 'running'
		  AND ((g.deleted_at IS NOT NULL AND j.status <> 'queued') OR p.deleted_at IS NOT NULL)`)
	if err != nil {
		return 0, fmt.Errorf("delete orphan graph embedding jobs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// adminListSQL is the page of the superadmin list: $1 project, $2
// hasError, $3 kind, $4 status, $5 limit, $6 offset, and cond, a further
// condition on the jobs (j). The page lies within
// the first offset+limit jobs of each table, which each branch takes by its
// (created_at, id) index; the page is cut from their union before
// anything is joined to it.
func adminListSQL(cond string) string {
	return `
		SELECT ` + jobqueue.RecordColumns + `, j.type, j.object_id, g.type AS object_type, g.name AS object_name,
		       j.chunk_id, c.document_id, d.filename
		FROM (` + embeddingJobs(`j.id, j.project_id, j.status, j.attempt, j.retry_count, j.max_retries, j.error_msg,
			j.priority, j.created_at, j.started_at, j.completed_at`, true, ` AND ($4 = '' OR j.status = $4)`+cond,
		` ORDER BY j.created_at DESC, j.id DESC LIMIT $5::bigint + $6::bigint`) + `
			ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6) j
		JOIN projects p ON p.id = j.project_id JOIN orgs o ON o.id = p.org_id
		LEFT JOIN graph_objects g ON g.id = j.object_id
		LEFT JOIN document_chunks c ON c.id = j.chunk_id LEFT JOIN documents d ON d.id = c.document_id
		ORDER BY j.created_at DESC, j.id DESC`
}

// adminStatsSQL counts the superadmin list per status: $1 project, $2
// hasError, $3 kind.
func adminStatsSQL() string {
	return `SELECT status, sum(n)::int, sum(e)::int
		FROM (` + embeddingJobs(`count(*) AS n, count(j.error_msg) AS e, j.status`, false, "", " GROUP BY j.status") + `) j GROUP BY status`
}
