package notification

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Digest choices.
const (
	DigestOff   = "off"
	DigestDaily = "daily"
)

// Digest limits.
const (
	// DigestItemsMax is how many unread notifications a digest lists (the
	// newest); it says how many more there are.
	DigestItemsMax = 20
	// DigestUsersPerRun bounds the users one run of the digest task
	// serves, so that its transaction stays short; the rest are served
	// by the next runs of the same day.
	DigestUsersPerRun = 500
	// DigestInterval is how often the scheduler runs the digest task.
	DigestInterval = 10 * time.Minute
)

// Preferences are a user's choices of email about their notifications.
// Without a stored choice both are off.
type Preferences struct {
	EmailImportant bool   `json:"emailImportant" doc:"Email each important notification (a group of repeated ones is one email)."`
	Digest         string `json:"digest" enum:"off,daily" doc:"daily: one email a day (UTC) listing the unread notifications, when there are any."`
}

// PreferencesUpdate changes some of a user's Preferences: an absent (nil)
// field is unchanged.
type PreferencesUpdate struct {
	EmailImportant *bool
	Digest         *string
}

// ErrDigest is returned for a digest choice other than off and daily.
var ErrDigest = errs.New(errs.Invalid, "digest must be off or daily")

// Mailer queues email (email.Service): Enqueue inserts one message in the
// caller's transaction. With email off (Enabled false) nothing is queued.
type Mailer interface {
	Enabled() bool
	Enqueue(ctx context.Context, tx pgx.Tx, j *email.Job) error
}

// Directory answers who administers a project and where a user receives
// mail (tenancy.Service).
type Directory interface {
	ProjectAdmins(ctx context.Context, db postgres.DBTX, project uuid.UUID) ([]uuid.UUID, error)
	UserContact(ctx context.Context, db postgres.DBTX, id uuid.UUID) (name, address string, err error)
}

// UseEmail makes the service email important notifications and digests
// through m to the users who chose them; links are the UI's absolute base
// URL that notification links (ActionURL, a path) are joined to, empty
// for none. Call it before the service is used.
func (s *Service) UseEmail(m Mailer, links string) {
	s.mail = m
	s.links = strings.TrimSuffix(links, "/")
}

// emailOn reports whether email is configured.
func (s *Service) emailOn() bool { return s.mail != nil && s.mail.Enabled() }

// link is path (a UI path) as an absolute URL, or empty without a base
// URL or a path.
func (s *Service) link(path string) string {
	if s.links == "" || path == "" {
		return ""
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return s.links + path
}

// Preferences returns user's choices (both off when never set).
func (s *Service) Preferences(ctx context.Context, user uuid.UUID) (Preferences, error) {
	return preferencesGet(ctx, s.pool, user)
}

// SetPreferences changes the fields of user's choices that u sets and
// returns them all. Errors: invalid_argument.
func (s *Service) SetPreferences(ctx context.Context, user uuid.UUID, u PreferencesUpdate) (Preferences, error) {
	if u.Digest != nil && *u.Digest != DigestOff && *u.Digest != DigestDaily {
		return Preferences{}, ErrDigest
	}
	return preferencesUpsert(ctx, s.pool, user, u, s.now().UTC())
}

// mailImportant queues the email about n, an important notification just
// added (not a later occurrence of an open group, which its first
// occurrence's email announced), when its owner chose such email, in the
// notification's transaction. A user without a valid address gets none,
// and so does one who cannot see the notification's project (left or
// deleted meanwhile): an email cannot be taken back as the inbox hides
// it.
func (s *Service) mailImportant(ctx context.Context, tx pgx.Tx, n Notification) error {
	p, err := preferencesGet(ctx, tx, n.UserID)
	if err != nil || !p.EmailImportant {
		return err
	}
	if ok, err := notificationSeen(ctx, tx, n.ID); err != nil || !ok {
		return err
	}
	name, address, err := s.contact(ctx, tx, n.UserID)
	if err != nil || address == "" {
		return err
	}
	data, err := json.Marshal(map[string]any{
		"name": name, "title": n.Title, "message": n.Message, "severity": n.Severity,
		"link": s.link(n.ActionURL), "actionLabel": orDefault(n.ActionLabel, "Open in Graphmill"),
		"notificationsLink": s.link("/notifications"),
	})
	if err != nil {
		return fmt.Errorf("encode notification email: %w", err)
	}
	// No project on the job: a user's own mail failing is not a job
	// failure to tell the project's admins about (JobOutcomes).
	return s.mail.Enqueue(ctx, tx, &email.Job{
		TemplateName: email.TemplateNotification, ToEmail: address, ToName: name,
		Subject: subjectLine("Graphmill: " + n.Title), Data: data,
	})
}

// contact is user's name and address, the address empty when the user
// has none that email.Recipient accepts (an address from an identity
// provider is not checked elsewhere; it must not fail the notification).
func (s *Service) contact(ctx context.Context, db postgres.DBTX, user uuid.UUID) (name, address string, err error) {
	name, address, err = s.dir.UserContact(ctx, db, user)
	if err != nil || address == "" {
		return "", "", err
	}
	name = subjectLine(name)
	if _, err := email.Recipient(name, address); err != nil {
		return "", "", nil //nolint:nilerr // no valid address: no email, not a failure
	}
	return name, address, nil
}

// SendDigests queues today's (UTC) digest to each user who chose the
// daily digest, has unread notifications and has not had one today, at
// most DigestUsersPerRun of them, in tx (the scheduler's, which records
// the run). The digest row and its email commit together; the row's
// primary key (user, day) makes a second digest the same day impossible.
// With email off it does nothing.
func (s *Service) SendDigests(ctx context.Context, tx pgx.Tx) error {
	if !s.emailOn() {
		return nil
	}
	now := s.now().UTC()
	users, err := digestDue(ctx, tx, now, DigestUsersPerRun)
	if err != nil {
		return err
	}
	for _, u := range users {
		if err := s.sendDigest(ctx, tx, u, now); err != nil {
			return fmt.Errorf("digest of user %s: %w", u, err)
		}
	}
	return nil
}

// sendDigest records user's digest of today and queues its email.
func (s *Service) sendDigest(ctx context.Context, tx pgx.Tx, user uuid.UUID, now time.Time) error {
	items, total, err := digestItems(ctx, tx, user, now, DigestItemsMax)
	if err != nil || total == 0 {
		return err
	}
	name, address, err := s.contact(ctx, tx, user)
	if err != nil {
		return err
	}
	var job *uuid.UUID
	if address != "" {
		id := uuid.Must(uuid.NewV7())
		job = &id
	}
	// A user without an address is recorded too: the day is done for them.
	if ok, err := digestInsert(ctx, tx, user, now, job, total); err != nil || !ok || job == nil {
		return err
	}
	list := make([]map[string]any, 0, len(items))
	for _, n := range items {
		list = append(list, map[string]any{
			"title": n.Title, "message": n.Message, "severity": n.Severity, "link": s.link(n.ActionURL),
			"when": n.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"),
		})
	}
	data, err := json.Marshal(map[string]any{
		"name": name, "count": total, "items": list, "more": total - len(items),
		"day": now.Format(time.DateOnly), "notificationsLink": s.link("/notifications"),
	})
	if err != nil {
		return fmt.Errorf("encode digest email: %w", err)
	}
	subject := fmt.Sprintf("Graphmill: %d unread notifications", total)
	if total == 1 {
		subject = "Graphmill: 1 unread notification"
	}
	return s.mail.Enqueue(ctx, tx, &email.Job{
		ID: *job, TemplateName: email.TemplateDigest, ToEmail: address, ToName: name, Subject: subject, Data: data,
	})
}

// subjectLine makes s one line: an email header cannot carry a line break.
func subjectLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
