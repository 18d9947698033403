package superadmin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/postgres"
)

func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

type userRow struct {
	ID             uuid.UUID  `db:"id"`
	Subject        *string    `db:"oidc_subject"`
	FirstName      *string    `db:"first_name"`
	LastName       *string    `db:"last_name"`
	DisplayName    *string    `db:"display_name"`
	PrimaryEmail   *string    `db:"primary_email"`
	LastActivityAt *time.Time `db:"last_activity_at"`
	CreatedAt      time.Time  `db:"created_at"`
	postgres.Total
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func userList(ctx context.Context, db postgres.DBTX, f Filter) ([]User, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT u.id, u.oidc_subject, u.first_name, u.last_name, u.display_name, u.primary_email,
		       u.last_activity_at, u.created_at, count(*) OVER () AS total
		FROM users u
		WHERE u.deleted_at IS NULL
		  AND ($1 = '' OR u.display_name ILIKE $2 OR u.primary_email ILIKE $2 OR u.first_name ILIKE $2 OR u.last_name ILIKE $2)
		  AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM org_members m WHERE m.user_id = u.id AND m.org_id = $3))
		ORDER BY u.created_at, u.id LIMIT $4 OFFSET $5`,
		f.Search, likePattern(f.Search), f.OrgID, f.Limit, f.offset())
	out, total, err := postgres.CollectPage(rows, func(r userRow) User {
		return User{
			ID: r.ID, IdentityProviderUserID: str(r.Subject), FirstName: str(r.FirstName), LastName: str(r.LastName),
			DisplayName: str(r.DisplayName), PrimaryEmail: str(r.PrimaryEmail), LastActivityAt: utc(r.LastActivityAt),
			CreatedAt: r.CreatedAt.UTC(), Organizations: []Membership{},
		}
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list users: %w", err)
	}
	ids := make([]uuid.UUID, len(out))
	for i, u := range out {
		ids[i] = u.ID
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
		m.JoinedAt = m.JoinedAt.UTC()
		out[idx[user]].Organizations = append(out[idx[user]].Organizations, m)
	}
	if err := mrows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list memberships: %w", err)
	}
	return out, total, nil
}

type orgRow struct {
	ID           uuid.UUID  `db:"id"`
	Name         string     `db:"name"`
	MemberCount  int        `db:"member_count"`
	ProjectCount int        `db:"project_count"`
	CreatedAt    time.Time  `db:"created_at"`
	DeletedAt    *time.Time `db:"deleted_at"`
	postgres.Total
}

func orgList(ctx context.Context, db postgres.DBTX, f Filter) ([]Organization, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT o.id, o.name,
		  (SELECT count(*) FROM org_members m JOIN users u ON u.id = m.user_id AND u.deleted_at IS NULL WHERE m.org_id = o.id)::int AS member_count,
		  (SELECT count(*) FROM projects p WHERE p.org_id = o.id AND p.deleted_at IS NULL)::int AS project_count,
		  o.created_at, o.deleted_at, count(*) OVER () AS total
		FROM orgs o
		WHERE ($1 OR o.deleted_at IS NULL) AND ($2 = '' OR o.name ILIKE $3)
		ORDER BY o.created_at, o.id LIMIT $4 OFFSET $5`,
		f.IncludeDeleted, f.Search, likePattern(f.Search), f.Limit, f.offset())
	out, total, err := postgres.CollectPage(rows, func(r orgRow) Organization {
		return Organization{
			ID: r.ID, Name: r.Name, MemberCount: r.MemberCount, ProjectCount: r.ProjectCount,
			CreatedAt: r.CreatedAt.UTC(), DeletedAt: utc(r.DeletedAt),
		}
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list orgs: %w", err)
	}
	return out, total, nil
}

type projectRow struct {
	ID        uuid.UUID  `db:"id"`
	Name      string     `db:"name"`
	OrgID     uuid.UUID  `db:"org_id"`
	OrgName   string     `db:"org_name"`
	CreatedAt time.Time  `db:"created_at"`
	DeletedAt *time.Time `db:"deleted_at"`
	postgres.Total
}

func projectList(ctx context.Context, db postgres.DBTX, f Filter) ([]Project, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT p.id, p.name, p.org_id, o.name AS org_name, p.created_at, p.deleted_at, count(*) OVER () AS total
		FROM projects p JOIN orgs o ON o.id = p.org_id
		WHERE ($1 OR p.deleted_at IS NULL) AND ($2::uuid IS NULL OR p.org_id = $2) AND ($3 = '' OR p.name ILIKE $4)
		ORDER BY p.created_at, p.id LIMIT $5 OFFSET $6`,
		f.IncludeDeleted, f.OrgID, f.Search, likePattern(f.Search), f.Limit, f.offset())
	out, total, err := postgres.CollectPage(rows, func(r projectRow) Project {
		return Project{
			ID: r.ID, Name: r.Name, OrganizationID: r.OrgID, OrganizationName: r.OrgName,
			CreatedAt: r.CreatedAt.UTC(), DeletedAt: utc(r.DeletedAt),
		}
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list projects: %w", err)
	}
	return out, total, nil
}
