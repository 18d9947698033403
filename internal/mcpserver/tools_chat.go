package mcpserver

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/chat"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// Chat tool names.
const (
	ToolChatSessionsList = "chat_sessions_list"
	ToolChatSend         = "chat_send"
)

// Chat is what the chat tools call (chat.Service): the caller's own
// sessions in the project.
type Chat interface {
	ListSessions(ctx context.Context, project, user uuid.UUID, limit, offset int) ([]chat.Session, int, error)
	SendNew(ctx context.Context, project, user uuid.UUID, c chat.CreateParams, p chat.SendParams) (chat.Session, chat.Message, error)
	Send(ctx context.Context, project, user, id uuid.UUID, p chat.SendParams) (chat.Message, error)
}

type (
	chatListIn struct {
		Limit  int `json:"limit,omitempty" jsonschema:"page size"`
		Offset int `json:"offset,omitempty" jsonschema:"sessions to skip"`
	}
	chatSessionPage struct {
		Sessions []chat.Session `json:"sessions"`
		pageInfo
	}
	chatSendIn struct {
		SessionID string `json:"sessionId,omitempty" jsonschema:"one of your chat sessions; left out, a new session is started"`
		Title     string `json:"title,omitempty" jsonschema:"the new session's title (default: the start of the question)"`
		AgentID   string `json:"agentId,omitempty" jsonschema:"the new session's agent (needs the scope agents:read): an agent of the project whose instructions and model answer in it; left out, a plain chat"`
		Content   string `json:"content" jsonschema:"the question"`
	}
	chatSendOut struct {
		SessionID uuid.UUID    `json:"sessionId"`
		Message   chat.Message `json:"message" jsonschema:"the answer, with citations [{index, chunkId, documentId, documentName, quote, objectId?}] its [n] markers refer to"`
	}
)

// addChatTools registers the chat tools when the server has a Chat.
func (s *Server) addChatTools() error {
	if s.cfg.Chat == nil {
		return nil
	}
	// Not for agents: a run would open chat sessions in its user's name and
	// run a second model loop inside its own.
	rule := toolRule{scope: auth.ChatUse, role: auth.ProjectViewer, notInToolbox: true}
	return errors.Join(
		addTool(s, &mcp.Tool{
			Name: ToolChatSessionsList, Title: "List your chat sessions",
			Description: "List your chat sessions in the project, newest first.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, rule, map[string][]prop{
			"limit": {intRange(1, documentListMax, ListLimitDefault)}, "offset": {minimum(0)},
		}, (*Server).chatSessionsList),
		addTool(s, &mcp.Tool{
			Name: ToolChatSend, Title: "Ask the project's documents",
			Description: "Ask a question in one of your chat sessions (or a new one). The answer is grounded on the " +
				"project's documents and knowledge graph, cites its sources with [n] markers and lists them as citations; " +
				"when the sources do not answer, it says so. A new session may talk to one of the project's agents (agentId).",
		}, rule, map[string][]prop{
			"sessionId": {uuidFormat}, "title": {strLen(0, chat.TitleMax)}, "agentId": {uuidFormat}, "content": {strLen(1, chat.ContentMax)},
		}, (*Server).chatSend),
	)
}

// chatSessionsList is chat_sessions_list.
func (s *Server) chatSessionsList(ctx context.Context, c *caller, in chatListIn) (any, error) {
	limit := orDefault(in.Limit, ListLimitDefault)
	list, total, err := s.cfg.Chat.ListSessions(ctx, c.project, c.principal.UserID, limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return chatSessionPage{Sessions: nonNil(list), pageInfo: pageInfo{Total: total, Limit: limit, Offset: in.Offset}}, nil
}

// chatSend is chat_send: without a session id, the session is stored
// with the question and its answer (SendNew), so a refused or failed call
// leaves none behind.
func (s *Server) chatSend(ctx context.Context, c *caller, in chatSendIn) (any, error) {
	user := c.principal.UserID
	if in.SessionID == "" {
		agent, err := httpapi.ParseOptionalID("agentId", in.AgentID)
		if err != nil {
			return nil, err
		}
		create := chat.CreateParams{Title: in.Title, AgentID: agent}
		if err := chat.CheckAgentScope(c.principal, create); err != nil {
			return nil, err
		}
		sess, msg, err := s.cfg.Chat.SendNew(ctx, c.project, user, create, chat.SendParams{Content: in.Content})
		if err != nil {
			return nil, err
		}
		return chatSendOut{SessionID: sess.ID, Message: msg}, nil
	}
	if in.AgentID != "" {
		return nil, errs.New(errs.Invalid, "agentId is for a new session: leave it out with sessionId (the session keeps its own agent)")
	}
	id, err := parseID("sessionId", in.SessionID)
	if err != nil {
		return nil, err
	}
	msg, err := s.cfg.Chat.Send(ctx, c.project, user, id, chat.SendParams{Content: in.Content})
	if err != nil {
		return nil, notFound(err, "chat session of yours", id)
	}
	return chatSendOut{SessionID: id, Message: msg}, nil
}
