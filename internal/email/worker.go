package email

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/secrets"
)

// Worker sends the email queue's jobs: it renders the job's template with
// its stored data and its opened secrets, and delivers the message.
type Worker struct {
	db        postgres.DBTX
	templates *Templates
	box       *secrets.Box
	sender    *Sender
}

// NewWorker returns the worker of the email queue; box opens the jobs'
// secrets.
func NewWorker(db postgres.DBTX, templates *Templates, box *secrets.Box, sender *Sender) *Worker {
	return &Worker{db: db, templates: templates, box: box, sender: sender}
}

// Queue declares the email queue with this worker as its handler; backoff
// is the retry delay (nil: jobqueue.BackoffDefault).
func (w *Worker) Queue(backoff func(retry int) time.Duration) jobqueue.QueueConfig {
	q := DeclareQueue()
	q.Handler, q.BackoffFunc = jobqueue.EachFunc(w.send), backoff
	return q
}

// DeclareQueue is the email queue without a handler: its table, and the
// sealed secrets the engine erases when a job ends.
func DeclareQueue() jobqueue.QueueConfig {
	return jobqueue.QueueConfig{Name: Queue, Table: "email_jobs", ClearOnFinal: []string{"secrets"}}
}

// send delivers one job. Delivery and the job's completion cannot share a
// transaction: a crash between the SMTP reply and the commit sends the
// message again when the lease expires (at least once).
func (w *Worker) send(ctx context.Context, job jobqueue.Job) error {
	p, err := renderJob(ctx, w.db, w.templates, job.ID, w.open)
	if errs.CodeOf(err) == errs.NotFound {
		return jobqueue.Permanent(err)
	}
	if err != nil {
		return err
	}
	return w.sender.Send(ctx, Message{ID: job.ID, To: mail.Address{Name: p.ToName, Address: p.ToEmail}, Subject: p.Subject, Body: Rendered{HTML: p.HTML, Text: p.Text}})
}

// open returns the secret values of job id from their sealed form.
func (w *Worker) open(id uuid.UUID, keys []string, sealed *string) (map[string]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if sealed == nil {
		return nil, jobqueue.Permanent(errors.New("the message's secret values were erased when the job ended: queue a new message (for an invitation, invite again)"))
	}
	raw, err := w.box.Open(*sealed, secretsPlace(id))
	if err != nil {
		return nil, jobqueue.Permanent(fmt.Errorf("open email job secrets: %w", err))
	}
	var values map[string]string
	if err := json.Unmarshal(raw, &values); err != nil {
		return nil, jobqueue.Permanent(fmt.Errorf("read email job secrets: %w", err))
	}
	return values, nil
}

// ErrJobNotFound answers an unknown email job id.
var ErrJobNotFound = errs.New(errs.NotFound, "email job not found")

// Preview is an email job rendered with its stored data: what
// preview-json returns and what the worker sends.
type Preview struct {
	Subject      string `json:"subject"`
	HTML         string `json:"html"`
	Text         string `json:"text"`
	ToEmail      string `json:"toEmail"`
	ToName       string `json:"toName"`
	TemplateName string `json:"templateName"`
}

// RenderJob loads email job id and renders its template with its data,
// each secret value shown as SecretPlaceholder (preview-json).
//
// Errors: errs.NotFound for an unknown id; jobqueue.Permanent when the
// template no longer renders with the stored data.
func RenderJob(ctx context.Context, db postgres.DBTX, t *Templates, id uuid.UUID) (Preview, error) {
	return renderJob(ctx, db, t, id, func(_ uuid.UUID, keys []string, _ *string) (map[string]string, error) {
		hidden := make(map[string]string, len(keys))
		for _, k := range keys {
			hidden[k] = SecretPlaceholder
		}
		return hidden, nil
	})
}

// renderJob loads email job id and renders its template with its data and
// the secret values reveal gives for its secret keys and sealed secrets.
func renderJob(ctx context.Context, db postgres.DBTX, t *Templates, id uuid.UUID,
	reveal func(id uuid.UUID, keys []string, sealed *string) (map[string]string, error),
) (Preview, error) {
	var p Preview
	var data []byte
	var keys []string
	var sealed *string
	err := db.QueryRow(ctx, `SELECT template_name, to_email, to_name, subject, data, secret_keys, secrets FROM email_jobs WHERE id = $1`, id).
		Scan(&p.TemplateName, &p.ToEmail, &p.ToName, &p.Subject, &data, &keys, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return Preview{}, ErrJobNotFound
	}
	if err != nil {
		return Preview{}, fmt.Errorf("load email job: %w", err)
	}
	values, err := reveal(id, keys, sealed)
	if err != nil {
		return Preview{}, err
	}
	merged, err := withValues(data, values)
	if err != nil {
		return Preview{}, jobqueue.Permanent(err)
	}
	body, err := t.Render(p.TemplateName, merged)
	if err != nil {
		return Preview{}, jobqueue.Permanent(err)
	}
	p.HTML, p.Text = body.HTML, body.Text
	return p, nil
}
