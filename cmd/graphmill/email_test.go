package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/email/smtptest"
)

// withSMTP turns email on, sending to srv.
func withSMTP(srv *smtptest.Server) serverOption {
	return func(c *config.Config) {
		c.SMTPURL, c.EmailFrom = "smtp://"+srv.Addr, "Graphmill <noreply@graphmill.test>"
	}
}

// emailJob is an invitation message to to, with subject.
func emailJob(to, subject string) email.Job {
	return email.Job{
		TemplateName: email.TemplateInvitation, ToEmail: to, ToName: "Bob", Subject: subject,
		Data: json.RawMessage(`{"inviterName":"Ada","projectName":"Atlas","role":"project_user","link":"https://graphmill.test/accept?token=t1","expiresAt":"2026-12-01"}`),
	}
}

// emailEnqueue queues j through the server's email service, in a
// transaction as a domain would.
func (s *testServer) emailEnqueue(j *email.Job) {
	s.t.Helper()
	ctx := context.Background()
	tx, err := s.m.db.pool.Begin(ctx)
	require.NoError(s.t, err)
	require.NoError(s.t, s.m.emails.Enqueue(ctx, tx, j))
	require.NoError(s.t, tx.Commit(ctx))
}

// emailInsert writes an email job as it exists whether or not email is
// on now (queued by an earlier start), then sets its columns.
func (s *testServer) emailInsert(j email.Job, set string, args ...any) string {
	s.t.Helper()
	ctx := context.Background()
	tpl, err := email.NewTemplates()
	require.NoError(s.t, err)
	tx, err := s.m.db.pool.Begin(ctx)
	require.NoError(s.t, err)
	require.NoError(s.t, email.Enqueue(ctx, tx, tpl, nil, &j, time.Now()))
	require.NoError(s.t, tx.Commit(ctx))
	if set != "" {
		_, err = s.m.db.pool.Exec(ctx, `UPDATE email_jobs SET `+set+` WHERE id = $1`, append([]any{j.ID}, args...)...)
		require.NoError(s.t, err)
	}
	return j.ID.String()
}

func (s *testServer) emailCount() int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM email_jobs`).Scan(&n))
	return n
}

// TestEmailSentThroughServer: with GRAPHMILL_SMTP_URL set, a message a
// domain queues reaches the SMTP server, and the list shows it sent.
func TestEmailSentThroughServer(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{})
	s := newServer(t, withSMTP(srv))
	require.True(t, s.m.emails.Enabled())
	j := emailJob("Bob@Example.com", "Join Atlas")
	s.emailEnqueue(&j)
	require.Eventually(t, func() bool { return len(srv.Messages()) == 1 }, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"Bob@Example.com"}, srv.Messages()[0].Rcpt)

	var l superadminJobList
	require.Eventually(t, func() bool {
		s.must(200, "GET", "/api/superadmin/email-jobs", s.admin, nil).Decode(t, &l)
		return len(l.Data) == 1 && l.Data[0]["status"] == "sent"
	}, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, j.ID.String(), l.Data[0]["id"])
	require.InDelta(t, 1, l.Data[0]["attempt"], 0)
	require.NotEmpty(t, l.Data[0]["completedAt"])
	require.Equal(t, 1, l.Stats.ByStatus["sent"])
}

// TestEmailOff: without SMTP settings nothing is queued, yet the list and
// the preview show the jobs that exist.
func TestEmailOff(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	require.False(t, s.m.emails.Enabled())
	j := emailJob("bob@example.com", "Join Atlas")
	s.emailEnqueue(&j)
	require.Zero(t, s.emailCount())

	var l superadminJobList
	s.must(200, "GET", "/api/superadmin/email-jobs", s.admin, nil).Decode(t, &l)
	require.Empty(t, l.Data)
	require.NotNil(t, l.Data)
	require.Equal(t, map[string]int{"pending": 0, "processing": 0, "sent": 0, "failed": 0, "cancelled": 0}, l.Stats.ByStatus)

	id := s.emailInsert(emailJob("bob@example.com", "Join Atlas"), "")
	p := s.must(200, "GET", "/api/superadmin/email-jobs/"+id+"/preview-json", s.admin, nil).JSON(t)
	require.Equal(t, "Join Atlas", p["subject"])
	require.Equal(t, "bob@example.com", p["toEmail"])
	require.Equal(t, "Bob", p["toName"])
	require.Equal(t, "invitation", p["templateName"])
	require.Contains(t, p["text"], "Accept the invitation: https://graphmill.test/accept?token=t1")
	require.Contains(t, p["html"], `<a href="https://graphmill.test/accept?token=t1">`)
	require.Len(t, p, 6)
	s.must(200, "GET", "/api/superadmin/email-jobs", s.admin, nil).Decode(t, &l)
	require.Len(t, l.Data, 1)
	require.Equal(t, "pending", l.Data[0]["status"], "a declared queue is not worked")

	// A job whose data no longer renders (a template changed since).
	stale := s.emailInsert(emailJob("bob@example.com", "Join Atlas"), `data = '{"projectName":"Atlas"}'`)
	r := s.must(409, "GET", "/api/superadmin/email-jobs/"+stale+"/preview-json", s.admin, nil)
	require.Equal(t, "failed_precondition", r.JSON(t)["code"])
	require.Contains(t, r.Detail(t), "does not render")

	for _, bad := range []string{uuid.NewString(), "not-a-uuid"} {
		r := s.must(404, "GET", "/api/superadmin/email-jobs/"+bad+"/preview-json", s.admin, nil)
		require.Equal(t, "not_found", r.JSON(t)["code"])
	}
}

func TestSuperadminEmailJobList(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(day int) time.Time { return base.AddDate(0, 0, day) }
	pending := s.emailInsert(emailJob("alice@example.com", "A"), "created_at = $2", at(0))
	failed := s.emailInsert(emailJob("Bob@Example.com", "B"),
		"created_at = $2, status = 'failed', error_msg = '550 no such mailbox', attempt = 1, started_at = $2, completed_at = $2::timestamptz + interval '1500 ms'", at(1))
	sent := s.emailInsert(emailJob("bob@example.com", "C"),
		"created_at = $2, status = 'completed', attempt = 2, retry_count = 1, started_at = $2, completed_at = $2::timestamptz + interval '2 s', project_id = $3, priority = 5",
		at(2), uuid.MustParse(project))
	running := s.emailInsert(emailJob("carol@example.com", "D"), "created_at = $2, status = 'running', started_at = $2", at(3))
	cancelled := s.emailInsert(emailJob("bobby@example.com", "E"), "created_at = $2, status = 'cancelled'", at(4))
	path := "/api/superadmin/email-jobs"
	ids := func(l superadminJobList) []any {
		out := []any{}
		for _, d := range l.Data {
			out = append(out, d["id"])
		}
		return out
	}

	var l superadminJobList
	s.must(200, "GET", path, s.admin, nil).Decode(t, &l)
	require.Equal(t, []any{cancelled, running, sent, failed, pending}, ids(l), "newest first")
	require.Equal(t, 5, l.Meta.Total)
	require.Equal(t, 20, l.Meta.Limit)
	require.Equal(t, 5, l.Stats.Total)
	require.Equal(t, 1, l.Stats.Failed)
	require.Equal(t, 1, l.Stats.WithErrors)
	require.Equal(t, map[string]int{"pending": 1, "processing": 1, "sent": 1, "failed": 1, "cancelled": 1}, l.Stats.ByStatus)
	c := l.Data[2]
	require.Equal(t, "sent", c["status"])
	require.Equal(t, "bob@example.com", c["toEmail"])
	require.Equal(t, "Bob", c["toName"])
	require.Equal(t, "C", c["subject"])
	require.Equal(t, "invitation", c["templateName"])
	require.Equal(t, project, c["projectId"])
	require.Equal(t, "default", c["projectName"])
	require.Equal(t, "default", c["organizationName"])
	require.InDelta(t, 2000, c["durationMs"], 0)
	require.InDelta(t, 2, c["attempt"], 0)
	require.InDelta(t, 1, c["retryCount"], 0)
	require.InDelta(t, 3, c["maxRetries"], 0)
	require.InDelta(t, 5, c["priority"], 0)
	require.InDelta(t, 0, l.Data[4]["priority"], 0, "zero is shown")
	f := l.Data[3]
	require.Equal(t, "failed", f["status"])
	require.Equal(t, "550 no such mailbox", f["errorMessage"])
	require.NotContains(t, f, "projectId")
	require.NotContains(t, f, "projectName")
	require.Equal(t, "pending", l.Data[4]["status"])
	require.NotContains(t, l.Data[4], "startedAt")
	require.Equal(t, "processing", l.Data[1]["status"])
	require.Equal(t, "cancelled", l.Data[0]["status"])

	// Statuses in the email vocabulary narrow the list, not the stats.
	for status, want := range map[string]string{"pending": pending, "processing": running, "sent": sent, "failed": failed, "cancelled": cancelled} {
		s.must(200, "GET", path+"?status="+status, s.admin, nil).Decode(t, &l)
		require.Equal(t, []any{want}, ids(l), status)
		require.Equal(t, 1, l.Meta.Total)
		require.Equal(t, 5, l.Stats.Total)
	}
	// The recipient matches the whole address, ignoring case: not bobby@.
	s.must(200, "GET", path+"?recipient=BOB@example.COM", s.admin, nil).Decode(t, &l)
	require.Equal(t, []any{sent, failed}, ids(l))
	require.Equal(t, 2, l.Stats.Total)
	require.Equal(t, map[string]int{"pending": 0, "processing": 0, "sent": 1, "failed": 1, "cancelled": 0}, l.Stats.ByStatus)
	s.must(200, "GET", path+"?recipient=bob", s.admin, nil).Decode(t, &l)
	require.Empty(t, l.Data)
	// Dates bound created_at, both inclusive.
	q := fmt.Sprintf("?fromDate=%s&toDate=%s", at(1).Format(time.RFC3339), strings.Replace(at(3).Format(time.RFC3339), "Z", "%2B00:00", 1))
	s.must(200, "GET", path+q, s.admin, nil).Decode(t, &l)
	require.Equal(t, []any{running, sent, failed}, ids(l))
	require.Equal(t, 3, l.Stats.Total)
	s.must(200, "GET", path+q+"&status=sent&recipient=bob@example.com", s.admin, nil).Decode(t, &l)
	require.Equal(t, []any{sent}, ids(l))
	require.Equal(t, 2, l.Stats.Total)
	s.must(200, "GET", path+"?fromDate="+at(4).Add(time.Millisecond).Format(time.RFC3339Nano), s.admin, nil).Decode(t, &l)
	require.Empty(t, l.Data)
	// Paging.
	s.must(200, "GET", path+"?limit=2&page=3", s.admin, nil).Decode(t, &l)
	require.Equal(t, []any{pending}, ids(l))
	require.Equal(t, 3, l.Meta.TotalPages)
	require.False(t, l.Meta.HasNext)
	require.True(t, l.Meta.HasPrev)

	for _, bad := range []string{
		"status=queued", "status=completed", "status=bogus", "fromDate=yesterday", "toDate=2026-11-01",
		"fromDate=2026-11-03T00:00:00Z&toDate=2026-11-02T00:00:00Z", "limit=0", "limit=101", "page=0",
		"recipient=" + strings.Repeat("a", 321),
	} {
		r := s.must(400, "GET", path+"?"+bad, s.admin, nil)
		require.NotEmpty(t, r.Detail(t), bad)
	}
	require.Contains(t, s.must(400, "GET", path+"?status=queued", s.admin, nil).Detail(t), "pending, processing, sent, failed, cancelled")
	require.Equal(t, "fromDate must not be after toDate", s.must(400, "GET", path+"?fromDate=2026-11-03T00:00:00Z&toDate=2026-11-02T00:00:00Z", s.admin, nil).Detail(t))
}

func TestSuperadminEmailRoutesRefuseOthers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	id := s.emailInsert(emailJob("bob@example.com", "Join"), "")
	_, member := s.newMember("u@example.com", allScopes, project, "admin")
	var bound map[string]any
	s.must(201, "POST", "/api/projects/"+project+"/tokens", s.admin, map[string]any{"name": "b", "scopes": allScopes}).Decode(t, &bound)
	for _, path := range []string{"/api/superadmin/email-jobs", "/api/superadmin/email-jobs/" + id + "/preview-json"} {
		s.must(401, "GET", path, "", nil)
		require.Contains(t, s.must(403, "GET", path, member, nil).Detail(t), "superadmin")
		s.must(403, "GET", path, bound["token"].(string), nil)
	}
}
