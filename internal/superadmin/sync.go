package superadmin

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/integration"
)

type (
	syncJobsIn struct {
		PageParams
		Status    string `query:"status" doc:"Only jobs in this status: pending, running, completed, failed or cancelled."`
		ProjectID string `query:"projectId" doc:"Only this project's jobs."`
		HasError  string `query:"hasError" enum:"true,false" doc:"Only jobs with (true) or without (false) an error message."`
	}
	syncJobIn struct {
		JobID string `path:"jobID"`
	}
)

// RegisterSyncJobs adds the superadmin routes of the integration_sync
// queue: the list (statuses in the sync vocabulary), a job's log, and the
// bulk cancel and delete, each audited.
func RegisterSyncJobs(api huma.API, svc *Service, integrations *integration.Service, auditLog *audit.Service) {
	read := auth.Rule{Scope: auth.AdminRead, Resource: auth.Superadmin}
	write := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Superadmin}
	h := syncHandlers{handlers: handlers{svc: svc, audit: auditLog}, integrations: integrations}
	huma.Register(api, httpapi.Op("superadmin-list-sync-jobs", http.MethodGet, "/api/superadmin/sync-jobs",
		"List every project's integration sync jobs", read), h.listSyncJobs)
	huma.Register(api, httpapi.Op("superadmin-sync-job-logs", http.MethodGet, "/api/superadmin/sync-jobs/{jobID}/logs",
		"Read a sync job's log", read.WithKeys("jobID")), h.syncJobLogs)
	huma.Register(api, httpapi.Op("superadmin-cancel-sync-jobs", http.MethodPost, "/api/superadmin/sync-jobs/cancel",
		"Cancel queued and running sync jobs", write), h.cancelSyncJobs)
	huma.Register(api, httpapi.Op("superadmin-delete-sync-jobs", http.MethodPost, "/api/superadmin/sync-jobs/delete",
		"Delete finished sync jobs and their logs", write), h.deleteSyncJobs)
}

// syncHandlers are the handlers of the sync job routes.
type syncHandlers struct {
	handlers
	integrations *integration.Service
}

func (h syncHandlers) listSyncJobs(ctx context.Context, in *syncJobsIn) (*httpapi.Out[Paged[integration.AdminSyncJob]], error) {
	f, err := JobFilters{PageParams: in.PageParams, Status: in.Status, ProjectID: in.ProjectID, HasError: in.HasError}.filter()
	if err != nil {
		return nil, err
	}
	list, total, counts, err := h.integrations.AdminSyncJobs(ctx, f)
	return replyJobs(list, total, in.PageParams, counts, namedCount, err)
}

func (h syncHandlers) syncJobLogs(ctx context.Context, in *syncJobIn) (*httpapi.Out[integration.SyncJobLog], error) {
	id, err := httpapi.ParseID(in.JobID, integration.ErrSyncNotFound)
	if err != nil {
		return nil, err
	}
	return httpapi.Reply(h.integrations.SyncJobLogs(ctx, id))
}

func (h syncHandlers) cancelSyncJobs(ctx context.Context, in *bulkIn) (*httpapi.Out[CancelResult], error) {
	return h.bulkCancel(ctx, audit.SyncJobsCancel, "sync jobs", "pending and running", in.Body.IDs, func(tx pgx.Tx) (int, error) {
		return h.integrations.CancelSyncJobs(ctx, tx, in.Body.IDs, in.Body.Type)
	})
}

func (h syncHandlers) deleteSyncJobs(ctx context.Context, in *bulkIn) (*httpapi.Out[DeleteResult], error) {
	return h.bulkDelete(ctx, audit.SyncJobsDelete, "sync jobs", in.Body.IDs, func(tx pgx.Tx) (int, int, error) {
		return h.integrations.DeleteSyncJobs(ctx, tx, in.Body.IDs, in.Body.Type)
	})
}
