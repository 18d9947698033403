package notification

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// columns are Notification's (a NULL text is empty, NULL actions an empty
// array).
const columns = `id, user_id, project_id, title, message, COALESCE(type, '') AS type, severity, importance,
	COALESCE(category, '') AS category, COALESCE(related_resource_type, '') AS related_resource_type,
	COALESCE(related_resource_id, '') AS related_resource_id, read_at IS NOT NULL AS read, dismissed_at IS NOT NULL AS dismissed,
	read_at, dismissed_at, cleared_at, snoozed_until, expires_at, COALESCE(actions, '[]') AS actions,
	COALESCE(source_type, '') AS source_type, COALESCE(source_id, '') AS source_id, COALESCE(action_url, '') AS action_url,
	COALESCE(action_label, '') AS action_label, COALESCE(group_key, '') AS group_key, details, task_id, created_at, updated_at`

// owned is the predicate of the notifications an Owner sees: theirs, of
// the project when one is set, not expired, and of no project or one they
// can see now (seen). $1 user, $2 project, $3 now.
func owned() string {
	return `user_id = $1 AND ($2::uuid IS NULL OR project_id = $2) AND (expires_at IS NULL OR expires_at > $3) AND ` + seen("$1")
}

// seen is the condition of a notification of the user the SQL expression
// user names that they may see, whatever its state: one of no project, or
// of a project they can see now (not one they left, nor a deleted one).
func seen(user string) string {
	return `(notifications.project_id IS NULL OR ` + tenancy.SeesProject(user, "notifications.project_id") + `)`
}

// The tabs' predicates; $3 is now. Counts and lists share them, so a tab
// and its count cannot disagree.
const (
	inAll       = `dismissed_at IS NULL`
	inImportant = `dismissed_at IS NULL AND importance = 'important'`
	inOther     = `dismissed_at IS NULL AND importance = 'other'`
	inSnoozed   = `dismissed_at IS NULL AND snoozed_until > $3`
	inCleared   = `dismissed_at IS NOT NULL`
)

func tabPredicate(tab string) string {
	switch tab {
	case TabImportant:
		return inImportant
	case TabOther:
		return inOther
	case TabSnoozed:
		return inSnoozed
	case TabCleared:
		return inCleared
	}
	return inAll
}

// insertValues is the row a new notification (or occurrence) writes.
type insertValues struct {
	ID          uuid.UUID
	UserID      uuid.UUID
	P           Params
	Actions     []byte
	Details     []byte
	Occurrences int
	Now         time.Time
}

// notificationUpsert inserts a notification or, when its group key names
// an open (unread, not dismissed) notification of the same owner, adds the
// occurrences to that one's count and gives it the new text, links and
// timestamp. The partial unique index makes this atomic. inserted is
// false when it updated an open notification (xmax is 0 only on a row
// this statement inserted).
func notificationUpsert(ctx context.Context, db postgres.DBTX, v insertValues) (n Notification, inserted bool, err error) {
	p := v.P
	q := `INSERT INTO notifications (id, user_id, project_id, title, message, type, severity, importance, category,
		related_resource_type, related_resource_id, expires_at, actions, source_type, source_id, action_url, action_label,
		group_key, details, task_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $21)`
	if p.GroupKey != "" {
		q += `
		ON CONFLICT (user_id, group_key) WHERE group_key IS NOT NULL AND read_at IS NULL AND dismissed_at IS NULL
		DO UPDATE SET project_id = EXCLUDED.project_id, title = EXCLUDED.title, message = EXCLUDED.message, type = EXCLUDED.type,
		  severity = EXCLUDED.severity, importance = EXCLUDED.importance, category = EXCLUDED.category,
		  related_resource_type = EXCLUDED.related_resource_type, related_resource_id = EXCLUDED.related_resource_id,
		  expires_at = EXCLUDED.expires_at, actions = EXCLUDED.actions, source_type = EXCLUDED.source_type,
		  source_id = EXCLUDED.source_id, action_url = EXCLUDED.action_url, action_label = EXCLUDED.action_label,
		  task_id = EXCLUDED.task_id, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
		  details = COALESCE(notifications.details, '{}') || COALESCE(EXCLUDED.details, '{}') || jsonb_build_object(
		    'count', CASE WHEN jsonb_typeof(notifications.details -> 'count') = 'number'
		                  THEN (notifications.details ->> 'count')::numeric::bigint ELSE 1 END + $22,
		    'firstAt', COALESCE(notifications.details -> 'firstAt', to_jsonb(notifications.created_at)))`
	}
	q += ` RETURNING ` + columns + `, xmax = 0 AS inserted`
	args := []any{
		v.ID, v.UserID, p.ProjectID, p.Title, p.Message, postgres.NullIfEmpty(p.Type), p.Severity, p.Importance, postgres.NullIfEmpty(p.Category),
		postgres.NullIfEmpty(p.RelatedResourceType), postgres.NullIfEmpty(p.RelatedResourceID), p.ExpiresAt, v.Actions, postgres.NullIfEmpty(p.SourceType),
		postgres.NullIfEmpty(p.SourceID), postgres.NullIfEmpty(p.ActionURL), postgres.NullIfEmpty(p.ActionLabel), postgres.NullIfEmpty(p.GroupKey), v.Details, p.TaskID, v.Now,
	}
	if p.GroupKey != "" {
		args = append(args, v.Occurrences)
	}
	type upserted struct {
		Notification
		Inserted bool `db:"inserted"`
	}
	rows, _ := db.Query(ctx, q, args...)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[upserted])
	if err != nil {
		return Notification{}, false, fmt.Errorf("insert notification: %w", err)
	}
	return r.Notification, r.Inserted, nil
}

// notificationOne runs query, which returns one notification row.
func notificationOne(ctx context.Context, db postgres.DBTX, query string, args ...any) (Notification, error) {
	n, err := postgres.One[Notification](ctx, db, ErrNotFound, query, args...)
	if err != nil {
		return Notification{}, fmt.Errorf("notification: %w", err)
	}
	return n, nil
}

// likePattern matches s anywhere, literally.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

func notificationList(ctx context.Context, db postgres.DBTX, o Owner, f Filter, now time.Time) ([]Notification, int, error) {
	search := ""
	if f.Search != "" {
		search = likePattern(f.Search)
	}
	from := `FROM notifications WHERE ` + owned() + ` AND ` + tabPredicate(f.Tab) + `
		  AND ($4 = '' OR category = $4)
		  AND ($5 = '' OR title ILIKE $5 ESCAPE '\' OR message ILIKE $5 ESCAPE '\')
		  AND (NOT $6 OR read_at IS NULL)`
	rows, _ := db.Query(ctx, `SELECT `+columns+`, count(*) OVER () AS total `+from+`
		ORDER BY created_at DESC, id DESC LIMIT $7 OFFSET $8`,
		o.UserID, o.ProjectID, now, f.Category, search, f.UnreadOnly, f.Limit, f.Offset)
	out, total, err := postgres.CollectPageOf[Notification](rows)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(out), f.Offset, total, `SELECT count(*) `+from,
			o.UserID, o.ProjectID, now, f.Category, search, f.UnreadOnly)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list notifications: %w", err)
	}
	return out, total, nil
}

func notificationCounts(ctx context.Context, db postgres.DBTX, o Owner, now time.Time) (Counts, error) {
	var c Counts
	err := db.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE `+inAll+`),
		count(*) FILTER (WHERE `+inImportant+`),
		count(*) FILTER (WHERE `+inOther+`),
		count(*) FILTER (WHERE `+inSnoozed+`),
		count(*) FILTER (WHERE `+inCleared+`)
		FROM notifications WHERE `+owned(), o.UserID, o.ProjectID, now).Scan(&c.All, &c.Important, &c.Other, &c.Snoozed, &c.Cleared)
	if err != nil {
		return Counts{}, fmt.Errorf("count notifications: %w", err)
	}
	return c, nil
}

func notificationStats(ctx context.Context, db postgres.DBTX, o Owner, now time.Time) (Stats, error) {
	var s Stats
	err := db.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE `+inAll+` AND read_at IS NULL),
		count(*) FILTER (WHERE `+inCleared+`),
		count(*)
		FROM notifications WHERE `+owned(), o.UserID, o.ProjectID, now).Scan(&s.Unread, &s.Dismissed, &s.Total)
	if err != nil {
		return Stats{}, fmt.Errorf("notification stats: %w", err)
	}
	return s, nil
}

// The timestamp columns notificationStamp sets.
const (
	stampRead      = "read_at"      // read
	stampDismissed = "dismissed_at" // moved to the cleared tab
)

// notificationStamp sets column (stampRead or stampDismissed) of one
// notification of o to now, keeping the first time of one already stamped.
func notificationStamp(ctx context.Context, db postgres.DBTX, o Owner, id uuid.UUID, column string, now time.Time) (Notification, error) {
	return notificationOne(ctx, db, `UPDATE notifications SET `+column+` = COALESCE(`+column+`, $3),
		updated_at = CASE WHEN `+column+` IS NULL THEN $3 ELSE updated_at END
		WHERE `+owned()+` AND id = $4 RETURNING `+columns, o.UserID, o.ProjectID, now, id)
}

// notificationMarkAllRead marks read every unread notification of the
// all tab and returns how many it changed.
func notificationMarkAllRead(ctx context.Context, db postgres.DBTX, o Owner, now time.Time) (int64, error) {
	tag, err := db.Exec(ctx, `UPDATE notifications SET read_at = $3, updated_at = $3
		WHERE `+owned()+` AND `+inAll+` AND read_at IS NULL`, o.UserID, o.ProjectID, now)
	if err != nil {
		return 0, fmt.Errorf("mark notifications read: %w", err)
	}
	return tag.RowsAffected(), nil
}

// notificationClearAll moves every notification of the all tab to the
// cleared tab and returns how many it moved.
func notificationClearAll(ctx context.Context, db postgres.DBTX, o Owner, now time.Time) (int64, error) {
	tag, err := db.Exec(ctx, `UPDATE notifications SET dismissed_at = $3, cleared_at = $3, updated_at = $3
		WHERE `+owned()+` AND `+inAll, o.UserID, o.ProjectID, now)
	if err != nil {
		return 0, fmt.Errorf("clear notifications: %w", err)
	}
	return tag.RowsAffected(), nil
}

// notificationSnooze snoozes a notification that is not dismissed until
// until. It reports ErrSnoozeGone for a dismissed one.
func notificationSnooze(ctx context.Context, tx pgx.Tx, o Owner, id uuid.UUID, until, now time.Time) (Notification, error) {
	cur, err := notificationOne(ctx, tx, `SELECT `+columns+` FROM notifications WHERE `+owned()+` AND id = $4 FOR UPDATE`,
		o.UserID, o.ProjectID, now, id)
	if err != nil {
		return Notification{}, err
	}
	if cur.Dismissed {
		return Notification{}, ErrSnoozeGone
	}
	return notificationOne(ctx, tx, `UPDATE notifications SET snoozed_until = $2, updated_at = $3 WHERE id = $1
		RETURNING `+columns, id, until, now)
}

// notificationDeleteExpired deletes notifications whose expiry passed.
func notificationDeleteExpired(ctx context.Context, db postgres.DBTX, now time.Time) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM notifications WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, fmt.Errorf("delete expired notifications: %w", err)
	}
	return tag.RowsAffected(), nil
}

func recipient(ctx context.Context, db postgres.DBTX, id uuid.UUID) (auth.Tenant, error) {
	type row struct {
		UserID    uuid.UUID  `db:"user_id"`
		ProjectID *uuid.UUID `db:"project_id"`
	}
	r, err := postgres.One[row](ctx, db, ErrNotFound, `SELECT user_id, project_id FROM notifications WHERE id = $1`, id)
	return auth.Tenant{User: r.UserID, Project: postgres.Value(r.ProjectID)}, err
}

// notificationSeen reports whether the owner of notification id may see
// it (seen).
func notificationSeen(ctx context.Context, db postgres.DBTX, id uuid.UUID) (bool, error) {
	ok, err := postgres.One[bool](ctx, db, ErrNotFound, `SELECT `+seen("notifications.user_id")+` FROM notifications WHERE id = $1`, id)
	if err != nil {
		return false, fmt.Errorf("notification seen: %w", err)
	}
	return ok, nil
}

// digestUnread is the predicate of the notifications a digest lists,
// of the user and at the time the SQL expressions user and now name:
// unread, not dismissed, not expired, not snoozed, and seen (no project
// the user left or that was deleted). Seen names the notification's own
// user, not user: in digestDue's EXISTS an outer user made it a join
// filter, and the plan a sequential scan of every notification.
func digestUnread(user, now string) string {
	return `user_id = ` + user + ` AND read_at IS NULL AND dismissed_at IS NULL AND (expires_at IS NULL OR expires_at > ` + now + `)
	AND (snoozed_until IS NULL OR snoozed_until <= ` + now + `) AND ` + seen("notifications.user_id")
}

// preferencesGet returns user's choices; without a row both are off.
func preferencesGet(ctx context.Context, db postgres.DBTX, user uuid.UUID) (Preferences, error) {
	p := Preferences{Digest: DigestOff}
	err := db.QueryRow(ctx, `SELECT email_important, digest FROM notification_preferences WHERE user_id = $1`, user).
		Scan(&p.EmailImportant, &p.Digest)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Preferences{}, fmt.Errorf("get notification preferences: %w", err)
	}
	return p, nil
}

// preferencesUpsert sets the fields of user's choices that u sets (a new
// row starts from both off) and returns them.
func preferencesUpsert(ctx context.Context, db postgres.DBTX, user uuid.UUID, u PreferencesUpdate, now time.Time) (Preferences, error) {
	var p Preferences
	err := db.QueryRow(ctx, `INSERT INTO notification_preferences (user_id, email_important, digest, created_at, updated_at)
		VALUES ($1, COALESCE($2, false), COALESCE($3, 'off'), $4, $4)
		ON CONFLICT (user_id) DO UPDATE SET email_important = COALESCE($2, notification_preferences.email_important),
		  digest = COALESCE($3, notification_preferences.digest), updated_at = $4
		RETURNING email_important, digest`, user, u.EmailImportant, u.Digest, now).Scan(&p.EmailImportant, &p.Digest)
	if err != nil {
		return Preferences{}, fmt.Errorf("set notification preferences: %w", err)
	}
	return p, nil
}

// digestDue lists up to limit users who chose the daily digest, have not
// had one on now's UTC day and have unread notifications.
func digestDue(ctx context.Context, db postgres.DBTX, now time.Time, limit int) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `SELECT p.user_id FROM notification_preferences p
		WHERE p.digest = 'daily'
		  AND NOT EXISTS (SELECT 1 FROM notification_digests d WHERE d.user_id = p.user_id AND d.day = ($1::timestamptz AT TIME ZONE 'UTC')::date)
		  AND EXISTS (SELECT 1 FROM notifications WHERE `+digestUnread("p.user_id", "$1")+`)
		ORDER BY p.user_id LIMIT $2`, now, limit)
	users, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("list users due a digest: %w", err)
	}
	return users, nil
}

// digestItems returns the newest limit notifications a digest of user
// lists, and how many there are in all.
func digestItems(ctx context.Context, db postgres.DBTX, user uuid.UUID, now time.Time, limit int) ([]Notification, int, error) {
	rows, _ := db.Query(ctx, `SELECT `+columns+`, count(*) OVER () AS total FROM notifications
		WHERE `+digestUnread("$1", "$2")+` ORDER BY created_at DESC, id DESC LIMIT $3`, user, now, limit)
	out, total, err := postgres.CollectPageOf[Notification](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list digest notifications: %w", err)
	}
	return out, total, nil
}

// digestInsert records user's digest of now's UTC day and reports whether
// it is the first of that day (false: one was recorded already).
func digestInsert(ctx context.Context, db postgres.DBTX, user uuid.UUID, now time.Time, job *uuid.UUID, count int) (bool, error) {
	return postgres.ExecOne(ctx, db, "record digest", `INSERT INTO notification_digests (user_id, day, email_job_id, notification_count, created_at)
		VALUES ($1, ($2::timestamptz AT TIME ZONE 'UTC')::date, $3, $4, $2) ON CONFLICT (user_id, day) DO NOTHING`, user, now, job, count)
}

func notificationExpireSource(ctx context.Context, db postgres.DBTX, sourceType, sourceID string, now time.Time) error {
	_, err := db.Exec(ctx, `UPDATE notifications SET expires_at = $3
		WHERE source_type = $1 AND source_id = $2 AND (expires_at IS NULL OR expires_at > $3)`, sourceType, sourceID, now)
	if err != nil {
		return fmt.Errorf("expire notifications of %s %s: %w", sourceType, sourceID, err)
	}
	return nil
}
