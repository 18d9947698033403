package email

import (
	"bytes"
	"context"
	"encoding/json"
	"net/mail"
	"strings"
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
)

// startService starts the email service's queue on a fresh database:
// email goes to srv, or is off when srv is nil.
func startService(t *testing.T, srv *smtptest.Server) (*Service, *pgxpool.Pool, *jobqueue.Client) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	c, err := jobqueue.NewClient(pool, jobqueue.Config{PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	cfg := Config{Pool: pool, Jobs: c, Box: testBox(t), Backoff: func(int) time.Duration { return 0 }}
	if srv != nil {
		cfg.SMTPURL, cfg.From = "smtp://"+srv.Addr, "Graphmill <noreply@graphmill.test>"
	}
	s, err := NewService(cfg)
	require.NoError(t, err)
	require.NoError(t, s.AddQueue())
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return s, pool, c
}

// enqueueIn queues j through s in a transaction of its own.
func enqueueIn(t *testing.T, s *Service, pool *pgxpool.Pool, j *Job) error {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	if err := s.Enqueue(ctx, tx, j); err != nil {
		return err
	}
	require.NoError(t, tx.Commit(ctx))
	return nil
}

func rowStatus(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) string {
	t.Helper()
	var st string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT status FROM email_jobs WHERE id = $1`, id).Scan(&st))
	return st
}

func TestServiceSends(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, nil, false)
	s, pool, _ := startService(t, srv)
	require.True(t, s.Enabled())

	j := invitationJob()
	require.NoError(t, enqueueIn(t, s, pool, &j))
	require.NotEqual(t, uuid.Nil, j.ID)
	require.Eventually(t, func() bool { return rowStatus(t, pool, j.ID) == "completed" }, waitFor, 5*time.Millisecond)
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	require.Equal(t, []string{"bob@example.com"}, msgs[0].Rcpt)
	require.Equal(t, "noreply@graphmill.test", msgs[0].From)

	// Invalid jobs are refused and nothing is queued.
	bad := invitationJob()
	bad.Data = json.RawMessage(`{}`)
	require.Error(t, enqueueIn(t, s, pool, &bad))
	bad = invitationJob()
	bad.ToEmail = "not an address"
	require.Error(t, enqueueIn(t, s, pool, &bad))
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM email_jobs`).Scan(&n))
	require.Equal(t, 1, n)

	// The job is rendered as it was sent.
	p, err := s.Preview(context.Background(), j.ID)
	require.NoError(t, err)
	require.Equal(t, "Join Atlas", p.Subject)
	require.Contains(t, p.Text, "https://graphmill.test/accept?token=t1")
}

// TestServiceSecrets: a job's secret values are stored only sealed in
// their own column (no column holds them in clear, before or after
// sending), reach the message the SMTP server receives, show as the
// placeholder in the preview, and are erased when the job ends (sent or
// failed).
func TestServiceSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startSMTP(t, nil, false)
	s, pool, _ := startService(t, srv)
	const link = "https://graphmill.test/accept#token=S3cretT0ken"
	leaks := func(id uuid.UUID) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM email_jobs e WHERE id = $1 AND strpos(e::text, 'S3cretT0ken') > 0`, id).Scan(&n))
		return n
	}
	stored := func(id uuid.UUID) (keys []string, sealed *string) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT secret_keys, secrets FROM email_jobs WHERE id = $1`, id).Scan(&keys, &sealed))
		return keys, sealed
	}
	withSecret := func(to string) Job {
		j := invitationJob()
		j.ToEmail = to
		j.Data = json.RawMessage(`{"inviterName":"Ada","projectName":"Atlas","role":"project_user","expiresAt":"2026-12-01"}`)
		j.Secrets = map[string]string{"link": link}
		return j
	}

	// Before the commit, as the worker would first see it.
	j := withSecret("bob@example.com")
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Enqueue(ctx, tx, &j))
	var inTx int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM email_jobs e WHERE strpos(e::text, 'S3cretT0ken') > 0`).Scan(&inTx))
	require.Zero(t, inTx, "the secret is in no column in clear")
	var sealed *string
	require.NoError(t, tx.QueryRow(ctx, `SELECT secrets FROM email_jobs WHERE id = $1`, j.ID).Scan(&sealed))
	require.NotNil(t, sealed)
	require.True(t, strings.HasPrefix(*sealed, "v1:"), "sealed by internal/secrets")
	require.NoError(t, tx.Commit(ctx))

	require.Eventually(t, func() bool { return rowStatus(t, pool, j.ID) == "completed" }, waitFor, 5*time.Millisecond)
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	m, err := mail.ReadMessage(bytes.NewReader(msgs[0].Data))
	require.NoError(t, err)
	p := parts(t, m)
	require.Contains(t, p["text/plain"], "Accept the invitation: "+link)
	require.Contains(t, p["text/html"], `<a href="`+link+`">`)
	keys, sealed := stored(j.ID)
	require.Equal(t, []string{"link"}, keys)
	require.Nil(t, sealed, "erased with the final status")
	require.Zero(t, leaks(j.ID))

	preview, err := s.Preview(ctx, j.ID)
	require.NoError(t, err)
	require.Contains(t, preview.Text, "Accept the invitation: "+SecretPlaceholder)
	require.NotContains(t, preview.Text+preview.HTML, "S3cretT0ken")

	// A job that fails for good loses its secrets as well.
	srv.FailRcpt(&smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}, 0)
	f := withSecret("carol@example.com")
	require.NoError(t, enqueueIn(t, s, pool, &f))
	require.Eventually(t, func() bool { return rowStatus(t, pool, f.ID) == "failed" }, waitFor, 5*time.Millisecond)
	_, sealed = stored(f.ID)
	require.Nil(t, sealed)
	require.Zero(t, leaks(f.ID))

	// A secret may not also be a data key.
	dup := withSecret("dan@example.com")
	dup.Data = invitationJob().Data
	require.ErrorContains(t, enqueueIn(t, s, pool, &dup), "also a data key")
}

// TestServiceOff: without SMTP settings nothing is queued, the queue is
// declared but not worked (a job already in the table stays queued), and
// existing jobs still render.
func TestServiceOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, c := startService(t, nil)
	require.False(t, s.Enabled())

	j := invitationJob()
	require.NoError(t, enqueueIn(t, s, pool, &j))
	require.Equal(t, uuid.Nil, j.ID)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM email_jobs`).Scan(&n))
	require.Zero(t, n)

	// A job queued while email was on (another process, an earlier start).
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	tpl, err := NewTemplates()
	require.NoError(t, err)
	old := invitationJob()
	require.NoError(t, Enqueue(ctx, tx, tpl, nil, &old, time.Now()))
	require.NoError(t, tx.Commit(ctx))
	time.Sleep(200 * time.Millisecond) // twenty polls in which a worker would have claimed it
	require.Equal(t, "queued", rowStatus(t, pool, old.ID))
	stats, err := c.Stats(ctx, nil)
	require.NoError(t, err)
	found := false
	for _, q := range stats {
		if q.Queue == Queue {
			found = true
			require.EqualValues(t, 1, q.Pending)
		}
	}
	require.True(t, found, "the email queue is declared")

	p, err := s.Preview(ctx, old.ID)
	require.NoError(t, err)
	require.Equal(t, TemplateInvitation, p.TemplateName)
	require.Contains(t, p.HTML, `<a href="https://graphmill.test/accept?token=t1">`)
	_, err = s.Preview(ctx, uuid.Must(uuid.NewV7()))
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
}

func TestNewServiceRefusesHalfSettings(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	c, err := jobqueue.NewClient(pool, jobqueue.Config{})
	require.NoError(t, err)
	_, err = NewService(Config{Pool: pool, Jobs: c, Box: testBox(t), SMTPURL: "smtp://127.0.0.1:2525"})
	require.ErrorContains(t, err, "must be set together")
	_, err = NewService(Config{Jobs: c})
	require.Error(t, err)
	_, err = NewService(Config{Pool: pool, Jobs: c})
	require.Error(t, err, "no secret box")
}
