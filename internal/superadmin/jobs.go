package superadmin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/jobqueue"
)

type (
	// JobFilters are the query parameters every superadmin job list has.
	JobFilters struct {
		PageParams
		Status    string `query:"status" doc:"Only jobs in this status: queued, running, completed, failed, cancelled or requires_review."`
		ProjectID string `query:"projectId" doc:"Only this project's jobs."`
		HasError  string `query:"hasError" enum:"true,false" doc:"Only jobs with (true) or without (false) an error message."`
	}
	extractionJobsIn struct {
		JobFilters
		JobType string `query:"jobType" doc:"Only jobs of this type: full_extraction, reextraction or incremental."`
	}
	embeddingJobsIn struct {
		JobFilters
		Type string `query:"type" doc:"Only jobs of this kind: graph (graph object embeddings) or chunk (document chunk embeddings)."`
	}
	bulkIn struct {
		Body BulkRequest
	}
)

// Resolve refuses "ids": null (the schema lets an array be null, and no
// ids would select every job of the queue) and de-duplicates the ids
// once, after validation, for every bulk action: an id given twice is one
// job (its "of M", the audit row's requested and target ids count it once).
func (in *bulkIn) Resolve(huma.Context) []error {
	if in.Body.IDs == nil {
		return []error{&huma.ErrorDetail{Location: "body.ids", Message: "expected an array of 1 to 1000 job ids, not null", Value: nil}}
	}
	seen := make(map[uuid.UUID]bool, len(in.Body.IDs))
	ids := in.Body.IDs[:0]
	for _, id := range in.Body.IDs {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	in.Body.IDs = ids
	return nil
}

// registerJobs adds the superadmin job lists and bulk actions.
func registerJobs(api huma.API, h handlers, read, write auth.Rule) {
	huma.Register(api, httpapi.Op("superadmin-list-extraction-jobs", http.MethodGet, "/api/superadmin/extraction-jobs",
		"List every project's extraction jobs", read), h.listExtractionJobs)
	huma.Register(api, httpapi.Op("superadmin-cancel-extraction-jobs", http.MethodPost, "/api/superadmin/extraction-jobs/cancel",
		"Cancel queued and running extraction jobs", write), h.cancelExtractionJobs)
	huma.Register(api, httpapi.Op("superadmin-delete-extraction-jobs", http.MethodPost, "/api/superadmin/extraction-jobs/delete",
		"Delete finished extraction jobs", write), h.deleteExtractionJobs)
	huma.Register(api, httpapi.Op("superadmin-list-document-parsing-jobs", http.MethodGet, "/api/superadmin/document-parsing-jobs",
		"List every project's document parsing jobs", read), h.listParsingJobs)
	huma.Register(api, httpapi.Op("superadmin-delete-document-parsing-jobs", http.MethodPost, "/api/superadmin/document-parsing-jobs/delete",
		"Delete finished document parsing jobs", write), h.deleteParsingJobs)
	huma.Register(api, httpapi.Op("superadmin-retry-document-parsing-jobs", http.MethodPost, "/api/superadmin/document-parsing-jobs/retry",
		"Parse the documents of failed parsing jobs again", write), h.retryParsingJobs)
	huma.Register(api, httpapi.Op("superadmin-list-embedding-jobs", http.MethodGet, "/api/superadmin/embedding-jobs",
		"List every project's graph and chunk embedding jobs as one list", read), h.listEmbeddingJobs)
	huma.Register(api, httpapi.Op("superadmin-delete-embedding-jobs", http.MethodPost, "/api/superadmin/embedding-jobs/delete",
		"Delete finished embedding jobs", write), h.deleteEmbeddingJobs)
	huma.Register(api, httpapi.Op("superadmin-cleanup-orphan-embedding-jobs", http.MethodPost, "/api/superadmin/embedding-jobs/cleanup-orphans",
		"Delete the embedding jobs whose chunk or object is deleted", write), h.cleanupEmbeddingOrphans)
}

// filter reads the filters common to every job list.
func (f JobFilters) filter() (jobqueue.ListFilter, error) {
	project, err := httpapi.ParseOptionalID("projectId", f.ProjectID)
	if err != nil {
		return jobqueue.ListFilter{}, err
	}
	var hasError *bool
	if f.HasError != "" {
		b := f.HasError == "true"
		hasError = &b
	}
	return jobqueue.ListFilter{
		Status: f.Status, ProjectID: project, HasError: hasError, Limit: f.Limit, Offset: f.offset(),
	}, nil
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

// replyQueueJobs is replyJobs for a list in the job engine's vocabulary
// (counted over the list's filters but status): the page's total is its
// status's count.
// namedCount reads a count in a list's own status words.
func namedCount(c jobqueue.NamedCount) (string, int, int) { return c.Name, c.Count, c.WithErrors }

func replyQueueJobs[T any](list []T, counts []jobqueue.StatusCount, f JobFilters, err error) (*httpapi.Out[Paged[T]], error) {
	return replyJobs(list, jobqueue.CountOf(counts, f.Status), f.PageParams, counts, func(c jobqueue.StatusCount) (string, int, int) {
		return string(c.Status), c.Count, c.WithErrors
	}, err)
}

// bulkDelete runs del, a bulk delete of what among ids that returns how
// many jobs it deleted and how many it skipped (queued or running), with
// its audit row of action, and answers its result.
func (h handlers) bulkDelete(ctx context.Context, action audit.Action, what string, ids []uuid.UUID,
	del func(tx pgx.Tx) (deleted, skipped int, err error),
) (*httpapi.Out[DeleteResult], error) {
	skipped := 0
	n, err := h.audited(ctx, action, ids, func(tx pgx.Tx) (n int, err error) {
		n, skipped, err = del(tx)
		return n, err
	})
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("deleted %d of %d %s; skipped %d queued or running", n, len(ids), what, skipped)
	return &httpapi.Out[DeleteResult]{Body: DeleteResult{Success: true, DeletedCount: n, Message: msg}}, nil
}

// bulkCancel runs cancel, a bulk cancel of what among ids (only jobs in
// the statuses cancellable names can be) that returns how many jobs it
// cancelled, with its audit row of action, and answers its result.
func (h handlers) bulkCancel(ctx context.Context, action audit.Action, what, cancellable string, ids []uuid.UUID,
	cancel func(tx pgx.Tx) (int, error),
) (*httpapi.Out[CancelResult], error) {
	n, err := h.audited(ctx, action, ids, cancel)
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("cancelled %d of %d %s (only %s jobs can be cancelled)", n, len(ids), what, cancellable)
	return &httpapi.Out[CancelResult]{Body: CancelResult{Success: true, CancelledCount: n, Message: msg}}, nil
}

func (h handlers) listExtractionJobs(ctx context.Context, in *extractionJobsIn) (*httpapi.Out[Paged[extraction.AdminJob]], error) {
	f, err := in.filter()
	if err != nil {
		return nil, err
	}
	list, counts, err := h.extraction.AdminJobs(ctx, extraction.AdminFilter{
		Status: f.Status, JobType: in.JobType, ProjectID: f.ProjectID, HasError: f.HasError, Limit: f.Limit, Offset: f.Offset,
	})
	return replyQueueJobs(list, counts, in.JobFilters, err)
}

func (h handlers) cancelExtractionJobs(ctx context.Context, in *bulkIn) (*httpapi.Out[CancelResult], error) {
	user := auth.PrincipalFrom(ctx).UserID
	return h.bulkCancel(ctx, audit.ExtractionJobsCancel, "extraction jobs", "queued and running", in.Body.IDs, func(tx pgx.Tx) (int, error) {
		return h.extraction.CancelJobs(ctx, tx, in.Body.IDs, in.Body.Type, &user)
	})
}

func (h handlers) deleteExtractionJobs(ctx context.Context, in *bulkIn) (*httpapi.Out[DeleteResult], error) {
	return h.bulkDelete(ctx, audit.ExtractionJobsDelete, "extraction jobs", in.Body.IDs, func(tx pgx.Tx) (int, int, error) {
		return h.extraction.DeleteJobs(ctx, tx, in.Body.IDs, in.Body.Type)
	})
}

func (h handlers) listParsingJobs(ctx context.Context, in *JobFilters) (*httpapi.Out[Paged[document.AdminParsingJob]], error) {
	f, err := in.filter()
	if err != nil {
		return nil, err
	}
	list, counts, err := h.documents.AdminParsingJobs(ctx, f)
	return replyQueueJobs(list, counts, *in, err)
}

func (h handlers) deleteParsingJobs(ctx context.Context, in *bulkIn) (*httpapi.Out[DeleteResult], error) {
	return h.bulkDelete(ctx, audit.DocumentParsingJobsDelete, "document parsing jobs", in.Body.IDs, func(tx pgx.Tx) (int, int, error) {
		return h.documents.DeleteParsingJobs(ctx, tx, in.Body.IDs, in.Body.Type)
	})
}

func (h handlers) retryParsingJobs(ctx context.Context, in *bulkIn) (*httpapi.Out[RetryResult], error) {
	n, err := h.audited(ctx, audit.DocumentParsingJobsRetry, in.Body.IDs, func(tx pgx.Tx) (int, error) {
		return h.documents.RetryParsingJobs(ctx, tx, in.Body.IDs, in.Body.Type)
	})
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("retried %d of %d document parsing jobs (only failed jobs can be retried)", n, len(in.Body.IDs))
	return &httpapi.Out[RetryResult]{Body: RetryResult{Success: true, RetriedCount: n, Message: msg}}, nil
}

func (h handlers) listEmbeddingJobs(ctx context.Context, in *embeddingJobsIn) (*httpapi.Out[Paged[embedding.AdminEmbeddingJob]], error) {
	f, err := in.filter()
	if err != nil {
		return nil, err
	}
	list, counts, err := h.embedding.AdminJobs(ctx, f, in.Type)
	return replyQueueJobs(list, counts, in.JobFilters, err)
}

// deleteEmbeddingJobs deletes the finished jobs among the ids from the
// graph embedding jobs (the embedding domain's) and the chunk embedding
// jobs (the document domain's), or from the one table the type names, in
// one transaction.
func (h handlers) deleteEmbeddingJobs(ctx context.Context, in *bulkIn) (*httpapi.Out[DeleteResult], error) {
	kind := in.Body.Type
	if err := embedding.CheckType(kind); err != nil {
		return nil, err
	}
	return h.bulkDelete(ctx, audit.EmbeddingJobsDelete, "embedding jobs", in.Body.IDs, func(tx pgx.Tx) (deleted, skipped int, err error) {
		if kind != embedding.JobTypeChunk {
			if deleted, skipped, err = h.embedding.DeleteJobs(ctx, tx, in.Body.IDs); err != nil {
				return 0, 0, err
			}
		}
		if kind != embedding.JobTypeGraph {
			d, s, err := h.documents.DeleteChunkEmbeddingJobs(ctx, tx, in.Body.IDs)
			if err != nil {
				return 0, 0, err
			}
			deleted, skipped = deleted+d, skipped+s
		}
		return deleted, skipped, nil
	})
}

func (h handlers) cleanupEmbeddingOrphans(ctx context.Context, _ *struct{}) (*httpapi.Out[DeleteResult], error) {
	graphs, chunks := 0, 0
	n, err := h.audited(ctx, audit.EmbeddingJobsCleanupOrphans, nil, func(tx pgx.Tx) (n int, err error) {
		if graphs, err = h.embedding.DeleteOrphanJobs(ctx, tx); err != nil {
			return 0, err
		}
		if chunks, err = h.documents.DeleteOrphanChunkEmbeddingJobs(ctx, tx); err != nil {
			return 0, err
		}
		return graphs + chunks, nil
	})
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("deleted %d orphaned embedding jobs (%d graph, %d chunk)", n, graphs, chunks)
	return &httpapi.Out[DeleteResult]{Body: DeleteResult{Success: true, DeletedCount: n, Message: msg}}, nil
}
