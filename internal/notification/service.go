package notification

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Service holds the notification rules.
type Service struct {
	pool  *pgxpool.Pool
	dir   Directory
	now   func() time.Time
	mail  Mailer // nil: email off (UseEmail)
	links string // the UI's base URL for links in email
}

// NewService returns a Service; it sends no email until UseEmail.
func NewService(pool *pgxpool.Pool, dir Directory, now func() time.Time) *Service {
	return &Service{pool: pool, dir: dir, now: now}
}

// normalize checks p and fills its defaults.
func normalize(p Params, now time.Time) (Params, []byte, []byte, error) {
	p.Title = strings.TrimSpace(p.Title)
	if p.Title == "" || utf8.RuneCountInString(p.Title) > TitleMax {
		return p, nil, nil, ErrTitle
	}
	if utf8.RuneCountInString(p.Message) > MessageMax {
		return p, nil, nil, ErrTooLong
	}
	for _, v := range []string{p.Type, p.Category, p.RelatedResourceType, p.RelatedResourceID, p.SourceType, p.SourceID, p.ActionURL, p.ActionLabel, p.GroupKey} {
		if utf8.RuneCountInString(v) > FieldMax {
			return p, nil, nil, ErrTooLong
		}
	}
	if p.Severity == "" {
		p.Severity = SeverityInfo
	}
	switch p.Severity {
	case SeverityInfo, SeverityWarning, SeverityError, SeverityCritical, SeveritySuccess:
	default:
		return p, nil, nil, ErrSeverity
	}
	if p.Importance == "" {
		p.Importance = ImportanceOther
	}
	if p.Importance != ImportanceImportant && p.Importance != ImportanceOther {
		return p, nil, nil, ErrImportance
	}
	if p.ExpiresAt != nil && !p.ExpiresAt.After(now) {
		return p, nil, nil, ErrExpired
	}
	if p.Occurrences < 0 {
		return p, nil, nil, ErrOccurrences
	}
	if p.Occurrences == 0 {
		p.Occurrences = 1
	}
	actions := p.Actions
	if actions == nil {
		actions = []any{}
	}
	rawActions, err := json.Marshal(actions)
	if err != nil {
		return p, nil, nil, ErrNotJSON
	}
	var rawDetails []byte
	details := p.Details
	if p.GroupKey != "" {
		// A grouped notification always carries its count.
		details = make(map[string]any, len(p.Details)+1)
		for k, v := range p.Details {
			details[k] = v
		}
		details["count"] = p.Occurrences
	}
	if details != nil {
		if rawDetails, err = json.Marshal(details); err != nil {
			return p, nil, nil, ErrNotJSON
		}
	}
	return p, rawActions, rawDetails, nil
}

// Notify sends user a notification in the caller's transaction, and
// publishes it on the event stream (as an event visible to user only,
// with data {"type": "notification", "notification": {...}}) in the same
// transaction. With a group key it may update an open notification of
// the same key instead (see Params); that update is published too.
// A new important notification (not a later occurrence of an open group)
// also queues an email to a user who chose that, in the same transaction.
// Errors: invalid_argument.
func (s *Service) Notify(ctx context.Context, tx pgx.Tx, user uuid.UUID, p Params) (Notification, error) {
	now := s.now().UTC()
	p, actions, details, err := normalize(p, now)
	if err != nil {
		return Notification{}, err
	}
	// Grouped rows are locked by every occurrence's transaction, which
	// then publishes: take the publish lock first so lock order is fixed.
	if err := events.Lock(ctx, tx); err != nil {
		return Notification{}, err
	}
	n, inserted, err := notificationUpsert(ctx, tx, insertValues{
		ID: uuid.Must(uuid.NewV7()), UserID: user, P: p, Actions: actions, Details: details, Occurrences: p.Occurrences, Now: now,
	})
	if err != nil {
		return Notification{}, err
	}
	if inserted && n.Importance == ImportanceImportant && s.emailOn() {
		if err := s.mailImportant(ctx, tx, n); err != nil {
			return Notification{}, err
		}
	}
	if _, err := events.Publish(ctx, tx, events.TypeNotification, n.ProjectID, &user,
		map[string]any{"type": events.TypeNotification, "notification": n}, now); err != nil {
		return Notification{}, err
	}
	return n, nil
}

// NotifyProjectAdmins sends the notification p (its ProjectID set to
// project) to every admin of project, as Notify does, and returns what it
// sent. Errors: invalid_argument.
func (s *Service) NotifyProjectAdmins(ctx context.Context, tx pgx.Tx, project uuid.UUID, p Params) ([]Notification, error) {
	admins, err := s.dir.ProjectAdmins(ctx, tx, project)
	if err != nil {
		return nil, err
	}
	p.ProjectID = &project
	out := make([]Notification, 0, len(admins))
	for _, a := range admins {
		n, err := s.Notify(ctx, tx, a, p)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// List pages a tab of o's notifications, newest first. Errors:
// invalid_argument.
func (s *Service) List(ctx context.Context, o Owner, f Filter) ([]Notification, int, error) {
	if f.Tab == "" {
		f.Tab = TabAll
	}
	if err := CheckTab(f.Tab); err != nil {
		return nil, 0, err
	}
	f.Search = strings.TrimSpace(f.Search)
	if utf8.RuneCountInString(f.Search) > SearchMax {
		return nil, 0, errs.Errorf(errs.Invalid, "search must be at most %d characters", SearchMax)
	}
	return notificationList(ctx, s.pool, o, f, s.now().UTC())
}

// Counts counts o's notifications per tab.
func (s *Service) Counts(ctx context.Context, o Owner) (Counts, error) {
	return notificationCounts(ctx, s.pool, o, s.now().UTC())
}

// Stats returns o's badge numbers.
func (s *Service) Stats(ctx context.Context, o Owner) (Stats, error) {
	return notificationStats(ctx, s.pool, o, s.now().UTC())
}

// MarkRead marks one of o's notifications read. Errors: not_found.
func (s *Service) MarkRead(ctx context.Context, o Owner, id uuid.UUID) (Notification, error) {
	return notificationStamp(ctx, s.pool, o, id, stampRead, s.now().UTC())
}

// MarkAllRead marks read every unread notification of o's all tab and
// returns how many it changed.
func (s *Service) MarkAllRead(ctx context.Context, o Owner) (int64, error) {
	return notificationMarkAllRead(ctx, s.pool, o, s.now().UTC())
}

// Dismiss moves one of o's notifications to the cleared tab. Errors:
// not_found.
func (s *Service) Dismiss(ctx context.Context, o Owner, id uuid.UUID) (Notification, error) {
	return notificationStamp(ctx, s.pool, o, id, stampDismissed, s.now().UTC())
}

// ClearAll moves every notification of o's all tab to the cleared tab and
// returns how many it moved.
func (s *Service) ClearAll(ctx context.Context, o Owner) (int64, error) {
	return notificationClearAll(ctx, s.pool, o, s.now().UTC())
}

// Snooze snoozes one of o's notifications until a future time. Errors:
// invalid_argument, not_found, failed_precondition (dismissed).
func (s *Service) Snooze(ctx context.Context, o Owner, id uuid.UUID, until time.Time) (Notification, error) {
	now := s.now().UTC()
	if !until.After(now) {
		return Notification{}, ErrSnoozePast
	}
	var out Notification
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = notificationSnooze(ctx, tx, o, id, until.UTC(), now)
		return err
	})
	return out, err
}

// DeleteExpired deletes the notifications whose expiry has passed (they
// were hidden already), on db (a pool, or the scheduler's transaction
// that records the run).
func (s *Service) DeleteExpired(ctx context.Context, db postgres.DBTX) (int64, error) {
	return notificationDeleteExpired(ctx, db, s.now().UTC())
}

// ExpireSource expires now, in tx, the notifications that source (its
// type and id, as Params gives them) raised and that have not expired
// yet: what they announced is over (an agent run's question closed).
func (s *Service) ExpireSource(ctx context.Context, tx pgx.Tx, sourceType, sourceID string) error {
	return notificationExpireSource(ctx, tx, sourceType, sourceID, s.now().UTC())
}

// Recipient returns whom notification id belongs to (its user, and its
// project when it has one), for the routes that name a notification.
// Errors: not_found.
func (s *Service) Recipient(ctx context.Context, id uuid.UUID) (auth.Tenant, error) {
	return recipient(ctx, s.pool, id)
}
