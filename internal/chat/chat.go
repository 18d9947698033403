// Package chat answers questions about a project's documents and graph:
// sessions per project and user, and turns whose answers are grounded on
// the project's hybrid search (chunks and graph objects) and the graph
// neighbourhood of the objects found, with citations that point at the
// chunks they come from. Replies stream as server-sent events or come back
// whole; every model call goes through the provider's handle (governor,
// usage ledger, price).
package chat

import (
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// Roles of stored messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Bounds of the inputs.
const (
	TitleMax   = 200
	ContentMax = 20000
	// EmbeddedMessagesMax bounds the messages a session's GET embeds.
	EmbeddedMessagesMax = 100
)

// Errors.
var (
	ErrNotFound    = errs.New(errs.NotFound, "chat session not found")
	ErrNoContent   = errs.New(errs.Invalid, "content must not be empty")
	ErrNoProvider  = errs.New(errs.FailedPrecondition, "no language model is configured for this project: store provider credentials or enable the local provider")
	ErrTurnRunning = errs.New(errs.Conflict, "a question is already being answered in this chat session: wait for its answer")
)

// Session is a conversation of one user in one project.
type Session struct {
	ID        uuid.UUID  `json:"id"`
	ProjectID uuid.UUID  `json:"projectId"`
	UserID    uuid.UUID  `json:"userId"`
	Title     string     `json:"title"`
	AgentID   *uuid.UUID `json:"agentId,omitempty" doc:"The agent the session talks to: its instructions are added to the chat's rules and its model answers (the project's default when it names none), as the agent is at each turn. Absent for a plain chat, and once the agent is deleted."`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

// SessionWithMessages is a session and its latest messages (at most
// EmbeddedMessagesMax), oldest first.
type SessionWithMessages struct {
	Session
	Messages []Message `json:"messages" doc:"The latest messages (at most 100), oldest first; GET /api/chat/sessions/{sessionId}/messages pages through all."`
	// MessagesTotal is the number of the session's messages.
	MessagesTotal int `json:"messagesTotal"`
}

// Message is one message of a session: the user's question, or the
// assistant's answer with its citations and what it cost.
type Message struct {
	ID           uuid.UUID  `json:"id"`
	Role         string     `json:"role" enum:"user,assistant"`
	Content      string     `json:"content"`
	Citations    []Citation `json:"citations" doc:"The sources the content cites with [n] markers (assistant messages)."`
	Model        *string    `json:"model" doc:"The model that answered; null for a question, and for an answer made without a model call."`
	InputTokens  int64      `json:"inputTokens"`
	OutputTokens int64      `json:"outputTokens"`
	CostUSD      float64    `json:"costUsd" doc:"Estimated from the model catalog's prices, summary call included."`
	CreatedAt    time.Time  `json:"createdAt"`
}

// Citation is a source an answer cites: Index is the n of its [n]
// markers; the chunk (and the graph object, for a source that came from
// the graph) it stands for; Quote the chunk's passage that best matches the
// cited statement.
type Citation struct {
	Index        int        `json:"index"`
	ChunkID      uuid.UUID  `json:"chunkId"`
	DocumentID   uuid.UUID  `json:"documentId"`
	DocumentName string     `json:"documentName"`
	Quote        string     `json:"quote"`
	ObjectID     *uuid.UUID `json:"objectId,omitempty"`
}

// CreateParams creates a session.
type CreateParams struct {
	Title string
	// AgentID, when set, must be an agent of the session's project; the
	// caller must hold agents:read (CheckAgentScope).
	AgentID *uuid.UUID
}

// ErrAgentScope refuses an agentId from a caller who may not read the
// project's agents, before the id is looked up: whether it names an agent
// is not told.
var ErrAgentScope = errs.New(errs.PermissionDenied, "agentId: a chat session with an agent needs the scope agents:read, which this token lacks")

// CheckAgentScope checks that caller may start a session with c's agent:
// a session with an agent needs the scope agents:read (the agent's
// instructions shape its answers). Errors: permission_denied.
func CheckAgentScope(caller *auth.Principal, c CreateParams) error {
	if c.AgentID != nil && (caller == nil || !caller.Scopes.Has(auth.AgentsRead)) {
		return ErrAgentScope
	}
	return nil
}

// ParseAgentID reads a new session's agentId as given (the API's body,
// the console's form): nil when empty, a plain chat. Errors:
// invalid_argument.
func ParseAgentID(s string) (*uuid.UUID, error) {
	return httpapi.ParseOptionalID("agentId", s)
}

// withMessages embeds a session's latest messages.
func (s Session) withMessages(msgs []Message, total int) SessionWithMessages {
	if msgs == nil {
		msgs = []Message{}
	}
	return SessionWithMessages{Session: s, Messages: msgs, MessagesTotal: total}
}
