package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// fakeAgents holds one agent; a run it starts is running until GetRun
// has been asked about it `steps` times, then ends as end says.
type fakeAgents struct {
	mu      sync.Mutex
	agent   agent.Agent
	steps   int
	end     agent.Run // Status, Output, Question of the run once it settles
	runs    map[uuid.UUID]*fakeRun
	started []*auth.Principal
	answers []agent.Answer
}

type fakeRun struct {
	run   agent.Run
	user  uuid.UUID
	polls int
}

func (f *fakeAgents) ListAgents(_ context.Context, project uuid.UUID, limit, offset int) ([]agent.Agent, int, error) {
	if f.agent.ProjectID != project || offset > 0 {
		return nil, 0, nil
	}
	return []agent.Agent{f.agent}, 1, nil
}

func (f *fakeAgents) StartRun(_ context.Context, p *auth.Principal, project, id uuid.UUID, input string) (agent.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != f.agent.ID || project != f.agent.ProjectID {
		return agent.Run{}, agent.ErrNotFound
	}
	f.started = append(f.started, p)
	r := &fakeRun{run: agent.Run{ID: uuid.New(), AgentID: id, Status: agent.StatusQueued, Input: input}, user: p.UserID}
	f.runs[r.run.ID] = r
	return r.run, nil
}

func (f *fakeAgents) GetRun(_ context.Context, project, user, id uuid.UUID) (agent.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok || r.user != user || project != f.agent.ProjectID {
		return agent.Run{}, agent.ErrRunNotFound
	}
	r.polls++
	switch {
	case r.polls >= f.steps && r.run.Status != agent.StatusQueued:
		r.run.Status, r.run.Output, r.run.Question = f.end.Status, f.end.Output, f.end.Question
	default:
		r.run.Status = agent.StatusRunning
	}
	return r.run, nil
}

func (f *fakeAgents) AnswerRun(_ context.Context, project, user, id uuid.UUID, a agent.Answer) (agent.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok || r.user != user || project != f.agent.ProjectID {
		return agent.Run{}, agent.ErrRunNotFound
	}
	if r.run.Status != agent.StatusWaitingForInput {
		return agent.Run{}, errs.Errorf(errs.FailedPrecondition, "agent run %s is %s; only a run waiting for input can be answered", id, r.run.Status)
	}
	f.answers = append(f.answers, a)
	r.polls, r.run.Question = 0, nil
	r.run.Status = agent.StatusQueued
	f.end = agent.Run{Status: agent.StatusCompleted, Output: "answered: " + *a.Answer}
	return r.run, nil
}

type agentBundle struct {
	srv     *Server
	agents  *fakeAgents
	project uuid.UUID
}

func agentSetup(t *testing.T) *agentBundle {
	t.Helper()
	b := &agentBundle{project: uuid.New()}
	b.agents = &fakeAgents{
		agent: agent.Agent{ID: uuid.New(), ProjectID: b.project, Name: "summariser", Tools: []string{"search"}, MaxSteps: 10},
		steps: 2, end: agent.Run{Status: agent.StatusCompleted, Output: "done"}, runs: map[uuid.UUID]*fakeRun{},
	}
	guard := auth.NewGuard(auth.GuardConfig{Directory: projectDirectory{orgs: map[uuid.UUID]uuid.UUID{b.project: uuid.New()}}})
	srv, err := New(Config{
		Graph: &recordingGraph{}, Documents: fakeDocuments{}, Search: fakeSearch{}, Agents: b.agents,
		Guard: guard, Watcher: auth.NewWatcher(auth.WatcherConfig{Guard: guard, Logger: slog.New(slog.DiscardHandler)}),
		Logger: slog.New(slog.DiscardHandler), ListenAddr: "127.0.0.1:8080",
	})
	require.NoError(t, err)
	b.srv = srv
	return b
}

// connect opens an in-memory session as user with scopes and role.
func (b *agentBundle) connect(t *testing.T, user uuid.UUID, scopes auth.Scopes, role auth.ProjectRole) *mcp.ClientSession {
	t.Helper()
	_, cs := connectAs(t, b.srv, user, b.project, scopes, role)
	return cs
}

func runOf(t *testing.T, res *mcp.CallToolResult) agent.Run {
	t.Helper()
	require.False(t, res.IsError, text(res))
	var r agent.Run
	require.NoError(t, json.Unmarshal([]byte(text(res)), &r))
	return r
}

func TestAgentToolsFollowScopesAndRoles(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	user := uuid.New()
	read := auth.Scopes(0).With(auth.AgentsRead)
	require.Equal(t, []string{ToolAgentRunGet, ToolAgentsList}, toolNames(t, b.connect(t, user, read, auth.ProjectViewer)))
	runScopes := read.With(auth.AgentsRun)
	require.Equal(t, []string{ToolAgentRunGet, ToolAgentsList}, toolNames(t, b.connect(t, user, runScopes, auth.ProjectViewer)),
		"running needs the editor role")
	require.Equal(t, []string{ToolAgentRunAnswer, ToolAgentRunGet, ToolAgentsList, ToolAgentsRun},
		toolNames(t, b.connect(t, user, runScopes, auth.ProjectEditor)))
	require.NotContains(t, toolNames(t, b.connect(t, user, auth.AllScopes&^auth.Scopes(0).With(auth.AgentsRead), auth.ProjectAdmin)), ToolAgentsList)

	cs := b.connect(t, user, read, auth.ProjectAdmin)
	res := call(t, cs, ToolAgentsRun, map[string]any{"agentId": b.agents.agent.ID.String(), "input": "x"})
	require.Equal(t, "tool agents_run needs the scope agents:run, which this token lacks", text(res))
	require.Empty(t, b.agents.started)

	// Never in the tool box: an agent would start agents.
	p := &auth.Principal{UserID: user, Kind: auth.KindAPIToken, Scopes: auth.AllScopes, ProjectRoles: map[uuid.UUID]auth.ProjectRole{b.project: auth.ProjectAdmin}}
	tools, err := b.srv.Tools(t.Context(), p, b.project)
	require.NoError(t, err)
	require.NotContains(t, toolNamesOf(tools), ToolAgentsRun)
	require.NotContains(t, toolNamesOf(tools), ToolAgentsList)
	_, _, err = b.srv.Call(t.Context(), p, b.project, ToolAgentsRun, json.RawMessage(`{"agentId":"`+b.agents.agent.ID.String()+`","input":"x"}`))
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))
}

func TestAgentToolsRunGetAndAnswer(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	user := uuid.New()
	cs := b.connect(t, user, auth.AllScopes, auth.ProjectEditor)

	res := call(t, cs, ToolAgentsList, map[string]any{})
	require.False(t, res.IsError, text(res))
	require.Contains(t, text(res), `"name":"summariser"`)
	require.Contains(t, text(res), `"total":1`)

	// A run that ends within the wait comes back with its output.
	r := runOf(t, call(t, cs, ToolAgentsRun, map[string]any{"agentId": b.agents.agent.ID.String(), "input": "summarise"}))
	require.Equal(t, agent.StatusCompleted, r.Status)
	require.Equal(t, "done", r.Output)
	require.Equal(t, "summarise", r.Input)
	require.Equal(t, user, b.agents.started[0].UserID, "started as the caller")

	// Without waiting: the run as it is, then followed with agent_run_get.
	r = runOf(t, call(t, cs, ToolAgentsRun, map[string]any{"agentId": b.agents.agent.ID.String(), "input": "later", "waitSeconds": 0}))
	require.Equal(t, agent.StatusQueued, r.Status)
	require.Empty(t, r.Output)
	got := runOf(t, call(t, cs, ToolAgentRunGet, map[string]any{"runId": r.ID.String()}))
	require.Equal(t, r.ID, got.ID)

	// A run that asks stops the wait; the answer lets it end.
	b.agents.mu.Lock()
	b.agents.end = agent.Run{Status: agent.StatusWaitingForInput, Question: &agent.Question{ID: uuid.New(), Kind: "question", Text: "Which year?"}}
	b.agents.mu.Unlock()
	r = runOf(t, call(t, cs, ToolAgentsRun, map[string]any{"agentId": b.agents.agent.ID.String(), "input": "ASK: which year"}))
	require.Equal(t, agent.StatusWaitingForInput, r.Status)
	require.Equal(t, "Which year?", r.Question.Text)
	r = runOf(t, call(t, cs, ToolAgentRunAnswer, map[string]any{"runId": r.ID.String(), "answer": "1843"}))
	require.Equal(t, agent.StatusCompleted, r.Status)
	require.Equal(t, "answered: 1843", r.Output)
	require.Equal(t, "1843", *b.agents.answers[0].Answer)

	// Refusals are tool errors naming the cause.
	res = call(t, cs, ToolAgentRunAnswer, map[string]any{"runId": r.ID.String(), "answer": "again"})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "only a run waiting for input can be answered")
	res = call(t, cs, ToolAgentsRun, map[string]any{"agentId": uuid.NewString(), "input": "x"})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "no agent with id")
	res = call(t, cs, ToolAgentsRun, map[string]any{"agentId": b.agents.agent.ID.String(), "input": "x", "waitSeconds": 61})
	require.True(t, res.IsError, "waitSeconds is bounded")
	res = call(t, cs, ToolAgentsRun, map[string]any{"agentId": "nope", "input": "x"})
	require.True(t, res.IsError)

	// Another user's run is not found.
	other := b.connect(t, uuid.New(), auth.AllScopes, auth.ProjectEditor)
	res = call(t, other, ToolAgentRunGet, map[string]any{"runId": r.ID.String()})
	require.True(t, res.IsError)
	require.Equal(t, "no agent run of yours with id "+r.ID.String()+" in this project", text(res))
}
