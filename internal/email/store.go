package email

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
)

// Queue is the email queue's name (DESIGN 6); its job table is email_jobs.
const Queue = "email"

// Job is one message to send as the email_jobs row holds it: the body is
// rendered from TemplateName and Data at send time (and by preview-json).
type Job struct {
	ID           uuid.UUID
	ProjectID    *uuid.UUID // the project the message is about, if any
	TemplateName string
	ToEmail      string
	ToName       string
	Subject      string
	Data         json.RawMessage
}

// Enqueue checks j (a known template that renders with its data, a valid
// recipient, a one-line subject) and inserts it queued in tx, waking the
// email workers at commit. j.ID is set when it is zero.
func Enqueue(ctx context.Context, tx pgx.Tx, t *Templates, j *Job, now time.Time) error {
	if strings.ContainsAny(j.Subject, "\r\n") || strings.TrimSpace(j.Subject) == "" {
		return fmt.Errorf("email subject must be one non-empty line")
	}
	if _, err := Recipient(j.ToName, j.ToEmail); err != nil {
		return err
	}
	if _, err := t.Render(j.TemplateName, j.Data); err != nil {
		return err
	}
	if j.ID == uuid.Nil {
		j.ID = uuid.Must(uuid.NewV7())
	}
	_, err := tx.Exec(ctx, `INSERT INTO email_jobs
		(id, project_id, run_at, created_at, updated_at, template_name, to_email, to_name, subject, data)
		VALUES ($1, $2, $3, $3, $3, $4, $5, $6, $7, $8)`,
		j.ID, j.ProjectID, now, j.TemplateName, j.ToEmail, j.ToName, j.Subject, string(j.Data))
	if err != nil {
		return fmt.Errorf("insert email job: %w", err)
	}
	return jobqueue.Notify(ctx, tx, Queue)
}
