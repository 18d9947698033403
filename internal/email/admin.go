package email

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
)

// The email vocabulary of job statuses (the superadmin list's), mapped at
// the edge from the job column block (DESIGN 6). The worker never asks for
// review, so requires_review does not occur.
const (
	StatusPending    = "pending"    // queued
	StatusProcessing = "processing" // running
	StatusSent       = "sent"       // completed
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// vocabulary pairs every email status with its job status, in list order.
var vocabulary = jobqueue.Vocabulary{ //nolint:gochecknoglobals // constant table
	{Name: StatusPending, Status: jobqueue.StatusQueued},
	{Name: StatusProcessing, Status: jobqueue.StatusRunning},
	{Name: StatusSent, Status: jobqueue.StatusCompleted},
	{Name: StatusFailed, Status: jobqueue.StatusFailed},
	{Name: StatusCancelled, Status: jobqueue.StatusCancelled},
}

// ErrBadStatus is the answer to a status outside the email vocabulary.
var ErrBadStatus = errs.New(errs.Invalid, "status must be one of pending, processing, sent, failed, cancelled")

// AdminEmailJob is an email job as the superadmin list shows it.
type AdminEmailJob struct {
	ID               uuid.UUID  `json:"id"`
	ProjectID        *uuid.UUID `json:"projectId,omitempty"`
	ProjectName      *string    `json:"projectName,omitempty"`
	OrganizationName *string    `json:"organizationName,omitempty"`
	TemplateName     string     `json:"templateName"`
	ToEmail          string     `json:"toEmail"`
	ToName           string     `json:"toName,omitempty"`
	Subject          string     `json:"subject"`
	Status           string     `json:"status" enum:"pending,processing,sent,failed,cancelled"`
	Attempt          int        `json:"attempt"`
	RetryCount       int        `json:"retryCount"`
	MaxRetries       int        `json:"maxRetries"`
	Priority         int        `json:"priority"`
	ErrorMessage     *string    `json:"errorMessage,omitempty"`
	CreatedAt        time.Time  `json:"createdAt"`
	StartedAt        *time.Time `json:"startedAt,omitempty"`
	CompletedAt      *time.Time `json:"completedAt,omitempty"`
	DurationMs       *int64     `json:"durationMs,omitempty"`
}

// AdminFilter narrows the superadmin list of email jobs.
type AdminFilter struct {
	// Status is an email status ("" for every one).
	Status string
	// Recipient matches to_email exactly, ignoring case.
	Recipient string
	// From and To bound created_at, both inclusive.
	From, To      *time.Time
	Limit, Offset int
}

// adminWhere is the filter of the list and its stats (which leave out the
// status, $4 of the list).
const adminWhere = `($1 = '' OR lower(j.to_email) = lower($1))
	AND ($2::timestamptz IS NULL OR j.created_at >= $2) AND ($3::timestamptz IS NULL OR j.created_at <= $3)`

// AdminJobs lists the email jobs, newest first, with the total, and
// counts them per email status over the same filters except status (every
// status, zeros included). Errors: invalid_argument (unknown status).
func (s *Service) AdminJobs(ctx context.Context, f AdminFilter) ([]AdminEmailJob, int, []jobqueue.NamedCount, error) {
	var status jobqueue.Status
	if f.Status != "" {
		st, ok := vocabulary.Status(f.Status)
		if !ok {
			return nil, 0, nil, ErrBadStatus
		}
		status = st
	}
	recipient := strings.TrimSpace(f.Recipient)
	rows, _ := s.pool.Query(ctx, adminJobsSQL(""), recipient, f.From, f.To, string(status), f.Limit, f.Offset)
	list, err := pgx.CollectRows(rows, adminJobOf)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("list email jobs: %w", err)
	}
	counts, err := jobqueue.CountByStatus(ctx, s.pool, `SELECT j.status, count(*)::int, count(j.error_msg)::int FROM email_jobs j
		WHERE `+adminWhere+` GROUP BY j.status`, recipient, f.From, f.To)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("count email jobs: %w", err)
	}
	// The list's total is the stats' count of the status filtered to (of
	// every status without one): no second count over the same rows.
	return list, jobqueue.CountOf(counts, string(status)), vocabulary.Counts(counts), nil
}

// adminJobsSQL is the page of the superadmin list: $1 recipient, $2 and
// $3 the creation bounds, $4 status, $5 limit, $6 offset, and cond, a
// further condition on the jobs (j).
func adminJobsSQL(cond string) string {
	return `
		SELECT j.id, j.project_id, p.name, o.name, j.template_name, j.to_email, j.to_name, j.subject, j.status,
		       j.attempt, j.retry_count, j.max_retries, j.priority, j.error_msg, j.created_at, j.started_at, j.completed_at,
		       (extract(epoch FROM j.completed_at - j.started_at) * 1000)::bigint
		FROM email_jobs j
		LEFT JOIN projects p ON p.id = j.project_id LEFT JOIN orgs o ON o.id = p.org_id
		WHERE ` + adminWhere + ` AND ($4 = '' OR j.status = $4)` + cond + `
		ORDER BY j.created_at DESC, j.id DESC LIMIT $5 OFFSET $6`
}

// adminJobOf reads a row of adminJobsSQL, its status in the email
// vocabulary.
func adminJobOf(r pgx.CollectableRow) (AdminEmailJob, error) {
	var j AdminEmailJob
	var st jobqueue.Status
	err := r.Scan(&j.ID, &j.ProjectID, &j.ProjectName, &j.OrganizationName, &j.TemplateName, &j.ToEmail, &j.ToName, &j.Subject, &st,
		&j.Attempt, &j.RetryCount, &j.MaxRetries, &j.Priority, &j.ErrorMessage, &j.CreatedAt, &j.StartedAt, &j.CompletedAt, &j.DurationMs)
	j.Status = vocabulary.Name(st)
	return j, err
}

// ProjectJob is the email job id about project (an invitation to it), as
// the superadmin list shows it (the console's project job page): never
// its template data or secrets. Errors: not_found (a job of another
// project, or of none, too).
func (s *Service) ProjectJob(ctx context.Context, project, id uuid.UUID) (AdminEmailJob, error) {
	rows, _ := s.pool.Query(ctx, adminJobsSQL(` AND j.project_id = $7 AND j.id = $8`), "", nil, nil, "", 1, 0, project, id)
	j, err := pgx.CollectExactlyOneRow(rows, adminJobOf)
	if errors.Is(err, pgx.ErrNoRows) {
		return AdminEmailJob{}, ErrJobNotFound
	}
	if err != nil {
		return AdminEmailJob{}, fmt.Errorf("read email job: %w", err)
	}
	return j, nil
}
