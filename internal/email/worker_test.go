package email

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/mail"
	"testing"
	"time"

	smtp "github.com/emersion/go-smtp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/email/smtptest"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/secrets"
)

// waitFor bounds every wait for a job's status.
const waitFor = 20 * time.Second

type emailRow struct {
	status     string
	attempt    int
	retryCount int
	errorMsg   *string
}

// startWorker runs the email queue on pool against srv (retries at once).
func startWorker(t *testing.T, srv *smtptest.Server) (enqueue func(Job) uuid.UUID, wait func(uuid.UUID, string) emailRow) {
	t.Helper()
	return startWorkerOn(t, pgtest.New(t), srv)
}

// startWorkerOn is startWorker on a pool the test holds.
func startWorkerOn(t *testing.T, pool *pgxpool.Pool, srv *smtptest.Server) (enqueue func(Job) uuid.UUID, wait func(uuid.UUID, string) emailRow) {
	t.Helper()
	ctx := context.Background()
	tpl, err := NewTemplates()
	require.NoError(t, err)
	c, err := jobqueue.NewClient(pool, jobqueue.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now,
		PollInterval: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	w := NewWorker(pool, tpl, testBox(t), senderFor(t, srv, "smtp", nil))
	require.NoError(t, c.AddQueue(w.Queue(func(int) time.Duration { return 0 })))
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Stop(context.Background()) })

	enqueue = func(j Job) uuid.UUID {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		require.NoError(t, Enqueue(ctx, tx, tpl, nil, &j, time.Now()))
		require.NoError(t, tx.Commit(ctx))
		return j.ID
	}
	wait = func(id uuid.UUID, status string) emailRow {
		var r emailRow
		require.Eventually(t, func() bool {
			require.NoError(t, pool.QueryRow(ctx, `SELECT status, attempt, retry_count, error_msg FROM email_jobs WHERE id = $1`, id).
				Scan(&r.status, &r.attempt, &r.retryCount, &r.errorMsg))
			return r.status == status
		}, waitFor, 5*time.Millisecond, "email job never became %s (last %+v)", status, r)
		return r
	}
	return enqueue, wait
}

// testBox is a secret box with a fresh key.
func testBox(t *testing.T) *secrets.Box {
	t.Helper()
	box, err := secrets.New(secrets.GenerateKey())
	require.NoError(t, err)
	return box
}

func invitationJob() Job {
	return Job{
		TemplateName: TemplateInvitation, ToEmail: "bob@example.com", ToName: "Bob", Subject: "Join Atlas",
		Data: json.RawMessage(`{"inviterName":"Ada","projectName":"Atlas","role":"project_user","link":"https://graphmill.test/accept?token=t1","expiresAt":"2026-12-01"}`),
	}
}

func TestWorkerSends(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, nil, false)
	enqueue, wait := startWorker(t, srv)
	id := enqueue(invitationJob())
	r := wait(id, "completed")
	require.Equal(t, 1, r.attempt)
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	require.Equal(t, []string{"bob@example.com"}, msgs[0].Rcpt)
	m, err := mail.ReadMessage(bytes.NewReader(msgs[0].Data))
	require.NoError(t, err)
	require.Equal(t, "Join Atlas", m.Header.Get("Subject"))
	p := parts(t, m)
	require.Contains(t, p["text/plain"], "Accept the invitation: https://graphmill.test/accept?token=t1")
	require.Contains(t, p["text/html"], `<a href="https://graphmill.test/accept?token=t1">`)
}

// TestWorkerMessageIDFromJob: the Message-ID is the job's id at the
// sender's domain, the same when the job is sent again (a crash between
// the server's reply and the commit), so receivers can de-duplicate; two
// jobs have two ids.
func TestWorkerMessageIDFromJob(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, nil, false)
	pool := pgtest.New(t)
	enqueue, wait := startWorkerOn(t, pool, srv)
	id := enqueue(invitationJob())
	wait(id, "completed")
	// As the reaper does with a lease that expired mid-send.
	_, err := pool.Exec(context.Background(), `UPDATE email_jobs SET status = 'queued', completed_at = NULL WHERE id = $1`, id)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(srv.Messages()) == 2 }, waitFor, 5*time.Millisecond)
	other := enqueue(invitationJob())
	wait(other, "completed")
	msgs := srv.Messages()
	require.Len(t, msgs, 3)
	ids := make([]string, len(msgs))
	for i, msg := range msgs {
		m, err := mail.ReadMessage(bytes.NewReader(msg.Data))
		require.NoError(t, err)
		ids[i] = m.Header.Get("Message-Id")
	}
	want := "<" + id.String() + "@graphmill.test>"
	require.Equal(t, []string{want, want, "<" + other.String() + "@graphmill.test>"}, ids)
}

func TestWorkerRetriesTemporaryReply(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, nil, false)
	srv.FailRcpt(&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "greylisted, try again"}, 1)
	enqueue, wait := startWorker(t, srv)
	id := enqueue(invitationJob())
	r := wait(id, "completed")
	require.Equal(t, 2, r.attempt, "the 4xx attempt, then the one that succeeded")
	require.Equal(t, 1, r.retryCount)
	require.Len(t, srv.Messages(), 1)
}

func TestWorkerFailsPermanentReply(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, nil, false)
	srv.FailRcpt(&smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox here"}, 0)
	enqueue, wait := startWorker(t, srv)
	id := enqueue(invitationJob())
	r := wait(id, "failed")
	require.Equal(t, 1, r.attempt, "a 5xx is not retried")
	require.NotNil(t, r.errorMsg)
	require.Contains(t, *r.errorMsg, "550")
	require.Contains(t, *r.errorMsg, "no such mailbox here")
	require.Empty(t, srv.Messages())
}

func TestRenderJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := pgtest.Tx(t)
	tpl, err := NewTemplates()
	require.NoError(t, err)
	j := invitationJob()
	require.NoError(t, Enqueue(ctx, tx, tpl, nil, &j, time.Now()))

	p, err := RenderJob(ctx, tx, tpl, j.ID)
	require.NoError(t, err)
	require.Equal(t, "Join Atlas", p.Subject)
	require.Equal(t, "bob@example.com", p.ToEmail)
	require.Equal(t, "Bob", p.ToName)
	require.Equal(t, TemplateInvitation, p.TemplateName)
	require.Contains(t, p.Text, "Accept the invitation: https://graphmill.test/accept?token=t1")
	require.Contains(t, p.HTML, `<a href="https://graphmill.test/accept?token=t1">`)

	_, err = RenderJob(ctx, tx, tpl, uuid.Must(uuid.NewV7()))
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
}
