package embeddingpolicy

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/postgres"
)

// policyColumns are Policy's (a NULL description is empty, NULL lists
// empty).
const policyColumns = `id, project_id, name, COALESCE(description, '') AS description, COALESCE(object_types, '{}') AS object_types,
	COALESCE(fields, '{}') AS fields, template, model, active, chunking_config, created_at, updated_at`

// args are p's column values in policyColumns order, except that
// updated_at comes before created_at (so an update uses the first 11).
func args(p Policy) []any {
	var desc *string
	if p.Description != "" {
		desc = &p.Description
	}
	var cc []byte
	if len(p.ChunkingConfig) > 0 {
		cc = p.ChunkingConfig
	}
	return []any{p.ID, p.ProjectID, p.Name, desc, p.ObjectTypes, p.Fields, p.Template, p.Model, p.Active, cc, p.UpdatedAt, p.CreatedAt}
}

// policyOne runs query, which returns one policy row (what names the
// statement in errors).
func policyOne(ctx context.Context, db postgres.DBTX, what, query string, args ...any) (Policy, error) {
	p, err := postgres.One[Policy](ctx, db, ErrNotFound, query, args...)
	switch {
	case postgres.IsUniqueViolation(err, "embedding_policies_name"):
		return Policy{}, ErrNameTaken
	case err != nil:
		return Policy{}, fmt.Errorf("%s embedding policy: %w", what, err)
	}
	return p, nil
}

// policyInsert inserts p.
func policyInsert(ctx context.Context, db postgres.DBTX, p Policy) (Policy, error) {
	return policyOne(ctx, db, "insert", `INSERT INTO embedding_policies (id, project_id, name, description, object_types, fields, template, model, active,
			chunking_config, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12, $11) RETURNING `+policyColumns, args(p)...)
}

// policyGet reads a policy of project, locking it when lock is set.
func policyGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID, lock bool) (Policy, error) {
	q := `SELECT ` + policyColumns + ` FROM embedding_policies WHERE project_id = $1 AND id = $2`
	if lock {
		q += ` FOR UPDATE`
	}
	return policyOne(ctx, db, "get", q, project, id)
}

// policiesList lists project's policies, oldest first.
func policiesList(ctx context.Context, db postgres.DBTX, project uuid.UUID) ([]Policy, error) {
	rows, _ := db.Query(ctx, `SELECT `+policyColumns+` FROM embedding_policies WHERE project_id = $1 ORDER BY created_at, id`, project)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Policy])
	if err != nil {
		return nil, fmt.Errorf("list embedding policies: %w", err)
	}
	return list, nil
}

// policyUpdate writes every column of p but the id, project and creation
// time.
func policyUpdate(ctx context.Context, db postgres.DBTX, p Policy) (Policy, error) {
	return policyOne(ctx, db, "update", `UPDATE embedding_policies SET name = $3, description = $4, object_types = $5, fields = $6,
			template = $7, model = $8, active = $9, chunking_config = $10, updated_at = $11
		WHERE id = $1 AND project_id = $2 RETURNING `+policyColumns, args(p)[:11]...)
}

// policyDelete deletes a policy of project and returns it.
func policyDelete(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (Policy, error) {
	return policyOne(ctx, db, "delete", `DELETE FROM embedding_policies WHERE project_id = $1 AND id = $2 RETURNING `+policyColumns, project, id)
}

// policiesActive returns the active policies of projects.
func policiesActive(ctx context.Context, db postgres.DBTX, projects []uuid.UUID) ([]embedding.Policy, error) {
	rows, _ := db.Query(ctx, `SELECT `+policyColumns+` FROM embedding_policies WHERE project_id = ANY($1) AND active ORDER BY created_at, id`, projects)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Policy])
	if err != nil {
		return nil, fmt.Errorf("list active embedding policies: %w", err)
	}
	out := make([]embedding.Policy, len(list))
	for i, r := range list {
		out[i] = embedding.Policy{
			ID: r.ID, ProjectID: r.ProjectID, ObjectTypes: r.ObjectTypes, Fields: r.Fields, Template: r.Template, Model: r.Model,
		}
	}
	return out, nil
}

// policyProject returns the project of policy id.
func policyProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrNotFound, `SELECT project_id FROM embedding_policies WHERE id = $1`, id)
}
