package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/llm"
)

// signingModel calls ext:echo with a provider signature, then answers.
type signingModel struct{}

func (signingModel) Model() string          { return "script" }
func (signingModel) Cost(llm.Usage) float64 { return 0 }
func (signingModel) Chat(_ context.Context, req llm.ChatRequest) (*llm.ChatResult, error) {
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleAssistant {
			if len(msg.ToolCalls) != 1 || string(msg.ToolCalls[0].Signature) != "secret-state" {
				return &llm.ChatResult{Text: "the signature did not come back"}, nil
			}
		}
		if msg.Role == llm.RoleTool {
			return &llm.ChatResult{Text: "echoed"}, nil
		}
	}
	return &llm.ChatResult{Text: "calling", ToolCalls: []llm.ToolCall{
		{ID: "c9", Name: "ext:echo", Arguments: json.RawMessage(`{"n":2}`), Signature: []byte("secret-state")},
	}}, nil
}

// TestModelStepOutputIsPublicForm: a model step's output is served as
// {text, toolCalls: [{id, tool, arguments}]} with the tool's real name
// (ext/echo, not the model-facing ext:echo) and without the provider's
// signature, which still goes back to the provider in the next request.
func TestModelStepOutputIsPublicForm(t *testing.T) {
	t.Parallel()
	svc, project, user, run := startRun(t, signingModel{}, &echoToolbox{}, []string{"ext/echo"})
	r := waitRun(t, svc, project, user, run)
	require.Equal(t, agent.StatusCompleted, r.Status, r.Error)
	require.JSONEq(t, `{"text":"calling","toolCalls":[{"id":"c9","tool":"ext/echo","arguments":{"n":2}}]}`, string(r.Steps[0].Output))
	require.JSONEq(t, `{"text":"echoed","toolCalls":[]}`, string(r.Steps[2].Output))
	require.NotContains(t, string(r.Steps[0].Output), "Signature")
	require.NotContains(t, string(r.Steps[0].Output), "c2VjcmV0")
}

// bigToolbox answers make_thing with a result over agent.ToolResultMax.
type bigToolbox struct{}

func (bigToolbox) Tools(context.Context, *auth.Principal, uuid.UUID) ([]llm.Tool, error) {
	return []llm.Tool{{Name: "make_thing"}}, nil
}

func (bigToolbox) Call(context.Context, *auth.Principal, uuid.UUID, string, json.RawMessage) (json.RawMessage, bool, error) {
	out, err := json.Marshal(map[string]string{"text": strings.Repeat("é", agent.ToolResultMax)})
	return out, false, err
}

// seenModel records the tool results it is given.
type seenModel struct {
	scriptModel
	results []llm.ToolResult
}

func (m *seenModel) Chat(ctx context.Context, req llm.ChatRequest) (*llm.ChatResult, error) {
	m.mu.Lock()
	for _, msg := range req.Messages {
		m.results = append(m.results, msg.ToolResults...)
	}
	m.mu.Unlock()
	return m.scriptModel.Chat(ctx, req)
}

// TestToolResultIsBounded: a tool result over agent.ToolResultMax bytes
// is given to the model, and kept, cut to that size as a string that
// says it was truncated.
func TestToolResultIsBounded(t *testing.T) {
	t.Parallel()
	model := &seenModel{}
	svc, project, user, run := startRun(t, model, bigToolbox{}, []string{"make_thing"})
	r := waitRun(t, svc, project, user, run)
	require.Equal(t, agent.StatusCompleted, r.Status, r.Error)
	model.mu.Lock()
	defer model.mu.Unlock()
	require.Len(t, model.results, 1)
	given := model.results[0].Content
	require.LessOrEqual(t, len(given), agent.ToolResultMax+64, "a JSON string of at most the bound (escapes aside)")
	var text string
	require.NoError(t, json.Unmarshal(given, &text))
	require.True(t, strings.HasPrefix(text, `{"text":"éé`), text[:20])
	require.True(t, strings.HasSuffix(text, agent.Cut))
	var kept string
	require.NoError(t, json.Unmarshal(r.Steps[1].Output, &kept))
	require.Equal(t, text, kept)
}
