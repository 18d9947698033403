package extraction

import (
	"context"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	projectListIn struct {
		ProjectID string `path:"projectId"`
		Status    string `query:"status" doc:"Only jobs in this status: queued, running, completed, failed, cancelled (or requires_review)."`
		JobType   string `query:"jobType" doc:"Only jobs of this type: full_extraction, reextraction or incremental."`
		Limit     int    `query:"limit" default:"20" minimum:"1" maximum:"100" doc:"Page size."`
		Offset    int    `query:"offset" default:"0" minimum:"0" doc:"Jobs to skip."`
	}
	projectIn struct {
		ProjectID string `path:"projectId"`
	}
	jobIn struct {
		JobID string `path:"jobId"`
	}
	jobLogsIn struct {
		JobID  string `path:"jobId"`
		Limit  int    `query:"limit" default:"1000" minimum:"1" maximum:"10000" doc:"Page size."`
		Offset int    `query:"offset" default:"0" minimum:"0" doc:"Entries to skip."`
	}
	createIn struct {
		Body struct {
			ProjectID  string `json:"projectId" doc:"The project (required)."`
			DocumentID string `json:"documentId,omitempty" doc:"The document to extract from; it must belong to the project and be parsed."`
			JobType    string `json:"jobType,omitempty" doc:"full_extraction (default), reextraction or incremental."`
			Priority   int    `json:"priority,omitempty" doc:"Higher first; 0 to 100 unless the caller is a superadmin."`
		}
	}
	bulkIn struct {
		ProjectID string `path:"projectId"`
		Body      *struct {
			Status string `json:"status,omitempty" doc:"Only jobs in this status."`
		}
	}
	bulkDeleteIn struct {
		ProjectID string `path:"projectId"`
		Body      *struct {
			Status        string `json:"status,omitempty" doc:"Only finished jobs in this status: completed, failed, cancelled or requires_review (default: all of them)."`
			OlderThanDays int    `json:"olderThanDays,omitempty" doc:"Only jobs that ended at least this many days ago (0: any)."`
		}
	}
	settingsIn struct {
		ProjectID string `path:"projectId"`
		Body      struct {
			ReviewThreshold           *float64 `json:"reviewThreshold,omitempty" doc:"0 to 1; unchanged when absent."`
			ReextractionIntervalHours *int     `json:"reextractionIntervalHours,omitempty" doc:"0 (off) to 8760; unchanged when absent."`
		}
	}
	monitorListIn struct {
		ProjectHeader string `header:"X-Project-ID" required:"true" doc:"The project."`
		Status        string `query:"status" doc:"pending, running, completed or failed."`
		SourceType    string `query:"source_type" doc:"document or datasource."`
		DateFrom      string `query:"date_from" doc:"Only jobs created at or after this time (RFC 3339)."`
		DateTo        string `query:"date_to" doc:"Only jobs created at or before this time (RFC 3339)."`
		SortBy        string `query:"sort_by" doc:"started_at, created_at (default), duration_ms or total_cost_usd."`
		SortOrder     string `query:"sort_order" doc:"asc or desc (default)."`
		Limit         int    `query:"limit" default:"50" minimum:"1" maximum:"100" doc:"Page size."`
		Offset        int    `query:"offset" default:"0" minimum:"0" doc:"Jobs to skip."`
	}
	// MonitorJobRef names a monitored job: the project's header and the
	// job's id in the path. It is exported because huma reads only
	// exported embedded structs.
	MonitorJobRef struct {
		ProjectHeader string `header:"X-Project-ID" required:"true" doc:"The project."`
		JobID         string `path:"jobId"`
	}
	monitorJobIn struct {
		MonitorJobRef
	}
	monitorLogsIn struct {
		MonitorJobRef
		Level  string `query:"level" doc:"debug, info, warn or error."`
		Limit  int    `query:"limit" default:"100" minimum:"1" maximum:"500" doc:"Page size."`
		Offset int    `query:"offset" default:"0" minimum:"0" doc:"Entries to skip."`
	}
	monitorCallsIn struct {
		MonitorJobRef
		Limit  int `query:"limit" default:"50" minimum:"1" maximum:"500" doc:"Page size."`
		Offset int `query:"offset" default:"0" minimum:"0" doc:"Calls to skip."`
	}
)

// MonitorList is the spec's monitoring list response.
type MonitorList struct {
	Items  []MonitorJob `json:"items"`
	Total  int          `json:"total"`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
}

// MonitorLogList is the spec's logs response, with the page.
type MonitorLogList struct {
	Logs   []ProcessLog `json:"logs"`
	Total  int          `json:"total"`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
}

// MonitorCallList is the spec's LLM calls response, with the page.
type MonitorCallList struct {
	LLMCalls []CallLog `json:"llm_calls"`
	Total    int       `json:"total"`
	Limit    int       `json:"limit"`
	Offset   int       `json:"offset"`
}

// Register adds the extraction job administration, monitoring and
// settings routes. Every rule is checked by the API's middleware: routes
// by job id take the job's project (Owner), creation takes the body's
// projectId.
func Register(api huma.API, svc *Service) {
	h := handlers{svc: svc}
	read := auth.Rule{Scope: auth.ExtractionRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.ExtractionWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
	admin := auth.Rule{Scope: auth.ExtractionWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
	job := &auth.Owner{Param: "jobId", Kind: "extraction-job", Resolve: auth.InProject(svc.JobProject), NotFound: ErrNotFound}
	readJob, writeJob := read.WithOwner(job), write.WithOwner(job)
	create := write
	create.BodyField = "projectId"
	base := "/api/admin/extraction-jobs"

	huma.Register(api, httpapi.Op("list-extraction-jobs", http.MethodGet, base+"/projects/{projectId}", "List a project's extraction jobs, newest first", read), h.listJobs)
	huma.Register(api, httpapi.Op("extraction-job-statistics", http.MethodGet, base+"/projects/{projectId}/statistics",
		"Counts of a project's extraction jobs by status and type, throughput and average duration", read), h.statistics)
	huma.Register(api, httpapi.Op("get-extraction-job", http.MethodGet, base+"/{jobId}", "Get an extraction job", readJob), h.getJob)
	createOp := httpapi.Op("create-extraction-job", http.MethodPost, base, "Queue an extraction job on a document (trigger manual)", create)
	createOp.DefaultStatus = http.StatusCreated
	huma.Register(api, createOp, h.createJob)
	huma.Register(api, httpapi.Op("cancel-extraction-job", http.MethodPost, base+"/{jobId}/cancel", "Cancel a queued or running extraction job", writeJob), h.cancelJob)
	huma.Register(api, httpapi.Op("retry-extraction-job", http.MethodPost, base+"/{jobId}/retry", "Retry a failed extraction job", writeJob), h.retryJob)
	huma.Register(api, httpapi.Op("bulk-cancel-extraction-jobs", http.MethodPost, base+"/projects/{projectId}/bulk-cancel",
		"Cancel a project's queued and/or running extraction jobs", write), h.bulkCancel)
	huma.Register(api, httpapi.Op("bulk-retry-extraction-jobs", http.MethodPost, base+"/projects/{projectId}/bulk-retry",
		"Retry a project's failed extraction jobs", write), h.bulkRetry)
	huma.Register(api, httpapi.Op("bulk-delete-extraction-jobs", http.MethodDelete, base+"/projects/{projectId}/bulk-delete",
		"Delete a project's finished extraction jobs, with their logs", admin), h.bulkDelete)
	huma.Register(api, httpapi.Op("extraction-job-logs", http.MethodGet, base+"/{jobId}/logs", "An extraction job's log entries, in order", readJob), h.jobLogs)

	path := "/api/projects/{projectId}/extraction-settings"
	huma.Register(api, httpapi.Op("get-extraction-settings", http.MethodGet, path, "A project's extraction settings", read), h.settings)
	huma.Register(api, httpapi.Op("put-extraction-settings", http.MethodPut, path,
		"Change a project's extraction settings (project admins); absent fields are unchanged", admin), h.setSettings)

	base = "/api/monitoring/extraction-jobs"
	huma.Register(api, httpapi.Op("monitor-extraction-jobs", http.MethodGet, base, "Monitored extraction jobs of the project (X-Project-ID)", read), h.monitorJobs)
	huma.Register(api, httpapi.Op("monitor-extraction-job", http.MethodGet, base+"/{jobId}", "A monitored extraction job with its logs, LLM calls and metrics", readJob), h.monitorJob)
	huma.Register(api, httpapi.Op("monitor-extraction-job-logs", http.MethodGet, base+"/{jobId}/logs", "A monitored extraction job's process log", readJob), h.monitorLogs)
	huma.Register(api, httpapi.Op("monitor-extraction-job-llm-calls", http.MethodGet, base+"/{jobId}/llm-calls", "A monitored extraction job's LLM calls", readJob), h.monitorCalls)
}

// handlers are the extraction routes' handlers: each decodes, calls the
// service with the project and job the middleware authorised
// (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

func (h handlers) listJobs(ctx context.Context, in *projectListIn) (*httpapi.Out[httpapi.List[Job]], error) {
	f := JobFilter{Status: in.Status, JobType: in.JobType, Limit: in.Limit, Offset: in.Offset}
	list, total, err := h.svc.ListJobs(ctx, auth.AccessFrom(ctx).ProjectID, f)
	return httpapi.ReplyList(list, total, httpapi.PageParams{Limit: in.Limit, Offset: in.Offset}, err)
}

func (h handlers) statistics(ctx context.Context, _ *projectIn) (*httpapi.Out[Statistics], error) {
	return httpapi.Reply(h.svc.Statistics(ctx, auth.AccessFrom(ctx).ProjectID))
}

func (h handlers) getJob(ctx context.Context, _ *jobIn) (*httpapi.Out[Job], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.Job(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) createJob(ctx context.Context, in *createIn) (*httpapi.Out[Job], error) {
	params := CreateParams{
		ProjectID: auth.AccessFrom(ctx).ProjectID, JobType: in.Body.JobType, Priority: in.Body.Priority,
		CreatedBy: auth.UserFrom(ctx), Superadmin: auth.PrincipalFrom(ctx).Superadmin,
	}
	if in.Body.DocumentID != "" {
		doc, err := httpapi.ParseID(in.Body.DocumentID, ErrDocumentNotFound)
		if err != nil {
			return nil, err
		}
		params.DocumentID = &doc
	}
	return httpapi.Reply(h.svc.CreateJob(ctx, params))
}

func (h handlers) cancelJob(ctx context.Context, _ *jobIn) (*httpapi.Out[Job], error) {
	return h.actOnJob(ctx, h.svc.CancelJob)
}

func (h handlers) retryJob(ctx context.Context, _ *jobIn) (*httpapi.Out[Job], error) {
	return h.actOnJob(ctx, h.svc.RetryJob)
}

// actOnJob runs a state change of the request's job (cancel, retry) and
// answers the job it returns.
func (h handlers) actOnJob(ctx context.Context, act func(ctx context.Context, project, id uuid.UUID, user *uuid.UUID) (Job, error)) (*httpapi.Out[Job], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(act(ctx, a.ProjectID, a.ResourceID, auth.UserFrom(ctx)))
}

func (h handlers) bulkCancel(ctx context.Context, in *bulkIn) (*httpapi.Out[BulkResult], error) {
	n, err := h.svc.BulkCancel(ctx, auth.AccessFrom(ctx).ProjectID, in.status(), auth.UserFrom(ctx))
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[BulkResult]{Body: BulkResult{Success: true, CancelledCount: &n, Message: fmt.Sprintf("%d jobs cancelled", n)}}, nil
}

func (h handlers) bulkRetry(ctx context.Context, in *bulkIn) (*httpapi.Out[BulkResult], error) {
	n, err := h.svc.BulkRetry(ctx, auth.AccessFrom(ctx).ProjectID, in.status(), auth.UserFrom(ctx))
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[BulkResult]{Body: BulkResult{Success: true, RetriedCount: &n, Message: fmt.Sprintf("%d jobs queued again", n)}}, nil
}

func (h handlers) bulkDelete(ctx context.Context, in *bulkDeleteIn) (*httpapi.Out[BulkResult], error) {
	status, days := "", 0
	if in.Body != nil {
		status, days = in.Body.Status, in.Body.OlderThanDays
	}
	n, err := h.svc.BulkDelete(ctx, auth.AccessFrom(ctx).ProjectID, status, days)
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[BulkResult]{Body: BulkResult{Success: true, DeletedCount: &n, Message: fmt.Sprintf("%d jobs deleted", n)}}, nil
}

func (h handlers) jobLogs(ctx context.Context, in *jobLogsIn) (*httpapi.Out[httpapi.List[LogEntry]], error) {
	a := auth.AccessFrom(ctx)
	list, total, err := h.svc.JobLogs(ctx, a.ProjectID, a.ResourceID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, httpapi.PageParams{Limit: in.Limit, Offset: in.Offset}, err)
}

func (h handlers) settings(ctx context.Context, _ *projectIn) (*httpapi.Out[Settings], error) {
	return httpapi.Reply(h.svc.Settings(ctx, auth.AccessFrom(ctx).ProjectID))
}

func (h handlers) setSettings(ctx context.Context, in *settingsIn) (*httpapi.Out[Settings], error) {
	return httpapi.Reply(h.svc.SetSettings(ctx, auth.AccessFrom(ctx).ProjectID, SettingsUpdate{
		ReviewThreshold: in.Body.ReviewThreshold, ReextractionIntervalHours: in.Body.ReextractionIntervalHours,
	}))
}

// monitorProject is the project of a monitoring request: the one the
// guard authorised, which must be the X-Project-ID header's.
func monitorProject(ctx context.Context, header string) (uuid.UUID, error) {
	project := auth.AccessFrom(ctx).ProjectID
	if id, err := uuid.Parse(header); err != nil || id != project {
		return uuid.Nil, errs.New(errs.Invalid, "X-Project-ID must name the project of the request")
	}
	return project, nil
}

func (h handlers) monitorJobs(ctx context.Context, in *monitorListIn) (*httpapi.Out[MonitorList], error) {
	project, err := monitorProject(ctx, in.ProjectHeader)
	if err != nil {
		return nil, err
	}
	from, to, err := httpapi.ParseTimeRange("date_from", in.DateFrom, "date_to", in.DateTo)
	if err != nil {
		return nil, err
	}
	f := MonitorFilter{
		Status: in.Status, SourceType: in.SourceType, DateFrom: from, DateTo: to, SortBy: in.SortBy,
		SortOrder: in.SortOrder, Limit: in.Limit, Offset: in.Offset,
	}
	items, total, err := h.svc.MonitorJobs(ctx, project, f)
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []MonitorJob{}
	}
	return &httpapi.Out[MonitorList]{Body: MonitorList{Items: items, Total: total, Limit: in.Limit, Offset: in.Offset}}, nil
}

func (h handlers) monitorJob(ctx context.Context, in *monitorJobIn) (*httpapi.Out[MonitorDetail], error) {
	project, err := monitorProject(ctx, in.ProjectHeader)
	if err != nil {
		return nil, err
	}
	return httpapi.Reply(h.svc.MonitorDetail(ctx, project, auth.AccessFrom(ctx).ResourceID))
}

func (h handlers) monitorLogs(ctx context.Context, in *monitorLogsIn) (*httpapi.Out[MonitorLogList], error) {
	project, err := monitorProject(ctx, in.ProjectHeader)
	if err != nil {
		return nil, err
	}
	logs, total, err := h.svc.MonitorLogs(ctx, project, auth.AccessFrom(ctx).ResourceID, in.Level, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[MonitorLogList]{Body: MonitorLogList{Logs: logs, Total: total, Limit: in.Limit, Offset: in.Offset}}, nil
}

func (h handlers) monitorCalls(ctx context.Context, in *monitorCallsIn) (*httpapi.Out[MonitorCallList], error) {
	project, err := monitorProject(ctx, in.ProjectHeader)
	if err != nil {
		return nil, err
	}
	calls, total, err := h.svc.MonitorCalls(ctx, project, auth.AccessFrom(ctx).ResourceID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[MonitorCallList]{Body: MonitorCallList{LLMCalls: calls, Total: total, Limit: in.Limit, Offset: in.Offset}}, nil
}

// status is the bulk body's status filter (empty: the default).
func (in *bulkIn) status() string {
	if in.Body == nil {
		return ""
	}
	return in.Body.Status
}
