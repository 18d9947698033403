package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// agentRun is a run as the API answers it.
type agentRun struct {
	ID       string `json:"id"`
	AgentID  string `json:"agentId"`
	Status   string `json:"status"`
	Trigger  string `json:"trigger"`
	Input    string `json:"input"`
	Output   string `json:"output"`
	Error    string `json:"error"`
	Question *struct {
		ID        string          `json:"id"`
		Kind      string          `json:"kind"`
		Text      string          `json:"text"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
		ExpiresAt time.Time       `json:"expiresAt"`
	} `json:"question"`
	Steps []struct {
		Index      int             `json:"index"`
		Kind       string          `json:"kind"`
		Tool       string          `json:"tool"`
		Input      json.RawMessage `json:"input"`
		Output     json.RawMessage `json:"output"`
		IsError    bool            `json:"isError"`
		DurationMs int64           `json:"durationMs"`
		StartedAt  time.Time       `json:"startedAt"`
	} `json:"steps"`
	InputTokens  int64      `json:"inputTokens"`
	OutputTokens int64      `json:"outputTokens"`
	CostUSD      float64    `json:"costUsd"`
	CreatedAt    time.Time  `json:"createdAt"`
	StartedAt    *time.Time `json:"startedAt"`
	CompletedAt  *time.Time `json:"completedAt"`
}

// stepKinds lists a run's steps as kind or kind:tool.
func (r agentRun) stepKinds() []string {
	out := []string{}
	for i, s := range r.Steps {
		if s.Index != i {
			out = append(out, "index?")
		}
		if s.Tool != "" {
			out = append(out, s.Kind+":"+s.Tool)
		} else {
			out = append(out, s.Kind)
		}
	}
	return out
}

// agentCreate defines an agent in project as token and returns its id.
func (s *testServer) agentCreate(token, project string, body map[string]any) string {
	s.t.Helper()
	var out struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/agents", token, body, header{"X-Project-ID", project}).Decode(s.t, &out)
	return out.ID
}

// agentStart starts a run as token.
func (s *testServer) agentStart(token, agent, input string) agentRun {
	s.t.Helper()
	var r agentRun
	s.must(201, "POST", "/api/agents/"+agent+"/runs", token, map[string]any{"input": input}).Decode(s.t, &r)
	return r
}

// agentRunGet reads a run as token.
func (s *testServer) agentRunGet(token, run string) agentRun {
	s.t.Helper()
	var r agentRun
	s.must(200, "GET", "/api/agent-runs/"+run, token, nil).Decode(s.t, &r)
	return r
}

// agentWait waits until the run has one of statuses.
func (s *testServer) agentWait(token, run string, statuses ...string) agentRun {
	s.t.Helper()
	var r agentRun
	require.Eventually(s.t, func() bool {
		r = s.agentRunGet(token, run)
		return slices.Contains(statuses, r.Status)
	}, 30*time.Second, 20*time.Millisecond, "run %s never became %v", run, statuses)
	return r
}

// agentEvents reads from frames the events of run (agent_run.status,
// agent.question, its job.completed and its notifications) until the
// one for which done reports true, as "type" or "type:status".
func agentEvents(t *testing.T, frames <-chan sseFrame, run string, done func(string) bool) []string {
	t.Helper()
	var out []string
	for {
		f := nextEvent(t, frames)
		typ, _ := f.Data["type"].(string)
		data, _ := f.Data["data"].(map[string]any)
		var e string
		switch typ {
		case "agent_run.status":
			if data["runId"] == run {
				e = typ + ":" + data["status"].(string)
			}
		case "agent.question":
			if data["runId"] == run {
				e = typ
			}
		case "job.completed":
			if data["jobId"] == run {
				e = typ + ":" + data["status"].(string)
			}
		case "notification":
			n, _ := data["notification"].(map[string]any)
			if n["sourceId"] == run {
				e = typ
			}
		}
		if e == "" {
			continue
		}
		out = append(out, e)
		if done(e) {
			return out
		}
	}
}

// The local provider's planner drives a whole run offline: search, ask
// the user, create a graph object, answer. Every step is recorded, the
// events arrive in order, the starting user is notified with a link, and
// the object exists once.
func TestAgentRunLocal(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	frames, _ := s.openStream(s.admin, 0)

	agentID := s.agentCreate(s.admin, project, map[string]any{
		"name": "Founder finder", "description": "finds founders", "instructions": "Find who founded the company and record them.",
		"tools": []string{"search", "graph_create_object"},
	})
	input := "Who founded Acme?\nASK: Which name should the founder's record have?\nCALL: graph_create_object {\"type\":\"Person\",\"name\":\"Ada Lovelace\"}"
	run := s.agentStart(s.admin, agentID, input)
	require.Equal(t, "queued", run.Status)
	require.Equal(t, agentID, run.AgentID)
	require.Empty(t, run.Steps)

	waiting := s.agentWait(s.admin, run.ID, "waiting_for_input")
	require.NotNil(t, waiting.Question)
	require.Equal(t, "question", waiting.Question.Kind)
	require.Equal(t, "Which name should the founder's record have?", waiting.Question.Text)
	require.Equal(t, []string{"model", "tool:search", "model"}, waiting.stepKinds())
	require.Equal(t, []string{
		"agent_run.status:queued", "agent_run.status:running", "agent_run.status:waiting_for_input", "agent.question", "notification",
	}, agentEvents(t, frames, run.ID, func(e string) bool { return e == "notification" }))

	var inbox struct {
		Data []struct {
			Title     string `json:"title"`
			Message   string `json:"message"`
			ActionURL string `json:"actionUrl"`
			SourceID  string `json:"sourceId"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/notifications?category=agents", s.admin, nil).Decode(t, &inbox)
	require.Len(t, inbox.Data, 1)
	require.Equal(t, "Agent Founder finder has a question", inbox.Data[0].Title)
	require.Equal(t, waiting.Question.Text, inbox.Data[0].Message)
	require.Equal(t, "/projects/"+project+"/agent-runs/"+run.ID, inbox.Data[0].ActionURL)

	var answered agentRun
	s.must(200, "POST", "/api/agent-runs/"+run.ID+"/answer", s.admin, map[string]any{"answer": "Ada Lovelace"}).Decode(t, &answered)
	require.Contains(t, []string{"queued", "running", "completed"}, answered.Status)
	require.Nil(t, answered.Question)

	done := s.agentWait(s.admin, run.ID, "completed", "failed")
	require.Equal(t, "completed", done.Status, done.Error)
	require.Equal(t, []string{
		"model", "tool:search", "model", "tool:ask_user", "model", "tool:graph_create_object", "model",
	}, done.stepKinds())
	require.JSONEq(t, `{"answer":"Ada Lovelace"}`, string(done.Steps[3].Output))
	require.JSONEq(t, `{"type":"Person","name":"Ada Lovelace"}`, string(done.Steps[5].Input))
	require.False(t, done.Steps[5].IsError, string(done.Steps[5].Output))
	require.Contains(t, done.Output, "From 3 tool result(s):")
	require.Contains(t, done.Output, "- ask_user: Ada Lovelace")
	require.Positive(t, done.InputTokens)
	require.Positive(t, done.OutputTokens)
	require.NotNil(t, done.StartedAt)
	require.Equal(t, done.Steps[0].StartedAt, *done.StartedAt, "a run started with its first step, before the question")
	require.NotNil(t, done.CompletedAt)
	require.Equal(t, []string{
		"agent_run.status:queued", "agent_run.status:running", "agent_run.status:completed", "job.completed:completed",
	}, agentEvents(t, frames, run.ID, func(e string) bool { return e == "job.completed:completed" }))

	var objects struct {
		Data []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/graph/objects?type=Person", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &objects)
	n := 0
	for _, o := range objects.Data {
		if o.Name == "Ada Lovelace" {
			n++
		}
	}
	require.Equal(t, 1, n, "the object is created once")
}

// agentScript is the scripted model of the fake-provider runs: after n
// tool results it searches, asks the user, creates the object named by
// the answer, then answers. It records the tools each request declared.
type agentScript struct {
	mu    sync.Mutex
	tools [][]string
}

// next is the scripted step after results (the tool results so far, as
// JSON objects): a call (name, arguments) or the final text.
func (a *agentScript) next(declared []string, results []map[string]any) (name string, args map[string]any, text string) {
	a.mu.Lock()
	a.tools = append(a.tools, declared)
	a.mu.Unlock()
	switch len(results) {
	case 0:
		return "search", map[string]any{"query": "Acme founder"}, ""
	case 1:
		return "ask_user", map[string]any{"question": "Which name should the record have?"}, ""
	case 2:
		return "graph_create_object", map[string]any{"type": "Person", "name": results[1]["answer"]}, ""
	}
	return "", nil, "Recorded the founder."
}

// declared is the tools of every request so far.
func (a *agentScript) declared() [][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.tools)
}

// TestAgentRunProviders drives the run with the key-ai (Gemini) fake and
// the OpenAI-compatible fake making the tool calls. The run is started by
// an editor whose token lacks documents:write: the tools sent to the model
// are the agent's tools that user may use, plus ask_user, at every step
// (documents_upload_text is never offered, nor a tool the agent does not
// list). Tokens and cost are the sums of the ledger's calls for the run.
func TestAgentRunProviders(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"key-ai", "openai"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			script := &agentScript{}
			var opts []serverOption
			switch provider {
			case "key-ai":
				const apiKey = "AIzaSy-agent-key-1234"
				g := llmtest.NewGemini(t, apiKey)
				g.SetStream(func(c llmtest.StreamCall) []llmtest.Part {
					var declared []string
					for _, d := range c.Tools {
						declared = append(declared, d.Name)
					}
					var results []map[string]any
					for _, content := range c.Contents {
						for _, p := range content.Parts {
							if p.FunctionResponse != nil {
								out, _ := p.FunctionResponse.Response["output"].(map[string]any)
								results = append(results, out)
							}
						}
					}
					name, args, text := script.next(declared, results)
					if name == "" {
						return []llmtest.Part{{Text: text}}
					}
					return []llmtest.Part{{FunctionCall: &llmtest.FunctionCall{Name: name, Args: args}}}
				})
				opts = append(opts, withKeyAI(g.URL(), apiKey), withoutLocalProvider)
			case "openai":
				o := llmtest.NewOpenAI(t)
				o.SetChatStream(func(c llmtest.OpenAIChat) []llmtest.OpenAIDelta {
					var declared []string
					for _, d := range c.Tools {
						declared = append(declared, d.Name)
					}
					var results []map[string]any
					for _, m := range c.Messages {
						if m.Role == "tool" {
							var out map[string]any
							_ = json.Unmarshal([]byte(m.Content), &out)
							results = append(results, out)
						}
					}
					name, args, text := script.next(declared, results)
					if name == "" {
						return []llmtest.OpenAIDelta{{Content: text}}
					}
					raw, _ := json.Marshal(args)
					return []llmtest.OpenAIDelta{{Call: &llmtest.OpenAICall{ID: fmt.Sprintf("call-%d", len(results)), Name: name, Arguments: string(raw)}}}
				})
				opts = append(opts, withOpenAI(o.URL(), "", "llama3.1:8b", "nomic-embed-text"), withoutLocalProvider)
			}
			s := newServer(t, opts...)
			project, _ := s.defaultProject()
			agentID := s.agentCreate(s.admin, project, map[string]any{
				"name": "Founder finder", "instructions": "Find the founder and record them.",
				"tools": []string{"search", "graph_create_object", "documents_upload_text"},
			})
			_, editor := s.newMember("agent-editor@example.com",
				[]string{"agents:read", "agents:run", "search:read", "graph:read", "graph:write", "documents:read", "notifications:read"}, project, "editor")

			frames, _ := s.openStream(editor, 0)
			run := s.agentStart(editor, agentID, "Who founded Acme? Record them.")
			waiting := s.agentWait(editor, run.ID, "waiting_for_input", "failed")
			require.Equal(t, "waiting_for_input", waiting.Status, waiting.Error)
			require.Equal(t, "Which name should the record have?", waiting.Question.Text)
			s.must(200, "POST", "/api/agent-runs/"+run.ID+"/answer", editor, map[string]any{"answer": "Ada Lovelace"})
			done := s.agentWait(editor, run.ID, "completed", "failed")
			require.Equal(t, "completed", done.Status, done.Error)
			require.Equal(t, "Recorded the founder.", done.Output)
			require.Equal(t, []string{
				"model", "tool:search", "model", "tool:ask_user", "model", "tool:graph_create_object", "model",
			}, done.stepKinds())
			require.False(t, done.Steps[1].IsError, string(done.Steps[1].Output))
			require.JSONEq(t, `{"answer":"Ada Lovelace"}`, string(done.Steps[3].Output))
			require.False(t, done.Steps[5].IsError, string(done.Steps[5].Output))
			require.Equal(t, []string{
				"agent_run.status:queued", "agent_run.status:running", "agent_run.status:waiting_for_input", "agent.question", "notification",
				"agent_run.status:queued", "agent_run.status:running", "agent_run.status:completed", "job.completed:completed",
			}, agentEvents(t, frames, run.ID, func(e string) bool { return e == "job.completed:completed" }))

			for i, tools := range script.declared() {
				slices.Sort(tools)
				require.Equal(t, []string{"ask_user", "graph_create_object", "search"}, tools, "request %d", i)
			}
			require.Len(t, script.declared(), 4)

			var n int
			require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM graph_objects
				WHERE project_id = $1 AND type = 'Person' AND name = 'Ada Lovelace' AND deleted_at IS NULL`, project).Scan(&n))
			require.Equal(t, 1, n)
			var calls int
			var in, out int64
			var cost float64
			require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*), sum(text_tokens + image_tokens + video_tokens + audio_tokens)::int8, sum(output_tokens)::int8,
				sum(estimated_cost_usd)::float8 FROM provider_usage WHERE job_id = $1 AND operation = 'generate'`, run.ID).Scan(&calls, &in, &out, &cost))
			require.Equal(t, 4, calls, "one ledger row per model step, attributed to the run")
			require.Equal(t, in, done.InputTokens)
			require.Equal(t, out, done.OutputTokens)
			require.InDelta(t, cost, done.CostUSD, 1e-12)
			if provider == "key-ai" {
				require.Positive(t, done.CostUSD, "the catalog prices Gemini")
			}
		})
	}
}

// agentQuestionStatus is the stored status of a run's questions.
func (s *testServer) agentQuestionStatus(run string) []string {
	s.t.Helper()
	rows, err := s.m.db.pool.Query(context.Background(), `SELECT status FROM agent_run_questions WHERE run_id = $1 ORDER BY created_at`, run)
	require.NoError(s.t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(s.t, err)
	return out
}

// TestAgentRunCancel cancels a run in every status that has not ended:
// queued (the queue paused), running (its model call in flight),
// waiting for input; then a second cancel, and one of a completed run,
// are 409. The run ends cancelled at once, publishes its status and
// job.completed, closes its question, and takes no further step.
func TestAgentRunCancel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	calls := make(chan struct{}, 10)
	o := llmtest.NewOpenAI(t)
	o.SetChatStream(func(llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		calls <- struct{}{}
		<-release
		return []llmtest.OpenAIDelta{{Content: "too late"}}
	})
	t.Cleanup(func() { close(release) })
	slow := newServer(t, withOpenAI(o.URL(), "", "llama3.1:8b", "nomic-embed-text"), withoutLocalProvider)
	s := newServer(t)
	ctx := context.Background()

	cancel := func(srv *testServer, run string) agentRun {
		t.Helper()
		var r agentRun
		srv.must(200, "POST", "/api/agent-runs/"+run+"/cancel", srv.admin, nil).Decode(t, &r)
		require.Equal(t, "cancelled", r.Status)
		require.Nil(t, r.Question)
		return r
	}

	t.Run("Queued", func(t *testing.T) {
		project, _ := s.defaultProject()
		require.NoError(t, s.m.jobs.Pause(ctx, "agent_run"))
		id := s.agentCreate(s.admin, project, map[string]any{"name": "queued", "instructions": "i", "tools": []string{}})
		frames, _ := s.openStream(s.admin, 0)
		run := s.agentStart(s.admin, id, "hello")
		cancel(s, run.ID)
		require.Equal(t, []string{"agent_run.status:queued", "agent_run.status:cancelled", "job.completed:cancelled"},
			agentEvents(t, frames, run.ID, func(e string) bool { return e == "job.completed:cancelled" }))
		require.NoError(t, s.m.jobs.Resume(ctx, "agent_run"))
		got := s.agentRunGet(s.admin, run.ID)
		require.Equal(t, "cancelled", got.Status)
		require.Empty(t, got.Steps)
		requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/cancel", s.admin, nil), 409, "failed_precondition")
	})

	t.Run("WaitingForInput", func(t *testing.T) {
		project, _ := s.defaultProject()
		id := s.agentCreate(s.admin, project, map[string]any{"name": "waiting", "instructions": "i", "tools": []string{}})
		run := s.agentStart(s.admin, id, "ASK: Which one?")
		require.Equal(t, "waiting_for_input", s.agentWait(s.admin, run.ID, "waiting_for_input").Status)
		got := cancel(s, run.ID)
		require.Equal(t, []string{"model"}, got.stepKinds())
		require.Equal(t, []string{"cancelled"}, s.agentQuestionStatus(run.ID))
		requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/answer", s.admin, map[string]any{"answer": "this"}), 409, "failed_precondition")
		requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/cancel", s.admin, nil), 409, "failed_precondition")
	})

	t.Run("Completed", func(t *testing.T) {
		project, _ := s.defaultProject()
		id := s.agentCreate(s.admin, project, map[string]any{"name": "done", "instructions": "i", "tools": []string{}})
		run := s.agentStart(s.admin, id, "nothing to do")
		require.Equal(t, "completed", s.agentWait(s.admin, run.ID, "completed", "failed").Status)
		r := requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/cancel", s.admin, nil), 409, "failed_precondition")
		require.Contains(t, r["detail"], "is completed")
	})

	t.Run("Running", func(t *testing.T) {
		project, _ := slow.defaultProject()
		id := slow.agentCreate(slow.admin, project, map[string]any{"name": "running", "instructions": "i", "tools": []string{}})
		run := slow.agentStart(slow.admin, id, "hello")
		<-calls // the model call is in flight
		require.Equal(t, "running", slow.agentRunGet(slow.admin, run.ID).Status)
		cancel(slow, run.ID)
		// The handler's model call is cut short (the ledger records it
		// failed) and no step is recorded.
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, slow.m.db.pool.QueryRow(ctx, `SELECT count(*) FROM provider_usage WHERE job_id = $1 AND status = 'error'`, run.ID).Scan(&n))
			return n == 1
		}, 10*time.Second, 20*time.Millisecond)
		got := slow.agentRunGet(slow.admin, run.ID)
		require.Equal(t, "cancelled", got.Status)
		require.Empty(t, got.Steps)
	})
}

// TestAgentAPI: definitions are checked at save (tools the caller may
// use, requireApprovalFor among them, maxSteps, the model, a unique name),
// bad input is 400 with a detail, and runs are their starting user's:
// another member sees the agent but not the run (404, absent from lists),
// nor can cancel or answer it; a viewer cannot define or run agents.
func TestAgentAPI(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	_, editor := s.newMember("agents-editor@example.com", []string{"agents:read", "agents:run", "graph:read", "graph:write", "search:read"}, project, "editor")
	_, viewer := s.newMember("agents-viewer@example.com", []string{"agents:read", "agents:run", "graph:read", "search:read"}, project, "viewer")

	bad := func(token string, body map[string]any, detail string) {
		t.Helper()
		r := requireProblem(t, s.do("POST", "/api/agents", token, body, hp), 400, "invalid_argument")
		require.Contains(t, r["detail"], detail)
	}
	ok := map[string]any{"name": "a", "instructions": "i", "tools": []string{"search"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	bad(editor, with("tools", []string{"documents_upload_text"}), `"documents_upload_text" is not a tool you may use in this project`)
	bad(editor, with("tools", []string{"no_such_tool"}), `"no_such_tool" is not a tool you may use`)
	bad(editor, with("tools", []string{"web/search"}), `"web/search" is not a tool you may use`)
	bad(editor, with("requireApprovalFor", []string{"graph_create_object"}), `requireApprovalFor: "graph_create_object" is not one of the agent's tools`)
	bad(editor, with("maxSteps", 0), "maxSteps")
	bad(editor, with("maxSteps", 51), "maxSteps")
	bad(editor, with("instructions", nil), "instructions")
	bad(editor, with("name", ""), "name")
	bad(editor, with("model", "no-such-model"), `model: "no-such-model" is not a model this project's provider offers`)
	bad(editor, with("unknown", 1), "unknown")
	requireProblem(t, s.do("POST", "/api/agents", viewer, ok, hp), 403, "permission_denied")

	var a struct {
		ID                 string   `json:"id"`
		Name               string   `json:"name"`
		Tools              []string `json:"tools"`
		MaxSteps           int      `json:"maxSteps"`
		RequireApprovalFor []string `json:"requireApprovalFor"`
		Model              string   `json:"model"`
	}
	s.must(201, "POST", "/api/agents", editor, with("tools", []string{"search", "search", "ask_user"}), hp).Decode(t, &a)
	require.Equal(t, []string{"search", "ask_user"}, a.Tools)
	require.Equal(t, 10, a.MaxSteps, "the default")
	require.Equal(t, []string{}, a.RequireApprovalFor)
	requireProblem(t, s.do("POST", "/api/agents", editor, ok, hp), 409, "conflict")

	// PATCH: an absent field is unchanged; the checks apply again.
	s.must(200, "PATCH", "/api/agents/"+a.ID, editor, map[string]any{
		"maxSteps": 3, "tools": []string{"search", "graph_create_object"},
		"requireApprovalFor": []string{"graph_create_object"}, "model": "local/heuristic-v1",
	}).Decode(t, &a)
	require.Equal(t, "a", a.Name)
	require.Equal(t, 3, a.MaxSteps)
	require.Equal(t, []string{"graph_create_object"}, a.RequireApprovalFor)
	require.Equal(t, "local/heuristic-v1", a.Model)
	r := requireProblem(t, s.do("PATCH", "/api/agents/"+a.ID, editor, map[string]any{"tools": []string{"search"}}), 400, "invalid_argument")
	require.Contains(t, r["detail"], "requireApprovalFor")
	requireProblem(t, s.do("PATCH", "/api/agents/"+a.ID, editor, map[string]any{"maxSteps": 99}), 400, "invalid_argument")
	requireProblem(t, s.do("PATCH", "/api/agents/"+a.ID, viewer, map[string]any{"maxSteps": 2}), 403, "permission_denied")
	requireProblem(t, s.do("GET", "/api/agents/"+uuid.NewString(), editor, nil), 404, "not_found")
	requireProblem(t, s.do("GET", "/api/agents/not-a-uuid", editor, nil), 404, "not_found")

	// Runs are the starting user's.
	requireProblem(t, s.do("POST", "/api/agents/"+a.ID+"/runs", editor, map[string]any{"input": ""}), 400, "invalid_argument")
	requireProblem(t, s.do("POST", "/api/agents/"+a.ID+"/runs", editor, map[string]any{}), 400, "invalid_argument")
	requireProblem(t, s.do("POST", "/api/agents/"+a.ID+"/runs", viewer, map[string]any{"input": "x"}), 403, "permission_denied")
	run := s.agentStart(editor, a.ID, "ASK: Which year?")
	s.agentWait(editor, run.ID, "waiting_for_input")
	s.must(200, "GET", "/api/agents/"+a.ID, viewer, nil)
	for _, token := range []string{viewer, s.admin} {
		requireProblem(t, s.do("GET", "/api/agent-runs/"+run.ID, token, nil), 404, "not_found")
		var list struct {
			Data  []agentRun `json:"data"`
			Total int        `json:"total"`
		}
		s.must(200, "GET", "/api/agents/"+a.ID+"/runs", token, nil).Decode(t, &list)
		require.Empty(t, list.Data)
		require.Zero(t, list.Total)
	}
	requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/cancel", s.admin, nil), 404, "not_found")
	requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/answer", s.admin, map[string]any{"answer": "1999"}), 404, "not_found")
	var mine struct {
		Data  []agentRun `json:"data"`
		Total int        `json:"total"`
	}
	s.must(200, "GET", "/api/agents/"+a.ID+"/runs?limit=1", editor, nil).Decode(t, &mine)
	require.Equal(t, 1, mine.Total)
	require.Equal(t, run.ID, mine.Data[0].ID)
	require.Equal(t, "waiting_for_input", mine.Data[0].Status)
	requireProblem(t, s.do("GET", "/api/agents/"+a.ID+"/runs?limit=0", editor, nil), 400, "invalid_argument")

	// Answers must match the question.
	requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/answer", editor, map[string]any{"approve": true}), 400, "invalid_argument")
	requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/answer", editor, map[string]any{"answer": " "}), 400, "invalid_argument")
	requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/answer", editor, map[string]any{}), 400, "invalid_argument")
	s.must(200, "POST", "/api/agent-runs/"+run.ID+"/answer", editor, map[string]any{"answer": "1999"})
	requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/answer", editor, map[string]any{"answer": "2000"}), 409, "failed_precondition")
	require.Equal(t, "completed", s.agentWait(editor, run.ID, "completed", "failed").Status)

	// Deleting the agent deletes its runs.
	s.must(204, "DELETE", "/api/agents/"+a.ID, editor, nil)
	requireProblem(t, s.do("GET", "/api/agents/"+a.ID, editor, nil), 404, "not_found")
	requireProblem(t, s.do("GET", "/api/agent-runs/"+run.ID, editor, nil), 404, "not_found")
	var n int
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM agent_run_steps WHERE run_id = $1`, run.ID).Scan(&n))
	require.Zero(t, n)
}

// TestAgentApproval: a tool of requireApprovalFor asks before it runs,
// with its arguments; refused, the tool does not run and the model is
// told; approved, it runs once.
func TestAgentApproval(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	id := s.agentCreate(s.admin, project, map[string]any{
		"name": "careful", "instructions": "i",
		"tools": []string{"graph_create_object"}, "requireApprovalFor": []string{"graph_create_object"},
	})
	input := `CALL: graph_create_object {"type":"Person","name":"Grace Hopper"}`
	count := func() int {
		var n int
		require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM graph_objects
			WHERE project_id = $1 AND name = 'Grace Hopper' AND deleted_at IS NULL`, project).Scan(&n))
		return n
	}
	for _, approve := range []bool{false, true} {
		run := s.agentStart(s.admin, id, input)
		w := s.agentWait(s.admin, run.ID, "waiting_for_input")
		require.Equal(t, "approval", w.Question.Kind)
		require.Equal(t, "graph_create_object", w.Question.Tool)
		require.JSONEq(t, `{"type":"Person","name":"Grace Hopper"}`, string(w.Question.Arguments))
		require.Zero(t, count(), "not run before the approval")
		requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/answer", s.admin, map[string]any{"answer": "yes"}), 400, "invalid_argument")
		s.must(200, "POST", "/api/agent-runs/"+run.ID+"/answer", s.admin, map[string]any{"approve": approve})
		done := s.agentWait(s.admin, run.ID, "completed", "failed")
		require.Equal(t, "completed", done.Status, done.Error)
		require.Equal(t, []string{"model", "tool:graph_create_object", "model"}, done.stepKinds())
		if approve {
			require.False(t, done.Steps[1].IsError, string(done.Steps[1].Output))
			require.Equal(t, 1, count())
		} else {
			require.True(t, done.Steps[1].IsError)
			require.JSONEq(t, `{"error":"the user declined to run graph_create_object"}`, string(done.Steps[1].Output))
			require.Contains(t, done.Output, "graph_create_object failed: the user declined")
			require.Zero(t, count())
		}
	}
}

// TestAgentQuestionExpires: an unanswered question fails the run once
// GRAPHMILL_AGENT_QUESTION_TIMEOUT has passed, saying so; the question is
// expired and the run's end is published.
func TestAgentQuestionExpires(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *config.Config) { c.AgentQuestionTimeout = time.Hour })
	project, _ := s.defaultProject()
	id := s.agentCreate(s.admin, project, map[string]any{"name": "asker", "instructions": "i", "tools": []string{}})
	frames, _ := s.openStream(s.admin, 0)
	run := s.agentStart(s.admin, id, "ASK: Anyone there?")
	w := s.agentWait(s.admin, run.ID, "waiting_for_input")
	require.WithinDuration(t, time.Now().Add(time.Hour), w.Question.ExpiresAt, time.Minute)
	require.Equal(t, []string{
		"agent_run.status:queued", "agent_run.status:running", "agent_run.status:waiting_for_input", "agent.question", "notification",
	}, agentEvents(t, frames, run.ID, func(e string) bool { return e == "notification" }))
	s.clock.Advance(time.Hour + time.Minute)
	done := s.agentWait(s.admin, run.ID, "failed", "completed")
	require.Equal(t, "failed", done.Status)
	require.Equal(t, "the question was not answered within 1h0m0s", done.Error)
	require.Equal(t, []string{"expired"}, s.agentQuestionStatus(run.ID))
	require.Equal(t, []string{"agent_run.status:running", "agent_run.status:failed", "job.completed:failed"},
		agentEvents(t, frames, run.ID, func(e string) bool { return e == "job.completed:failed" }))
	requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/answer", s.admin, map[string]any{"answer": "me"}), 409, "failed_precondition")
	requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/cancel", s.admin, nil), 409, "failed_precondition")
}

// TestAgentNoProvider: without any generative model, naming a model is
// refused (409 failed_precondition) and a run fails at once saying why.
func TestAgentNoProvider(t *testing.T) {
	t.Parallel()
	s := newServer(t, withoutLocalProvider)
	project, _ := s.defaultProject()
	r := requireProblem(t, s.do("POST", "/api/agents", s.admin, map[string]any{"name": "m", "instructions": "i", "tools": []string{}, "model": "gpt-4o"},
		header{"X-Project-ID", project}), 409, "failed_precondition")
	require.Contains(t, r["detail"], "no generative model is configured")
	id := s.agentCreate(s.admin, project, map[string]any{"name": "n", "instructions": "i", "tools": []string{}})
	run := s.agentStart(s.admin, id, "hello")
	done := s.agentWait(s.admin, run.ID, "failed", "completed")
	require.Equal(t, "failed", done.Status)
	require.Equal(t, "no generative model is configured for this project", done.Error)
	require.Empty(t, done.Steps)
}

// TestAgentRightsRecheckedEachStep: the starting user is demoted to viewer
// while the model decides to create an object: the next step no longer
// offers graph_create_object, the call the model made is a failed step
// (the tool never runs), and the object does not exist.
func TestAgentRightsRecheckedEachStep(t *testing.T) {
	t.Parallel()
	inFlight, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var declared [][]string
	o := llmtest.NewOpenAI(t)
	o.SetChatStream(func(c llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		var names []string
		for _, d := range c.Tools {
			names = append(names, d.Name)
		}
		slices.Sort(names)
		mu.Lock()
		declared = append(declared, names)
		n := len(declared)
		mu.Unlock()
		for _, m := range c.Messages {
			if m.Role == "tool" {
				return []llmtest.OpenAIDelta{{Content: "could not: " + m.Content}}
			}
		}
		if n == 1 {
			close(inFlight)
			<-release
		}
		return []llmtest.OpenAIDelta{{Call: &llmtest.OpenAICall{ID: "c1", Name: "graph_create_object", Arguments: `{"type":"Person","name":"Mary Jackson"}`}}}
	})
	s := newServer(t, withOpenAI(o.URL(), "", "llama3.1:8b", "nomic-embed-text"), withoutLocalProvider)
	project, _ := s.defaultProject()
	userID, editor := s.newMember("demoted@example.com", []string{"agents:read", "agents:run", "search:read", "graph:read", "graph:write"}, project, "editor")
	id := s.agentCreate(editor, project, map[string]any{"name": "creator", "instructions": "i", "tools": []string{"search", "graph_create_object"}})
	run := s.agentStart(editor, id, "Record Mary Jackson.")
	<-inFlight
	s.addMember(project, userID, "viewer")
	close(release)

	done := s.agentWait(editor, run.ID, "completed", "failed")
	require.Equal(t, "completed", done.Status, done.Error)
	require.Equal(t, []string{"model", "tool:graph_create_object", "model"}, done.stepKinds())
	require.True(t, done.Steps[1].IsError)
	require.JSONEq(t, `{"error":"tool graph_create_object is not available to this run"}`, string(done.Steps[1].Output))
	mu.Lock()
	require.Equal(t, [][]string{{"ask_user", "graph_create_object", "search"}, {"ask_user", "search"}}, declared)
	mu.Unlock()
	var n int
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM graph_objects WHERE project_id = $1 AND name = 'Mary Jackson'`, project).Scan(&n))
	require.Zero(t, n)
}
