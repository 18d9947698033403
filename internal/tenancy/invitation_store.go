package tenancy

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/postgres"
)

// invitationRow is what an invitation is created from and checked against
// when accepted.
type invitationRow struct {
	ID        uuid.UUID `db:"id"`
	ProjectID uuid.UUID `db:"project_id"`
	Email     string    `db:"email"`
	Role      string    `db:"role"`
	Status    string    `db:"status"`
	TokenHash []byte    `db:"token_hash"`
	InvitedBy uuid.UUID `db:"invited_by"`
	ExpiresAt time.Time `db:"expires_at"`
}

// invitationColumns are Invitation's, of project_invitations i joined
// with projects p and the inviter u; $1 is the time that decides expiry.
const invitationColumns = `i.id, i.project_id, p.name AS project_name, i.email, i.role,
	CASE WHEN i.status = 'pending' AND i.expires_at <= $1 THEN 'expired' ELSE i.status END AS status,
	i.invited_by, COALESCE(u.display_name, u.primary_email, '') AS inviter_name, i.expires_at,
	i.accepted_by, i.accepted_at, i.revoked_at, i.created_at, i.updated_at`

// invitationFrom is the FROM of invitationColumns.
const invitationFrom = `FROM project_invitations i JOIN projects p ON p.id = i.project_id
	LEFT JOIN users u ON u.id = i.invited_by`

// invitationUpsert inserts a pending invitation, or, when the address has
// one in the project already, gives it r's token, role, inviter and
// expiry; it returns the invitation's id.
func invitationUpsert(ctx context.Context, db postgres.DBTX, r invitationRow, now time.Time) (uuid.UUID, error) {
	id, err := postgres.One[uuid.UUID](ctx, db, nil, `
		INSERT INTO project_invitations (id, project_id, email, role, status, token_hash, invited_by, expires_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $8, $8)
		ON CONFLICT (project_id, lower(email)) WHERE status = 'pending' DO UPDATE SET
		  email = EXCLUDED.email, role = EXCLUDED.role, token_hash = EXCLUDED.token_hash,
		  invited_by = EXCLUDED.invited_by, expires_at = EXCLUDED.expires_at, updated_at = EXCLUDED.updated_at
		RETURNING id`, r.ID, r.ProjectID, r.Email, r.Role, r.TokenHash, r.InvitedBy, r.ExpiresAt, now)
	if err != nil {
		return uuid.Nil, fmt.Errorf("upsert invitation: %w", err)
	}
	return id, nil
}

func invitationGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID, now time.Time) (Invitation, error) {
	inv, err := postgres.One[Invitation](ctx, db, ErrInvitationNotFound, `SELECT `+invitationColumns+` `+invitationFrom+`
		WHERE i.id = $2 AND i.project_id = $3`, now, id, project)
	if err != nil {
		return Invitation{}, fmt.Errorf("get invitation: %w", err)
	}
	return inv, nil
}

// invitationFilter selects invitations: of a project, or to an address
// (case-insensitively); PendingOnly keeps the pending, unexpired ones of
// live projects.
type invitationFilter struct {
	ProjectID   *uuid.UUID
	Email       *string
	PendingOnly bool
}

// invitationWhere is invitationList's condition ($1 now, $2 a project,
// $3 an address, $4 pending ones only).
const invitationWhere = `
		WHERE ($2::uuid IS NULL OR i.project_id = $2)
		  AND ($3::text IS NULL OR lower(i.email) = lower($3))
		  AND (NOT $4 OR (i.status = 'pending' AND i.expires_at > $1 AND p.deleted_at IS NULL
		       AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = p.org_id AND o.deleted_at IS NULL)))`

func invitationList(ctx context.Context, db postgres.DBTX, f invitationFilter, pg Page, now time.Time) ([]Invitation, int, error) {
	rows, _ := db.Query(ctx, `
		SELECT `+invitationColumns+`, count(*) OVER () AS total `+invitationFrom+invitationWhere+`
		ORDER BY i.created_at, i.id LIMIT $5 OFFSET $6`, now, f.ProjectID, f.Email, f.PendingOnly, pg.Limit, pg.Offset)
	out, total, err := postgres.CollectPageOf[Invitation](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list invitations: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(out), pg.Offset, total, `SELECT count(*) `+invitationFrom+invitationWhere,
		now, f.ProjectID, f.Email, f.PendingOnly); err != nil {
		return nil, 0, fmt.Errorf("count invitations: %w", err)
	}
	return out, total, nil
}

// invitationLockStatus locks invitation id of project and returns its
// stored status (pending, accepted or revoked).
func invitationLockStatus(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (string, error) {
	status, err := postgres.One[string](ctx, db, ErrInvitationNotFound,
		`SELECT status FROM project_invitations WHERE id = $1 AND project_id = $2 FOR UPDATE`, id, project)
	if err != nil {
		return "", fmt.Errorf("lock invitation: %w", err)
	}
	return status, nil
}

// invitationLockByToken locks the invitation whose token hashes to hash.
func invitationLockByToken(ctx context.Context, db postgres.DBTX, hash []byte) (invitationRow, error) {
	r, err := postgres.One[invitationRow](ctx, db, ErrInvitationNotFound, `
		SELECT id, project_id, email, role, status, token_hash, invited_by, expires_at
		FROM project_invitations WHERE token_hash = $1 FOR UPDATE`, hash)
	if err != nil {
		return invitationRow{}, fmt.Errorf("look up invitation: %w", err)
	}
	return r, nil
}

func invitationRevoke(ctx context.Context, db postgres.DBTX, id uuid.UUID, now time.Time) error {
	if _, err := db.Exec(ctx, `UPDATE project_invitations SET status = 'revoked', revoked_at = $2, updated_at = $2 WHERE id = $1`, id, now); err != nil {
		return fmt.Errorf("revoke invitation: %w", err)
	}
	return nil
}

func invitationAccept(ctx context.Context, db postgres.DBTX, id, user uuid.UUID, now time.Time) error {
	if _, err := db.Exec(ctx, `UPDATE project_invitations SET status = 'accepted', accepted_by = $2, accepted_at = $3, updated_at = $3
		WHERE id = $1`, id, user, now); err != nil {
		return fmt.Errorf("accept invitation: %w", err)
	}
	return nil
}

// projectMemberByEmail reports whether a live user with this address
// (case-insensitively) is a member of project.
func projectMemberByEmail(ctx context.Context, db postgres.DBTX, project uuid.UUID, address string) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM project_members m JOIN users u ON u.id = m.user_id
		WHERE m.project_id = $1 AND u.deleted_at IS NULL AND lower(u.primary_email) = lower($2))`, project, address).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up member by email: %w", err)
	}
	return ok, nil
}

// userEmail returns a live user's primary email address ("" when none).
func userEmail(ctx context.Context, db postgres.DBTX, id uuid.UUID) (string, error) {
	address, err := postgres.One[string](ctx, db, ErrUserNotFound,
		`SELECT COALESCE(primary_email, '') FROM users WHERE id = $1 AND deleted_at IS NULL`, id)
	if err != nil {
		return "", fmt.Errorf("get user email: %w", err)
	}
	return address, nil
}

// userHasEmail reports whether user id's primary email is address,
// compared as every invitation query compares addresses (lower(), not
// Unicode case folding).
func userHasEmail(ctx context.Context, db postgres.DBTX, id uuid.UUID, address string) (bool, error) {
	ok, err := postgres.One[bool](ctx, db, ErrUserNotFound,
		`SELECT COALESCE(lower(primary_email) = lower($2), false) FROM users WHERE id = $1 AND deleted_at IS NULL`, id, address)
	if err != nil {
		return false, fmt.Errorf("match user email: %w", err)
	}
	return ok, nil
}

// userName returns the name a user is shown by: the display name, else
// the email address, else "".
func userName(ctx context.Context, db postgres.DBTX, id uuid.UUID) (string, error) {
	name, err := postgres.One[string](ctx, db, ErrUserNotFound,
		`SELECT COALESCE(display_name, primary_email, '') FROM users WHERE id = $1`, id)
	if err != nil {
		return "", fmt.Errorf("get user name: %w", err)
	}
	return name, nil
}
