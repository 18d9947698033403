package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/jobqueue"
)

// JobsEvent is the SSE event the jobs stream sends when one of the
// project's extraction jobs started or ended: the table reloads its rows.
const JobsEvent = "jobs"

// The rules of the extraction job pages: the API's (extraction.Register).
//
//nolint:gochecknoglobals // constant rules
var (
	jobsRule     = auth.Rule{Scope: auth.ExtractionRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	jobWriteRule = auth.Rule{Scope: auth.ExtractionWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
)

// jobFilter is the jobs page's filter, from its query.
type jobFilter struct {
	Status  string
	JobType string
}

// values is the filter as query parameters.
func (f jobFilter) values() url.Values {
	return filterQuery("status", f.Status, "type", f.JobType)
}

func filterOf(r *http.Request) jobFilter {
	q := r.URL.Query()
	return jobFilter{Status: q.Get("status"), JobType: q.Get("type")}
}

// jobOwner is the API's owner of an extraction job path.
func (h *Handler) jobOwner() *auth.Owner {
	return &auth.Owner{
		Param: "id", Kind: "extraction-job", Resolve: auth.InProject(h.cfg.Extraction.JobProject), NotFound: extraction.ErrNotFound,
	}
}

func (h *Handler) jobList(r *http.Request, c caller) (pv projectView, list []extraction.Job, names map[uuid.UUID]string, f jobFilter, pg pager, err error) {
	a, p, err := h.projectContext(r, c, jobsRule, "")
	if err != nil {
		return projectView{}, nil, nil, f, pg, err
	}
	f, offset := filterOf(r), pageOffset(r)
	list, total, err := h.cfg.Extraction.ListJobs(r.Context(), a.ProjectID, extraction.JobFilter{
		Status: f.Status, JobType: f.JobType, Limit: PageSize, Offset: offset,
	})
	if err == nil {
		names, err = h.documentNames(r, a.ProjectID, list...)
	}
	base := projectURL(p.ID) + "/jobs"
	return projectView{Project: p, CanWrite: h.can(r, c, jobWriteRule)}, list, names, f,
		pager{Offset: offset, Total: total, Base: base, Params: f.values()}, err
}

// documentNames are the file names of the jobs' documents, in one query.
func (h *Handler) documentNames(r *http.Request, project uuid.UUID, jobs ...extraction.Job) (map[uuid.UUID]string, error) {
	return namesOf(r, project, jobs, func(j extraction.Job) *uuid.UUID { return j.DocumentID }, h.cfg.Documents.Filenames, "the jobs' documents")
}

// namesOf reads with read, in one query, the names of the records items
// point at (id: nil for none); nil when none does. what names the
// records in an error.
func namesOf[T any](r *http.Request, project uuid.UUID, items []T, id func(T) *uuid.UUID,
	read func(ctx context.Context, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error), what string,
) (map[uuid.UUID]string, error) {
	var ids []uuid.UUID
	for _, it := range items {
		if p := id(it); p != nil {
			ids = append(ids, *p)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	names, err := read(r.Context(), project, ids)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return names, nil
}

// documentName is the file name of a job's document, "document" when it
// is gone.
func documentName(names map[uuid.UUID]string, j extraction.Job) string {
	if j.DocumentID != nil && names[*j.DocumentID] != "" {
		return names[*j.DocumentID]
	}
	return "document"
}

// can reports whether c may do what rule guards on the request's project
// (to show or hide an action; the action checks again).
func (h *Handler) can(r *http.Request, c caller, rule auth.Rule) bool {
	_, err := h.check(r, c, rule, "")
	return err == nil
}

func (h *Handler) jobs(w http.ResponseWriter, r *http.Request, c caller) {
	pv, list, names, f, pg, err := h.jobList(r, c)
	h.show(w, r, jobsPage(c.sess.CSRF, pv, list, names, f, pg), err)
}

func (h *Handler) jobRows(w http.ResponseWriter, r *http.Request, c caller) {
	pv, list, names, _, _, err := h.jobList(r, c)
	h.show(w, r, jobRowList(pv, list, names), err)
}

func (h *Handler) job(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, j, err := h.jobContext(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset := pageOffset(r)
	logs, total, err := h.cfg.Extraction.JobLogs(r.Context(), a.ProjectID, a.ResourceID, PageSize, offset)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	names, err := h.documentNames(r, a.ProjectID, j)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pv := projectView{Project: p, CanWrite: h.can(r, c, jobWriteRule)}
	h.render(w, r, http.StatusOK, jobPage(c.sess.CSRF, pv, j, documentName(names, j), logs, pager{Offset: offset, Total: total, Base: jobURL(p.ID, j.ID)}))
}

func (h *Handler) cancelJob(w http.ResponseWriter, r *http.Request, c caller) {
	h.actOnJob(w, r, c, h.cfg.Extraction.CancelJob)
}

func (h *Handler) retryJob(w http.ResponseWriter, r *http.Request, c caller) {
	h.actOnJob(w, r, c, h.cfg.Extraction.RetryJob)
}

// actOnJob runs cancel or retry on the path's job, as the API's route
// does (the caller recorded as the actor), and answers the job's new row.
func (h *Handler) actOnJob(w http.ResponseWriter, r *http.Request, c caller,
	act func(ctx context.Context, project, id uuid.UUID, user *uuid.UUID) (extraction.Job, error),
) {
	a, p, err := h.ownedContext(r, c, jobWriteRule, h.jobOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	user := c.p.UserID
	j, err := act(r.Context(), a.ProjectID, a.ResourceID, &user)
	var names map[uuid.UUID]string
	if err == nil {
		names, err = h.documentNames(r, a.ProjectID, j)
	}
	h.show(w, r, jobRow(projectView{Project: p, CanWrite: true}, j, documentName(names, j)), err)
}

// jobEvents selects the events of project that start (job.started) or
// end one of its extraction jobs.
func jobEvents(project uuid.UUID) func(e streamEvent) (string, bool) {
	return func(e streamEvent) (string, bool) {
		if e.ProjectID != nil && *e.ProjectID == project && (e.Type == events.TypeJobCompleted || e.Type == events.TypeJobStarted) &&
			extraction.IsQueue(e.Data.Queue) {
			return JobsEvent, true
		}
		return "", false
	}
}

func (h *Handler) jobStream(w http.ResponseWriter, r *http.Request, c caller) {
	h.stream(w, r, c, jobsRule, jobEvents)
}

// jobStatuses are the statuses the filter offers.
func jobStatuses() []string {
	var out []string
	for _, s := range jobqueue.Statuses() {
		out = append(out, string(s))
	}
	return out
}
