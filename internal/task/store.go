package task

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

// taskColumns are Task's (a NULL text is empty).
const taskColumns = `id, project_id, title, COALESCE(description, '') AS description, type, status, resolved_at, resolved_by,
	COALESCE(resolution_notes, '') AS resolution_notes, COALESCE(source_type, '') AS source_type,
	COALESCE(source_id, '') AS source_id, metadata, created_at, updated_at`

// taskInsert inserts a pending task and returns it as stored.
func taskInsert(ctx context.Context, db postgres.DBTX, t Task) (Task, error) {
	var meta []byte
	if len(t.Metadata) > 0 {
		meta = t.Metadata
	}
	rows, _ := db.Query(ctx, `INSERT INTO tasks (id, project_id, title, description, type, status, source_type, source_id, metadata, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9, $9) RETURNING `+taskColumns,
		t.ID, t.ProjectID, t.Title, postgres.NullIfEmpty(t.Description), t.Type, postgres.NullIfEmpty(t.SourceType), postgres.NullIfEmpty(t.SourceID), meta, t.CreatedAt)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Task])
	if err != nil {
		return Task{}, fmt.Errorf("insert task: %w", err)
	}
	return r, nil
}

// taskGet returns a task of project.
func taskGet(ctx context.Context, db postgres.DBTX, project uuid.UUID, id uuid.UUID) (Task, error) {
	r, err := postgres.One[Task](ctx, db, ErrNotFound, `SELECT `+taskColumns+` FROM tasks WHERE project_id = $1 AND id = $2`, project, id)
	if err != nil {
		return Task{}, fmt.Errorf("get task: %w", err)
	}
	return r, nil
}

// taskList pages the tasks of projects matching f, newest first.
func taskList(ctx context.Context, db postgres.DBTX, projects []uuid.UUID, f Filter) ([]Task, int, error) {
	const cond = `project_id = ANY($1) AND ($2 = '' OR status = $2) AND ($3 = '' OR type = $3)`
	rows, _ := db.Query(ctx, `SELECT `+taskColumns+`, count(*) OVER () AS total FROM tasks WHERE `+cond+`
		ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5`, projects, f.Status, f.Type, f.Limit, f.Offset)
	out, total, err := postgres.CollectPageOf[Task](rows)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(out), f.Offset, total, `SELECT count(*) FROM tasks WHERE `+cond, projects, f.Status, f.Type)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list tasks: %w", err)
	}
	return out, total, nil
}

// taskCounts counts the tasks of projects per status.
func taskCounts(ctx context.Context, db postgres.DBTX, projects []uuid.UUID) (Counts, error) {
	var c Counts
	err := db.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE status = 'pending'),
		count(*) FILTER (WHERE status = 'accepted'),
		count(*) FILTER (WHERE status = 'rejected'),
		count(*) FILTER (WHERE status = 'cancelled')
		FROM tasks WHERE project_id = ANY($1)`, projects).Scan(&c.Pending, &c.Accepted, &c.Rejected, &c.Cancelled)
	if err != nil {
		return Counts{}, fmt.Errorf("count tasks: %w", err)
	}
	return c, nil
}

// taskFinish moves a pending task of project to status (accepted, rejected
// or cancelled). It reports false when the task is not pending (or does
// not exist); the row lock it takes makes concurrent transitions
// serialise, and only the first finds the task pending.
func taskFinish(ctx context.Context, db postgres.DBTX, project, id uuid.UUID, status string, by *uuid.UUID, notes string, now time.Time) (Task, bool, error) {
	var resolvedAt *time.Time
	if status != StatusCancelled {
		resolvedAt = &now
	}
	t, err := postgres.One[Task](ctx, db, nil, `UPDATE tasks SET status = $3, resolved_at = $4, resolved_by = $5, resolution_notes = $6, updated_at = $7
		WHERE project_id = $1 AND id = $2 AND status = 'pending'
		RETURNING `+taskColumns, project, id, status, resolvedAt, by, postgres.NullIfEmpty(notes), now)
	if err != nil {
		return Task{}, false, fmt.Errorf("update task: %w", err)
	}
	return t, t.ID != uuid.Nil, nil
}

func taskProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrNotFound, `SELECT project_id FROM tasks WHERE id = $1`, id)
}
