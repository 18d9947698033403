package email

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/secrets"
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
	// Secrets are template values that must not be stored in clear (a
	// link carrying a one-time token): sealed in their own column, merged
	// into Data only at send time, shown as SecretPlaceholder by
	// preview-json, and erased when the job ends. A key may not also be
	// one of Data's.
	Secrets map[string]string
}

// SecretPlaceholder is what preview-json shows for each secret value.
const SecretPlaceholder = "[hidden]"

// secretsPlace is where job id's sealed secrets live (the sealing's
// additional data).
func secretsPlace(id uuid.UUID) []byte { return secrets.Place("email_jobs", "secrets", id.String()) }

// Enqueue checks j (a known template that renders with its data and
// secrets, a valid recipient, a one-line subject) and inserts it queued in
// tx, its secrets sealed with box, waking the email workers at commit.
// j.ID is set when it is zero. box may be nil for a job without secrets.
func Enqueue(ctx context.Context, tx pgx.Tx, t *Templates, box *secrets.Box, j *Job, now time.Time) error {
	if strings.ContainsAny(j.Subject, "\r\n") || strings.TrimSpace(j.Subject) == "" {
		return fmt.Errorf("email subject must be one non-empty line")
	}
	if _, err := Recipient(j.ToName, j.ToEmail); err != nil {
		return err
	}
	data, err := withValues(j.Data, j.Secrets)
	if err != nil {
		return err
	}
	if _, err := t.Render(j.TemplateName, data); err != nil {
		return err
	}
	if j.ID == uuid.Nil {
		j.ID = uuid.Must(uuid.NewV7())
	}
	keys := append([]string{}, slices.Sorted(maps.Keys(j.Secrets))...) // never NULL
	var sealed *string
	if len(j.Secrets) > 0 {
		if box == nil {
			return errors.New("email job with secrets: no secret box")
		}
		// json.Marshal of a map of strings cannot fail.
		raw, _ := json.Marshal(j.Secrets)
		v := box.Seal(raw, secretsPlace(j.ID))
		sealed = &v
	}
	stored := j.Data
	if len(stored) == 0 {
		stored = json.RawMessage(`{}`)
	}
	_, err = tx.Exec(ctx, `INSERT INTO email_jobs
		(id, project_id, run_at, created_at, updated_at, template_name, to_email, to_name, subject, data, secret_keys, secrets, trace_parent)
		VALUES ($1, $2, $3, $3, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		j.ID, j.ProjectID, now, j.TemplateName, j.ToEmail, j.ToName, j.Subject, string(stored), keys, sealed, jobqueue.TraceParent(ctx))
	if err != nil {
		return fmt.Errorf("insert email job: %w", err)
	}
	return jobqueue.Notify(ctx, tx, Queue)
}

// withValues is data (a JSON object) with values added as strings.
// Errors: a value's key is already one of data's.
func withValues(data json.RawMessage, values map[string]string) (json.RawMessage, error) {
	if len(values) == 0 {
		return data, nil
	}
	m := map[string]any{}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("email data must be a JSON object: %w", err)
		}
	}
	for k, v := range values {
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("email secret %q is also a data key", k)
		}
		m[k] = v
	}
	// A map of JSON values marshals.
	out, _ := json.Marshal(m)
	return out, nil
}
