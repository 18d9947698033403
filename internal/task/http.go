package task

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// List is the spec's task list: {data, total}.
type List struct {
	Data  []Task `json:"data"`
	Total int    `json:"total"`
}

// Envelope is the spec's single task: {data: Task}.
type Envelope struct {
	Data Task `json:"data"`
}

// replyTask answers t in its Envelope, or err when the call that gave it
// failed.
func replyTask(t Task, err error) (*httpapi.Out[Envelope], error) {
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[Envelope]{Body: Envelope{Data: t}}, nil
}

// ListParams are the filter and page query parameters of task lists.
type ListParams struct {
	Status string `query:"status" enum:"pending,accepted,rejected,cancelled" doc:"Only tasks in this status."`
	Type   string `query:"type" maxLength:"100" doc:"Only tasks of this type."`
	Limit  int    `query:"limit" default:"50" minimum:"1" maximum:"100" doc:"Page size."`
	Offset int    `query:"offset" default:"0" minimum:"0" doc:"Tasks to skip."`
}

type (
	listIn struct {
		ProjectID string `query:"projectId" doc:"The project; overrides the X-Project-ID header."`
		ListParams
	}
	allIn struct {
		OrgID string `header:"X-Org-ID" doc:"Only projects of this organization."`
		ListParams
	}
	countsIn struct {
		ProjectID string `query:"projectId" doc:"The project; overrides the X-Project-ID header."`
	}
	allCountsIn struct {
		OrgID string `header:"X-Org-ID" doc:"Only projects of this organization."`
	}
	taskIn struct {
		TaskID    string `path:"taskID"`
		ProjectID string `query:"projectId" doc:"The project; overrides the X-Project-ID header."`
	}
	resolveIn struct {
		TaskID    string `path:"taskID"`
		ProjectID string `query:"projectId" doc:"The project; overrides the X-Project-ID header."`
		Body      struct {
			Resolution      string `json:"resolution" enum:"accepted,rejected"`
			ResolutionNotes string `json:"resolutionNotes,omitempty" maxLength:"10000"`
		}
	}
)

func (f ListParams) filter() Filter {
	return Filter(f)
}

// orgHeader reads an optional X-Org-ID; a malformed one names no
// organization the caller can see.
func orgHeader(raw string) (*uuid.UUID, error) {
	if raw == "" {
		return nil, nil //nolint:nilnil // no organization given
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return nil, auth.ErrNoOrg
	}
	return &id, nil
}

func newList(items []Task, total int) List {
	if items == nil {
		items = []Task{}
	}
	return List{Data: items, Total: total}
}

// Register adds the task routes. The project comes from the projectId
// query parameter, else X-Project-ID, else a project-scoped token's
// project; the /all routes span every project the caller can see.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.TasksRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.TasksWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
	task := &auth.Owner{Param: "taskID", Kind: "task", Resolve: auth.InProject(svc.TaskProject), NotFound: ErrNotFound, NamedProject: true}
	readAll := auth.Rule{Scope: auth.TasksRead, Resource: auth.Authenticated}
	h := handlers{svc: svc}

	huma.Register(api, httpapi.Op("list-tasks", http.MethodGet, "/api/tasks", "List a project's tasks, newest first", read), h.listTasks)
	huma.Register(api, httpapi.Op("count-tasks", http.MethodGet, "/api/tasks/counts", "Count a project's tasks per status", read), h.countTasks)
	huma.Register(api, httpapi.Op("list-all-tasks", http.MethodGet, "/api/tasks/all",
		"List the tasks of every project you can see (of one organization with X-Org-ID), newest first", readAll), h.listAllTasks)
	huma.Register(api, httpapi.Op("count-all-tasks", http.MethodGet, "/api/tasks/all/counts",
		"Count per status the tasks of every project you can see (of one organization with X-Org-ID)", readAll), h.countAllTasks)
	huma.Register(api, httpapi.Op("get-task", http.MethodGet, "/api/tasks/{taskID}", "Get a task", read.WithOwner(task)), h.getTask)
	huma.Register(api, httpapi.Op("resolve-task", http.MethodPost, "/api/tasks/{taskID}/resolve",
		"Accept or reject a pending task (409 when it is not pending)", write.WithOwner(task)), h.resolveTask)
	huma.Register(api, httpapi.Op("cancel-task", http.MethodPost, "/api/tasks/{taskID}/cancel",
		"Cancel a pending task (409 when it is not pending)", write.WithOwner(task)), h.cancelTask)
}

// handlers are the task routes' handlers: each decodes, calls the
// service with what the middleware authorised (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

func (h handlers) listTasks(ctx context.Context, in *listIn) (*httpapi.Out[List], error) {
	list, total, err := h.svc.List(ctx, auth.AccessFrom(ctx).ProjectID, in.filter())
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[List]{Body: newList(list, total)}, nil
}

func (h handlers) countTasks(ctx context.Context, _ *countsIn) (*httpapi.Out[Counts], error) {
	return httpapi.Reply(h.svc.Counts(ctx, auth.AccessFrom(ctx).ProjectID))
}

func (h handlers) listAllTasks(ctx context.Context, in *allIn) (*httpapi.Out[List], error) {
	org, err := orgHeader(in.OrgID)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.ListAll(ctx, auth.PrincipalFrom(ctx), org, in.filter())
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[List]{Body: newList(list, total)}, nil
}

func (h handlers) countAllTasks(ctx context.Context, in *allCountsIn) (*httpapi.Out[Counts], error) {
	org, err := orgHeader(in.OrgID)
	if err != nil {
		return nil, err
	}
	return httpapi.Reply(h.svc.CountsAll(ctx, auth.PrincipalFrom(ctx), org))
}

func (h handlers) getTask(ctx context.Context, _ *taskIn) (*httpapi.Out[Envelope], error) {
	a := auth.AccessFrom(ctx)
	return replyTask(h.svc.Get(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) resolveTask(ctx context.Context, in *resolveIn) (*httpapi.Out[Envelope], error) {
	a := auth.AccessFrom(ctx)
	return replyTask(h.svc.Resolve(ctx, a.ProjectID, a.ResourceID, auth.PrincipalFrom(ctx).UserID, in.Body.Resolution, in.Body.ResolutionNotes))
}

func (h handlers) cancelTask(ctx context.Context, _ *taskIn) (*httpapi.Out[Envelope], error) {
	a := auth.AccessFrom(ctx)
	return replyTask(h.svc.Cancel(ctx, a.ProjectID, a.ResourceID))
}
