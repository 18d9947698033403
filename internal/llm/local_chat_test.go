package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
)

// runTools answers every call of res from tools (a missing tool's result
// is an error) as one tool message.
func runTools(res *llm.ChatResult, tools map[string]func(json.RawMessage) (string, bool)) llm.Message {
	m := llm.Message{Role: llm.RoleTool}
	for _, c := range res.ToolCalls {
		out, failed := `"no such tool"`, true
		if fn, ok := tools[c.Name]; ok {
			out, failed = fn(c.Arguments)
		}
		m.ToolResults = append(m.ToolResults, llm.ToolResult{CallID: c.ID, Name: c.Name, Content: json.RawMessage(out), IsError: failed})
	}
	return m
}

func TestLocalChatPlanner(t *testing.T) {
	t.Parallel()
	c := llm.NewLocal(0)
	ctx := context.Background()
	tools := []llm.Tool{
		searchTool(),
		{Name: llm.ToolAskUser, Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"choices": map[string]any{"type": "array"},
				"prompt":  map[string]any{"type": "string"},
			},
			"required": []string{"choices", "prompt"},
		}},
		{Name: "lookup", Description: "Reads an object.", Parameters: map[string]any{"type": "object"}},
	}
	run := map[string]func(json.RawMessage) (string, bool){
		"search": func(json.RawMessage) (string, bool) {
			return `{"results":[{"name":"Elias Thornbury","type":"Person","score":0.9},{"name":"Northwind Labs","type":"Organization"}]}`, false
		},
		llm.ToolAskUser: func(json.RawMessage) (string, bool) { return `"2001"`, false },
		"lookup":        func(json.RawMessage) (string, bool) { return `{"error":"not found"}`, true },
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Text: "Answer from the graph."},
		{Role: llm.RoleUser, Text: "Who founded\n  Northwind Labs?\nASK: Which year do you mean?\nCALL: lookup\t{\"id\": \"42\"}\nCALL: missing {}\nCALL: lookup [1]"},
	}
	want := []struct{ id, name, args string }{
		{"call_1", "search", `{"query":"Who founded Northwind Labs?"}`},
		{"call_2", llm.ToolAskUser, `{"prompt":"Which year do you mean?"}`},
		{"call_3", "lookup", `{"id":"42"}`},
	}
	for _, w := range want {
		var deltas []string
		res, err := c.Chat(ctx, "", llm.ChatRequest{Messages: msgs, Tools: tools, OnDelta: func(d string) error { deltas = append(deltas, d); return nil }})
		require.NoError(t, err)
		require.Empty(t, res.Text)
		require.Empty(t, deltas)
		require.Len(t, res.ToolCalls, 1, "one call per step")
		require.Equal(t, w.id, res.ToolCalls[0].ID)
		require.Equal(t, w.name, res.ToolCalls[0].Name)
		require.Equal(t, w.args, string(res.ToolCalls[0].Arguments))
		require.Equal(t, llm.LocalGenerateModel, res.Model)
		require.Positive(t, res.Usage.InputText)
		require.Positive(t, res.Usage.Output)
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls}, runTools(res, run))
	}

	var deltas []string
	req := llm.ChatRequest{Messages: msgs, Tools: tools, OnDelta: func(d string) error { deltas = append(deltas, d); return nil }}
	res, err := c.Chat(ctx, llm.LocalGenerateModel, req)
	require.NoError(t, err)
	require.Empty(t, res.ToolCalls)
	require.Equal(t, "From 3 tool result(s):\n"+
		"- search: Elias Thornbury; Person; 0.9; Northwind Labs; Organization\n"+
		"- ask_user: 2001\n"+
		"- lookup failed: not found\n"+
		"- missing: not called (not declared)\n"+
		"- lookup: not called (the arguments are not a JSON object)", res.Text)
	require.Equal(t, res.Text, strings.Join(deltas, ""))
	require.Len(t, deltas, len(strings.Fields(res.Text)), "one word per delta")
	require.Equal(t, "From", deltas[0])
	require.Equal(t, " 3", deltas[1])

	again, err := c.Chat(ctx, "", llm.ChatRequest{Messages: msgs, Tools: tools})
	require.NoError(t, err)
	require.Equal(t, res.Text, again.Text, "deterministic")
	require.Equal(t, res.Usage, again.Usage)

	// A new user message starts a new plan; ids keep counting.
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Text: res.Text}, llm.Message{Role: llm.RoleUser, Text: "And Imogen Calloway?"})
	res, err = c.Chat(ctx, "", llm.ChatRequest{Messages: msgs, Tools: tools})
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 1)
	require.Equal(t, "call_4", res.ToolCalls[0].ID)
	require.JSONEq(t, `{"query":"And Imogen Calloway?"}`, string(res.ToolCalls[0].Arguments))
}

func TestLocalChatWithoutTools(t *testing.T) {
	t.Parallel()
	c := llm.NewLocal(0)
	user := []llm.Message{{Role: llm.RoleUser, Text: "hello   there\nASK: anyone?"}}
	res, err := c.Chat(context.Background(), "", llm.ChatRequest{Messages: user})
	require.NoError(t, err)
	require.Empty(t, res.ToolCalls)
	require.Equal(t, "From 0 tool result(s):\n- ask_user: not called (not declared)", res.Text)

	res, err = c.Chat(context.Background(), "", llm.ChatRequest{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hello   there"}}})
	require.NoError(t, err)
	require.Equal(t, "No tool was called for: hello there", res.Text)

	// A search tool found by name, filled by its first string property.
	tools := []llm.Tool{{Name: "graph_search", Parameters: map[string]any{"properties": map[string]any{
		"limit": map[string]any{"type": "integer"}, "text": map[string]any{"type": "string"}, "q": map[string]any{"type": "string"},
	}}}}
	res, err = c.Chat(context.Background(), "", llm.ChatRequest{Messages: []llm.Message{{Role: llm.RoleUser, Text: "graphs"}}, Tools: tools})
	require.NoError(t, err)
	require.Equal(t, "graph_search", res.ToolCalls[0].Name)
	require.JSONEq(t, `{"q":"graphs"}`, string(res.ToolCalls[0].Arguments))
}

func TestLocalChatErrors(t *testing.T) {
	t.Parallel()
	c := llm.NewLocal(0)
	user := []llm.Message{{Role: llm.RoleUser, Text: "hi"}}
	_, err := c.Chat(context.Background(), "gemini-2.5-flash", llm.ChatRequest{Messages: user})
	requireKind(t, err, llm.ErrorInvalid, 0)
	_, err = c.Chat(context.Background(), "", llm.ChatRequest{Messages: []llm.Message{{Role: llm.RoleSystem, Text: "x"}}})
	requireKind(t, err, llm.ErrorInvalid, 0)
	_, err = c.Chat(context.Background(), "", llm.ChatRequest{Messages: user, Tools: []llm.Tool{searchTool(), searchTool()}})
	requireKind(t, err, llm.ErrorInvalid, 0)
	gone := errors.New("client gone")
	_, err = c.Chat(context.Background(), "", llm.ChatRequest{Messages: user, OnDelta: func(string) error { return gone }})
	require.ErrorIs(t, err, gone)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Chat(ctx, "", llm.ChatRequest{Messages: user})
	require.ErrorIs(t, err, context.Canceled)
}
