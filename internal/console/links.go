package console

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/task"
)

// JobPage is a kind of project page of one job.
type JobPage int

// The project pages of a job (Config.JobPages).
const (
	NoJobPage         JobPage = iota
	ExtractionJobPage         // the extraction job's page, with its log
	DiscoveryJobPage          // the discovery job's page
	AgentRunPage              // the agent run's page
	SyncJobPage               // the sync's page under its integration
	// The queues without a page of their own: the project's page of one
	// job (queuejobs.go), at the link's own path.
	ParsingJobPage        // a document parsing job
	ChunkEmbeddingJobPage // a chunk embedding job
	GraphEmbeddingJobPage // a graph object embedding job
	EmailJobPage          // an email about the project (an invitation)
)

// errLinkedJobNotFound is a notification's job link naming no job page.
var errLinkedJobNotFound = errs.New(errs.NotFound, "job not found")

// jobLinkURL is the link of a failed job's notification.
func jobLinkURL(project uuid.UUID, queue string, id uuid.UUID) string {
	return projectURL(project) + "/jobs/" + url.PathEscape(queue) + "/" + id.String()
}

// jobLink is the page a failed job's notification links to
// (/projects/{project}/jobs/{queue}/{id}, notification.JobOutcomes; its
// emails too): a redirect to the page of that job for the queues that
// have one in the project (extraction jobs, syncs, discovery jobs, agent
// runs), the job's project page itself for the queues without
// (queueJob: parsing, embeddings, email), else to the queue's
// administration page narrowed to the project.
func (h *Handler) jobLink(w http.ResponseWriter, r *http.Request, c caller) {
	queue := chi.URLParam(r, "queue")
	id, err := httpapi.ParseID(chi.URLParam(r, "id"), errLinkedJobNotFound)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if read, ok := h.queueJobReader(h.cfg.JobPages[queue]); ok {
		h.projectQueueJob(w, r, c, queue, id, read)
		return
	}
	rule := projectRule
	var target func(project uuid.UUID) (string, error)
	switch h.cfg.JobPages[queue] {
	case ExtractionJobPage:
		rule, target = jobsRule, func(p uuid.UUID) (string, error) { return jobURL(p, id), nil }
	case DiscoveryJobPage:
		rule, target = discoveryRule, func(p uuid.UUID) (string, error) { return discoveryJobURL(p, id), nil }
	case AgentRunPage:
		rule, target = agentsRule, func(p uuid.UUID) (string, error) { return runURL(p, id), nil }
	case SyncJobPage:
		rule, target = integrationAdminRule, func(p uuid.UUID) (string, error) {
			name, err := h.cfg.Integrations.SyncJobIntegration(r.Context(), p, id)
			return integrationURL(p, name) + "/syncs/" + id.String(), err
		}
	default:
		if h.opsQueue(queue).List == "" {
			h.fail(w, r, errLinkedJobNotFound)
			return
		}
		target = func(p uuid.UUID) (string, error) { return queueURL(queue) + "?projectId=" + p.String(), nil }
	}
	a, err := h.check(r, c, rule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	to, err := target(a.ProjectID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// task is the page a review task's notification links to
// (/projects/{project}/tasks/{taskID}, the extraction's review
// notification): the tasks page showing that task alone, under the tab
// of its status, with accept and reject while it is pending.
func (h *Handler) task(w http.ResponseWriter, r *http.Request, c caller) {
	_, p, t, err := ownedResource(h, r, c, tasksRule, h.taskOwner(), h.cfg.Tasks.Get)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pv := projectView{Project: p, CanWrite: h.can(r, c, taskWriteRule)}
	h.render(w, r, http.StatusOK, tasksPage(c.sess.CSRF, pv, []task.Task{t}, t.Status, pager{Total: 1, Base: projectURL(p.ID) + "/tasks"}))
}
