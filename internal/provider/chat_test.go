package provider_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
)

// TestChatLedger: a chat step through the resolved handle reaches the
// provider's stream endpoint, streams its deltas, and is recorded and
// priced in the ledger as a generation; a failed one too; the local
// provider's steps as well.
func TestChatLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	fake := llmtest.NewGemini(t, envKey)
	fake.SetUsage(llmtest.Usage{PromptText: 1000, Candidates: 400, Thoughts: 100})
	fake.SetStream(func(llmtest.StreamCall) []llmtest.Part {
		return []llmtest.Part{{Text: "Searching. "}, {FunctionCall: &llmtest.FunctionCall{ID: "c1", Name: "search", Args: map[string]any{"query": "x"}}}}
	})
	svc := f.service(provider.Config{KeyAIBaseURL: fake.URL(), Environment: provider.Environment{KeyAIAPIKey: envKey}})
	h, err := svc.Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)

	tools := []llm.Tool{{Name: "search", Parameters: map[string]any{"type": "object"}}}
	var deltas []string
	res, err := h.Chat(ctx, llm.ChatRequest{
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}, Tools: tools,
		OnDelta: func(d string) error { deltas = append(deltas, d); return nil },
	})
	require.NoError(t, err)
	require.Equal(t, []string{"Searching. "}, deltas)
	require.Len(t, res.ToolCalls, 1)
	require.JSONEq(t, `{"query":"x"}`, string(res.ToolCalls[0].Arguments))
	require.Equal(t, 1, fake.Count(llmtest.EndpointStream))

	fake.FailNext(1, 500, "", "")
	_, err = h.Chat(ctx, llm.ChatRequest{Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})
	require.Error(t, err)

	type row struct {
		model, op, status string
		text, output      int64
		cost              float64
	}
	read := func() []row {
		rows, err := f.pool.Query(ctx, `SELECT model, operation, status, text_tokens, output_tokens, estimated_cost_usd::float8
			FROM provider_usage WHERE project_id = $1 ORDER BY created_at, id`, f.project)
		require.NoError(t, err)
		var got []row
		for rows.Next() {
			var r row
			require.NoError(t, rows.Scan(&r.model, &r.op, &r.status, &r.text, &r.output, &r.cost))
			got = append(got, r)
		}
		require.NoError(t, rows.Err())
		return got
	}
	got := read()
	require.Len(t, got, 2)
	// gemini-2.5-flash: 0.30 text, 2.50 output per million.
	require.Equal(t, row{model: "gemini-2.5-flash", op: "generate", status: "ok", text: 1000, output: 500, cost: (1000*0.30 + 500*2.50) / 1e6}, got[0])
	require.Equal(t, "error", got[1].status)
	require.Equal(t, "generate", got[1].op)

	// The local provider, when nothing is configured.
	f2 := newFixture(t)
	local := f2.service(provider.Config{LocalEnabled: true})
	lh, err := local.Resolve(ctx, f2.project, provider.Generative)
	require.NoError(t, err)
	require.Equal(t, provider.Local, lh.Provider())
	msgs := []llm.Message{{Role: llm.RoleUser, Text: "Northwind Labs"}}
	res, err = lh.Chat(ctx, llm.ChatRequest{Messages: msgs, Tools: tools})
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 1)
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: res.ToolCalls[0].ID, Name: "search", Content: json.RawMessage(`["Northwind Labs"]`)}}})
	res, err = lh.Chat(ctx, llm.ChatRequest{Messages: msgs, Tools: tools})
	require.NoError(t, err)
	require.Equal(t, "From 1 tool result(s):\n- search: Northwind Labs", res.Text)
	var n, tokens int64
	require.NoError(t, f2.pool.QueryRow(ctx, `SELECT count(*), sum(text_tokens) FROM provider_usage WHERE project_id = $1 AND operation = 'generate' AND source = 'local'`, f2.project).Scan(&n, &tokens))
	require.Equal(t, int64(2), n)
	require.Positive(t, tokens)

	// An OpenAI-compatible local server: the streamed usage is recorded,
	// at no cost.
	f3 := newFixture(t)
	oa := llmtest.NewOpenAI(t)
	oa.SetChatStream(func(llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		return []llmtest.OpenAIDelta{{Content: "Searching."}, {Call: &llmtest.OpenAICall{ID: "c1", Name: "search", Arguments: `{"query":"x"}`}}}
	})
	oh, err := f3.service(provider.Config{Environment: provider.Environment{OpenAIBaseURL: oa.URL(), OpenAIModel: "llama3.1:8b"}}).
		Resolve(ctx, f3.project, provider.Generative)
	require.NoError(t, err)
	res, err = oh.Chat(ctx, llm.ChatRequest{Messages: []llm.Message{{Role: llm.RoleUser, Text: "find x"}}, Tools: tools})
	require.NoError(t, err)
	require.Equal(t, "c1", res.ToolCalls[0].ID)
	var model, op, status string
	var text, output int64
	var cost float64
	require.NoError(t, f3.pool.QueryRow(ctx, `SELECT model, operation, status, text_tokens, output_tokens, estimated_cost_usd::float8
		FROM provider_usage WHERE project_id = $1`, f3.project).Scan(&model, &op, &status, &text, &output, &cost))
	require.Equal(t, []any{"llama3.1:8b", "generate", "ok", int64(2), int64(3), 0.0}, []any{model, op, status, text, output, cost})
}

// TestChatToolCallNamesNeverNameAnotherTool: a tool call's name and id
// are looked up (the tool to run, the call a result answers), so one
// holding a NUL comes back storable but never as another name ("sea\x00rch"
// is not the search tool: the NUL becomes U+FFFD); its arguments come back
// as jsonb holds them (half a surrogate pair becomes \ufffd).
func TestChatToolCallNamesNeverNameAnotherTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	oa := llmtest.NewOpenAI(t)
	oa.SetChatStream(func(llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		return []llmtest.OpenAIDelta{{Call: &llmtest.OpenAICall{ID: "c\x001", Name: "sea\x00rch", Arguments: `{"query":"\ud800"}`}}}
	})
	h, err := f.service(provider.Config{Environment: provider.Environment{OpenAIBaseURL: oa.URL(), OpenAIModel: "llama3.1:8b"}}).
		Resolve(ctx, f.project, provider.Generative)
	require.NoError(t, err)
	tools := []llm.Tool{{Name: "search", Parameters: map[string]any{"type": "object"}}}
	res, err := h.Chat(ctx, llm.ChatRequest{Messages: []llm.Message{{Role: llm.RoleUser, Text: "find x"}}, Tools: tools})
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 1)
	c := res.ToolCalls[0]
	require.Equal(t, "sea\uFFFDrch", c.Name)
	require.Equal(t, "c\uFFFD1", c.ID)
	require.JSONEq(t, `{"query":"\ufffd"}`, string(c.Arguments))
	require.True(t, postgres.ValidText(c.Name))
	require.True(t, postgres.ValidText(c.ID))
}
