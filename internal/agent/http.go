package agent

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	agentIn struct {
		ID string `path:"id"`
	}
	runIn struct {
		RunID string `path:"runId"`
	}
	listAgentsIn struct {
		httpapi.PageParams
	}
	listRunsIn struct {
		ID string `path:"id"`
		httpapi.PageParams
	}
	createIn struct {
		Body struct {
			Name                 string     `json:"name" minLength:"1" maxLength:"200"`
			Description          string     `json:"description,omitempty" maxLength:"2000"`
			Instructions         string     `json:"instructions" minLength:"1" maxLength:"100000"`
			Model                string     `json:"model,omitempty" maxLength:"200" doc:"A generative model of the project's provider; its default when absent."`
			Tools                []string   `json:"tools" maxItems:"100" doc:"Tools the agent may call: names the built-in MCP server lists, server/tool for external ones. ask_user is always offered."`
			MaxSteps             int        `json:"maxSteps,omitempty" minimum:"1" maximum:"50" default:"10" doc:"The model steps a run may take."`
			RequireApprovalFor   []string   `json:"requireApprovalFor,omitempty" maxItems:"100" doc:"Tools among tools that ask the user before they run."`
			Schedule             string     `json:"schedule,omitempty" maxLength:"200" doc:"A cron expression: the scheduler starts a run at each of its times (see Agent)."`
			TriggerIntegrationID *uuid.UUID `json:"triggerIntegrationId,omitempty" format:"uuid" doc:"An integration of the project whose every ended sync starts a run."`
		}
	}
	updateIn struct {
		ID   string `path:"id"`
		Body struct {
			Name                 *string   `json:"name,omitempty" minLength:"1" maxLength:"200"`
			Description          *string   `json:"description,omitempty" maxLength:"2000"`
			Instructions         *string   `json:"instructions,omitempty" minLength:"1" maxLength:"100000"`
			Model                *string   `json:"model,omitempty" maxLength:"200" doc:"An empty string goes back to the project's default."`
			Tools                *[]string `json:"tools,omitempty" maxItems:"100"`
			MaxSteps             *int      `json:"maxSteps,omitempty" minimum:"1" maximum:"50"`
			RequireApprovalFor   *[]string `json:"requireApprovalFor,omitempty" maxItems:"100"`
			Schedule             *string   `json:"schedule,omitempty" maxLength:"200" doc:"An empty string removes the schedule."`
			TriggerIntegrationID *string   `json:"triggerIntegrationId,omitempty" doc:"An integration's id; an empty string removes the trigger."`
		}
	}
	startIn struct {
		ID   string `path:"id"`
		Body struct {
			Input string `json:"input" minLength:"1" maxLength:"100000"`
		}
	}
	answerIn struct {
		RunID string `path:"runId"`
		Body  struct {
			Answer  *string `json:"answer,omitempty" maxLength:"100000" doc:"The answer to a question."`
			Approve *bool   `json:"approve,omitempty" doc:"The decision on an approval."`
		}
	}
)

// Register adds the agent routes. Definitions and runs belong to a
// project (X-Project-ID, or a project-scoped token's project; an id's own
// project on routes naming one). Reading needs agents:read and any role;
// defining agents and starting, cancelling and answering runs need
// agents:run and the editor role. A run is its starting user's: other
// users (project admins included) get 404 for it and do not see it in
// lists.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.AgentsRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.AgentsRun, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
	agent := &auth.Owner{Param: "id", Kind: "agent", Resolve: auth.InProject(svc.AgentProject), NotFound: ErrNotFound}
	run := &auth.Owner{Param: "runId", Kind: "agent-run", Resolve: auth.InProject(svc.RunProject), NotFound: ErrRunNotFound}
	h := handlers{svc: svc}

	huma.Register(api, httpapi.Op("create-agent", http.MethodPost, "/api/agents", "Define an agent", write), h.create)
	huma.Register(api, httpapi.Op("list-agents", http.MethodGet, "/api/agents", "List the project's agents, newest first", read), h.list)
	huma.Register(api, httpapi.Op("get-agent", http.MethodGet, "/api/agents/{id}", "Get an agent", read.WithOwner(agent)), h.get)
	huma.Register(api, httpapi.Op("update-agent", http.MethodPatch, "/api/agents/{id}", "Change an agent (runs in flight keep their definition)", write.WithOwner(agent)), h.update)
	huma.Register(api, httpapi.Op("delete-agent", http.MethodDelete, "/api/agents/{id}", "Delete an agent and its runs (unfinished ones are cancelled)", write.WithOwner(agent)), h.delete)
	huma.Register(api, httpapi.Op("start-agent-run", http.MethodPost, "/api/agents/{id}/runs", "Start a run of an agent", write.WithOwner(agent)), h.start)
	huma.Register(api, httpapi.Op("list-agent-runs", http.MethodGet, "/api/agents/{id}/runs", "List your runs of an agent, newest first (without steps)", read.WithOwner(agent)), h.runs)
	huma.Register(api, httpapi.Op("get-agent-run", http.MethodGet, "/api/agent-runs/{runId}", "Get one of your runs with its steps", read.WithOwner(run)), h.getRun)
	huma.Register(api, httpapi.Op("cancel-agent-run", http.MethodPost, "/api/agent-runs/{runId}/cancel", "Cancel one of your runs that has not ended", write.WithOwner(run)), h.cancel)
	huma.Register(api, httpapi.Op("answer-agent-run", http.MethodPost, "/api/agent-runs/{runId}/answer", "Answer the question of one of your runs waiting for input", write.WithOwner(run)), h.answer)
}

// handlers are the agent routes' handlers.
type handlers struct {
	svc *Service
}

func (h handlers) create(ctx context.Context, in *createIn) (*httpapi.Created[Agent], error) {
	b := in.Body
	return httpapi.ReplyCreated(h.svc.CreateAgent(ctx, auth.PrincipalFrom(ctx), auth.AccessFrom(ctx).ProjectID, CreateParams{
		Name: b.Name, Description: b.Description, Instructions: b.Instructions, Model: b.Model, Tools: b.Tools,
		MaxSteps: b.MaxSteps, RequireApprovalFor: b.RequireApprovalFor, Schedule: b.Schedule, TriggerIntegrationID: b.TriggerIntegrationID,
	}))
}

func (h handlers) list(ctx context.Context, in *listAgentsIn) (*httpapi.Out[httpapi.List[Agent]], error) {
	list, total, err := h.svc.ListAgents(ctx, auth.AccessFrom(ctx).ProjectID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) get(ctx context.Context, _ *agentIn) (*httpapi.Out[Agent], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.GetAgent(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) update(ctx context.Context, in *updateIn) (*httpapi.Out[Agent], error) {
	a, b := auth.AccessFrom(ctx), in.Body
	u := Update{
		Name: b.Name, Description: b.Description, Instructions: b.Instructions, Model: b.Model, Tools: b.Tools,
		MaxSteps: b.MaxSteps, RequireApprovalFor: b.RequireApprovalFor, Schedule: b.Schedule,
	}
	if raw := b.TriggerIntegrationID; raw != nil {
		id, err := ParseTrigger(*raw)
		if err != nil {
			return nil, err
		}
		u.TriggerIntegrationID = &id
	}
	return httpapi.Reply(h.svc.UpdateAgent(ctx, auth.PrincipalFrom(ctx), a.ProjectID, a.ResourceID, u))
}

func (h handlers) delete(ctx context.Context, _ *agentIn) (*httpapi.NoContent, error) {
	a := auth.AccessFrom(ctx)
	return nil, h.svc.DeleteAgent(ctx, a.ProjectID, a.ResourceID)
}

func (h handlers) start(ctx context.Context, in *startIn) (*httpapi.Created[Run], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.ReplyCreated(h.svc.StartRun(ctx, auth.PrincipalFrom(ctx), a.ProjectID, a.ResourceID, in.Body.Input))
}

func (h handlers) runs(ctx context.Context, in *listRunsIn) (*httpapi.Out[httpapi.List[Run]], error) {
	a := auth.AccessFrom(ctx)
	list, total, err := h.svc.ListRuns(ctx, a.ProjectID, auth.PrincipalFrom(ctx).UserID, a.ResourceID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) getRun(ctx context.Context, _ *runIn) (*httpapi.Out[Run], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.GetRun(ctx, a.ProjectID, auth.PrincipalFrom(ctx).UserID, a.ResourceID))
}

func (h handlers) cancel(ctx context.Context, _ *runIn) (*httpapi.Out[Run], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.CancelRun(ctx, a.ProjectID, auth.PrincipalFrom(ctx).UserID, a.ResourceID))
}

func (h handlers) answer(ctx context.Context, in *answerIn) (*httpapi.Out[Run], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.AnswerRun(ctx, a.ProjectID, auth.PrincipalFrom(ctx).UserID, a.ResourceID,
		Answer{Answer: in.Body.Answer, Approve: in.Body.Approve}))
}
