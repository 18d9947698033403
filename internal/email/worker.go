package email

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Table is the email queue's job table.
const Table = "email_jobs"

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
	return jobqueue.QueueConfig{Name: Queue, Table: Table, Handler: jobqueue.EachFunc(w.send), BackoffFunc: backoff}
}

// send delivers one job. Delivery and the job's completion cannot share a
// transaction: a crash between the SMTP reply and the commit sends the
// message again when the lease expires (at least once).
func (w *Worker) send(ctx context.Context, job jobqueue.Job) error {
	var j Job
	var data []byte
	err := w.db.QueryRow(ctx, `SELECT template_name, to_email, to_name, subject, data FROM email_jobs WHERE id = $1`, job.ID).
		Scan(&j.TemplateName, &j.ToEmail, &j.ToName, &j.Subject, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobqueue.Permanent(fmt.Errorf("email job %s is gone", job.ID))
	}
	if err != nil {
		return fmt.Errorf("load email job: %w", err)
	}
	body, err := w.templates.Render(j.TemplateName, json.RawMessage(data))
	if err != nil {
		return jobqueue.Permanent(err)
	}
	return w.sender.Send(ctx, Message{To: mail.Address{Name: j.ToName, Address: j.ToEmail}, Subject: j.Subject, Body: body})
}
