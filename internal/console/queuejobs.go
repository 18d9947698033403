package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/embedding"
)

// invitationsRule is the API's rule for reading the project's invitations
// (tenancy.RegisterInvitations), whose emails are the project's email jobs.
//
//nolint:gochecknoglobals // constant rule
var invitationsRule = auth.Rule{Scope: auth.AdminRead, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}

// queueJobRead is how the project page of a job of a queue without a page
// of its own reads it: the rule of the API's reads of what the job works
// on (the document's, the graph's, the invitations'), the queue's words
// and the job of the project (not found for another project's).
type queueJobRead struct {
	rule  auth.Rule
	label string
	read  func(ctx context.Context, project, id uuid.UUID) (any, error)
}

// queueJobReader is the reading of the jobs of page, for the JobPage
// kinds of the queues without a page of their own.
func (h *Handler) queueJobReader(page JobPage) (queueJobRead, bool) {
	switch page {
	case ParsingJobPage:
		return queueJobRead{documentsRule, "Document parsing", func(ctx context.Context, project, id uuid.UUID) (any, error) {
			return h.cfg.Documents.ParsingJob(ctx, project, id)
		}}, true
	case ChunkEmbeddingJobPage:
		return queueJobRead{documentsRule, "Chunk embedding", h.embeddingJob(embedding.JobTypeChunk)}, true
	case GraphEmbeddingJobPage:
		return queueJobRead{graphRule, "Graph embedding", h.embeddingJob(embedding.JobTypeGraph)}, true
	case EmailJobPage:
		return queueJobRead{invitationsRule, "Email", func(ctx context.Context, project, id uuid.UUID) (any, error) {
			return h.cfg.Email.ProjectJob(ctx, project, id)
		}}, true
	}
	return queueJobRead{}, false
}

func (h *Handler) embeddingJob(kind string) func(ctx context.Context, project, id uuid.UUID) (any, error) {
	return func(ctx context.Context, project, id uuid.UUID) (any, error) {
		return h.cfg.Embedding.ProjectJob(ctx, project, id, kind)
	}
}

// queueJobView is the project page of a job of a queue without a page of
// its own.
type queueJobView struct {
	projectView
	Queue, Label string
	Job          adminJob
	// AdminURL is the queue's administration page narrowed to the project,
	// for a superadmin (its bulk actions: a parsing job's retry); "" for
	// the others.
	AdminURL string
}

// projectQueueJob is the project's page of the job id of queue, read with
// read: its status, attempts, times, error and what it works on. The
// API has no cancel or retry of these jobs for project callers, so the
// page offers none; a superadmin is linked to the queue's administration
// page, which has the superadmin API's actions.
func (h *Handler) projectQueueJob(w http.ResponseWriter, r *http.Request, c caller, queue string, id uuid.UUID, read queueJobRead) {
	a, p, err := h.projectContext(r, c, read.rule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rec, err := read.read(r.Context(), a.ProjectID, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	j, err := asAdminJob(rec)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := queueJobView{projectView: projectView{Project: p}, Queue: queue, Label: read.label, Job: j}
	if isSuperadmin(r.Context()) && h.opsQueue(queue).List != "" {
		v.AdminURL = queueURL(queue) + "?projectId=" + p.ID.String()
	}
	h.render(w, r, http.StatusOK, projectQueueJobPage(c.sess.CSRF, v))
}

// asAdminJob reads a domain's job record (its superadmin list's item) as
// the queue pages read them from the API's JSON: one view of a job of any
// queue.
func asAdminJob(rec any) (adminJob, error) {
	var j adminJob
	b, err := json.Marshal(rec)
	if err == nil {
		err = json.Unmarshal(b, &j)
	}
	if err != nil {
		return adminJob{}, fmt.Errorf("read job record: %w", err)
	}
	return j, nil
}
