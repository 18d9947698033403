package console

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// Events of the agent streams: a run of the agent changed status (the
// runs table reloads), the page's run changed (its panel reloads).
const (
	AgentRunsEvent = "runs"
	AgentRunEvent  = "run"
)

// The rules of the agent pages: the API's (agent.Register). Reading needs
// agents:read and any role; starting, cancelling and answering runs need
// agents:run and the editor role. A run is its starting user's.
//
//nolint:gochecknoglobals // constant rules
var (
	agentsRule     = auth.Rule{Scope: auth.AgentsRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	agentWriteRule = auth.Rule{Scope: auth.AgentsRun, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
)

// agentRoutes adds the agent pages.
func (h *Handler) agentRoutes(p pages) {
	p.get("/projects/{project}/agents", h.agents)
	p.get("/projects/{project}/agents/{id}", h.agentPage)
	p.get("/projects/{project}/agents/{id}/runs", h.agentRunRows)
	p.post("/projects/{project}/agents/{id}", h.agentUpdate)
	p.post("/projects/{project}/agents/{id}/runs", h.agentStart)
	p.get(StreamPrefix+"projects/{project}/agents/{id}", h.agentStream)
	p.get("/projects/{project}/agent-runs/{runId}", h.agentRun)
	p.get("/projects/{project}/agent-runs/{runId}/panel", h.agentRunPanel)
	p.post("/projects/{project}/agent-runs/{runId}/answer", h.agentAnswer)
	p.post("/projects/{project}/agent-runs/{runId}/cancel", h.agentCancel)
	p.get(StreamPrefix+"projects/{project}/agent-runs/{runId}", h.agentRunStream)
}

// agentOwner and runOwner are the API's owners of agent and run paths.
func (h *Handler) agentOwner() *auth.Owner {
	return &auth.Owner{Param: "id", Kind: "agent", Resolve: auth.InProject(h.cfg.Agents.AgentProject), NotFound: agent.ErrNotFound}
}

func (h *Handler) runOwner() *auth.Owner {
	return &auth.Owner{Param: "runId", Kind: "agent-run", Resolve: auth.InProject(h.cfg.Agents.RunProject), NotFound: agent.ErrRunNotFound}
}

func agentsURL(project uuid.UUID) string { return projectURL(project) + "/agents" }

func agentURL(project, id uuid.UUID) string { return agentsURL(project) + "/" + id.String() }

func runURL(project, id uuid.UUID) string { return projectURL(project) + "/agent-runs/" + id.String() }

// agents lists the project's agent definitions, newest first.
func (h *Handler) agents(w http.ResponseWriter, r *http.Request, c caller) {
	p, list, pg, err := projectList(h, r, c, agentsRule, "/agents", h.cfg.Agents.ListAgents)
	h.show(w, r, agentsPage(c.sess.CSRF, p, list, pg), err)
}

// agentRuns is an agent and a page of the caller's runs of it.
func (h *Handler) agentRuns(r *http.Request, c caller) (pv projectView, ag agent.Agent, runs []agent.Run, pg pager, err error) {
	a, p, ag, err := ownedResource(h, r, c, agentsRule, h.agentOwner(), h.cfg.Agents.GetAgent)
	if err != nil {
		return pv, ag, nil, pg, err
	}
	offset := pageOffset(r)
	runs, total, err := h.cfg.Agents.ListRuns(r.Context(), a.ProjectID, c.p.UserID, a.ResourceID, PageSize, offset)
	pv = projectView{Project: p, CanWrite: h.can(r, c, agentWriteRule)}
	return pv, ag, runs, pager{Offset: offset, Total: total, Base: agentURL(p.ID, ag.ID)}, err
}

// agentPage shows an agent, the forms that start a run and change the
// agent (for those who may) and the caller's runs with their live status.
func (h *Handler) agentPage(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderAgent(w, r, c, http.StatusOK, agentStartForm{}, nil)
}

// agentStartForm is the start form's input and, when the start was
// refused, why.
type agentStartForm struct{ Input, Problem string }

// agentEditForm is the edit form's fields as text: the agent's, or as
// typed when the change was refused, with why (Problem; the form is then
// shown open). Tools and RequireApprovalFor are one tool a line.
type agentEditForm struct {
	Name, Description, Instructions, Model, Tools, RequireApprovalFor, MaxSteps, Schedule, TriggerIntegrationID string
	// UpdatedAt is the agent's updatedAt the form was filled from
	// (RFC 3339): a save is refused when the agent changed since.
	UpdatedAt string
	Problem   string
}

// agentEditOf is the edit form of a as stored.
func agentEditOf(a agent.Agent) agentEditForm {
	f := agentEditForm{
		Name: a.Name, Description: a.Description, Instructions: a.Instructions, Model: a.Model,
		Tools: strings.Join(a.Tools, "\n"), RequireApprovalFor: strings.Join(a.RequireApprovalFor, "\n"),
		MaxSteps: strconv.Itoa(a.MaxSteps), Schedule: a.Schedule, UpdatedAt: a.UpdatedAt.Format(time.RFC3339Nano),
	}
	if a.TriggerIntegrationID != nil {
		f.TriggerIntegrationID = a.TriggerIntegrationID.String()
	}
	return f
}

// agentEditTyped is the edit form as submitted, the textareas' line ends
// as stored ("\n": a browser sends "\r\n", which would change the
// instructions, and so the agent's owner, on every save).
func agentEditTyped(r *http.Request) agentEditForm {
	v := r.PostFormValue
	text := func(k string) string { return strings.ReplaceAll(v(k), "\r\n", "\n") }
	return agentEditForm{
		Name: v("name"), Description: text("description"), Instructions: text("instructions"), Model: v("model"),
		Tools: v("tools"), RequireApprovalFor: v("requireApprovalFor"), MaxSteps: v("maxSteps"),
		Schedule: v("schedule"), TriggerIntegrationID: v("triggerIntegrationId"), UpdatedAt: v("updatedAt"),
	}
}

// update is the API's PATCH of every field the form shows: an empty
// model, schedule or trigger integration removes it. The name,
// description and instructions are left out when they are the stored
// ones as the form showed them (shownLine, shownText): a text the API
// stored with CR LF or CR line ends comes back with LF, and saving it
// would change the instructions, and so the agent's owner, though the
// user did not touch them. Errors: invalid_argument naming the field
// that does not parse.
func (f agentEditForm) update(stored agent.Agent) (agent.Update, error) {
	steps, err := strconv.Atoi(strings.TrimSpace(f.MaxSteps))
	if err != nil {
		return agent.Update{}, errs.New(errs.Invalid, "maxSteps must be a whole number")
	}
	trigger, err := agent.ParseTrigger(strings.TrimSpace(f.TriggerIntegrationID))
	if err != nil {
		return agent.Update{}, err
	}
	var since *time.Time
	if f.UpdatedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, f.UpdatedAt)
		if err != nil {
			return agent.Update{}, errs.New(errs.Invalid, "updatedAt must be the agent's updatedAt as the form gave it (RFC 3339)")
		}
		since = &t
	}
	tools, approval := append([]string{}, lines(f.Tools)...), append([]string{}, lines(f.RequireApprovalFor)...)
	return agent.Update{
		Name:        changed(f.Name, shownLine(stored.Name)),
		Description: changed(f.Description, shownText(stored.Description)), Instructions: changed(f.Instructions, shownText(stored.Instructions)),
		Model: &f.Model,
		Tools: &tools, RequireApprovalFor: &approval, MaxSteps: &steps, Schedule: &f.Schedule, TriggerIntegrationID: &trigger,
		UnchangedSince: since,
	}, nil
}

// shownText is a textarea's text s as a browser sends it back untouched,
// read by agentEditTyped: its HTML parser reads CR LF and a lone CR as LF.
func shownText(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// shownLine is a text input's value s as a browser sends it back
// untouched: without its line breaks.
func shownLine(s string) string { return strings.NewReplacer("\r", "", "\n", "").Replace(s) }

// changed is typed, or nil (no change) when it is shown, the stored
// value as the form showed it.
func changed(typed, shown string) *string {
	if typed == shown {
		return nil
	}
	return &typed
}

// renderAgent answers the agent's page with status, the start form f and
// the edit form edit (nil: the agent's values).
func (h *Handler) renderAgent(w http.ResponseWriter, r *http.Request, c caller, status int, f agentStartForm, edit *agentEditForm) {
	pv, ag, runs, pg, err := h.agentRuns(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if edit == nil {
		e := agentEditOf(ag)
		edit = &e
	}
	h.render(w, r, status, agentPage(c.sess.CSRF, pv, ag, runs, pg, f, *edit))
}

// agentUpdate changes the agent with the edit form's fields, as the API's
// PATCH (agents:run, editor), and shows its page again.
func (h *Handler) agentUpdate(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.ownedContext(r, c, agentWriteRule, h.agentOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := agentEditTyped(r)
	stored, err := h.cfg.Agents.GetAgent(r.Context(), a.ProjectID, a.ResourceID)
	var u agent.Update
	if err == nil {
		u, err = f.update(stored)
	}
	if err == nil {
		_, err = h.cfg.Agents.UpdateAgent(r.Context(), c.p, a.ProjectID, a.ResourceID, u)
	}
	if err != nil {
		if errors.Is(err, agent.ErrChanged) {
			// The page shows the agent as it is now; a second save
			// replaces it with what the user typed.
			f.UpdatedAt = agentEditOf(stored).UpdatedAt
		}
		h.formRefusedOn(agentsRule, w, r, c, err, func(status int, problem string) {
			f.Problem = problem
			h.renderAgent(w, r, c, status, agentStartForm{}, &f)
		})
		return
	}
	http.Redirect(w, r, agentURL(p.ID, a.ResourceID), http.StatusSeeOther)
}

// agentRunRows is the runs table's body, reloaded on AgentRunsEvent.
func (h *Handler) agentRunRows(w http.ResponseWriter, r *http.Request, c caller) {
	pv, _, runs, _, err := h.agentRuns(r, c)
	h.show(w, r, agentRunRows(pv.Project.ID, runs), err)
}

// agentStart starts a run of the agent with the form's input, as the
// API's route, and opens it.
func (h *Handler) agentStart(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.ownedContext(r, c, agentWriteRule, h.agentOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	input := r.PostFormValue("input")
	run, err := h.cfg.Agents.StartRun(r.Context(), c.p, a.ProjectID, a.ResourceID, input)
	if err != nil {
		h.formRefusedOn(agentsRule, w, r, c, err, func(status int, problem string) {
			h.renderAgent(w, r, c, status, agentStartForm{Input: input, Problem: problem}, nil)
		})
		return
	}
	http.Redirect(w, r, runURL(p.ID, run.ID), http.StatusSeeOther)
}

// runContext authorises c for the path's run with rule and reads it (the
// caller's own: another user's run is not found).
func (h *Handler) runContext(r *http.Request, c caller, rule auth.Rule) (projectView, agent.Run, error) {
	a, p, err := h.ownedContext(r, c, rule, h.runOwner())
	if err != nil {
		return projectView{}, agent.Run{}, err
	}
	run, err := h.cfg.Agents.GetRun(r.Context(), a.ProjectID, c.p.UserID, a.ResourceID)
	return projectView{Project: p, CanWrite: h.can(r, c, agentWriteRule)}, run, err
}

// agentRun shows a run: its status, steps, open question (answered in
// the page) and output, live.
func (h *Handler) agentRun(w http.ResponseWriter, r *http.Request, c caller) {
	pv, run, err := h.runContext(r, c, agentsRule)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ag, err := h.cfg.Agents.GetAgent(r.Context(), pv.Project.ID, run.AgentID)
	h.show(w, r, agentRunPage(c.sess.CSRF, pv, ag, run), err)
}

// agentRunPanel is the run's panel, reloaded on AgentRunEvent.
func (h *Handler) agentRunPanel(w http.ResponseWriter, r *http.Request, c caller) {
	pv, run, err := h.runContext(r, c, agentsRule)
	h.show(w, r, agentRunPanel(pv, run), err)
}

// agentAnswer answers the run's open question: form field answer for a
// question, approve (true or false) for an approval.
func (h *Handler) agentAnswer(w http.ResponseWriter, r *http.Request, c caller) {
	var ans agent.Answer
	if v, ok := r.PostForm["answer"]; ok {
		ans.Answer = &v[0]
	}
	switch v := r.PostForm.Get("approve"); v {
	case "":
	case "true", "false":
		approve := v == "true"
		ans.Approve = &approve
	default:
		h.fail(w, r, errs.New(errs.Invalid, "approve must be true or false"))
		return
	}
	h.actOnRun(w, r, c, func(project, user, id uuid.UUID) (agent.Run, error) {
		return h.cfg.Agents.AnswerRun(r.Context(), project, user, id, ans)
	})
}

// agentCancel cancels the run.
func (h *Handler) agentCancel(w http.ResponseWriter, r *http.Request, c caller) {
	h.actOnRun(w, r, c, func(project, user, id uuid.UUID) (agent.Run, error) {
		return h.cfg.Agents.CancelRun(r.Context(), project, user, id)
	})
}

// actOnRun runs act on the path's run with the API's write rule and
// answers the run's new panel.
func (h *Handler) actOnRun(w http.ResponseWriter, r *http.Request, c caller, act func(project, user, id uuid.UUID) (agent.Run, error)) {
	a, p, err := h.ownedContext(r, c, agentWriteRule, h.runOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	run, err := act(a.ProjectID, c.p.UserID, a.ResourceID)
	h.show(w, r, agentRunPanel(projectView{Project: p, CanWrite: true}, run), err)
}

// agentStream passes on AgentRunsEvent when a run of the path's agent
// changes status.
func (h *Handler) agentStream(w http.ResponseWriter, r *http.Request, c caller) {
	a, err := h.checkOwned(r, c, agentsRule, h.agentOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	id := a.ResourceID.String()
	h.stream(w, r, c, agentsRule, runEvents(AgentRunsEvent, func(e streamEvent) bool {
		return e.Type == agent.EventRunStatus && e.Data.AgentID == id
	}))
}

// agentRunStream passes on AgentRunEvent when the path's run changes
// status or asks a question.
func (h *Handler) agentRunStream(w http.ResponseWriter, r *http.Request, c caller) {
	_, run, err := h.runContext(r, c, agentsRule)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	id := run.ID.String()
	h.stream(w, r, c, agentsRule, runEvents(AgentRunEvent, func(e streamEvent) bool {
		return (e.Type == agent.EventRunStatus || e.Type == agent.EventQuestion) && e.Data.RunID == id
	}))
}

// runEvents selects, as the SSE event name, the events of the project
// that keep keeps.
func runEvents(name string, keep func(streamEvent) bool) func(uuid.UUID) func(streamEvent) (string, bool) {
	return func(project uuid.UUID) func(streamEvent) (string, bool) {
		return func(e streamEvent) (string, bool) {
			return name, e.ProjectID != nil && *e.ProjectID == project && keep(e)
		}
	}
}
