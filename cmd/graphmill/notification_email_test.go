package main

import (
	"bytes"
	"context"
	"io"
	"mime/quotedprintable"
	"net/mail"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/email/smtptest"
	"github.com/graphmill/graphmill/internal/notification"
)

type notificationPrefs struct {
	EmailImportant bool   `json:"emailImportant"`
	Digest         string `json:"digest"`
}

const prefsPath = "/api/me/notification-preferences"

func (s *testServer) prefs(token string) notificationPrefs {
	s.t.Helper()
	var p notificationPrefs
	s.must(200, "GET", prefsPath, token, nil).Decode(s.t, &p)
	return p
}

// storedPrefs reads the user's row as stored (absent: ok false).
func (s *testServer) storedPrefs(user string) (p notificationPrefs, ok bool) {
	s.t.Helper()
	rows, err := s.m.db.pool.Query(context.Background(), `SELECT email_important, digest FROM notification_preferences WHERE user_id = $1`, user)
	require.NoError(s.t, err)
	defer rows.Close()
	for rows.Next() {
		require.NoError(s.t, rows.Scan(&p.EmailImportant, &p.Digest))
		ok = true
	}
	require.NoError(s.t, rows.Err())
	return p, ok
}

func TestNotificationPreferencesRoundTrip(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	me, tok := s.newUser("prefs@example.com", []string{"notifications:read", "notifications:write"}, "")
	other, otherTok := s.newUser("prefs-other@example.com", []string{"notifications:read", "notifications:write"}, "")

	// Default: both off, nothing stored.
	require.Equal(t, notificationPrefs{Digest: "off"}, s.prefs(tok))
	_, stored := s.storedPrefs(me)
	require.False(t, stored)

	// PUT is partial: an absent field is unchanged.
	var got notificationPrefs
	s.must(200, "PUT", prefsPath, tok, map[string]any{"emailImportant": true}).Decode(t, &got)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "off"}, got)
	s.must(200, "PUT", prefsPath, tok, map[string]any{"digest": "daily"}).Decode(t, &got)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "daily"}, got)
	s.must(200, "PUT", prefsPath, tok, map[string]any{}).Decode(t, &got)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "daily"}, got)
	require.Equal(t, got, s.prefs(tok))
	row, stored := s.storedPrefs(me)
	require.True(t, stored)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "daily"}, row)
	// This server has no SMTP settings: email is off, nothing is queued.
	s.notify(me, notification.Params{Title: "Important, email off", Importance: notification.ImportanceImportant})
	all, _ := s.emailJobsTo("prefs@example.com")
	require.Zero(t, all)
	s.must(200, "PUT", prefsPath, tok, map[string]any{"emailImportant": false, "digest": "off"}).Decode(t, &got)
	require.Equal(t, notificationPrefs{Digest: "off"}, got)
	row, _ = s.storedPrefs(me)
	require.Equal(t, notificationPrefs{Digest: "off"}, row)

	// Each user has their own.
	s.must(200, "PUT", prefsPath, otherTok, map[string]any{"digest": "daily"})
	require.Equal(t, notificationPrefs{Digest: "daily"}, s.prefs(otherTok))
	require.Equal(t, notificationPrefs{Digest: "off"}, s.prefs(tok))
	row, _ = s.storedPrefs(other)
	require.Equal(t, notificationPrefs{Digest: "daily"}, row)
}

func TestNotificationPreferencesRejects(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	me, tok := s.newUser("prefs-bad@example.com", []string{"notifications:read", "notifications:write"}, "")
	_, reader := s.newUser("prefs-reader@example.com", []string{"notifications:read"}, "")
	_, noScope := s.newUser("prefs-noscope@example.com", []string{"documents:read"}, "")
	_, bound := s.newUser("prefs-bound@example.com", []string{"notifications:read", "notifications:write"}, project)
	s.must(200, "PUT", prefsPath, tok, map[string]any{"emailImportant": true})

	for _, c := range []struct {
		body   any
		detail string
	}{
		{map[string]any{"digest": "weekly"}, `body.digest: expected value to be one of "off, daily"`},
		{map[string]any{"digest": ""}, `body.digest: expected value to be one of "off, daily"`},
		{map[string]any{"emailImportant": "yes"}, "body.emailImportant: expected boolean"},
		{map[string]any{"emailImportant": true, "sms": true}, "body.sms: unexpected property"},
		{"[]", "body: expected object"},
		{"not json", ""},
	} {
		r := s.must(400, "PUT", prefsPath, tok, c.body)
		require.Contains(t, r.Detail(t), c.detail, "%v", c.body)
		require.NotEmpty(t, r.Detail(t))
	}
	row, _ := s.storedPrefs(me)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "off"}, row, "a refused PUT changes nothing")

	for _, r := range []struct {
		method string
		body   any
		scope  string
	}{{"GET", nil, "notifications:read"}, {"PUT", map[string]any{"digest": "daily"}, "notifications:write"}} {
		s.must(401, r.method, prefsPath, "", r.body)
		s.must(401, r.method, prefsPath, "gm_notatoken", r.body)
		require.Contains(t, s.must(403, r.method, prefsPath, noScope, r.body).Detail(t), r.scope)
		s.must(403, r.method, prefsPath, bound, r.body) // account settings: no project-bound token
	}
	require.Contains(t, s.must(403, "PUT", prefsPath, reader, map[string]any{"digest": "daily"}).Detail(t), "notifications:write")
	row, _ = s.storedPrefs(me)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "off"}, row)
}

// received is one message at the test SMTP server, decoded: its subject
// and its body (both parts, quoted-printable decoded).
type received struct {
	Subject string
	Body    string
}

// mailTo returns the messages srv accepted for address.
func mailTo(t *testing.T, srv *smtptest.Server, address string) []received {
	t.Helper()
	var out []received
	for _, m := range srv.Messages() {
		if !slices.Equal(m.Rcpt, []string{address}) {
			continue
		}
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		require.NoError(t, err)
		body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
		require.NoError(t, err)
		out = append(out, received{Subject: msg.Header.Get("Subject"), Body: string(body)})
	}
	return out
}

// emailJobsTo counts address's email jobs, and those of them completed.
func (s *testServer) emailJobsTo(address string) (all, done int) {
	s.t.Helper()
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE status = 'completed')
		FROM email_jobs WHERE to_email = $1`, address).Scan(&all, &done))
	return all, done
}

// TestImportantNotificationBurstIsOneEmail: a burst of job failures
// notifies the project's admins with one grouped important notification;
// the admin who chose email receives exactly one message for the whole
// burst, with the link under GRAPHMILL_PUBLIC_URL; an admin who did not,
// and a member who is not told, receive none.
func TestImportantNotificationBurstIsOneEmail(t *testing.T) {
	t.Parallel()
	s, srv, project := newInvitingServer(t)
	rw := []string{"notifications:read", "notifications:write"}
	_, keen := s.newMember("keen-admin@example.com", rw, project, "admin")
	_, quiet := s.newMember("quiet-admin@example.com", rw, project, "admin")
	_, viewer := s.newMember("keen-viewer@example.com", rw, project, "viewer")
	s.must(200, "PUT", prefsPath, keen, map[string]any{"emailImportant": true})
	s.must(200, "PUT", prefsPath, viewer, map[string]any{"emailImportant": true, "digest": "off"})
	s.must(200, "PUT", prefsPath, quiet, map[string]any{"digest": "off"})

	var failed []string
	for range 3 {
		failed = append(failed, s.failEmbeddingJobs(project, 10)...)
	}
	list := s.notifications(keen, "category=jobs")
	require.Len(t, list.Data, 1)
	require.EqualValues(t, len(failed), list.Data[0].Details["count"])
	require.Len(t, s.notifications(quiet, "category=jobs").Data, 1)

	require.Eventually(t, func() bool {
		all, done := s.emailJobsTo("keen-admin@example.com")
		return all == 1 && done == 1
	}, 20*time.Second, 10*time.Millisecond, "one email job for the burst, sent")
	got := mailTo(t, srv, "keen-admin@example.com")
	require.Len(t, got, 1, "one message for the whole burst")
	require.Equal(t, "Graphmill: Graph embedding job failed", got[0].Subject)
	require.Contains(t, got[0].Body, "Graph embedding job failed")
	require.Regexp(t, `View job: https://graphmill\.test/gm/projects/`+project+`/jobs/graph_embedding/[0-9a-f-]{36}`, got[0].Body)
	require.Contains(t, got[0].Body, `<a href="https://graphmill.test/gm/projects/`+project+`/jobs/graph_embedding/`)

	for _, other := range []string{"quiet-admin@example.com", "keen-viewer@example.com"} {
		all, _ := s.emailJobsTo(other)
		require.Zero(t, all, other)
		require.Empty(t, mailTo(t, srv, other), other)
	}

	// A normal notification to the keen admin sends nothing more.
	me := s.notifications(keen, "").Data[0].UserID
	s.notify(me, notification.Params{Title: "Just so you know", Importance: notification.ImportanceOther})
	all, _ := s.emailJobsTo("keen-admin@example.com")
	require.Equal(t, 1, all)
}

// digestRuns is how many times the digest task has run.
func (s *testServer) digestRuns() int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), `SELECT runs FROM scheduler_tasks WHERE name = 'notifications-digest'`).Scan(&n))
	return n
}

// runDigestTask moves the clock past the digest task's interval and
// waits for the scheduler to run it.
func (s *testServer) runDigestTask() {
	s.t.Helper()
	before := s.digestRuns()
	s.clock.Advance(notification.DigestInterval + time.Second)
	require.Eventually(s.t, func() bool { return s.digestRuns() > before }, 20*time.Second, 10*time.Millisecond)
}

// TestDailyDigestEmailed: the scheduler sends a user who chose the daily
// digest one message listing their unread notifications, and no second
// one the same day; a user with nothing unread gets none.
func TestDailyDigestEmailed(t *testing.T) {
	t.Parallel()
	s, srv, _ := newInvitingServer(t)
	// The scheduler runs every task once at start: let that run pass
	// before anyone chooses the digest, or it may send a digest of the
	// notifications made so far (and the day's one digest is spent).
	require.Eventually(t, func() bool { return s.digestRuns() >= 1 }, 20*time.Second, 10*time.Millisecond)
	rw := []string{"notifications:read", "notifications:write"}
	reader, readerTok := s.newUser("digest-reader@example.com", rw, "")
	idle, idleTok := s.newUser("digest-idle@example.com", rw, "")
	s.must(200, "PUT", prefsPath, readerTok, map[string]any{"digest": "daily"})
	s.must(200, "PUT", prefsPath, idleTok, map[string]any{"digest": "daily"})
	s.notify(reader, notification.Params{Title: "Review waiting", Message: "Three objects need review", ActionURL: "/tasks"})
	s.notify(reader, notification.Params{Title: "Import finished"})
	done := s.notify(reader, notification.Params{Title: "Read already"})
	s.must(200, "PATCH", "/api/notifications/"+done.ID+"/read", readerTok, nil)
	read := s.notify(idle, notification.Params{Title: "Seen"})
	s.must(200, "PATCH", "/api/notifications/"+read.ID+"/read", idleTok, nil)

	day := s.clock.Now().UTC().Format(time.DateOnly)
	s.runDigestTask()
	require.Eventually(t, func() bool {
		all, sent := s.emailJobsTo("digest-reader@example.com")
		return all == 1 && sent == 1
	}, 20*time.Second, 10*time.Millisecond)
	got := mailTo(t, srv, "digest-reader@example.com")
	require.Len(t, got, 1)
	require.Equal(t, "Graphmill: 2 unread notifications", got[0].Subject)
	for _, want := range []string{"Review waiting", "Three objects need review", "https://graphmill.test/gm/tasks", "Import finished"} {
		require.Contains(t, got[0].Body, want)
	}
	require.NotContains(t, got[0].Body, "Read already")
	all, _ := s.emailJobsTo("digest-idle@example.com")
	require.Zero(t, all, "nothing unread: no digest")

	// The next run, the same day: no second digest.
	s.runDigestTask()
	if s.clock.Now().UTC().Format(time.DateOnly) == day {
		all, _ = s.emailJobsTo("digest-reader@example.com")
		require.Equal(t, 1, all)
		var rows int
		require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM notification_digests WHERE user_id = $1`, reader).Scan(&rows))
		require.Equal(t, 1, rows)
	}
}
