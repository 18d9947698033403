package console

import (
	"net/http"
	"net/url"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/task"
)

// The rules of the review task pages: the API's (task.Register).
//
//nolint:gochecknoglobals // constant rules
var (
	tasksRule     = auth.Rule{Scope: auth.TasksRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	taskWriteRule = auth.Rule{Scope: auth.TasksWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
)

// taskOwner is the API's owner of a task path.
func (h *Handler) taskOwner() *auth.Owner {
	return &auth.Owner{
		Param: "taskID", Kind: "task", Resolve: auth.InProject(h.cfg.Tasks.TaskProject), NotFound: task.ErrNotFound, NamedProject: true,
	}
}

// tasks lists the project's review tasks of one status (pending unless
// the query says otherwise), with accept and reject for pending ones.
func (h *Handler) tasks(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, tasksRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	status := r.URL.Query().Get("status")
	if status == "" {
		status = task.StatusPending
	}
	offset := pageOffset(r)
	list, total, err := h.cfg.Tasks.List(r.Context(), a.ProjectID, task.Filter{Status: status, Limit: PageSize, Offset: offset})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pv := projectView{Project: p, CanWrite: h.can(r, c, taskWriteRule)}
	pg := pager{Offset: offset, Total: total, Base: projectURL(p.ID) + "/tasks", Params: url.Values{"status": {status}}}
	h.render(w, r, http.StatusOK, tasksPage(c.sess.CSRF, pv, list, status, pg))
}

// resolveTask accepts or rejects the path's task (form field
// resolution), as the API's resolve route, and answers its new row.
func (h *Handler) resolveTask(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.ownedContext(r, c, taskWriteRule, h.taskOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	t, err := h.cfg.Tasks.Resolve(r.Context(), a.ProjectID, a.ResourceID, c.p.UserID, r.PostFormValue("resolution"), r.PostFormValue("notes"))
	h.show(w, r, taskRow(projectView{Project: p, CanWrite: true}, t), err)
}

// taskStatuses are the statuses the tabs offer.
func taskStatuses() []string {
	return []string{task.StatusPending, task.StatusAccepted, task.StatusRejected, task.StatusCancelled}
}
