package tenancy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// InvitationTTL is how long an invitation's link works.
const InvitationTTL = 7 * 24 * time.Hour

// InvitationLinkPath is the path, under the public URL, of the page an
// invitation's link opens; the token follows in the fragment (#token=),
// which browsers never send to a server, so that it reaches no access log.
// The page posts it to POST /api/invitations/accept.
const InvitationLinkPath = "/invitations/accept"

// Statuses of an invitation.
const (
	InvitationPending  = "pending"
	InvitationExpired  = "expired" // pending past its expiry (computed)
	InvitationAccepted = "accepted"
	InvitationRevoked  = "revoked"
)

// Invitation is an invitation to join a project with a role. Its token is
// never part of it: only the emailed link carries it.
type Invitation struct {
	ID          uuid.UUID  `json:"id" db:"id"`
	ProjectID   uuid.UUID  `json:"projectId" db:"project_id"`
	ProjectName string     `json:"projectName" db:"project_name"`
	Email       string     `json:"email" db:"email"`
	Role        string     `json:"role" db:"role" enum:"admin,editor,viewer"`
	Status      string     `json:"status" db:"status" enum:"pending,expired,accepted,revoked"`
	InvitedBy   uuid.UUID  `json:"invitedBy" db:"invited_by" doc:"The user who sent (or last re-sent) the invitation."`
	InviterName string     `json:"inviterName,omitempty" db:"inviter_name"`
	ExpiresAt   time.Time  `json:"expiresAt" db:"expires_at"`
	AcceptedBy  *uuid.UUID `json:"acceptedBy,omitempty" db:"accepted_by"`
	AcceptedAt  *time.Time `json:"acceptedAt,omitempty" db:"accepted_at"`
	RevokedAt   *time.Time `json:"revokedAt,omitempty" db:"revoked_at"`
	CreatedAt   time.Time  `json:"createdAt" db:"created_at"`
	UpdatedAt   time.Time  `json:"updatedAt" db:"updated_at"`
}

// Errors of invitations.
var (
	ErrInvitationNotFound  = errs.New(errs.NotFound, "invitation not found")
	ErrInvitationOtherUser = errs.New(errs.PermissionDenied, "this invitation was sent to another email address: sign in as the invited user")
	ErrInvitationAccepted  = errs.New(errs.FailedPrecondition, "the invitation has already been accepted")
	ErrInvitationRevoked   = errs.New(errs.FailedPrecondition, "the invitation has been revoked")
	ErrInvitationExpired   = errs.New(errs.FailedPrecondition, "the invitation has expired: ask a project admin to invite you again")
	ErrAlreadyMember       = errs.New(errs.Conflict, "a user with this email is already a member of the project")
	ErrEmailOff            = errs.New(errs.FailedPrecondition, "email is not configured on this server (GRAPHMILL_SMTP_URL), so no invitation can be sent: add the user as a member instead")
)

// Mailer queues invitation emails in the caller's transaction.
// cmd/graphmill adapts email.Service to it: tenancy cannot import the
// email package (email imports jobqueue, which imports events, whose
// tests import tenancy).
type Mailer interface {
	// Enabled reports whether email is configured.
	Enabled() bool
	// EnqueueInvitation checks m and queues it in tx, rendered with the
	// email template "invitation".
	EnqueueInvitation(ctx context.Context, tx pgx.Tx, m *InvitationEmail) error
}

// InvitationEmail is the message that carries an invitation's link: the
// template "invitation" (inviterName, projectName, role, link, expiresAt)
// rendered with Data and Secrets.
type InvitationEmail struct {
	ProjectID uuid.UUID
	To        string
	Subject   string
	Data      json.RawMessage
	// Secrets holds the link, whose token is stored only hashed: the
	// email job keeps it sealed until it is sent (email.Job.Secrets).
	Secrets map[string]string
}

// Invitations invites people to projects by email and turns accepted
// invitations into memberships.
type Invitations struct {
	svc  *Service
	mail Mailer
	link string // public URL + InvitationLinkPath
}

// NewInvitations returns the invitation service. publicURL is the
// server's public base URL (scheme://host[:port][/path]), under which the
// emailed links point.
func NewInvitations(svc *Service, mail Mailer, publicURL string) *Invitations {
	return &Invitations{svc: svc, mail: mail, link: strings.TrimSuffix(publicURL, "/") + InvitationLinkPath}
}

// newInvitationToken returns a fresh one-time token: 32 random bytes,
// base64url.
func newInvitationToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// invitationTokenHash is what is stored of a token.
func invitationTokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Create invites address to project with role and queues the email with
// its link, in one transaction. An address with a pending invitation to
// the project gets a new token, role and expiry (the earlier link stops
// working) and a new email. Errors: invalid_argument (address, role),
// conflict (the address is a member's), failed_precondition (email off),
// not_found (the project).
func (s *Invitations) Create(ctx context.Context, p *auth.Principal, project uuid.UUID, address, role string) (Invitation, error) {
	address = strings.TrimSpace(address)
	if !bareAddress(address) {
		return Invitation{}, errs.Errorf(errs.Invalid, "email must be one email address (name@example.com), at most %d characters before the @ and %d in all", addressLocalMax, addressMax)
	}
	if !auth.ProjectRole(role).Valid() {
		return Invitation{}, errs.Errorf(errs.Invalid, "role must be admin, editor or viewer, not %q", role)
	}
	if !s.mail.Enabled() {
		return Invitation{}, ErrEmailOff
	}
	pr, err := projectGet(ctx, s.svc.pool, project)
	if err != nil {
		return Invitation{}, err
	}
	token := newInvitationToken()
	var id uuid.UUID
	err = postgres.WithTx(ctx, s.svc.pool, func(tx pgx.Tx) error {
		now := s.svc.now().UTC()
		member, err := projectMemberByEmail(ctx, tx, project, address)
		if err != nil {
			return err
		}
		if member {
			return ErrAlreadyMember
		}
		expires := now.Add(InvitationTTL)
		if id, err = invitationUpsert(ctx, tx, invitationRow{
			ID: newID(), ProjectID: project, Email: address, Role: role, TokenHash: invitationTokenHash(token),
			InvitedBy: p.UserID, ExpiresAt: expires,
		}, now); err != nil {
			return err
		}
		inviter, err := userName(ctx, tx, p.UserID)
		if err != nil {
			return err
		}
		return s.mail.EnqueueInvitation(ctx, tx, s.invitationEmail(pr, address, role, inviter, token, expires))
	})
	if err != nil {
		return Invitation{}, err
	}
	return invitationGet(ctx, s.svc.pool, project, id, s.svc.now())
}

// invitationEmail is the message that carries an invitation's link.
func (s *Invitations) invitationEmail(pr Project, address, role, inviter, token string, expires time.Time) *InvitationEmail {
	// json.Marshal of strings cannot fail.
	data, _ := json.Marshal(map[string]string{
		"inviterName": inviter,
		"projectName": pr.Name,
		"role":        role,
		"expiresAt":   expires.Format("2006-01-02 15:04 UTC"),
	})
	// A project name may hold a line break; a subject may not.
	name := strings.Join(strings.Fields(pr.Name), " ")
	return &InvitationEmail{
		ProjectID: pr.ID, To: address, Subject: fmt.Sprintf("You are invited to %s on Graphmill", name), Data: data,
		Secrets: map[string]string{"link": s.link + "#token=" + token},
	}
}

// Bounds of an invitation's address (RFC 5321: a longer one cannot be
// sent, so the email would only fail later).
const (
	addressMax      = 254
	addressLocalMax = 64
)

// bareAddress reports whether s is one address an email can be sent to:
// oneAddress, at most addressMax bytes with at most addressLocalMax before
// the @.
func bareAddress(s string) bool {
	return oneAddress(s, addressMax) && strings.LastIndex(s, "@") <= addressLocalMax
}

// oneAddress reports whether s is one address as it is stored
// (name@example.com: no display name, no space, line break or other
// control character), at most limit bytes.
func oneAddress(s string, limit int) bool {
	if len(s) > limit || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}

// List pages a project's invitations, oldest first, whatever their
// status.
func (s *Invitations) List(ctx context.Context, project uuid.UUID, page Page) ([]Invitation, int, error) {
	return invitationList(ctx, s.svc.pool, invitationFilter{ProjectID: &project}, page, s.svc.now())
}

// Mine pages the pending, unexpired invitations to p's email address in
// live projects.
func (s *Invitations) Mine(ctx context.Context, p *auth.Principal, page Page) ([]Invitation, int, error) {
	address, err := userEmail(ctx, s.svc.pool, p.UserID)
	if err != nil || address == "" {
		return []Invitation{}, 0, err
	}
	return invitationList(ctx, s.svc.pool, invitationFilter{Email: &address, PendingOnly: true}, page, s.svc.now())
}

// Revoke revokes a pending (or expired) invitation of project: its link
// stops working. Errors: not_found, failed_precondition (accepted or
// already revoked).
func (s *Invitations) Revoke(ctx context.Context, project, id uuid.UUID) error {
	return postgres.WithTx(ctx, s.svc.pool, func(tx pgx.Tx) error {
		status, err := invitationLockStatus(ctx, tx, project, id)
		if err != nil {
			return err
		}
		switch status {
		case InvitationAccepted:
			return errs.New(errs.FailedPrecondition, "the invitation has been accepted: remove the member instead")
		case InvitationRevoked:
			return ErrInvitationRevoked
		}
		return invitationRevoke(ctx, tx, id, s.svc.now().UTC())
	})
}

// Accept makes p, whose email address the invitation was sent to, a
// member of its project with its role (and of the project's organization,
// as a member, if they were not), and spends the token. Errors:
// invalid_argument (no token), not_found (unknown token, deleted
// project), permission_denied (p's address is another),
// failed_precondition (accepted, revoked or expired), conflict (p is a
// member already).
func (s *Invitations) Accept(ctx context.Context, p *auth.Principal, token string) (Invitation, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return Invitation{}, errs.New(errs.Invalid, "token must not be empty")
	}
	var inv invitationRow
	err := s.svc.changeIdentity(ctx, func(tx pgx.Tx, now time.Time) (auth.Change, error) {
		change := auth.ChangeUsers(p.UserID)
		var err error
		if inv, err = invitationLockByToken(ctx, tx, invitationTokenHash(token)); err != nil {
			return change, err
		}
		invited, err := userHasEmail(ctx, tx, p.UserID, inv.Email)
		if err != nil {
			return change, err
		}
		if !invited {
			return change, ErrInvitationOtherUser
		}
		switch {
		case inv.Status == InvitationAccepted:
			return change, ErrInvitationAccepted
		case inv.Status == InvitationRevoked:
			return change, ErrInvitationRevoked
		case !now.Before(inv.ExpiresAt):
			return change, ErrInvitationExpired
		}
		pr, err := projectGet(ctx, tx, inv.ProjectID)
		if err != nil {
			return change, err
		}
		if _, err := projectMemberGet(ctx, tx, pr.ID, p.UserID); err == nil {
			return change, errs.New(errs.Conflict, "you are already a member of the project")
		} else if errs.CodeOf(err) != errs.NotFound {
			return change, err
		}
		if err := orgMemberUpsert(ctx, tx, pr.OrgID, p.UserID, auth.OrgMember, now, false); err != nil {
			return change, err
		}
		if err := projectMemberUpsert(ctx, tx, pr.ID, p.UserID, auth.ProjectRole(inv.Role), now); err != nil {
			return change, err
		}
		return change, invitationAccept(ctx, tx, inv.ID, p.UserID, now)
	})
	if err != nil {
		return Invitation{}, err
	}
	return invitationGet(ctx, s.svc.pool, inv.ProjectID, inv.ID, s.svc.now())
}
