package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLIChatJSON asks one question with chat --json (as an argument, then
// on standard input in the same session): the answer with its citations
// as JSON, the conversation stored.
func TestCLIChatJSON(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	ingestOne(t, env, "zephyr.md", "# Zephyr maintenance\n\nQuillwort bearings need lubrication every quarter with whale-free grease.\n")

	type answer struct {
		SessionID string `json:"sessionId"`
		ID        string `json:"id"`
		Role      string `json:"role"`
		Content   string `json:"content"`
		Citations []struct {
			DocumentName string `json:"documentName"`
			Quote        string `json:"quote"`
		} `json:"citations"`
	}
	var got answer
	decodeCLI(t, runCLI(t, env, "chat", "--json", "How often do quillwort bearings need lubrication?"), &got)
	require.Equal(t, "assistant", got.Role)
	require.Contains(t, got.Content, "every quarter with whale-free grease")
	require.NotEmpty(t, got.Citations)
	require.Equal(t, "zephyr.md", got.Citations[0].DocumentName)
	require.Contains(t, got.Citations[0].Quote, "Quillwort")

	// The question on standard input, continuing the session.
	var stdout, stderr bytes.Buffer
	require.NoError(t, runIO(context.Background(), []string{"chat", "--json", "--session", got.SessionID}, env,
		strings.NewReader("What grease do quillwort bearings take?\n"), &stdout, &stderr), stderr.String())
	var second answer
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &second), stdout.String())
	require.Equal(t, got.SessionID, second.SessionID)
	require.Contains(t, second.Content, "whale-free grease")

	var stored struct {
		Messages []struct {
			ID      string `json:"id"`
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	s.must(200, "GET", "/api/chat/sessions/"+got.SessionID, s.admin, nil, hp).Decode(t, &stored)
	require.Len(t, stored.Messages, 4)
	require.Equal(t, "How often do quillwort bearings need lubrication?", stored.Messages[0].Content)
	require.Equal(t, got.ID, stored.Messages[1].ID)
	require.Equal(t, "What grease do quillwort bearings take?", stored.Messages[2].Content)

	// No question: a usage error, no session made; two arguments too.
	require.Equal(t, exitUsage, runCLI(t, env, "chat", "--json").code)
	require.Equal(t, exitUsage, runCLI(t, env, "chat", "one", "two").code)
	var sessions struct {
		Data []struct{} `json:"data"`
	}
	s.must(200, "GET", "/api/chat/sessions", s.admin, nil, hp).Decode(t, &sessions)
	require.Len(t, sessions.Data, 1)
	// Another tenant's session: refused (404, exit 1).
	require.Equal(t, exitError, runCLI(t, env, "chat", "--json", "--session", project, "hello?").code)
}

// TestCLIChatAgent: chat --agent starts the session with the agent named
// (by name or id), as a streamed question and with --json; an unknown
// name, --agent with --session, and a token without agents:read are
// refused before any session is stored.
func TestCLIChatAgent(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	env := append(s.cliEnviron(t, s.admin), "GRAPHMILL_PROJECT="+project)
	hp := header{"X-Project-ID", project}
	ingestOne(t, env, "zephyr.md", "# Zephyr maintenance\n\nQuillwort bearings need lubrication every quarter with whale-free grease.\n")
	expert := s.agentCreate(s.admin, project, map[string]any{"name": "Turbine expert", "instructions": "Answer briefly.", "tools": []string{}})
	otherAgent := s.agentCreate(s.admin, s.newProject(org, "other"), map[string]any{"name": "Elsewhere", "instructions": "x", "tools": []string{}})
	agentOf := func(session string) string {
		var sess chatSession
		s.must(200, "GET", "/api/chat/sessions/"+session, s.admin, nil, hp).Decode(t, &sess)
		return sess.AgentID
	}
	sessions := func() int { return s.extractionCount(`SELECT count(*) FROM chat_sessions`) }

	// By name, one question streamed; by id, with --json.
	r := runCLI(t, env, "chat", "--agent", "Turbine expert", "How often do quillwort bearings need lubrication?")
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, "every quarter")
	byName := s.extractionIDs(`SELECT id::text FROM chat_sessions`)
	require.Len(t, byName, 1)
	require.Equal(t, expert, agentOf(byName[0]))
	var got struct {
		SessionID string `json:"sessionId"`
		Content   string `json:"content"`
	}
	decodeCLI(t, runCLI(t, env, "chat", "--json", "--agent", expert, "What grease do quillwort bearings take?"), &got)
	require.Contains(t, got.Content, "whale-free grease")
	require.Equal(t, expert, agentOf(got.SessionID))
	require.Equal(t, 2, sessions())

	// Refused: no such agent (by name, another project's id), a session
	// given too, a token that may not read agents.
	r = runCLI(t, env, "chat", "--json", "--agent", "Nobody", "hello?")
	require.Equal(t, exitError, r.code)
	require.ErrorContains(t, r.err, `no agent named "Nobody" in the project`)
	r = runCLI(t, env, "chat", "--json", "--agent", otherAgent, "hello?")
	require.Equal(t, exitError, r.code)
	require.ErrorContains(t, r.err, "agentId: no agent with id "+otherAgent+" in this project")
	r = runCLI(t, env, "chat", "--json", "--agent", expert, "--session", got.SessionID, "hello?")
	require.Equal(t, exitUsage, r.code)
	require.ErrorContains(t, r.err, "--agent starts a new session: leave out --session (a session keeps its agent)")
	_, chatOnly := s.newMember("bob@example.com", []string{"chat:use"}, project, "viewer")
	cenv := append(s.cliEnviron(t, chatOnly), "GRAPHMILL_PROJECT="+project)
	r = runCLI(t, cenv, "chat", "--json", "--agent", expert, "hello?")
	require.Equal(t, exitAuth, r.code)
	require.ErrorContains(t, r.err, "agentId: a chat session with an agent needs the scope agents:read, which this token lacks")
	require.Equal(t, exitAuth, runCLI(t, cenv, "chat", "--json", "--agent", "Turbine expert", "hello?").code)
	require.Equal(t, 2, sessions(), "refused commands start no session")
}

// TestCLIAgents lists, runs and answers agents from the command line
// against the real server and its local model: a question answered with
// agents answer, an approval given with --approve, the runs listed.
func TestCLIAgents(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	project, _ := s.defaultProject()
	finder := s.agentCreate(s.admin, project, map[string]any{
		"name": "Founder finder", "description": "finds founders", "instructions": "Find who founded the company and record them.",
		"tools": []string{"search", "graph_create_object"},
	})
	careful := s.agentCreate(s.admin, project, map[string]any{
		"name": "Careful", "instructions": "Record what you are told.",
		"tools": []string{"graph_create_object"}, "requireApprovalFor": []string{"graph_create_object"},
	})

	var agents []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	decodeCLI(t, runCLI(t, env, "agents", "ls", "--json"), &agents)
	require.Len(t, agents, 2)
	r := runCLI(t, env, "agents", "ls")
	require.NoError(t, r.err)
	require.Regexp(t, finder+`\s+Founder finder\s+search,graph_create_object`, r.stdout)

	type run struct {
		ID       string `json:"id"`
		AgentID  string `json:"agentId"`
		Status   string `json:"status"`
		Output   string `json:"output"`
		Question *struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
			Tool string `json:"tool"`
		} `json:"question"`
	}
	// A run by the agent's name waits for the question, printed with the
	// command that answers it (exit 0).
	input := "Who founded Acme?\nASK: Which name should the founder's record have?\nCALL: graph_create_object {\"type\":\"Person\",\"name\":\"Ada Lovelace\"}"
	r = runCLI(t, env, "agents", "run", "Founder finder", input)
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, "waiting_for_input")
	require.Contains(t, r.stdout, "question: Which name should the founder's record have?")
	var runs []run
	decodeCLI(t, runCLI(t, env, "agents", "runs", "Founder finder", "--json"), &runs)
	require.Len(t, runs, 1)
	waiting := runs[0]
	require.Equal(t, finder, waiting.AgentID)
	require.Equal(t, "waiting_for_input", waiting.Status)
	require.Contains(t, r.stdout, "graphmill agents answer "+waiting.ID+` "ANSWER"`)

	// Bad answers are usage errors; the answer resumes the run to its end.
	require.Equal(t, exitUsage, runCLI(t, env, "agents", "answer", waiting.ID).code)
	require.Equal(t, exitUsage, runCLI(t, env, "agents", "answer", waiting.ID, "x", "--approve").code)
	require.Equal(t, exitUsage, runCLI(t, env, "agents", "answer", waiting.ID, "--approve", "--deny").code)
	var done run
	decodeCLI(t, runCLI(t, env, "agents", "answer", waiting.ID, "Ada Lovelace", "--json"), &done)
	require.Equal(t, "completed", done.Status)
	require.Contains(t, done.Output, "- ask_user: Ada Lovelace")
	got := s.agentRunGet(s.admin, waiting.ID)
	require.Equal(t, "completed", got.Status)
	require.JSONEq(t, `{"answer":"Ada Lovelace"}`, string(got.Steps[3].Output))
	// Answering again: the server refuses (409, exit 1).
	require.Equal(t, exitError, runCLI(t, env, "agents", "answer", waiting.ID, "again").code)

	// An approval: shown with --approve; approved, the object is created.
	var asked run
	decodeCLI(t, runCLI(t, env, "agents", "run", careful, "CALL: graph_create_object {\"type\":\"Person\",\"name\":\"Grace Hopper\"}", "--json"), &asked)
	require.Equal(t, "waiting_for_input", asked.Status)
	require.Equal(t, "approval", asked.Question.Kind)
	require.Equal(t, "graph_create_object", asked.Question.Tool)
	decodeCLI(t, runCLI(t, env, "agents", "answer", asked.ID, "--approve", "--json"), &done)
	require.Equal(t, "completed", done.Status)
	var objects struct {
		Data []struct {
			Name string `json:"name"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/graph/objects?type=Person", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &objects)
	var names []string
	for _, o := range objects.Data {
		names = append(names, o.Name)
	}
	require.ElementsMatch(t, []string{"Ada Lovelace", "Grace Hopper"}, names)

	// Without --wait the run is shown as started.
	var started run
	decodeCLI(t, runCLI(t, env, "agents", "run", careful, "Hello", "--wait=false", "--json"), &started)
	require.Equal(t, "queued", started.Status)

	// Unknown agents, a missing input, a token without the scope.
	require.Equal(t, exitError, runCLI(t, env, "agents", "run", "Nobody", "hi").code)
	require.Equal(t, exitUsage, runCLI(t, env, "agents", "run", "Careful").code)
	_, viewer := s.newMember("viewer@example.com", []string{"agents:read"}, project, "viewer")
	venv := append(s.cliEnviron(t, viewer), "GRAPHMILL_PROJECT="+project)
	decodeCLI(t, runCLI(t, venv, "agents", "ls", "--json"), &agents)
	require.Len(t, agents, 2)
	require.Equal(t, exitAuth, runCLI(t, venv, "agents", "run", "Careful", "hi").code)
}
