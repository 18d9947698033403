package tenancy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/postgres"
)

// memberColumns are Member's, of project_members m joined with users u.
const memberColumns = `m.user_id, m.role, COALESCE(u.display_name, '') AS display_name,
	COALESCE(u.primary_email, '') AS primary_email, m.created_at`

// tokenColumns are Token's (the secret aside).
const tokenColumns = `id, name, prefix, scopes, project_id, expires_at, created_at` //nolint:gosec // column names, not a credential

// notifyInvalidate announces, on commit, that identity data changed, and
// what the change concerns.
func notifyInvalidate(ctx context.Context, db postgres.DBTX, c auth.Change) error {
	if _, err := db.Exec(ctx, `SELECT pg_notify($1, $2)`, auth.InvalidateChannel, c.Payload()); err != nil {
		return fmt.Errorf("notify invalidation: %w", err)
	}
	return nil
}

func orgInsert(ctx context.Context, db postgres.DBTX, id uuid.UUID, name string, now time.Time) error {
	return insertNamed(ctx, db, "org", "orgs_name_key", ErrOrgExists,
		`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, $3, $3)`, id, name, now)
}

// insertNamed runs the INSERT q of a named row (what, in errors); the
// violation of its unique name constraint is exists.
func insertNamed(ctx context.Context, db postgres.DBTX, what, constraint string, exists error, q string, args ...any) error {
	_, err := db.Exec(ctx, q, args...)
	if postgres.IsUniqueViolation(err, constraint) {
		return exists
	}
	if err != nil {
		return fmt.Errorf("insert %s: %w", what, err)
	}
	return nil
}

func orgGet(ctx context.Context, db postgres.DBTX, id uuid.UUID) (Org, error) {
	o, err := postgres.One[Org](ctx, db, ErrOrgNotFound, `SELECT id, name, '' AS role, created_at, updated_at
		FROM orgs WHERE id = $1 AND deleted_at IS NULL`, id)
	if err != nil {
		return Org{}, fmt.Errorf("get org: %w", err)
	}
	return o, nil
}

// orgsOfUser is orgListForUser's FROM and WHERE ($1 the user, $2 every
// organization).
const orgsOfUser = `FROM orgs o LEFT JOIN org_members m ON m.org_id = o.id AND m.user_id = $1
		WHERE o.deleted_at IS NULL AND ($2 OR m.user_id IS NOT NULL)`

// orgListForUser lists the live organizations user belongs to (all of them
// when all is set), with the user's role.
func orgListForUser(ctx context.Context, db postgres.DBTX, user uuid.UUID, all bool, p Page) ([]Org, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT o.id, o.name, COALESCE(m.role, '') AS role, o.created_at, o.updated_at, count(*) OVER () AS total
		`+orgsOfUser+`
		ORDER BY o.created_at, o.id LIMIT $3 OFFSET $4`, user, all, p.Limit, p.Offset)
	out, total, err := postgres.CollectPageOf[Org](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list orgs: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(out), p.Offset, total, `SELECT count(*) `+orgsOfUser, user, all); err != nil {
		return nil, 0, fmt.Errorf("count orgs: %w", err)
	}
	return out, total, nil
}

func orgMemberUpsert(ctx context.Context, db postgres.DBTX, org, user uuid.UUID, role auth.OrgRole, now time.Time, overwrite bool) error {
	q := `INSERT INTO org_members (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (org_id, user_id) DO NOTHING`
	if overwrite {
		q = `INSERT INTO org_members (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role`
	}
	if _, err := db.Exec(ctx, q, org, user, string(role), now); err != nil {
		return fmt.Errorf("upsert org member: %w", err)
	}
	return nil
}

func projectInsert(ctx context.Context, db postgres.DBTX, id, org uuid.UUID, name string, now time.Time) error {
	return insertNamed(ctx, db, "project", "projects_org_name_key", ErrProjectExists,
		`INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)`, id, org, name, now)
}

func projectGet(ctx context.Context, db postgres.DBTX, id uuid.UUID) (Project, error) {
	pr, err := postgres.One[Project](ctx, db, ErrProjectNotFound, `SELECT p.id, p.org_id, p.name, p.created_at, p.updated_at
		FROM projects p JOIN orgs o ON o.id = p.org_id AND o.deleted_at IS NULL
		WHERE p.id = $1 AND p.deleted_at IS NULL`, id)
	if err != nil {
		return Project{}, fmt.Errorf("get project: %w", err)
	}
	return pr, nil
}

// projectFilter selects the projects a caller sees.
type projectFilter struct {
	User  uuid.UUID
	All   bool       // superadmin
	Only  *uuid.UUID // project-scoped token
	OrgID *uuid.UUID
}

// liveProjectsSeenBy is the FROM and WHERE of the live projects (alias
// p, of a live organization) the user the SQL expression user names sees:
// every one when the SQL condition all holds (a superadmin), else those
// they are a member of and those of the organizations they own or
// administer (auth.Principal.Sees). The one definition of "visible",
// for tenancy's lists and for SeesProject.
func liveProjectsSeenBy(p, user, all string) string {
	return `FROM projects ` + p + ` JOIN orgs ` + p + `_o ON ` + p + `_o.id = ` + p + `.org_id AND ` + p + `_o.deleted_at IS NULL
	WHERE ` + p + `.deleted_at IS NULL
	  AND (` + all + ` OR EXISTS (SELECT 1 FROM project_members ` + p + `_pm WHERE ` + p + `_pm.project_id = ` + p + `.id AND ` + p + `_pm.user_id = ` + user + `)
	          OR EXISTS (SELECT 1 FROM org_members ` + p + `_om WHERE ` + p + `_om.org_id = ` + p + `.org_id AND ` + p + `_om.user_id = ` + user + `
	                     AND ` + p + `_om.role IN ('owner', 'admin')))`
}

// SeesProject is an SQL condition: the user the SQL expression user
// names can see the project the SQL expression project names now (a live
// project of a live organization that they are a member of, or whose
// organization they own or administer, or that they see as a
// superadmin). Lists of a user's own records across projects
// (notifications, recent activity) filter with it in their one
// statement: a project the user left, or a deleted one, hides its
// records, and they show again when access is back. Its own aliases
// start with seen_; qualify the expressions given (table.column).
func SeesProject(user, project string) string {
	return `EXISTS (SELECT 1 ` + liveProjectsSeenBy("seen_p", user, `EXISTS (SELECT 1 FROM superadmins seen_s WHERE seen_s.user_id = `+user+`)`) +
		` AND seen_p.id = ` + project + `)`
}

// projectsVisible is the FROM and WHERE of the live projects a
// projectFilter ($1 User, $2 All, $3 Only, $4 OrgID) selects: the caller's
// projects and those of the organizations they administer.
func projectsVisible() string {
	return liveProjectsSeenBy("p", "$1", "$2") + `
	  AND ($3::uuid IS NULL OR p.id = $3)
	  AND ($4::uuid IS NULL OR p.org_id = $4)`
}

func projectList(ctx context.Context, db postgres.DBTX, f projectFilter, p Page) ([]Project, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT p.id, p.org_id, p.name, p.created_at, p.updated_at, count(*) OVER () AS total
		`+projectsVisible()+`
		ORDER BY p.created_at, p.id LIMIT $5 OFFSET $6`, f.User, f.All, f.Only, f.OrgID, p.Limit, p.Offset)
	out, total, err := postgres.CollectPageOf[Project](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list projects: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(out), p.Offset, total, `SELECT count(*) `+projectsVisible(), f.User, f.All, f.Only, f.OrgID); err != nil {
		return nil, 0, fmt.Errorf("count projects: %w", err)
	}
	return out, total, nil
}

// projectIDsVisible lists the ids of every live project f selects.
func projectIDsVisible(ctx context.Context, db postgres.DBTX, f projectFilter) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `
		SELECT p.id `+projectsVisible()+` ORDER BY p.id`, f.User, f.All, f.Only, f.OrgID)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("list visible projects: %w", err)
	}
	return ids, nil
}

// projectAdminIDs lists the live users who administer a live project: its
// admins and the owners and admins of its organization (superadmins only
// when they hold one of those roles).
func projectAdminIDs(ctx context.Context, db postgres.DBTX, project uuid.UUID) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `
		SELECT u.id FROM users u
		WHERE u.deleted_at IS NULL AND u.id IN (
		    SELECT pm.user_id FROM project_members pm WHERE pm.project_id = $1 AND pm.role = 'admin'
		    UNION
		    SELECT om.user_id FROM org_members om JOIN projects p ON p.org_id = om.org_id
		    WHERE p.id = $1 AND p.deleted_at IS NULL AND om.role IN ('owner', 'admin'))
		ORDER BY u.id`, project)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("list project admins: %w", err)
	}
	return ids, nil
}

func projectSoftDelete(ctx context.Context, db postgres.DBTX, id uuid.UUID, now time.Time) (bool, error) {
	return postgres.ExecOne(ctx, db, "delete project", `UPDATE projects SET deleted_at = $2, updated_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, now)
}

func orgSoftDelete(ctx context.Context, db postgres.DBTX, id uuid.UUID, now time.Time) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE orgs SET deleted_at = $2, updated_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, now)
	if err != nil {
		return false, fmt.Errorf("delete org: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	if _, err := db.Exec(ctx, `UPDATE projects SET deleted_at = $2, updated_at = $2 WHERE org_id = $1 AND deleted_at IS NULL`, id, now); err != nil {
		return false, fmt.Errorf("delete org projects: %w", err)
	}
	return true, nil
}

func projectMemberUpsert(ctx context.Context, db postgres.DBTX, project, user uuid.UUID, role auth.ProjectRole, now time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO project_members (project_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (project_id, user_id) DO UPDATE SET role = EXCLUDED.role`, project, user, string(role), now)
	if err != nil {
		return fmt.Errorf("upsert project member: %w", err)
	}
	return nil
}

// membersOf is projectMemberList's FROM and WHERE ($1 the project).
const membersOf = `FROM project_members m JOIN users u ON u.id = m.user_id AND u.deleted_at IS NULL
		WHERE m.project_id = $1`

func projectMemberList(ctx context.Context, db postgres.DBTX, project uuid.UUID, p Page) ([]Member, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT `+memberColumns+`, count(*) OVER () AS total `+membersOf+`
		ORDER BY m.created_at, m.user_id LIMIT $2 OFFSET $3`, project, p.Limit, p.Offset)
	out, total, err := postgres.CollectPageOf[Member](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list members: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(out), p.Offset, total, `SELECT count(*) `+membersOf, project); err != nil {
		return nil, 0, fmt.Errorf("count members: %w", err)
	}
	return out, total, nil
}

func projectMemberGet(ctx context.Context, db postgres.DBTX, project, user uuid.UUID) (Member, error) {
	m, err := postgres.One[Member](ctx, db, ErrMemberNotFound, `
		SELECT `+memberColumns+` FROM project_members m JOIN users u ON u.id = m.user_id
		WHERE m.project_id = $1 AND m.user_id = $2`, project, user)
	if err != nil {
		return Member{}, fmt.Errorf("get member: %w", err)
	}
	return m, nil
}

func projectMemberDelete(ctx context.Context, db postgres.DBTX, project, user uuid.UUID) (bool, error) {
	return postgres.ExecOne(ctx, db, "delete member", `DELETE FROM project_members WHERE project_id = $1 AND user_id = $2`, project, user)
}

func userInsert(ctx context.Context, db postgres.DBTX, id uuid.UUID, displayName, email string, now time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO users (id, display_name, primary_email, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)`,
		id, postgres.NullIfEmpty(displayName), postgres.NullIfEmpty(email), now)
	if postgres.IsUniqueViolation(err, "users_email_key") {
		return ErrEmailTaken
	}
	if err != nil {
		return fmt.Errorf("insert user: %w", err)
	}
	return nil
}

func userLive(ctx context.Context, db postgres.DBTX, id uuid.UUID) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE id = $1 AND deleted_at IS NULL)`, id).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up user: %w", err)
	}
	return ok, nil
}

// userContact returns a live user's display name and email address;
// both are empty for an unknown or deleted user or one without them.
func userContact(ctx context.Context, db postgres.DBTX, id uuid.UUID) (name, address string, err error) {
	err = db.QueryRow(ctx, `SELECT COALESCE(display_name, ''), COALESCE(primary_email, '') FROM users
		WHERE id = $1 AND deleted_at IS NULL`, id).Scan(&name, &address)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("look up user's address: %w", err)
	}
	return name, address, nil
}

// userResolve finds a live user by id, email or display name (which must
// then be unique).
func userResolve(ctx context.Context, db postgres.DBTX, ref string) (uuid.UUID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		ok, err := userLive(ctx, db, id)
		if err != nil {
			return uuid.Nil, err
		}
		if !ok {
			return uuid.Nil, ErrUserNotFound
		}
		return id, nil
	}
	rows, _ := db.Query(ctx, `SELECT id FROM users WHERE deleted_at IS NULL AND lower(primary_email) = lower($1)
		UNION ALL SELECT id FROM users WHERE deleted_at IS NULL AND primary_email IS DISTINCT FROM $1 AND display_name = $1 LIMIT 2`, ref)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return uuid.Nil, fmt.Errorf("resolve user: %w", err)
	}
	switch len(ids) {
	case 0:
		return uuid.Nil, ErrUserNotFound
	case 1:
		return ids[0], nil
	}
	return uuid.Nil, fmt.Errorf("user %q is ambiguous: give the user id", ref)
}

func userSoftDelete(ctx context.Context, db postgres.DBTX, id uuid.UUID, now time.Time) (bool, error) {
	return postgres.ExecOne(ctx, db, "delete user", `UPDATE users SET deleted_at = $2, updated_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, now)
}

func superadminGrant(ctx context.Context, db postgres.DBTX, user uuid.UUID, now time.Time) error {
	if _, err := db.Exec(ctx, `INSERT INTO superadmins (user_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, user, now); err != nil {
		return fmt.Errorf("grant superadmin: %w", err)
	}
	return nil
}

func tokenInsert(ctx context.Context, db postgres.DBTX, id uuid.UUID, p CreateTokenParams, secret string, now time.Time) error {
	hash := auth.HashToken(secret)
	_, err := db.Exec(ctx, `INSERT INTO api_tokens (id, user_id, project_id, name, prefix, token_hash, scopes, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		id, p.UserID, p.ProjectID, p.Name, auth.DisplayPrefix(secret), hash[:], p.Scopes, p.ExpiresAt, now)
	if err != nil {
		return fmt.Errorf("insert token: %w", err)
	}
	return nil
}

func tokenExists(ctx context.Context, db postgres.DBTX, secret string) (bool, error) {
	hash := auth.HashToken(secret)
	var ok bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_tokens WHERE token_hash = $1)`, hash[:]).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up token: %w", err)
	}
	return ok, nil
}

func tokenGet(ctx context.Context, db postgres.DBTX, id uuid.UUID) (Token, error) {
	t, err := postgres.One[Token](ctx, db, ErrTokenNotFound, `SELECT `+tokenColumns+` FROM api_tokens WHERE id = $1`, id)
	if err != nil {
		return Token{}, fmt.Errorf("get token: %w", err)
	}
	return t, nil
}

// tokenFilter selects live (unrevoked) tokens: of a user, of a project, or
// both.
type tokenFilter struct {
	UserID    *uuid.UUID
	ProjectID *uuid.UUID
}

// unrevokedOf is tokenList's FROM and WHERE ($1 a user, $2 a project).
const unrevokedOf = `FROM api_tokens WHERE revoked_at IS NULL
		  AND ($1::uuid IS NULL OR user_id = $1) AND ($2::uuid IS NULL OR project_id = $2)`

func tokenList(ctx context.Context, db postgres.DBTX, f tokenFilter, p Page) ([]Token, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT `+tokenColumns+`, count(*) OVER () AS total `+unrevokedOf+`
		ORDER BY created_at, id LIMIT $3 OFFSET $4`, f.UserID, f.ProjectID, p.Limit, p.Offset)
	out, total, err := postgres.CollectPageOf[Token](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list tokens: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(out), p.Offset, total, `SELECT count(*) `+unrevokedOf, f.UserID, f.ProjectID); err != nil {
		return nil, 0, fmt.Errorf("count tokens: %w", err)
	}
	return out, total, nil
}

// tokenRevoke revokes token id if it matches the filter, and returns its
// user.
func tokenRevoke(ctx context.Context, db postgres.DBTX, id uuid.UUID, f tokenFilter, now time.Time) (uuid.UUID, bool, error) {
	user, err := postgres.One[uuid.UUID](ctx, db, nil, `UPDATE api_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL
		AND ($3::uuid IS NULL OR user_id = $3) AND ($4::uuid IS NULL OR project_id = $4)
		RETURNING user_id`, id, now, f.UserID, f.ProjectID)
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("revoke token: %w", err)
	}
	return user, user != uuid.Nil, nil
}

func usersExist(ctx context.Context, db postgres.DBTX) (bool, error) {
	var ok bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users)`).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up users: %w", err)
	}
	return ok, nil
}

// tokenUser returns the user of token id, revoked or not.
func tokenUser(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrTokenNotFound, `SELECT user_id FROM api_tokens WHERE id = $1`, id)
}

// extractionSettingsColumns reads ExtractionSettings.
const extractionSettingsColumns = `review_threshold::float8, reextraction_interval_hours`

func projectExtractionSettings(ctx context.Context, db postgres.DBTX, project uuid.UUID) (ExtractionSettings, error) {
	st, err := postgres.One[ExtractionSettings](ctx, db, ErrProjectNotFound, `SELECT `+extractionSettingsColumns+` FROM projects WHERE id = $1`, project)
	if err != nil {
		return ExtractionSettings{}, fmt.Errorf("load extraction settings: %w", err)
	}
	return st, nil
}

// projectSetExtractionSettings changes the settings that are not nil.
func projectSetExtractionSettings(ctx context.Context, db postgres.DBTX, project uuid.UUID, threshold *float64, interval *int) (ExtractionSettings, error) {
	st, err := postgres.One[ExtractionSettings](ctx, db, ErrProjectNotFound, `UPDATE projects SET review_threshold = coalesce($2::real, review_threshold),
		reextraction_interval_hours = coalesce($3::int, reextraction_interval_hours) WHERE id = $1
		RETURNING `+extractionSettingsColumns, project, threshold, interval)
	if err != nil {
		return ExtractionSettings{}, fmt.Errorf("save extraction settings: %w", err)
	}
	return st, nil
}

// projectReextractionIntervals lists the live projects with a
// re-extraction interval.
func projectReextractionIntervals(ctx context.Context, db postgres.DBTX) ([]ReextractionInterval, error) {
	rows, _ := db.Query(ctx, `SELECT id, reextraction_interval_hours FROM projects WHERE deleted_at IS NULL AND reextraction_interval_hours > 0`)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ReextractionInterval])
	if err != nil {
		return nil, fmt.Errorf("list re-extraction intervals: %w", err)
	}
	return out, nil
}
