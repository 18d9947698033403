package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
)

// Agents is what the agent tools call (agent.Service). A run is its
// starting user's: GetRun and AnswerRun find only user's runs.
type Agents interface {
	ListAgents(ctx context.Context, project uuid.UUID, limit, offset int) ([]agent.Agent, int, error)
	StartRun(ctx context.Context, p *auth.Principal, project, id uuid.UUID, input string) (agent.Run, error)
	GetRun(ctx context.Context, project, user, id uuid.UUID) (agent.Run, error)
	AnswerRun(ctx context.Context, project, user, id uuid.UUID, a agent.Answer) (agent.Run, error)
}

// Tool names of the agent tools.
const (
	ToolAgentsList     = "agents_list"
	ToolAgentsRun      = "agents_run"
	ToolAgentRunGet    = "agent_run_get"
	ToolAgentRunAnswer = "agent_run_answer"
)

// Bounds of the agent tools.
const (
	// AgentWaitDefault and AgentWaitMax bound how long, in seconds,
	// agents_run and agent_run_answer wait for the run to end or ask.
	AgentWaitDefault = 20
	AgentWaitMax     = 60
	agentInputMax    = 100_000
	agentListMax     = 100
	// agentPoll is how often a waiting tool looks at its run.
	agentPoll = 200 * time.Millisecond
)

type (
	agentsListIn struct {
		Limit  int `json:"limit,omitempty" jsonschema:"page size"`
		Offset int `json:"offset,omitempty" jsonschema:"agents to skip"`
	}
	agentPage struct {
		Agents []agent.Agent `json:"agents"`
		pageInfo
	}
	agentsRunIn struct {
		AgentID     string `json:"agentId" jsonschema:"the agent's id (agents_list)"`
		Input       string `json:"input" jsonschema:"what the run is asked to do"`
		WaitSeconds *int   `json:"waitSeconds,omitempty" jsonschema:"how long to wait for the run to end or ask a question before returning it as it is (0: do not wait)"`
	}
	agentRunGetIn struct {
		RunID string `json:"runId" jsonschema:"the run's id"`
	}
	agentRunAnswerIn struct {
		RunID       string  `json:"runId" jsonschema:"the run's id"`
		Answer      *string `json:"answer,omitempty" jsonschema:"the answer to the run's question"`
		Approve     *bool   `json:"approve,omitempty" jsonschema:"the decision when the run asks for approval to run a tool"`
		WaitSeconds *int    `json:"waitSeconds,omitempty" jsonschema:"how long to wait for the run to end or ask again before returning it as it is (0: do not wait)"`
	}
)

func (s *Server) addAgentTools() error {
	// Left out of the tool box: an agent starting agents would recurse.
	read := toolRule{scope: auth.AgentsRead, role: auth.ProjectViewer, notInToolbox: true}
	run := toolRule{scope: auth.AgentsRun, role: auth.ProjectEditor, notInToolbox: true}
	wait := []prop{intRange(0, AgentWaitMax, AgentWaitDefault)}
	return errors.Join(
		addTool(s, &mcp.Tool{
			Name: ToolAgentsList, Title: "List agents",
			Description: "List the project's agents, newest first: their names, instructions and tools.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, read, map[string][]prop{
			"limit": {intRange(1, agentListMax, ListLimitDefault)}, "offset": {minimum(0)},
		}, (*Server).agentsList),
		addTool(s, &mcp.Tool{
			Name: ToolAgentsRun, Title: "Run an agent",
			Description: "Start a run of an agent with an input. It waits up to waitSeconds for the run to end (then its " +
				"output is there) or to ask a question (answer it with agent_run_answer); otherwise it returns the run " +
				"still going: follow it with agent_run_get.",
			Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
		}, run, map[string][]prop{
			"agentId": {uuidFormat}, "input": {strLen(1, agentInputMax)}, "waitSeconds": wait,
		}, (*Server).agentsRun),
		addTool(s, &mcp.Tool{
			Name: ToolAgentRunGet, Title: "Get an agent run",
			Description: "Get one of your agent runs: its status, steps, output or error, and its open question.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, read, map[string][]prop{"runId": {uuidFormat}}, (*Server).agentRunGet),
		addTool(s, &mcp.Tool{
			Name: ToolAgentRunAnswer, Title: "Answer an agent run",
			Description: "Answer the open question of one of your runs waiting for input: answer for a question, " +
				"approve (true or false) for an approval. The run goes on; it waits up to waitSeconds as agents_run does.",
		}, run, map[string][]prop{
			"runId": {uuidFormat}, "answer": {strLen(1, agentInputMax)}, "waitSeconds": wait,
		}, (*Server).agentRunAnswer),
	)
}

// agentsList is agents_list.
func (s *Server) agentsList(ctx context.Context, c *caller, in agentsListIn) (any, error) {
	limit := orDefault(in.Limit, ListLimitDefault)
	list, total, err := s.cfg.Agents.ListAgents(ctx, c.project, limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return agentPage{Agents: nonNil(list), pageInfo: pageInfo{Total: total, Limit: limit, Offset: in.Offset}}, nil
}

// agentsRun is agents_run.
func (s *Server) agentsRun(ctx context.Context, c *caller, in agentsRunIn) (any, error) {
	id, err := parseID("agentId", in.AgentID)
	if err != nil {
		return nil, err
	}
	r, err := s.cfg.Agents.StartRun(ctx, c.principal, c.project, id, in.Input)
	if err != nil {
		return nil, notFound(err, "agent", id)
	}
	return s.awaitRun(ctx, c, r, in.WaitSeconds)
}

// agentRunGet is agent_run_get.
func (s *Server) agentRunGet(ctx context.Context, c *caller, in agentRunGetIn) (any, error) {
	id, err := parseID("runId", in.RunID)
	if err != nil {
		return nil, err
	}
	r, err := s.cfg.Agents.GetRun(ctx, c.project, c.principal.UserID, id)
	return r, notFound(err, "agent run of yours", id)
}

// agentRunAnswer is agent_run_answer.
func (s *Server) agentRunAnswer(ctx context.Context, c *caller, in agentRunAnswerIn) (any, error) {
	id, err := parseID("runId", in.RunID)
	if err != nil {
		return nil, err
	}
	r, err := s.cfg.Agents.AnswerRun(ctx, c.project, c.principal.UserID, id, agent.Answer{Answer: in.Answer, Approve: in.Approve})
	if err != nil {
		return nil, notFound(err, "agent run of yours", id)
	}
	return s.awaitRun(ctx, c, r, in.WaitSeconds)
}

// awaitRun waits up to wait seconds (AgentWaitDefault when nil), and no
// longer than ctx, for run r to end or to ask a question, and returns it
// as it is then. A run that is not back from waiting for input when its
// answer was just given is still going.
func (s *Server) awaitRun(ctx context.Context, c *caller, r agent.Run, wait *int) (agent.Run, error) {
	secs := AgentWaitDefault
	if wait != nil {
		secs = *wait
	}
	deadline := time.NewTimer(time.Duration(secs) * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(agentPoll)
	defer tick.Stop()
	for secs > 0 && !runSettled(r) {
		select {
		case <-ctx.Done():
			return r, nil
		case <-deadline.C:
			return r, nil
		case <-tick.C:
		}
		next, err := s.cfg.Agents.GetRun(ctx, c.project, c.principal.UserID, r.ID)
		if err != nil {
			if ctx.Err() != nil {
				return r, nil
			}
			return r, err
		}
		r = next
	}
	return r, nil
}

// runSettled reports whether r has ended or waits for an answer.
func runSettled(r agent.Run) bool {
	switch r.Status {
	case agent.StatusCompleted, agent.StatusFailed, agent.StatusCancelled:
		return true
	case agent.StatusWaitingForInput:
		return r.Question != nil
	}
	return false
}
