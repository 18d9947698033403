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
)

// Worker sends the email queue's jobs: it renders the job's template with
// its stored data and delivers the message.
type Worker struct {
	db        postgres.DBTX
	templates *Templates
	sender    *Sender
}

// NewWorker returns the worker of the email queue.
func NewWorker(db postgres.DBTX, templates *Templates, sender *Sender) *Worker {
	return &Worker{db: db, templates: templates, sender: sender}
}

// Queue declares the email queue with this worker as its handler; backoff
// is the retry delay (nil: jobqueue.BackoffDefault).
func (w *Worker) Queue(backoff func(retry int) time.Duration) jobqueue.QueueConfig {
	return jobqueue.QueueConfig{Name: Queue, Table: "email_jobs", Handler: jobqueue.EachFunc(w.send), BackoffFunc: backoff}
}

// send delivers one job. Delivery and the job's completion cannot share a
// transaction: a crash between the SMTP reply and the commit sends the
// message again when the lease expires (at least once).
func (w *Worker) send(ctx context.Context, job jobqueue.Job) error {
	p, err := RenderJob(ctx, w.db, w.templates, job.ID)
	if errs.CodeOf(err) == errs.NotFound {
		return jobqueue.Permanent(err)
	}
	if err != nil {
		return err
	}
	return w.sender.Send(ctx, Message{ID: job.ID, To: mail.Address{Name: p.ToName, Address: p.ToEmail}, Subject: p.Subject, Body: Rendered{HTML: p.HTML, Text: p.Text}})
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

// RenderJob loads email job id and renders its template with its data.
//
// Errors: errs.NotFound for an unknown id; jobqueue.Permanent when the
// template no longer renders with the stored data.
func RenderJob(ctx context.Context, db postgres.DBTX, t *Templates, id uuid.UUID) (Preview, error) {
	var p Preview
	var data []byte
	err := db.QueryRow(ctx, `SELECT template_name, to_email, to_name, subject, data FROM email_jobs WHERE id = $1`, id).
		Scan(&p.TemplateName, &p.ToEmail, &p.ToName, &p.Subject, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return Preview{}, ErrJobNotFound
	}
	if err != nil {
		return Preview{}, fmt.Errorf("load email job: %w", err)
	}
	body, err := t.Render(p.TemplateName, json.RawMessage(data))
	if err != nil {
		return Preview{}, jobqueue.Permanent(err)
	}
	p.HTML, p.Text = body.HTML, body.Text
	return p, nil
}
