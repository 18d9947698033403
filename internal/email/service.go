package email

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/secrets"
)

// ConcurrencyDefault is the email queue's messages in flight per process:
// each is one SMTP connection.
const ConcurrencyDefault = 4

// Config wires the email domain.
type Config struct {
	Pool *pgxpool.Pool
	Jobs *jobqueue.Client
	// SMTPURL and From are GRAPHMILL_SMTP_URL and GRAPHMILL_EMAIL_FROM
	// (ParseSettings); both empty turn email off.
	SMTPURL string
	From    string
	// Box seals the jobs' secret template values (Job.Secrets): the box
	// provider credentials are sealed with.
	Box *secrets.Box
	// TLS verifies the SMTP server (nil: the system's roots).
	TLS *tls.Config
	// Backoff is the retry delay (nil: jobqueue.BackoffDefault).
	Backoff func(retry int) time.Duration
	Now     func() time.Time
}

// Service is the email domain: it queues messages for other domains, sends
// them when SMTP is configured, and lists and renders the queue's jobs for
// superadmins.
type Service struct {
	pool      *pgxpool.Pool
	jobs      *jobqueue.Client
	templates *Templates
	box       *secrets.Box
	worker    *Worker // nil when email is off
	backoff   func(retry int) time.Duration
	now       func() time.Time
}

// NewService returns the service; email is on when c carries SMTP
// settings.
func NewService(c Config) (*Service, error) {
	if c.Pool == nil || c.Jobs == nil || c.Box == nil {
		return nil, errors.New("email: incomplete configuration")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	settings, on, err := ParseSettings(c.SMTPURL, c.From)
	if err != nil {
		return nil, err
	}
	t, err := NewTemplates()
	if err != nil {
		return nil, err
	}
	s := &Service{pool: c.Pool, jobs: c.Jobs, templates: t, box: c.Box, backoff: c.Backoff, now: c.Now}
	if on {
		s.worker = NewWorker(c.Pool, t, c.Box, NewSender(settings, c.TLS))
	}
	return s, nil
}

// AddQueue registers the email queue. With email off it is declared only:
// its existing jobs are listed and rendered, never sent.
func (s *Service) AddQueue() error {
	q := DeclareQueue()
	if s.worker != nil {
		q = s.worker.Queue(s.backoff)
		q.Concurrency = ConcurrencyDefault
	}
	return s.jobs.AddQueue(q)
}

// Enabled reports whether email is configured (GRAPHMILL_SMTP_URL and
// GRAPHMILL_EMAIL_FROM).
func (s *Service) Enabled() bool { return s.worker != nil }

// Enqueue checks j and queues it in tx, the caller's transaction, so that
// the message exists exactly when what it is about does; j.ID is set when
// zero. With email off it queues nothing and returns nil.
func (s *Service) Enqueue(ctx context.Context, tx pgx.Tx, j *Job) error {
	if !s.Enabled() {
		return nil
	}
	return Enqueue(ctx, tx, s.templates, s.box, j, s.now())
}

// Preview renders email job id with its stored data, with email on or
// off. Errors: not_found (unknown id), failed_precondition (the job's data
// no longer renders with the built-in template).
func (s *Service) Preview(ctx context.Context, id uuid.UUID) (Preview, error) {
	p, err := RenderJob(ctx, s.pool, s.templates, id)
	if err != nil && jobqueue.IsPermanent(err) {
		return Preview{}, errs.Errorf(errs.FailedPrecondition, "email job %s does not render: %v", id, err)
	}
	return p, err
}
