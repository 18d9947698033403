package notification_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// queueMailer queues email through email.Enqueue, as email.Service does,
// so the tests see the email_jobs rows the real service writes.
type queueMailer struct {
	templates *email.Templates
	on        bool
}

func (m *queueMailer) Enabled() bool { return m.on }

func (m *queueMailer) Enqueue(ctx context.Context, tx pgx.Tx, j *email.Job) error {
	return email.Enqueue(ctx, tx, m.templates, nil, j, time.Now())
}

type mailBundle struct {
	pool      *pgxpool.Pool
	svc       *notification.Service
	ten       *tenancy.Service
	mailer    *queueMailer
	templates *email.Templates
	at        atomic.Pointer[time.Time] // the service's clock
}

func (b *mailBundle) now() time.Time { return *b.at.Load() }

func (b *mailBundle) setNow(t time.Time) { b.at.Store(&t) }

func setupMail(t *testing.T) *mailBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	ten := tenancy.NewService(pool, nil, time.Now)
	_, err := ten.Bootstrap(ctx, "")
	require.NoError(t, err)
	tpl, err := email.NewTemplates()
	require.NoError(t, err)
	b := &mailBundle{pool: pool, ten: ten, templates: tpl, mailer: &queueMailer{templates: tpl, on: true}}
	b.setNow(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	b.svc = notification.NewService(pool, ten, b.now)
	b.svc.UseEmail(b.mailer, "https://graphmill.example.com/")
	return b
}

func (b *mailBundle) user(t *testing.T, address string) uuid.UUID {
	t.Helper()
	u, err := b.ten.CreateUser(context.Background(), address, "User "+address, nil)
	require.NoError(t, err)
	return u.ID
}

// subscriber is a new user with these choices.
func (b *mailBundle) subscriber(t *testing.T, address string, important bool, digest string) uuid.UUID {
	t.Helper()
	u := b.user(t, address)
	_, err := b.svc.SetPreferences(context.Background(), u, notification.PreferencesUpdate{EmailImportant: &important, Digest: &digest})
	require.NoError(t, err)
	return u
}

func (b *mailBundle) notify(t *testing.T, user uuid.UUID, p notification.Params) notification.Notification {
	t.Helper()
	var n notification.Notification
	require.NoError(t, postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		var err error
		n, err = b.svc.Notify(context.Background(), tx, user, p)
		return err
	}))
	return n
}

// queuedEmail is an email_jobs row, rendered.
type queuedEmail struct {
	ID       uuid.UUID
	Template string
	To       string
	Status   string
	Preview  email.Preview
}

// emails lists the email jobs to address, oldest first, rendered as the
// worker would send them.
func (b *mailBundle) emails(t *testing.T, address string) []queuedEmail {
	t.Helper()
	ctx := context.Background()
	rows, _ := b.pool.Query(ctx, `SELECT id, template_name, to_email, status FROM email_jobs WHERE to_email = $1 ORDER BY created_at, id`, address)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (queuedEmail, error) {
		var q queuedEmail
		err := r.Scan(&q.ID, &q.Template, &q.To, &q.Status)
		return q, err
	})
	require.NoError(t, err)
	for i := range out {
		out[i].Preview, err = email.RenderJob(ctx, b.pool, b.templates, out[i].ID)
		require.NoError(t, err)
	}
	return out
}

func important(title, group string) notification.Params {
	return notification.Params{
		Title: title, Message: "details of " + title, Importance: notification.ImportanceImportant, Severity: notification.SeverityError,
		GroupKey: group, ActionURL: "/projects/p/jobs/1", ActionLabel: "View job",
	}
}

func TestPreferencesDefaultAndPartialUpdate(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	ctx := context.Background()
	u := b.user(t, "prefs@example.com")

	p, err := b.svc.Preferences(ctx, u)
	require.NoError(t, err)
	require.Equal(t, notification.Preferences{EmailImportant: false, Digest: notification.DigestOff}, p)

	on := true
	p, err = b.svc.SetPreferences(ctx, u, notification.PreferencesUpdate{EmailImportant: &on})
	require.NoError(t, err)
	require.Equal(t, notification.Preferences{EmailImportant: true, Digest: notification.DigestOff}, p)

	daily := notification.DigestDaily
	p, err = b.svc.SetPreferences(ctx, u, notification.PreferencesUpdate{Digest: &daily})
	require.NoError(t, err)
	require.Equal(t, notification.Preferences{EmailImportant: true, Digest: notification.DigestDaily}, p, "an absent field is unchanged")

	weekly := "weekly"
	_, err = b.svc.SetPreferences(ctx, u, notification.PreferencesUpdate{Digest: &weekly})
	require.ErrorIs(t, err, notification.ErrDigest)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	p, err = b.svc.Preferences(ctx, u)
	require.NoError(t, err)
	require.Equal(t, notification.Preferences{EmailImportant: true, Digest: notification.DigestDaily}, p)
}

func TestImportantBurstQueuesOneEmail(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	u := b.subscriber(t, "burst@example.com", true, notification.DigestOff)

	for i := range 5 {
		b.notify(t, u, important(fmt.Sprintf("Parsing job failed #%d", i), "job-failed:parse"))
	}
	got := b.emails(t, "burst@example.com")
	require.Len(t, got, 1, "a burst of one group is one email")
	m := got[0]
	require.Equal(t, email.TemplateNotification, m.Template)
	require.Equal(t, "queued", m.Status)
	require.Equal(t, "Graphmill: Parsing job failed #0", m.Preview.Subject)
	require.Equal(t, "User burst@example.com", m.Preview.ToName)
	require.Contains(t, m.Preview.Text, "Parsing job failed #0")
	require.Contains(t, m.Preview.Text, "details of Parsing job failed #0")
	require.Contains(t, m.Preview.Text, "View job: https://graphmill.example.com/projects/p/jobs/1")
	require.Contains(t, m.Preview.HTML, `<a href="https://graphmill.example.com/projects/p/jobs/1">View job</a>`)

	// A concurrent burst of another group is one email too.
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
				_, err := b.svc.Notify(context.Background(), tx, u, important(fmt.Sprintf("Extraction failed %d", i), "job-failed:extract"))
				return err
			})
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	require.Len(t, b.emails(t, "burst@example.com"), 2, "one email per group")

	// Once read, the group is closed: the next occurrence opens a new one,
	// and emails again.
	list, _, err := b.svc.List(context.Background(), notification.Owner{UserID: u}, notification.Filter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 2)
	for _, n := range list {
		if n.GroupKey == "job-failed:parse" {
			require.Equal(t, float64(5), detailsCount(t, n))
			_, err := b.svc.MarkRead(context.Background(), notification.Owner{UserID: u}, n.ID)
			require.NoError(t, err)
		}
	}
	b.notify(t, u, important("Parsing job failed again", "job-failed:parse"))
	got = b.emails(t, "burst@example.com")
	require.Len(t, got, 3)
	require.Equal(t, "Graphmill: Parsing job failed again", got[2].Preview.Subject)
}

func detailsCount(t *testing.T, n notification.Notification) float64 {
	t.Helper()
	var d map[string]any
	require.NoError(t, json.Unmarshal(n.Details, &d))
	c, ok := d["count"].(float64)
	require.True(t, ok)
	return c
}

func TestImportantEmailOnlyWhenChosen(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	never := b.user(t, "never@example.com") // no preferences row: off
	off := b.subscriber(t, "off@example.com", false, notification.DigestDaily)
	on := b.subscriber(t, "on@example.com", true, notification.DigestOff)

	for _, u := range []uuid.UUID{never, off, on} {
		b.notify(t, u, important("Ungrouped important", ""))
		b.notify(t, u, notification.Params{Title: "Normal one", Importance: notification.ImportanceOther})
		b.notify(t, u, notification.Params{Title: "Normal grouped", GroupKey: "g"})
	}
	require.Empty(t, b.emails(t, "never@example.com"))
	require.Empty(t, b.emails(t, "off@example.com"))
	got := b.emails(t, "on@example.com")
	require.Len(t, got, 1, "only the important notification emails")
	require.Equal(t, "Graphmill: Ungrouped important", got[0].Preview.Subject)

	// Each ungrouped important notification is its own email.
	b.notify(t, on, important("Second ungrouped", ""))
	require.Len(t, b.emails(t, "on@example.com"), 2)
}

func TestImportantEmailRollsBackWithNotification(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	u := b.subscriber(t, "rollback@example.com", true, notification.DigestOff)
	boom := errors.New("the change failed")

	err := postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		if _, err := b.svc.Notify(context.Background(), tx, u, important("Rolled back", "rb")); err != nil {
			return err
		}
		var n int
		require.NoError(t, tx.QueryRow(context.Background(), `SELECT count(*) FROM email_jobs WHERE to_email = 'rollback@example.com'`).Scan(&n))
		require.Equal(t, 1, n, "queued in the notification's transaction")
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Empty(t, b.emails(t, "rollback@example.com"))

	// The group was never opened: the next occurrence emails.
	b.notify(t, u, important("Committed", "rb"))
	got := b.emails(t, "rollback@example.com")
	require.Len(t, got, 1)
	require.Equal(t, "Graphmill: Committed", got[0].Preview.Subject)
}

func TestEmailOffQueuesNothing(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	b.mailer.on = false
	u := b.subscriber(t, "quiet@example.com", true, notification.DigestDaily)

	b.notify(t, u, important("Important while email is off", "x"))
	require.NoError(t, postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		return b.svc.SendDigests(context.Background(), tx)
	}))
	require.Empty(t, b.emails(t, "quiet@example.com"))
	var digests int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM notification_digests`).Scan(&digests))
	require.Zero(t, digests)

	// A service without a mailer at all is the same.
	bare := notification.NewService(b.pool, b.ten, b.now)
	require.NoError(t, postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		if _, err := bare.Notify(context.Background(), tx, u, important("No mailer", "")); err != nil {
			return err
		}
		return bare.SendDigests(context.Background(), tx)
	}))
	require.Empty(t, b.emails(t, "quiet@example.com"))
}

func (b *mailBundle) runDigests(t *testing.T) {
	t.Helper()
	require.NoError(t, postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		return b.svc.SendDigests(context.Background(), tx)
	}))
}

func TestDailyDigest(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	ctx := context.Background()
	reader := b.subscriber(t, "reader@example.com", false, notification.DigestDaily)
	caughtUp := b.subscriber(t, "caughtup@example.com", false, notification.DigestDaily)
	noDigest := b.subscriber(t, "nodigest@example.com", true, notification.DigestOff)

	// reader: three unread (one of them important), one read, one
	// dismissed, one snoozed.
	b.notify(t, reader, notification.Params{Title: "Unread one", Message: "first message", ActionURL: "/projects/x/documents/1"})
	b.notify(t, reader, notification.Params{Title: "Unread two", Importance: notification.ImportanceImportant})
	b.notify(t, reader, notification.Params{Title: "Unread three", GroupKey: "grp", Occurrences: 4})
	read := b.notify(t, reader, notification.Params{Title: "Already read"})
	_, err := b.svc.MarkRead(ctx, notification.Owner{UserID: reader}, read.ID)
	require.NoError(t, err)
	gone := b.notify(t, reader, notification.Params{Title: "Dismissed one"})
	_, err = b.svc.Dismiss(ctx, notification.Owner{UserID: reader}, gone.ID)
	require.NoError(t, err)
	later := b.notify(t, reader, notification.Params{Title: "Snoozed one"})
	_, err = b.svc.Snooze(ctx, notification.Owner{UserID: reader}, later.ID, b.now().Add(48*time.Hour))
	require.NoError(t, err)
	// caughtUp: everything read.
	n := b.notify(t, caughtUp, notification.Params{Title: "Read long ago"})
	_, err = b.svc.MarkAllRead(ctx, notification.Owner{UserID: caughtUp})
	require.NoError(t, err)
	require.Equal(t, n.UserID, caughtUp)
	// noDigest: unread, but chose no digest.
	b.notify(t, noDigest, notification.Params{Title: "Unread but no digest"})

	b.runDigests(t)
	got := b.emails(t, "reader@example.com")
	require.Len(t, got, 1)
	d := got[0]
	require.Equal(t, email.TemplateDigest, d.Template)
	require.Equal(t, "Graphmill: 3 unread notifications", d.Preview.Subject)
	for _, want := range []string{"Unread one", "first message", "Unread two", "Unread three", "https://graphmill.example.com/projects/x/documents/1", "2026-11-24"} {
		require.Contains(t, d.Preview.Text, want)
		require.Contains(t, d.Preview.HTML, want)
	}
	for _, absent := range []string{"Already read", "Dismissed one", "Snoozed one", "more."} {
		require.NotContains(t, d.Preview.Text, absent)
	}
	require.Empty(t, b.emails(t, "caughtup@example.com"), "nothing unread: no digest")
	require.Empty(t, b.emails(t, "nodigest@example.com"))

	// Run again the same day, and twice at once: no second digest.
	b.setNow(time.Date(2026, 11, 24, 23, 59, 0, 0, time.UTC))
	b.notify(t, reader, notification.Params{Title: "Late in the day"})
	b.runDigests(t)
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error { return b.svc.SendDigests(ctx, tx) })
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	require.Len(t, b.emails(t, "reader@example.com"), 1, "at most one digest a day")
	var rows int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM notification_digests WHERE user_id = $1`, reader).Scan(&rows))
	require.Equal(t, 1, rows)

	// The next day: a new digest, with what is unread then.
	_, err = b.svc.MarkAllRead(ctx, notification.Owner{UserID: reader})
	require.NoError(t, err)
	b.setNow(time.Date(2026, 11, 25, 0, 5, 0, 0, time.UTC))
	b.notify(t, reader, notification.Params{Title: "Next day's news"})
	b.runDigests(t)
	got = b.emails(t, "reader@example.com")
	require.Len(t, got, 2)
	require.Equal(t, "Graphmill: 1 unread notification", got[1].Preview.Subject)
	require.Contains(t, got[1].Preview.Text, "Next day's news")
	require.Contains(t, got[1].Preview.Text, "2026-11-25")
	require.NotContains(t, got[1].Preview.Text, "Unread one")
}

func TestDigestListsTheNewestAndCountsTheRest(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	u := b.subscriber(t, "many@example.com", false, notification.DigestDaily)
	total := notification.DigestItemsMax + 3
	for i := range total {
		b.setNow(time.Date(2026, 11, 24, 9, 0, i, 0, time.UTC))
		b.notify(t, u, notification.Params{Title: fmt.Sprintf("Item %02d", i)})
	}
	b.runDigests(t)
	got := b.emails(t, "many@example.com")
	require.Len(t, got, 1)
	text := got[0].Preview.Text
	require.Equal(t, fmt.Sprintf("Graphmill: %d unread notifications", total), got[0].Preview.Subject)
	require.Contains(t, text, fmt.Sprintf("Item %02d", total-1))
	require.Contains(t, text, "Item 03")
	require.NotContains(t, text, "Item 02", "only the newest are listed")
	require.Contains(t, text, "And 3 more.")
}

// TestDigestOncePerDayIsADatabaseRule runs the digest in two transactions
// that overlap (two leaders for a moment, or a restart mid-run): both see
// the user due, the second waits on the first's digest row and, once the
// first commits, queues nothing.
func TestDigestOncePerDayIsADatabaseRule(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	ctx := context.Background()
	u := b.subscriber(t, "overlap@example.com", false, notification.DigestDaily)
	b.notify(t, u, notification.Params{Title: "Waiting for you"})

	first, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(ctx) }()
	require.NoError(t, b.svc.SendDigests(ctx, first))

	second := make(chan error, 1)
	go func() {
		second <- postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error { return b.svc.SendDigests(ctx, tx) })
	}()
	require.Eventually(t, func() bool {
		var waiting int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%notification_digests%'`).Scan(&waiting)
		return err == nil && waiting == 1
	}, 10*time.Second, 10*time.Millisecond, "the second run waits on the first's digest row")
	require.NoError(t, first.Commit(ctx))
	require.NoError(t, <-second)

	got := b.emails(t, "overlap@example.com")
	require.Len(t, got, 1)
	require.Contains(t, got[0].Preview.Text, "Waiting for you")
}

// TestNotificationEmailHasNoProject: a user's mail is a platform job, so
// that its failure never notifies a project's admins.
func TestNotificationEmailHasNoProject(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	var project uuid.UUID
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT id FROM projects`).Scan(&project))
	u := b.subscriber(t, "platform@example.com", true, notification.DigestOff)
	b.join(t, u, &project)
	p := important("In a project", "")
	p.ProjectID = &project
	n := b.notify(t, u, p)
	require.Equal(t, &project, n.ProjectID)
	got := b.emails(t, "platform@example.com")
	require.Len(t, got, 1)
	var jobProject *uuid.UUID
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT project_id FROM email_jobs WHERE id = $1`, got[0].ID).Scan(&jobProject))
	require.Nil(t, jobProject)
}

// TestDigestLeavesOutProjectsOutOfReach: the digest lists no notification
// of a project its reader left or of a deleted one (those of no project
// and of their projects stay), and a reader with only such unread
// notifications gets none.
func TestDigestLeavesOutProjectsOutOfReach(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	reader := b.subscriber(t, "reader@example.com", false, notification.DigestDaily)
	gone := b.subscriber(t, "gone@example.com", false, notification.DigestDaily)
	kept, left, deleted := b.outOfReach(t, reader, gone)
	b.notify(t, reader, notification.Params{Title: "Of no project"})
	b.notify(t, reader, notification.Params{ProjectID: kept, Title: "Of a kept project"})
	b.notify(t, reader, notification.Params{ProjectID: left, Title: "Of a project left"})
	b.notify(t, reader, notification.Params{ProjectID: deleted, Title: "Of a deleted project"})
	b.notify(t, gone, notification.Params{ProjectID: left, Title: "Of a project left"})

	b.runDigests(t)
	got := b.emails(t, "reader@example.com")
	require.Len(t, got, 1)
	require.Equal(t, "Graphmill: 2 unread notifications", got[0].Preview.Subject)
	require.Contains(t, got[0].Preview.Text, "Of no project")
	require.Contains(t, got[0].Preview.Text, "Of a kept project")
	require.NotContains(t, got[0].Preview.Text, "Of a project left")
	require.NotContains(t, got[0].Preview.Text, "Of a deleted project")
	require.Empty(t, b.emails(t, "gone@example.com"), "nothing unread that they may see: no digest")
}

// outOfReach makes three projects of the default organization (as a
// superadmin creator), kept, left and deleted, and users viewers of them,
// then has users leave left and deletes deleted.
func (b *mailBundle) outOfReach(t *testing.T, users ...uuid.UUID) (kept, left, deleted *uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	creator := &auth.Principal{UserID: b.user(t, "creator@example.com"), Superadmin: true}
	orgs, _, err := b.ten.ListOrgs(ctx, creator, tenancy.Page{Limit: 1})
	require.NoError(t, err)
	projects := make([]*uuid.UUID, 3)
	for i, name := range []string{"kept", "left", "deleted"} {
		p, err := b.ten.CreateProject(ctx, creator, orgs[0].ID, name)
		require.NoError(t, err)
		projects[i] = &p.ID
		for _, u := range users {
			b.join(t, u, &p.ID)
		}
	}
	kept, left, deleted = projects[0], projects[1], projects[2]
	for _, u := range users {
		require.NoError(t, b.ten.RemoveMember(ctx, *left, u))
	}
	require.NoError(t, b.ten.DeleteProject(ctx, *deleted, nil))
	return kept, left, deleted
}

// join makes user a viewer of projects.
func (b *mailBundle) join(t *testing.T, user uuid.UUID, projects ...*uuid.UUID) {
	t.Helper()
	for _, p := range projects {
		_, err := b.ten.AddMember(context.Background(), *p, user, "viewer")
		require.NoError(t, err)
	}
}

// TestImportantEmailOnlyOfProjectsInReach: an important notification of
// a project its owner left, or of a deleted one, queues no email (the
// inbox hides it; an email could not be taken back); one of a project in
// reach, or of none, does.
func TestImportantEmailOnlyOfProjectsInReach(t *testing.T) {
	t.Parallel()
	b := setupMail(t)
	u := b.subscriber(t, "mailed@example.com", true, notification.DigestOff)
	kept, left, deleted := b.outOfReach(t, u)
	for _, c := range []struct {
		project *uuid.UUID
		title   string
	}{{left, "Of a project left"}, {deleted, "Of a deleted project"}, {kept, "Of a kept project"}, {nil, "Of no project"}} {
		p := important(c.title, "")
		p.ProjectID = c.project
		b.notify(t, u, p)
	}
	var subjects []string
	for _, m := range b.emails(t, "mailed@example.com") {
		subjects = append(subjects, m.Preview.Subject)
	}
	require.Equal(t, []string{"Graphmill: Of a kept project", "Graphmill: Of no project"}, subjects)
}
