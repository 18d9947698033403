package tenancy

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/displayname"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Invalidator drops cached credentials in this process (other processes
// learn of changes by notification).
type Invalidator interface {
	InvalidateChange(c auth.Change)
}

// Service holds the rules of tenancy.
type Service struct {
	pool *pgxpool.Pool
	inv  Invalidator
	now  func() time.Time
	// oidcTokenMax bounds the life of tokens created with OIDC sessions.
	oidcTokenMax time.Duration
}

// NewService returns a Service. inv is told of every identity change after
// it commits.
func NewService(pool *pgxpool.Pool, inv Invalidator, now func() time.Time) *Service {
	return &Service{pool: pool, inv: inv, now: now, oidcTokenMax: OIDCTokenMaxLifetimeDefault}
}

// OIDCTokenMaxLifetimeDefault is the longest life of a token created with
// an OIDC session, unless SetOIDCTokenMaxLifetime says otherwise.
const OIDCTokenMaxLifetimeDefault = 30 * 24 * time.Hour

// SetOIDCTokenMaxLifetime sets the longest life of a token created with an
// OIDC session (GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME, which config.Validate
// requires to be positive); call it before serving.
func (s *Service) SetOIDCTokenMaxLifetime(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("the OIDC token lifetime must be positive, not %s", d)
	}
	s.oidcTokenMax = d
	return nil
}

// changeIdentity runs fn in a transaction that announces to every process
// the identity change fn returns (whom and what it concerns: only their
// cached credentials and open connections are verified again), and drops
// this process's cache of it once it committed.
func (s *Service) changeIdentity(ctx context.Context, fn func(tx pgx.Tx, now time.Time) (auth.Change, error)) error {
	var c auth.Change
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if c, err = fn(tx, s.now().UTC()); err != nil {
			return err
		}
		return notifyInvalidate(ctx, tx, c)
	})
	if err == nil && s.inv != nil {
		s.inv.InvalidateChange(c)
	}
	return err
}

func newID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

func cleanName(what, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", errs.Errorf(errs.Invalid, "%s name must not be empty", what)
	}
	if utf8.RuneCountInString(name) > 200 {
		return "", errs.Errorf(errs.Invalid, "%s name must be at most 200 characters", what)
	}
	if err := displayname.Check(what+" name", name); err != nil {
		return "", err
	}
	return name, nil
}

// CreateOrg creates an organization owned by the caller. Errors:
// invalid_argument, conflict.
func (s *Service) CreateOrg(ctx context.Context, p *auth.Principal, name string) (Org, error) {
	name, err := cleanName("organization", name)
	if err != nil {
		return Org{}, err
	}
	id := newID()
	// A new organization concerns its creator only (nobody else can have
	// cached anything of it).
	err = s.changeIdentity(ctx, func(tx pgx.Tx, now time.Time) (auth.Change, error) {
		if err := orgInsert(ctx, tx, id, name, now); err != nil {
			return auth.Change{}, err
		}
		return auth.ChangeUsers(p.UserID), orgMemberUpsert(ctx, tx, id, p.UserID, auth.OrgOwner, now, true)
	})
	if err != nil {
		return Org{}, err
	}
	o, err := orgGet(ctx, s.pool, id)
	o.Role = string(auth.OrgOwner)
	return o, err
}

// ListOrgs lists the organizations the caller belongs to (every one for
// superadmins).
func (s *Service) ListOrgs(ctx context.Context, p *auth.Principal, page Page) ([]Org, int, error) {
	return orgListForUser(ctx, s.pool, p.UserID, p.Superadmin, page)
}

// CreateProject creates a project in org, which p administers (the
// route's rule checks it), and makes p its admin. Errors:
// invalid_argument, conflict.
func (s *Service) CreateProject(ctx context.Context, p *auth.Principal, org uuid.UUID, name string) (Project, error) {
	name, err := cleanName("project", name)
	if err != nil {
		return Project{}, err
	}
	id := newID()
	// A new project concerns its creator only: its organization's admins
	// see it through their roles, which did not change.
	err = s.changeIdentity(ctx, func(tx pgx.Tx, now time.Time) (auth.Change, error) {
		if err := projectInsert(ctx, tx, id, org, name, now); err != nil {
			return auth.Change{}, err
		}
		return auth.ChangeUsers(p.UserID), projectMemberUpsert(ctx, tx, id, p.UserID, auth.ProjectAdmin, now)
	})
	if err != nil {
		return Project{}, err
	}
	pr, err := projectGet(ctx, s.pool, id)
	pr.Role = string(auth.ProjectAdmin)
	return pr, err
}

// ListProjects lists the projects the caller sees, optionally of one
// organization.
func (s *Service) ListProjects(ctx context.Context, p *auth.Principal, org *uuid.UUID, page Page) ([]Project, int, error) {
	f := projectFilter{User: p.UserID, All: p.Superadmin, OrgID: org}
	if p.BoundProject != uuid.Nil {
		f.Only = &p.BoundProject
	}
	list, total, err := projectList(ctx, s.pool, f, page)
	for i := range list {
		list[i].Role = string(p.ProjectRole(list[i].ID, list[i].OrgID))
	}
	return list, total, err
}

// VisibleProjects returns the ids of the live projects p can see (only its
// bound project for a project-scoped token), optionally of one
// organization, which must then be one p belongs to. Errors: not_found (an
// organization p does not belong to, a deleted one, or one that is not
// the bound project's).
func (s *Service) VisibleProjects(ctx context.Context, p *auth.Principal, org *uuid.UUID) ([]uuid.UUID, error) {
	f := projectFilter{User: p.UserID, All: p.Superadmin, OrgID: org}
	if p.BoundProject != uuid.Nil {
		f.Only = &p.BoundProject
	}
	if org != nil {
		if p.OrgRole(*org) == "" {
			return nil, auth.ErrNoOrg
		}
		if _, err := orgGet(ctx, s.pool, *org); err != nil {
			return nil, err
		}
		if p.BoundProject != uuid.Nil {
			pr, err := projectGet(ctx, s.pool, p.BoundProject)
			if err != nil {
				return nil, err
			}
			if pr.OrgID != *org {
				return nil, auth.ErrNoOrg
			}
		}
	}
	return projectIDsVisible(ctx, s.pool, f)
}

// ProjectAdmins returns the live users who administer project: its
// admins and its organization's owners and admins. db is the pool or the
// caller's transaction.
func (s *Service) ProjectAdmins(ctx context.Context, db postgres.DBTX, project uuid.UUID) ([]uuid.UUID, error) {
	return projectAdminIDs(ctx, db, project)
}

// UserContact returns a live user's display name and email address, for
// mail to them (empty for an unknown or deleted user, or one without an
// address). db is the pool or the caller's transaction.
func (s *Service) UserContact(ctx context.Context, db postgres.DBTX, id uuid.UUID) (name, address string, err error) {
	return userContact(ctx, db, id)
}

// GetProject returns a live project. Errors: not_found.
func (s *Service) GetProject(ctx context.Context, p *auth.Principal, id uuid.UUID) (Project, error) {
	pr, err := projectGet(ctx, s.pool, id)
	if err == nil && p != nil {
		pr.Role = string(p.ProjectRole(pr.ID, pr.OrgID))
	}
	return pr, err
}

// DeleteProject soft-deletes a project: it disappears for everyone at
// once, its data stays for recovery. also, when not nil, runs in the same
// transaction (its error rolls the deletion back). Errors: not_found.
func (s *Service) DeleteProject(ctx context.Context, id uuid.UUID, also TxStep) error {
	return s.softDelete(ctx, id, projectSoftDelete, ErrProjectNotFound, auth.Change{Projects: []uuid.UUID{id}}, also)
}

// DeleteOrg soft-deletes an organization and its projects. also, when not
// nil, runs in the same transaction. Errors: not_found.
func (s *Service) DeleteOrg(ctx context.Context, id uuid.UUID, also TxStep) error {
	return s.softDelete(ctx, id, orgSoftDelete, ErrOrgNotFound, auth.Change{Orgs: []uuid.UUID{id}}, also)
}

// TxStep is work a caller adds to the transaction of a change (the
// superadmin audit row): its error rolls the change back.
type TxStep func(ctx context.Context, tx pgx.Tx) error

// CreatedStep is a TxStep of a creation, told the new record's id.
type CreatedStep func(ctx context.Context, tx pgx.Tx, id uuid.UUID) error

// softDelete soft-deletes the record id with del (notFound when it is not
// live), then runs also, in one identity change c.
func (s *Service) softDelete(ctx context.Context, id uuid.UUID, del func(context.Context, postgres.DBTX, uuid.UUID, time.Time) (bool, error),
	notFound error, c auth.Change, also TxStep,
) error {
	return s.changeIdentity(ctx, func(tx pgx.Tx, now time.Time) (auth.Change, error) {
		ok, err := del(ctx, tx, id, now)
		switch {
		case err != nil:
			return c, err
		case !ok:
			return c, notFound
		case also != nil:
			return c, also(ctx, tx)
		}
		return c, nil
	})
}

// ListMembers lists a project's members.
func (s *Service) ListMembers(ctx context.Context, project uuid.UUID, page Page) ([]Member, int, error) {
	return projectMemberList(ctx, s.pool, project, page)
}

// AddMember gives user role in project (replacing an earlier role), and
// makes the user a member of the project's organization if they were not.
// Errors: invalid_argument, not_found.
func (s *Service) AddMember(ctx context.Context, project, user uuid.UUID, role string) (Member, error) {
	r := auth.ProjectRole(role)
	if !r.Valid() {
		return Member{}, errs.Errorf(errs.Invalid, "role must be admin, editor or viewer, not %q", role)
	}
	pr, err := projectGet(ctx, s.pool, project)
	if err != nil {
		return Member{}, err
	}
	err = s.changeIdentity(ctx, func(tx pgx.Tx, now time.Time) (auth.Change, error) {
		ok, err := userLive(ctx, tx, user)
		if err != nil {
			return auth.Change{}, err
		}
		if !ok {
			return auth.Change{}, ErrUserNotFound
		}
		if err := orgMemberUpsert(ctx, tx, pr.OrgID, user, auth.OrgMember, now, false); err != nil {
			return auth.Change{}, err
		}
		return auth.ChangeUsers(user), projectMemberUpsert(ctx, tx, project, user, r, now)
	})
	if err != nil {
		return Member{}, err
	}
	return projectMemberGet(ctx, s.pool, project, user)
}

// RemoveMember ends a membership. Errors: not_found.
func (s *Service) RemoveMember(ctx context.Context, project, user uuid.UUID) error {
	return s.changeIdentity(ctx, func(tx pgx.Tx, _ time.Time) (auth.Change, error) {
		ok, err := projectMemberDelete(ctx, tx, project, user)
		if err == nil && !ok {
			err = ErrMemberNotFound
		}
		return auth.ChangeUsers(user), err
	})
}

// CreateToken mints a token for p.UserID. A caller may only hand out scopes
// it holds itself (issuer is the caller; nil for the command line). also,
// when not nil, runs in the same transaction with the new token's id.
// Errors: invalid_argument, permission_denied, not_found.
func (s *Service) CreateToken(ctx context.Context, issuer *auth.Principal, params CreateTokenParams, also CreatedStep) (Token, error) {
	return s.createToken(ctx, issuer, params, "", also)
}

func (s *Service) createToken(ctx context.Context, issuer *auth.Principal, params CreateTokenParams, secret string, also CreatedStep) (Token, error) {
	name, err := cleanName("token", params.Name)
	if err != nil {
		return Token{}, err
	}
	params.Name = name
	if len(params.Scopes) == 0 {
		return Token{}, errs.New(errs.Invalid, "scopes must name at least one scope")
	}
	set, err := auth.ParseScopes(params.Scopes)
	if err != nil {
		return Token{}, errs.Errorf(errs.Invalid, "scopes: %v", err)
	}
	params.Scopes = set.Names()
	if issuer != nil && !issuer.Scopes.Covers(set) {
		return Token{}, errs.Errorf(errs.PermissionDenied, "a token cannot grant scopes its creator lacks: %s",
			strings.Join((set&^issuer.Scopes).Names(), ", "))
	}
	if params.ExpiresAt != nil && !params.ExpiresAt.After(s.now()) {
		return Token{}, errs.New(errs.Invalid, "expiresAt must be in the future")
	}
	if err := s.capExpiry(issuer, &params); err != nil {
		return Token{}, err
	}
	if params.ProjectID != nil {
		if _, err := projectGet(ctx, s.pool, *params.ProjectID); err != nil {
			return Token{}, err
		}
	}
	if secret == "" {
		secret = auth.NewToken()
	}
	id := newID()
	err = postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		ok, err := userLive(ctx, tx, params.UserID)
		if err != nil {
			return err
		}
		if !ok {
			return ErrUserNotFound
		}
		if err := tokenInsert(ctx, tx, id, params, secret, s.now().UTC()); err != nil || also == nil {
			return err
		}
		return also(ctx, tx, id)
	})
	if err != nil {
		return Token{}, err
	}
	t, err := tokenGet(ctx, s.pool, id)
	t.Token = secret
	return t, err
}

// capExpiry keeps a token from outliving the credential that creates it:
// an expiring API token's tokens expire no later than it, an OIDC
// session's within oidcTokenMax. Without expiresAt the token gets the
// latest allowed; a later one is invalid_argument (never clamped
// silently). The command line (no issuer) and tokens without an expiry
// mint freely.
func (s *Service) capExpiry(issuer *auth.Principal, params *CreateTokenParams) error {
	if issuer == nil {
		return nil
	}
	var limit time.Time
	var why string
	switch {
	case issuer.Kind == auth.KindOIDC:
		limit = s.now().Add(s.oidcTokenMax)
		why = fmt.Sprintf("a token created with an OIDC session lives at most %s (GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME)", s.oidcTokenMax)
	case !issuer.ExpiresAt.IsZero():
		limit = issuer.ExpiresAt
		why = "a token cannot outlive the token that creates it"
	default:
		return nil
	}
	limit = limit.UTC().Truncate(time.Microsecond) // as PostgreSQL stores it
	if params.ExpiresAt == nil {
		params.ExpiresAt = &limit
		return nil
	}
	if params.ExpiresAt.After(limit) {
		return errs.Errorf(errs.Invalid, "expiresAt must be %s or earlier: %s", limit.Format(time.RFC3339), why)
	}
	return nil
}

// ListTokens lists live tokens of a user and/or a project.
func (s *Service) ListTokens(ctx context.Context, user, project *uuid.UUID, page Page) ([]Token, int, error) {
	return tokenList(ctx, s.pool, tokenFilter{UserID: user, ProjectID: project}, page)
}

// ListProjectTokens pages the tokens bound to the project a authorises p
// for: p's own, or every one when p administers the project.
func (s *Service) ListProjectTokens(ctx context.Context, p *auth.Principal, a auth.Access, page Page) ([]Token, int, error) {
	return s.ListTokens(ctx, projectTokenOwner(p, a), &a.ProjectID, page)
}

// RevokeProjectToken revokes token id bound to the project a authorises
// p for: p's own, or any when p administers the project. Errors:
// not_found.
func (s *Service) RevokeProjectToken(ctx context.Context, p *auth.Principal, a auth.Access, id uuid.UUID) error {
	return s.RevokeToken(ctx, id, projectTokenOwner(p, a), &a.ProjectID)
}

// projectTokenOwner limits project token operations to p's own tokens,
// unless p administers the project.
func projectTokenOwner(p *auth.Principal, a auth.Access) *uuid.UUID {
	if p.ProjectRole(a.ProjectID, a.OrgID) == auth.ProjectAdmin {
		return nil
	}
	return &p.UserID
}

// RevokeToken revokes token id if it belongs to user and/or project (nil:
// any). The token stops working at once in every process. Errors:
// not_found.
func (s *Service) RevokeToken(ctx context.Context, id uuid.UUID, user, project *uuid.UUID) error {
	return s.changeIdentity(ctx, func(tx pgx.Tx, now time.Time) (auth.Change, error) {
		owner, ok, err := tokenRevoke(ctx, tx, id, tokenFilter{UserID: user, ProjectID: project}, now)
		if err == nil && !ok {
			err = ErrTokenNotFound
		}
		return auth.ChangeUsers(owner), err
	})
}

// TokenUser returns the user a token belongs to, revoked or not. Errors:
// not_found.
func (s *Service) TokenUser(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return tokenUser(ctx, s.pool, id)
}

// LiveUser returns id when it names a live user, for the superadmin
// routes that name one (LiveOrg and LiveProject do the same for
// organizations and projects). Errors: not_found.
func (s *Service) LiveUser(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	ok, err := userLive(ctx, s.pool, id)
	if err == nil && !ok {
		err = ErrUserNotFound
	}
	return id, err
}

// LiveOrg is LiveUser for organizations.
func (s *Service) LiveOrg(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	o, err := orgGet(ctx, s.pool, id)
	return o.ID, err
}

// LiveProject is LiveUser for projects.
func (s *Service) LiveProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	pr, err := projectGet(ctx, s.pool, id)
	return pr.ID, err
}

// userAddressMax bounds a user's primary email (the API's maxLength).
const userAddressMax = 320

// CreateUser creates a local user (for deployments without OIDC). also,
// when not nil, runs in the same transaction with the new user's id.
// Errors: invalid_argument, conflict.
func (s *Service) CreateUser(ctx context.Context, email, displayName string, also CreatedStep) (User, error) {
	email = strings.TrimSpace(email)
	displayName = strings.TrimSpace(displayName)
	if !oneAddress(email, userAddressMax) {
		return User{}, errs.New(errs.Invalid, "primaryEmail must be an email address")
	}
	if utf8.RuneCountInString(displayName) > 200 {
		return User{}, errs.New(errs.Invalid, "displayName must be at most 200 characters")
	}
	id := newID()
	now := s.now().UTC()
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := userInsert(ctx, tx, id, displayName, email, now); err != nil || also == nil {
			return err
		}
		return also(ctx, tx, id)
	})
	if err != nil {
		return User{}, err
	}
	return User{ID: id, DisplayName: displayName, PrimaryEmail: email, CreatedAt: now}, nil
}

// ResolveUser finds a live user by id, email or unique display name.
// Errors: not_found.
func (s *Service) ResolveUser(ctx context.Context, ref string) (uuid.UUID, error) {
	return userResolve(ctx, s.pool, ref)
}

// DeleteUser soft-deletes a user; their tokens stop working at once. also,
// when not nil, runs in the same transaction. Errors: not_found.
func (s *Service) DeleteUser(ctx context.Context, id uuid.UUID, also TxStep) error {
	return s.softDelete(ctx, id, userSoftDelete, ErrUserNotFound, auth.ChangeUsers(id), also)
}

// bootstrapLock serialises the first start of several replicas.
const bootstrapLock = 0x67726d62 // "grmb"

// Bootstrap creates, in an empty database, the default organization and
// project and the superadmin user "admin" with a token holding every scope.
// It returns that token, or "" when the database was already set up.
// fixed, when set, is the token's value.
func (s *Service) Bootstrap(ctx context.Context, fixed string) (string, error) {
	if fixed != "" && !auth.ValidTokenFormat(fixed) {
		return "", fmt.Errorf("GRAPHMILL_BOOTSTRAP_TOKEN must be %q followed by 32 to 128 characters of A-Z a-z 0-9 - _", auth.TokenPrefix)
	}
	secret := fixed
	if secret == "" {
		secret = auth.NewToken()
	}
	var created bool
	all := auth.Change{All: true} // the first start: everything is new
	err := s.changeIdentity(ctx, func(tx pgx.Tx, now time.Time) (auth.Change, error) {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, bootstrapLock); err != nil {
			return all, fmt.Errorf("bootstrap lock: %w", err)
		}
		exists, err := usersExist(ctx, tx)
		if err != nil || exists {
			return all, err
		}
		org, project, user := newID(), newID(), newID()
		if err := orgInsert(ctx, tx, org, DefaultOrgName, now); err != nil {
			return all, err
		}
		if err := projectInsert(ctx, tx, project, org, DefaultProjectName, now); err != nil {
			return all, err
		}
		if err := userInsert(ctx, tx, user, AdminDisplayName, AdminEmail, now); err != nil {
			return all, err
		}
		if err := superadminGrant(ctx, tx, user, now); err != nil {
			return all, err
		}
		if err := orgMemberUpsert(ctx, tx, org, user, auth.OrgOwner, now, true); err != nil {
			return all, err
		}
		if err := projectMemberUpsert(ctx, tx, project, user, auth.ProjectAdmin, now); err != nil {
			return all, err
		}
		created = true
		return all, tokenInsert(ctx, tx, newID(), CreateTokenParams{
			UserID: user, Name: "bootstrap", Scopes: auth.AllScopes.Names(),
		}, secret, now)
	})
	if err != nil || !created {
		return "", err
	}
	return secret, nil
}

// TokenKnown reports whether a token value is stored (revoked or not).
func (s *Service) TokenKnown(ctx context.Context, secret string) (bool, error) {
	return tokenExists(ctx, s.pool, secret)
}

// ExtractionSettings returns a project's extraction settings. Errors:
// not_found.
func (s *Service) ExtractionSettings(ctx context.Context, project uuid.UUID) (ExtractionSettings, error) {
	return projectExtractionSettings(ctx, s.pool, project)
}

// SetExtractionSettings changes the extraction settings that are not nil
// (extraction checks their bounds) and returns them all. Errors:
// not_found.
func (s *Service) SetExtractionSettings(ctx context.Context, project uuid.UUID, reviewThreshold *float64, reextractionIntervalHours *int) (ExtractionSettings, error) {
	return projectSetExtractionSettings(ctx, s.pool, project, reviewThreshold, reextractionIntervalHours)
}

// ReextractionIntervals returns the live projects whose documents are
// re-extracted on a schedule, with their intervals. db is the pool
// or the caller's transaction.
func (s *Service) ReextractionIntervals(ctx context.Context, db postgres.DBTX) ([]ReextractionInterval, error) {
	return projectReextractionIntervals(ctx, db)
}
