package superadmin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/jobqueue"
)

type (
	extractionJobsIn struct {
		PageParams
		Status    string `query:"status" doc:"Only jobs in this status: queued, running, completed, failed, cancelled or requires_review."`
		JobType   string `query:"jobType" doc:"Only jobs of this type: full_extraction, reextraction or incremental."`
		ProjectID string `query:"projectId" doc:"Only this project's jobs."`
		HasError  string `query:"hasError" enum:"true,false" doc:"Only jobs with (true) or without (false) an error message."`
	}
	bulkIn struct {
		Body BulkRequest
	}
)

// registerJobs adds the superadmin job lists and bulk actions.
func registerJobs(api huma.API, h handlers, read, write auth.Rule) {
	huma.Register(api, httpapi.Op("superadmin-list-extraction-jobs", http.MethodGet, "/api/superadmin/extraction-jobs",
		"List every project's extraction jobs", read), h.listExtractionJobs)
	huma.Register(api, httpapi.Op("superadmin-cancel-extraction-jobs", http.MethodPost, "/api/superadmin/extraction-jobs/cancel",
		"Cancel queued and running extraction jobs", write), h.cancelExtractionJobs)
	huma.Register(api, httpapi.Op("superadmin-delete-extraction-jobs", http.MethodPost, "/api/superadmin/extraction-jobs/delete",
		"Delete finished extraction jobs", write), h.deleteExtractionJobs)
}

// hasError reads the hasError filter ("" when absent).
func hasError(s string) *bool {
	if s == "" {
		return nil
	}
	b := s == "true"
	return &b
}

func (h handlers) listExtractionJobs(ctx context.Context, in *extractionJobsIn) (*httpapi.Out[Paged[extraction.AdminJob]], error) {
	project, err := optionalID("projectId", in.ProjectID)
	if err != nil {
		return nil, err
	}
	f := extraction.AdminFilter{
		Status: in.Status, JobType: in.JobType, ProjectID: project, HasError: hasError(in.HasError),
		Limit: in.Limit, Offset: (in.Page - 1) * in.Limit,
	}
	list, total, counts, err := h.extraction.AdminJobs(ctx, f)
	return replyJobs(list, total, in.PageParams, counts, func(c extraction.StatusCount) (string, int, int) {
		return string(c.Status), c.Count, c.WithErrors
	}, err)
}

// replyJobs answers a page of a job list with its stats, or err when the
// call that gave them failed. counts hold every status of the list's
// vocabulary; count reads one (its name, jobs, jobs with an error).
// Failed is the status "failed", which every vocabulary names so.
func replyJobs[T, C any](list []T, total int, p PageParams, counts []C, count func(C) (string, int, int), err error) (*httpapi.Out[Paged[T]], error) {
	out, err := replyPaged(list, total, p, err)
	if err != nil {
		return nil, err
	}
	stats := JobStats{ByStatus: make(map[string]int, len(counts))}
	for _, c := range counts {
		status, n, withErrors := count(c)
		stats.ByStatus[status] = n
		stats.Total += n
		stats.WithErrors += withErrors
	}
	stats.Failed = stats.ByStatus[string(jobqueue.StatusFailed)]
	out.Body.Stats = &stats
	return out, nil
}

func (h handlers) cancelExtractionJobs(ctx context.Context, in *bulkIn) (*httpapi.Out[CancelResult], error) {
	user := auth.PrincipalFrom(ctx).UserID
	n, err := h.audited(ctx, audit.ExtractionJobsCancel, in.Body.IDs, func(tx pgx.Tx) (int, error) {
		return h.extraction.CancelJobs(ctx, tx, in.Body.IDs, &user)
	})
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("cancelled %d of %d extraction jobs (only queued and running jobs can be cancelled)", n, len(in.Body.IDs))
	return &httpapi.Out[CancelResult]{Body: CancelResult{Success: true, CancelledCount: n, Message: msg}}, nil
}

func (h handlers) deleteExtractionJobs(ctx context.Context, in *bulkIn) (*httpapi.Out[DeleteResult], error) {
	skipped := 0
	n, err := h.audited(ctx, audit.ExtractionJobsDelete, in.Body.IDs, func(tx pgx.Tx) (n int, err error) {
		n, skipped, err = h.extraction.DeleteJobs(ctx, tx, in.Body.IDs)
		return n, err
	})
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("deleted %d of %d extraction jobs; skipped %d queued or running", n, len(in.Body.IDs), skipped)
	return &httpapi.Out[DeleteResult]{Body: DeleteResult{Success: true, DeletedCount: n, Message: msg}}, nil
}
