package tenancy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/graphmill/graphmill/internal/postgres"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// Directory answers the auth package's identity look-ups. It only reads,
// apart from recording users' last activity and creating OIDC users on
// their first request.
type Directory struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// NewDirectory returns a Directory over pool.
func NewDirectory(pool *pgxpool.Pool, now func() time.Time) *Directory {
	return &Directory{pool: pool, now: now}
}

var errUnknownCredential = errs.New(errs.Unauthenticated, "unknown credential")

// PrincipalByTokenHash implements auth.Directory.
func (d *Directory) PrincipalByTokenHash(ctx context.Context, hash [32]byte) (*auth.Principal, error) {
	type tokenRow struct {
		ID         uuid.UUID  `db:"id"`
		UserID     uuid.UUID  `db:"user_id"`
		ProjectID  *uuid.UUID `db:"project_id"`
		Scopes     []string   `db:"scopes"`
		ExpiresAt  *time.Time `db:"expires_at"`
		Superadmin bool       `db:"superadmin"`
	}
	t, err := postgres.One[tokenRow](ctx, d.pool, errUnknownCredential, `
		SELECT t.id, t.user_id, t.project_id, t.scopes, t.expires_at,
		       EXISTS (SELECT 1 FROM superadmins s WHERE s.user_id = t.user_id) AS superadmin
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND u.deleted_at IS NULL`, hash[:])
	if err != nil {
		return nil, fmt.Errorf("look up token: %w", err)
	}
	set, err := auth.ParseScopes(t.Scopes)
	if err != nil {
		return nil, fmt.Errorf("token %s: %w", t.ID, err)
	}
	p := &auth.Principal{UserID: t.UserID, Kind: auth.KindAPIToken, TokenID: t.ID, Scopes: set, Superadmin: t.Superadmin}
	if t.ProjectID != nil {
		p.BoundProject = *t.ProjectID
	}
	if t.ExpiresAt != nil {
		p.ExpiresAt = *t.ExpiresAt
	}
	return p, d.loadMemberships(ctx, p)
}

// PrincipalByOIDC implements auth.Directory: the user is found by (issuer,
// subject) or created, and the profile claims are refreshed. Claims the
// database cannot hold as they are (a NUL): a subject is an unknown
// credential, an address is not recorded (changed, it would be another
// one), the names lose the NUL (postgres.Text).
func (d *Directory) PrincipalByOIDC(ctx context.Context, c auth.OIDCClaims) (*auth.Principal, error) {
	if !postgres.ValidText(c.Issuer) || !postgres.ValidText(c.Subject) {
		return nil, errUnknownCredential
	}
	if !postgres.ValidText(c.Email) {
		c.Email = ""
	}
	c.Name, c.GivenName, c.FamilyName = postgres.Text(c.Name), postgres.Text(c.GivenName), postgres.Text(c.FamilyName)
	now := d.now()
	var id uuid.UUID
	var deleted *time.Time
	var superadmin bool
	name := c.Name
	err := d.pool.QueryRow(ctx, `
		INSERT INTO users (id, oidc_issuer, oidc_subject, first_name, last_name, display_name, primary_email, last_activity_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $8)
		ON CONFLICT (oidc_issuer, oidc_subject) WHERE oidc_subject IS NOT NULL DO UPDATE SET
		  first_name = COALESCE(EXCLUDED.first_name, users.first_name),
		  last_name = COALESCE(EXCLUDED.last_name, users.last_name),
		  display_name = COALESCE(EXCLUDED.display_name, users.display_name),
		  primary_email = COALESCE(EXCLUDED.primary_email, users.primary_email),
		  last_activity_at = EXCLUDED.last_activity_at
		RETURNING id, deleted_at, EXISTS (SELECT 1 FROM superadmins s WHERE s.user_id = users.id)`,
		uuid.Must(uuid.NewV7()), c.Issuer, c.Subject, postgres.NullIfEmpty(c.GivenName), postgres.NullIfEmpty(c.FamilyName), postgres.NullIfEmpty(name), postgres.NullIfEmpty(c.Email), now).
		Scan(&id, &deleted, &superadmin)
	if err != nil {
		return nil, fmt.Errorf("upsert oidc user: %w", err)
	}
	if deleted != nil {
		return nil, errUnknownCredential
	}
	p := &auth.Principal{UserID: id, Kind: auth.KindOIDC, Superadmin: superadmin}
	if err := d.loadMemberships(ctx, p); err != nil {
		return nil, err
	}
	// The session holds the scopes of the user's roles as loaded now; a
	// membership change drops the cached principal (graphmill_authz).
	p.Scopes = auth.RoleScopes(p)
	return p, nil
}

// PrincipalOfUser is a live user's principal as of now, without a
// credential: memberships and the superadmin grant, no scopes (the caller
// gives it the scopes it acts with: an agent run those it was started
// with). A deleted or unknown user is errs.Unauthenticated.
func (d *Directory) PrincipalOfUser(ctx context.Context, user uuid.UUID) (*auth.Principal, error) {
	superadmin, err := postgres.One[bool](ctx, d.pool, errUnknownCredential, `
		SELECT EXISTS (SELECT 1 FROM superadmins s WHERE s.user_id = u.id) FROM users u
		WHERE u.id = $1 AND u.deleted_at IS NULL`, user)
	if err != nil {
		return nil, fmt.Errorf("look up user: %w", err)
	}
	p := &auth.Principal{UserID: user, Superadmin: superadmin}
	return p, d.loadMemberships(ctx, p)
}

func (d *Directory) loadMemberships(ctx context.Context, p *auth.Principal) error {
	p.OrgRoles = map[uuid.UUID]auth.OrgRole{}
	p.ProjectRoles = map[uuid.UUID]auth.ProjectRole{}
	rows, err := d.pool.Query(ctx, `
		SELECT true, org_id, role FROM org_members WHERE user_id = $1
		UNION ALL
		SELECT false, project_id, role FROM project_members WHERE user_id = $1`, p.UserID)
	if err != nil {
		return fmt.Errorf("load memberships: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var isOrg bool
		var id uuid.UUID
		var role string
		if err := rows.Scan(&isOrg, &id, &role); err != nil {
			return fmt.Errorf("load memberships: %w", err)
		}
		if isOrg {
			p.OrgRoles[id] = auth.OrgRole(role)
		} else {
			p.ProjectRoles[id] = auth.ProjectRole(role)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load memberships: %w", err)
	}
	if p.Kind == auth.KindAPIToken {
		// Token verification is cached, so this runs about once per token
		// per cache lifetime: a cheap, slightly coarse activity clock.
		if _, err := d.pool.Exec(ctx, `UPDATE users SET last_activity_at = $2 WHERE id = $1`, p.UserID, d.now()); err != nil {
			return fmt.Errorf("record activity: %w", err)
		}
	}
	return nil
}

// ProjectOrg implements auth.Directory.
func (d *Directory) ProjectOrg(ctx context.Context, project uuid.UUID) (uuid.UUID, error) {
	p, err := projectGet(ctx, d.pool, project)
	if err != nil {
		return uuid.Nil, err
	}
	return p.OrgID, nil
}

// OrgLive implements auth.Directory.
func (d *Directory) OrgLive(ctx context.Context, org uuid.UUID) (bool, error) {
	_, err := orgGet(ctx, d.pool, org)
	if errors.Is(err, ErrOrgNotFound) {
		return false, nil
	}
	return err == nil, err
}

var _ auth.Directory = (*Directory)(nil)
