package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/notification"
)

// recNotifier records the notifications' messages and refuses one over
// notification.MessageMax as the notification service does.
type recNotifier struct {
	mu       sync.Mutex
	messages []string
}

func (*recNotifier) ExpireSource(context.Context, pgx.Tx, string, string) error { return nil }

func (n *recNotifier) Notify(_ context.Context, _ pgx.Tx, _ uuid.UUID, p notification.Params) (notification.Notification, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len([]rune(p.Message)) > notification.MessageMax {
		return notification.Notification{}, errs.New(errs.Invalid, "message too long")
	}
	n.messages = append(n.messages, p.Message)
	return notification.Notification{}, nil
}

// sameIDModel calls one tool per model step, each with the call id
// "call_1" (a provider that numbers ids per response), then answers.
type sameIDModel struct {
	calls []llm.ToolCall
}

func (m *sameIDModel) Model() string          { return "script" }
func (m *sameIDModel) Cost(llm.Usage) float64 { return 0 }
func (m *sameIDModel) Chat(_ context.Context, req llm.ChatRequest) (*llm.ChatResult, error) {
	made := 0
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleAssistant {
			made++
		}
	}
	if made < len(m.calls) {
		return &llm.ChatResult{ToolCalls: []llm.ToolCall{m.calls[made]}}, nil
	}
	return &llm.ChatResult{Text: "done"}, nil
}

// recBox has one tool, delete_thing, and records its calls.
type recBox struct {
	mu    sync.Mutex
	calls []string
}

func (b *recBox) Tools(context.Context, *auth.Principal, uuid.UUID) ([]llm.Tool, error) {
	return []llm.Tool{{Name: "delete_thing", Parameters: map[string]any{"type": "object"}}}, nil
}

func (b *recBox) Call(_ context.Context, _ *auth.Principal, _ uuid.UUID, name string, args json.RawMessage) (json.RawMessage, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var in struct{ ID string }
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, false, err
	}
	b.calls = append(b.calls, name+" "+in.ID)
	return json.RawMessage(`{"ok":true}`), false, nil
}

// questionRun starts a run of an agent with delete_thing (needing
// approval when approval is set) and model, with a recording notifier.
func questionRun(t *testing.T, model agent.Model, box agent.Toolbox, approval bool) (*agent.Service, *recNotifier, uuid.UUID, uuid.UUID, uuid.UUID) {
	t.Helper()
	notes := &recNotifier{}
	svc, p, project, _ := newService(t, model, box, notes)
	ctx := context.Background()
	in := agent.CreateParams{Name: "d", Instructions: "x", Tools: []string{"delete_thing"}}
	if approval {
		in.RequireApprovalFor = []string{"delete_thing"}
	}
	a, err := svc.CreateAgent(ctx, p, project, in)
	require.NoError(t, err)
	run, err := svc.StartRun(ctx, p, project, a.ID, "go")
	require.NoError(t, err)
	return svc, notes, project, p.UserID, run.ID
}

// settled waits until the run waits for input or ended.
func settled(t *testing.T, svc *agent.Service, project, user, run uuid.UUID) agent.Run {
	t.Helper()
	return awaitRun(t, svc, project, user, run, agent.StatusCompleted, agent.StatusFailed, agent.StatusWaitingForInput)
}

// TestApprovalPerCallNotPerCallID: two calls of a tool needing approval
// in two responses, with the same provider call id: each is asked for,
// with its own arguments, and runs only once approved.
func TestApprovalPerCallNotPerCallID(t *testing.T) {
	t.Parallel()
	model := &sameIDModel{calls: []llm.ToolCall{
		{ID: "call_1", Name: "delete_thing", Arguments: json.RawMessage(`{"id":"harmless"}`)},
		{ID: "call_1", Name: "delete_thing", Arguments: json.RawMessage(`{"id":"everything"}`)},
	}}
	box := &recBox{}
	svc, _, project, user, run := questionRun(t, model, box, true)
	ctx := context.Background()
	yes, no := true, false

	r := settled(t, svc, project, user, run)
	require.Equal(t, agent.StatusWaitingForInput, r.Status)
	require.JSONEq(t, `{"id":"harmless"}`, string(r.Question.Arguments))
	_, err := svc.AnswerRun(ctx, project, user, run, agent.Answer{Approve: &yes})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		r, err = svc.GetRun(ctx, project, user, run)
		require.NoError(t, err)
		return r.Status == agent.StatusWaitingForInput && r.Question != nil && strings.Contains(string(r.Question.Arguments), "everything")
	}, 10*time.Second, 10*time.Millisecond, "the second call asks for approval too")
	box.mu.Lock()
	require.Equal(t, []string{"delete_thing harmless"}, box.calls)
	box.mu.Unlock()

	_, err = svc.AnswerRun(ctx, project, user, run, agent.Answer{Approve: &no})
	require.NoError(t, err)
	r = waitRun(t, svc, project, user, run)
	require.Equal(t, agent.StatusCompleted, r.Status, r.Error)
	require.Equal(t, []string{"delete_thing harmless"}, box.calls, "the declined call did not run")
	require.True(t, r.Steps[3].IsError)
	require.Contains(t, string(r.Steps[3].Output), "declined")
}

// TestLongApprovalIsAsked: an approval whose arguments are longer than a
// notification may be is asked: the notification's message is cut, the
// question keeps the arguments whole.
func TestLongApprovalIsAsked(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 2500)
	args, err := json.Marshal(map[string]string{"content": long})
	require.NoError(t, err)
	model := &sameIDModel{calls: []llm.ToolCall{{ID: "c", Name: "delete_thing", Arguments: args}}}
	svc, notes, project, user, run := questionRun(t, model, &recBox{}, true)
	r := settled(t, svc, project, user, run)
	require.Equal(t, agent.StatusWaitingForInput, r.Status, r.Error)
	require.JSONEq(t, string(args), string(r.Question.Arguments))
	require.Contains(t, r.Question.Text, long[:9000])
	notes.mu.Lock()
	defer notes.mu.Unlock()
	require.Len(t, notes.messages, 1)
	require.LessOrEqual(t, len([]rune(notes.messages[0])), notification.MessageMax)
	require.True(t, strings.HasSuffix(notes.messages[0], agent.Cut), notes.messages[0][len(notes.messages[0])-50:])
}

// TestLongAskUserQuestionIsBounded: an ask_user question over
// agent.QuestionMax characters is asked cut to it.
func TestLongAskUserQuestionIsBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("why ", 5000)
	args, err := json.Marshal(map[string]string{"question": long})
	require.NoError(t, err)
	model := &sameIDModel{calls: []llm.ToolCall{{ID: "c", Name: llm.ToolAskUser, Arguments: args}}}
	svc, notes, project, user, run := questionRun(t, model, &recBox{}, false)
	r := settled(t, svc, project, user, run)
	require.Equal(t, agent.StatusWaitingForInput, r.Status, r.Error)
	require.Len(t, []rune(r.Question.Text), agent.QuestionMax)
	require.True(t, strings.HasPrefix(long, strings.TrimSuffix(r.Question.Text, agent.Cut)))
	notes.mu.Lock()
	defer notes.mu.Unlock()
	require.Len(t, notes.messages, 1)
	require.LessOrEqual(t, len([]rune(notes.messages[0])), notification.MessageMax)
}
