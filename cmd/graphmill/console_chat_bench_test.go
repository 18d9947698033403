package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
)

// benchChatPages seeds, for BenchmarkConsolePages, the admin's records in
// project that the chat, agent and notification pages list: 1,000 agents,
// 10,000 chat sessions (one with 200 messages, half with an agent),
// 10,000 runs of one agent (one with 20 steps) and 10,000 notifications
// (half read). It returns the pages to measure, each with its name in the
// report.
func benchChatPages(b *testing.B, s *testServer, project string) (pages, names []string) {
	b.Helper()
	pid := uuid.MustParse(project)
	agentID := s.agentCreate(s.admin, project, map[string]any{"name": "bench", "instructions": "i", "tools": []string{"search"}})
	user := uuid.MustParse(s.agentGet(s.admin, agentID).CreatedBy)
	aid := uuid.MustParse(agentID)
	now := time.Now().UTC()
	const sessions, messages, agents, runs, steps, notes = 10_000, 200, 1_000, 10_000, 20, 10_000

	agentRows := make([][]any, agents-1)
	for i := range agentRows {
		at := now.Add(-time.Duration(agents-i) * time.Second)
		agentRows[i] = []any{uuid.Must(uuid.NewV7()), pid, fmt.Sprintf("agent-%04d", i), "An agent.", "Do things.", []string{"search"}, at, at}
	}
	benchCopy(b, s, "agents", []string{"id", "project_id", "name", "description", "instructions", "tools", "created_at", "updated_at"}, agentRows)
	// Every other session talks to one of the agents (the list names them).
	sessRows := make([][]any, sessions)
	for i := range sessRows {
		at := now.Add(-time.Duration(sessions-i) * time.Second)
		var agent any
		if i%2 == 0 {
			agent = agentRows[i%len(agentRows)][0]
		}
		sessRows[i] = []any{uuid.Must(uuid.NewV7()), pid, user, fmt.Sprintf("Session %d", i), agent, at, at}
	}
	benchCopy(b, s, "chat_sessions", []string{"id", "project_id", "user_id", "title", "agent_id", "created_at", "updated_at"}, sessRows)
	session := sessRows[sessions-1][0].(uuid.UUID)
	msgRows := make([][]any, messages)
	for i := range msgRows {
		role, citations := "user", "[]"
		if i%2 == 1 {
			role = "assistant"
			c, err := json.Marshal([]map[string]any{{"index": 1, "chunkId": uuid.New(), "documentId": uuid.New(), "documentName": "doc.md", "quote": "A quote."}})
			if err != nil {
				b.Fatal(err)
			}
			citations = string(c)
		}
		msgRows[i] = []any{uuid.Must(uuid.NewV7()), pid, session, role, fmt.Sprintf("Message %d cites [1].", i), citations, now.Add(time.Duration(i) * time.Millisecond)}
	}
	benchCopy(b, s, "chat_messages", []string{"id", "project_id", "session_id", "role", "content", "citations", "created_at"}, msgRows)

	runRows := make([][]any, runs)
	for i := range runRows {
		at := now.Add(-time.Duration(runs-i) * time.Second)
		runRows[i] = []any{uuid.Must(uuid.NewV7()), pid, "completed", at, at, at, at, at, aid, user, []string{"agents:run"}, fmt.Sprintf("Input %d", i), "Done.", `{"name":"bench"}`}
	}
	benchCopy(b, s, "agent_runs", []string{
		"id", "project_id", "status", "run_at", "started_at", "completed_at", "created_at", "updated_at", "agent_id", "created_by", "scopes", "input", "output", "definition",
	}, runRows)
	run := runRows[runs-1][0].(uuid.UUID)
	stepRows := make([][]any, steps)
	for i := range stepRows {
		kind, tool, input := "model", any(nil), any(nil)
		if i%2 == 1 {
			kind, tool, input = "tool", "search", `{"query":"q"}`
		}
		stepRows[i] = []any{run, i, pid, kind, tool, input, `{"text":"result"}`, now, now, int64(3)}
	}
	benchCopy(b, s, "agent_run_steps", []string{"run_id", "step_index", "project_id", "kind", "tool", "input", "output", "started_at", "completed_at", "duration_ms"}, stepRows)

	noteRows := make([][]any, notes)
	for i := range noteRows {
		at := now.Add(-time.Duration(notes-i) * time.Second)
		importance, read := "other", any(nil)
		if i%3 == 0 {
			importance = "important"
		}
		if i%2 == 0 {
			read = at
		}
		noteRows[i] = []any{uuid.Must(uuid.NewV7()), user, pid, fmt.Sprintf("Notification %d", i), "Something happened.", "info", importance, read, at, at}
	}
	benchCopy(b, s, "notifications", []string{"id", "user_id", "project_id", "title", "message", "severity", "importance", "read_at", "created_at", "updated_at"}, noteRows)

	base := "/projects/" + project
	chatPages := []string{
		base + "/chat", base + "/chat?offset=5000", base + "/chat/" + session.String(),
		base + "/agents", base + "/agents?offset=500", base + "/agents/" + agentID, base + "/agents/" + agentID + "?offset=5000",
		base + "/agent-runs/" + run.String(),
		"/notifications", "/notifications?tab=important&unread=true", "/notifications?offset=5000", "/notifications/badge",
	}
	chatNames := []string{
		"P/chat", "P/chat?offset=5000", "P/chat/{session}",
		"P/agents", "P/agents?offset=500", "P/agents/{agent}", "P/agents/{agent}?offset=5000",
		"P/agent-runs/{run}",
		"/notifications", "/notifications?tab=important&unread=true", "/notifications?offset=5000", "/notifications/badge",
	}
	return chatPages, chatNames
}
