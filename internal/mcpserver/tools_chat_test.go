package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/chat"
	"github.com/graphmill/graphmill/internal/errs"
)

// unusedChat is a Chat that fails the test's expectations if called: the
// tool box never offers the chat tools.
type unusedChat struct{}

func (unusedChat) ListSessions(context.Context, uuid.UUID, uuid.UUID, int, int) ([]chat.Session, int, error) {
	return nil, 0, errs.New(errs.Internal, "chat called")
}

func (unusedChat) SendNew(context.Context, uuid.UUID, uuid.UUID, chat.CreateParams, chat.SendParams) (chat.Session, chat.Message, error) {
	return chat.Session{}, chat.Message{}, errs.New(errs.Internal, "chat called")
}

func (unusedChat) Send(context.Context, uuid.UUID, uuid.UUID, uuid.UUID, chat.SendParams) (chat.Message, error) {
	return chat.Message{}, errs.New(errs.Internal, "chat called")
}

// TestChatToolsNotInToolbox: agents are never offered the chat tools (a
// run would open chat sessions in its user's name), and calling one is
// refused with the reason.
func TestChatToolsNotInToolbox(t *testing.T) {
	t.Parallel()
	b := boxSetup(t, nil)
	ctx := t.Context()
	p := b.principal(auth.AllScopes, auth.ProjectAdmin)
	tools, err := b.srv.Tools(ctx, p, b.project)
	require.NoError(t, err)
	require.NotContains(t, toolNamesOf(tools), ToolChatSend)
	require.NotContains(t, toolNamesOf(tools), ToolChatSessionsList)
	_, _, err = b.srv.Call(ctx, p, b.project, ToolChatSend, json.RawMessage(`{"content":"hello"}`))
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))
	require.Equal(t, "tool chat_send is not offered to agents", errs.MessageOf(err))
	require.Contains(t, b.srv.rules, ToolChatSend, "registered: MCP clients have it")
}
