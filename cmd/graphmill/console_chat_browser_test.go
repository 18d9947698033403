package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/notification"
)

// TestConsoleBrowserChat drives the chat, notification and agent run
// pages in chromium (testdata/console-browser/chat.mjs) with the local
// provider: a chat with the agent chosen in the new chat form, a turn
// streamed into the page with a citation that opens the cited chunk, a
// turn refused while another runs, a notification arriving live and
// marked read (the nav badge following), an agent run started in the
// page whose question is answered there and which ends live, the agent
// then changed in its page. Screenshots of each page go to the test's
// artifact directory.
func TestConsoleBrowserChat(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	doc := consoleUpload(t, s, project, "zephyr.md", chatDocs[0].text)
	s.waitDocument(project, doc)
	agentID := s.agentCreate(s.admin, project, map[string]any{
		"name": "Founder finder", "description": "finds founders", "instructions": "Find who founded the company.\nRecord them.",
		"tools": []string{"search", "graph_create_object"},
	})
	adminID := s.agentGet(s.admin, agentID).CreatedBy

	var noteID string
	out, shots := runConsoleScript(t, s, "chat.mjs", project, []string{doc, agentID}, func(name string) string {
		switch name {
		case "busy":
			s.extractionCount(`UPDATE chat_sessions SET turn_until = now() + interval '1 hour' RETURNING 1`)
			return "ok"
		case "notify":
			noteID = s.notify(adminID, notification.Params{Title: "Agent Founder finder has a question", Message: "Which name?"}).ID
			return noteID
		}
		t.Errorf("unknown step %q", name)
		return ""
	})

	var report struct {
		Pages            []string `json:"pages"`
		BadgeBefore      string   `json:"badgeBefore"`
		ChatTitle        string   `json:"chatTitle"`
		ChatAgent        string   `json:"chatAgent"`
		ChatNotReloaded  bool     `json:"chatNotReloaded"`
		Deltas           int      `json:"deltas"`
		Answer           string   `json:"answer"`
		ChatQuestion     string   `json:"chatQuestion"`
		Markers          []string `json:"markers"`
		CitationHref     string   `json:"citationHref"`
		MarkerTarget     string   `json:"markerTarget"`
		CitationURL      string   `json:"citationURL"`
		CitedChunk       string   `json:"citedChunk"`
		BusyFlash        string   `json:"busyFlash"`
		BusyKept         string   `json:"busyKept"`
		InboxNotReloaded bool     `json:"inboxNotReloaded"`
		Tabs             []string `json:"tabs"`
		BadgeAfter       string   `json:"badgeAfter"`
		UnreadList       int      `json:"unreadList"`
		RunURL           string   `json:"runURL"`
		Question         string   `json:"question"`
		RunNotReloaded   bool     `json:"runNotReloaded"`
		Steps            []string `json:"steps"`
		Output           string   `json:"output"`
		RunRows          []string `json:"runRows"`
		EditInstructions string   `json:"editInstructions"`
		AgentFacts       []string `json:"agentFacts"`
	}
	require.NoError(t, json.Unmarshal(out, &report), "report: %s", out)
	require.Equal(t, []string{
		"chat-new", "chat-session", "chat-citation", "chat-busy", "notifications-empty", "notifications", "notifications-read",
		"agents", "agent", "agent-run-question", "agent-run", "agent-runs", "agent-edit", "agent-edited",
	}, report.Pages)
	requireScreenshots(t, shots, report.Pages)
	require.Equal(t, "0", report.BadgeBefore)

	// Chat: the stored session and messages are what the page showed.
	require.Equal(t, "Turbines", report.ChatTitle)
	require.Equal(t, "With the agent Founder finder", report.ChatAgent, "the agent chosen in the new chat form")
	require.True(t, report.ChatNotReloaded, "the chat page was reloaded")
	require.Positive(t, report.Deltas, "the answer streamed into the page")
	var sessions struct {
		Data []chatSession `json:"data"`
	}
	s.must(200, "GET", "/api/chat/sessions", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &sessions)
	require.Len(t, sessions.Data, 1)
	require.Equal(t, agentID, sessions.Data[0].AgentID)
	var sess chatSession
	s.must(200, "GET", "/api/chat/sessions/"+sessions.Data[0].ID, s.admin, nil, header{"X-Project-ID", project}).Decode(t, &sess)
	require.Len(t, sess.Messages, 2, "the refused turn stored nothing")
	answer := sess.Messages[1]
	require.Equal(t, "How often do quillwort bearings need lubrication?", report.ChatQuestion)
	require.Equal(t, strings.TrimSpace(answer.Content), report.Answer)
	require.Contains(t, report.Answer, "every quarter")
	require.NotEmpty(t, answer.Citations)
	c := answer.Citations[0]
	require.Contains(t, report.Markers, fmt.Sprintf("#cite-%s-%d", answer.ID, c.Index))
	require.Equal(t, strings.TrimPrefix(report.Markers[0], "#"), report.MarkerTarget, "the marker leads to its citation")
	require.Equal(t, "/projects/"+project+"/documents/"+doc+"/chunks/"+c.ChunkID, report.CitationHref)
	require.Equal(t, "/projects/"+project+"/documents/"+doc+"#chunk-"+c.ChunkID, report.CitationURL)
	text, _ := chatChunkText(t, s, project, c.ChunkID)
	require.Equal(t, text, report.CitedChunk, "the cited chunk is the link's target")
	require.Equal(t, "a question is already being answered in this chat session: wait for its answer", report.BusyFlash)
	require.Equal(t, "And the grease?", report.BusyKept, "a refused turn keeps the question typed")

	// Notifications: arrived live, read in the page.
	require.True(t, report.InboxNotReloaded, "the inbox was reloaded")
	require.Equal(t, []string{"all 1", "important 0", "other 1", "snoozed 0", "cleared 0"}, report.Tabs)
	require.Equal(t, "0", report.BadgeAfter)
	require.Zero(t, report.UnreadList)
	require.True(t, notificationRead(t, s, s.admin, noteID))

	// The agent run: its question answered in the page, completed.
	run := strings.TrimPrefix(report.RunURL, "/projects/"+project+"/agent-runs/")
	_, err := uuid.Parse(run)
	require.NoError(t, err, report.RunURL)
	require.Equal(t, "Which name should the founder's record have?", report.Question)
	require.True(t, report.RunNotReloaded, "the run page was reloaded")
	done := s.agentRunGet(s.admin, run)
	require.Equal(t, "completed", done.Status, done.Error)
	require.JSONEq(t, `{"answer":"Ada Lovelace"}`, string(done.Steps[3].Output))
	require.Equal(t, []string{"model", "tool: search", "model", "tool: ask_user", "model", "tool: graph_create_object", "model"}, report.Steps)
	require.Equal(t, strings.TrimSpace(done.Output), report.Output)
	require.Equal(t, []string{"run-" + run}, report.RunRows)

	// The agent changed in its page: what was changed, and the
	// instructions as they were (the browser sent them with CRLF).
	require.Equal(t, "Find who founded the company.\nRecord them.", report.EditInstructions, "the form's text as stored")
	require.Contains(t, report.AgentFacts, "Steps at most: 7")
	require.Contains(t, report.AgentFacts, "Description: finds founders, and more")
	var edited consoleAgent
	s.must(200, "GET", "/api/agents/"+agentID, s.admin, nil).Decode(t, &edited)
	require.Equal(t, consoleAgent{
		Name: "Founder finder", Description: "finds founders, and more", Instructions: "Find who founded the company.\nRecord them.",
		Tools: []string{"search", "graph_create_object"}, RequireApprovalFor: []string{}, MaxSteps: 7,
	}, edited)
}
