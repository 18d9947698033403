package notification

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// System notification vocabulary.
const (
	TypeJobFailed           = "job_failed"
	TypeDocumentParseFailed = "document_parse_failed"
	CategoryJobs            = "jobs"
	CategoryDocuments       = "documents"
	// reasonMax bounds the error text quoted in a system notification.
	reasonMax = 1000
)

// JobFailedGroupKey groups the failures of one queue in one project, so a
// burst of failures is one notification with a count.
func JobFailedGroupKey(queue string, project uuid.UUID) string {
	return "job-failed:" + queue + ":" + project.String()
}

// DocumentFailedGroupKey groups a project's documents that could not be
// parsed, per uploader.
func DocumentFailedGroupKey(project uuid.UUID) string {
	return "document-parse-failed:" + project.String()
}

// JobOutcomes is a job engine observer (jobqueue.Client.Observe): every
// tenant job that gave up (failed after its last retry, or at once on a
// permanent error) notifies the admins of its project, one grouped
// notification per queue and project, in the transaction that records the
// failure.
func (s *Service) JobOutcomes(ctx context.Context, tx pgx.Tx, outcomes []jobqueue.Outcome) error {
	type key struct {
		queue   string
		project uuid.UUID
	}
	var order []key
	groups := map[key][]jobqueue.Outcome{}
	for _, o := range outcomes {
		if !o.FinalFailure() || o.Job.ProjectID == nil {
			continue // platform jobs have no project admins to tell
		}
		k := key{o.Job.Queue, *o.Job.ProjectID}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], o)
	}
	for _, k := range order {
		outs := groups[k]
		last := outs[len(outs)-1]
		reason := "unknown error"
		if last.Err != nil {
			reason = clip(last.Err.Error())
		}
		label := queueLabel(k.queue)
		_, err := s.NotifyProjectAdmins(ctx, tx, k.project, Params{
			Title:               label + " job failed",
			Message:             fmt.Sprintf("Job %s failed after %d attempt(s): %s", last.Job.ID, last.Job.Attempt, reason),
			Type:                TypeJobFailed,
			Severity:            SeverityError,
			Importance:          ImportanceImportant,
			Category:            CategoryJobs,
			RelatedResourceType: "job",
			RelatedResourceID:   last.Job.ID.String(),
			SourceType:          "job_queue",
			SourceID:            k.queue,
			ActionURL:           fmt.Sprintf("/projects/%s/jobs/%s/%s", k.project, k.queue, last.Job.ID),
			ActionLabel:         "View job",
			GroupKey:            JobFailedGroupKey(k.queue, k.project),
			Details:             map[string]any{"queue": k.queue, "jobId": last.Job.ID, "attempts": last.Job.Attempt, "error": reason},
			Occurrences:         len(outs),
		})
		if err != nil {
			return fmt.Errorf("notify failure of %s jobs: %w", k.queue, err)
		}
	}
	return nil
}

// DocumentParseFailed tells the uploader of a document that it could not
// be parsed, in the transaction that marks it failed.
func (s *Service) DocumentParseFailed(ctx context.Context, tx pgx.Tx, project, document, uploader uuid.UUID, filename, reason string) error {
	reason = clip(reason)
	_, err := s.Notify(ctx, tx, uploader, Params{
		ProjectID:           &project,
		Title:               "Document could not be parsed",
		Message:             fmt.Sprintf("%s: %s", filename, reason),
		Type:                TypeDocumentParseFailed,
		Severity:            SeverityError,
		Importance:          ImportanceImportant,
		Category:            CategoryDocuments,
		RelatedResourceType: "document",
		RelatedResourceID:   document.String(),
		SourceType:          "document",
		SourceID:            document.String(),
		ActionURL:           fmt.Sprintf("/projects/%s/documents/%s", project, document),
		ActionLabel:         "View document",
		GroupKey:            DocumentFailedGroupKey(project),
		Details:             map[string]any{"documentId": document, "filename": filename, "error": reason},
	})
	if err != nil {
		return fmt.Errorf("notify uploader of document %s: %w", document, err)
	}
	return nil
}

// queueLabel turns a queue name into words: document_parsing becomes
// "Document parsing".
func queueLabel(queue string) string {
	s := strings.ReplaceAll(queue, "_", " ")
	if s == "" {
		return "Background"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// clip bounds a quoted error text, on a rune boundary, as the database
// holds it (postgres.Text: the error may quote a provider, a connector or
// a file).
func clip(s string) string {
	s = postgres.Text(s)
	if utf8.RuneCountInString(s) <= reasonMax {
		return s
	}
	return string([]rune(s)[:reasonMax]) + "…"
}
