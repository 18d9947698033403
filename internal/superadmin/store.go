package superadmin

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/postgres"
)

func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// userFrom is the user list's FROM and WHERE ($1 search, $2 its
// pattern, $3 an organization).
const userFrom = `FROM users u
		WHERE u.deleted_at IS NULL
		  AND ($1 = '' OR u.display_name ILIKE $2 OR u.primary_email ILIKE $2 OR u.first_name ILIKE $2 OR u.last_name ILIKE $2)
		  AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM org_members m WHERE m.user_id = u.id AND m.org_id = $3))`

func userList(ctx context.Context, db postgres.DBTX, f Filter) ([]User, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT u.id, COALESCE(u.oidc_subject, '') AS oidc_subject, COALESCE(u.first_name, '') AS first_name,
		       COALESCE(u.last_name, '') AS last_name, COALESCE(u.display_name, '') AS display_name,
		       COALESCE(u.primary_email, '') AS primary_email, u.last_activity_at, u.created_at, count(*) OVER () AS total
		`+userFrom+`
		ORDER BY u.created_at, u.id LIMIT $4 OFFSET $5`,
		f.Search, likePattern(f.Search), f.OrgID, f.Limit, f.offset())
	out, total, err := postgres.CollectPageOf[User](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list users: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(out), f.offset(), total, `SELECT count(*) `+userFrom, f.Search, likePattern(f.Search), f.OrgID); err != nil {
		return nil, 0, fmt.Errorf("count users: %w", err)
	}
	ids := make([]uuid.UUID, len(out))
	for i := range out {
		ids[i] = out[i].ID
		out[i].Organizations = []Membership{}
	}
	if len(ids) == 0 {
		return out, total, nil
	}
	mrows, err := db.Query(ctx, `
		SELECT m.user_id, m.org_id, o.name, m.role, m.created_at
		FROM org_members m JOIN orgs o ON o.id = m.org_id AND o.deleted_at IS NULL
		WHERE m.user_id = ANY($1) ORDER BY m.created_at, o.name`, ids)
	if err != nil {
		return nil, 0, fmt.Errorf("list memberships: %w", err)
	}
	defer mrows.Close()
	idx := make(map[uuid.UUID]int, len(out))
	for i, u := range out {
		idx[u.ID] = i
	}
	for mrows.Next() {
		var user uuid.UUID
		var m Membership
		if err := mrows.Scan(&user, &m.OrgID, &m.OrgName, &m.Role, &m.JoinedAt); err != nil {
			return nil, 0, fmt.Errorf("list memberships: %w", err)
		}
		out[idx[user]].Organizations = append(out[idx[user]].Organizations, m)
	}
	if err := mrows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list memberships: %w", err)
	}
	return out, total, nil
}

// orgFrom is the organization list's FROM and WHERE ($1 deleted ones
// too, $2 search, $3 its pattern).
const orgFrom = `FROM orgs o
		WHERE ($1 OR o.deleted_at IS NULL) AND ($2 = '' OR o.name ILIKE $3)`

func orgList(ctx context.Context, db postgres.DBTX, f Filter) ([]Organization, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT o.id, o.name,
		  (SELECT count(*) FROM org_members m JOIN users u ON u.id = m.user_id AND u.deleted_at IS NULL WHERE m.org_id = o.id)::int AS member_count,
		  (SELECT count(*) FROM projects p WHERE p.org_id = o.id AND p.deleted_at IS NULL)::int AS project_count,
		  o.created_at, o.deleted_at, count(*) OVER () AS total
		`+orgFrom+`
		ORDER BY o.created_at, o.id LIMIT $4 OFFSET $5`,
		f.IncludeDeleted, f.Search, likePattern(f.Search), f.Limit, f.offset())
	out, total, err := postgres.CollectPageOf[Organization](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list orgs: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(out), f.offset(), total, `SELECT count(*) `+orgFrom, f.IncludeDeleted, f.Search, likePattern(f.Search)); err != nil {
		return nil, 0, fmt.Errorf("count orgs: %w", err)
	}
	return out, total, nil
}

// projectFrom is the project list's FROM and WHERE ($1 deleted ones too,
// $2 an organization, $3 search, $4 its pattern).
const projectFrom = `FROM projects p JOIN orgs o ON o.id = p.org_id
		WHERE ($1 OR p.deleted_at IS NULL) AND ($2::uuid IS NULL OR p.org_id = $2) AND ($3 = '' OR p.name ILIKE $4)`

func projectList(ctx context.Context, db postgres.DBTX, f Filter) ([]Project, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT p.id, p.name, p.org_id, o.name AS org_name, p.created_at, p.deleted_at, count(*) OVER () AS total
		`+projectFrom+`
		ORDER BY p.created_at, p.id LIMIT $5 OFFSET $6`,
		f.IncludeDeleted, f.OrgID, f.Search, likePattern(f.Search), f.Limit, f.offset())
	out, total, err := postgres.CollectPageOf[Project](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list projects: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(out), f.offset(), total, `SELECT count(*) `+projectFrom,
		f.IncludeDeleted, f.OrgID, f.Search, likePattern(f.Search)); err != nil {
		return nil, 0, fmt.Errorf("count projects: %w", err)
	}
	return out, total, nil
}
