package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// openAIBody is the part of a chat completion request body the chat tests
// check, as the SDK sent it.
type openAIBody struct {
	Messages []map[string]any `json:"messages"`
	Tools    []map[string]any `json:"tools"`
	Stream   bool             `json:"stream"`
	Options  map[string]any   `json:"stream_options"`
	Temp     float64          `json:"temperature"`
	MaxToks  int              `json:"max_tokens"`
	MaxCompl int              `json:"max_completion_tokens"`
}

func lastOpenAIBody(t *testing.T, f *llmtest.OpenAI) openAIBody {
	t.Helper()
	reqs := f.Requests()
	require.NotEmpty(t, reqs)
	var body openAIBody
	require.NoError(t, json.Unmarshal(reqs[len(reqs)-1].Body, &body))
	return body
}

// TestOpenAIChatToolCallsAtTheWire: a streamed step that calls a tool,
// then the step that answers from its result, through the real SDK.
func TestOpenAIChatToolCallsAtTheWire(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	f.SetChatStream(func(call llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		if call.Messages[len(call.Messages)-1].Role == "tool" {
			return []llmtest.OpenAIDelta{{Content: "Ada Lovelace "}, {Content: "wrote the "}, {Content: "first program."}}
		}
		return []llmtest.OpenAIDelta{
			{Content: "Let me look."},
			{Call: &llmtest.OpenAICall{ID: "call_abc", Name: "search", Arguments: `{"query": "first program"}`}},
		}
	})
	temp := 0.3
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Text: "You answer from the graph."},
		{Role: llm.RoleUser, Text: "Who wrote the first program?"},
	}
	var deltas []string
	onDelta := func(d string) error { deltas = append(deltas, d); return nil }
	res, err := c.Chat(context.Background(), "llama3.1:8b", llm.ChatRequest{
		Messages: msgs, Tools: []llm.Tool{searchTool()}, Temperature: &temp, MaxOutputTokens: 256, OnDelta: onDelta,
	})
	require.NoError(t, err)
	require.Equal(t, "Let me look.", res.Text)
	require.Equal(t, []string{"Let me look."}, deltas)
	require.Len(t, res.ToolCalls, 1)
	call := res.ToolCalls[0]
	require.Equal(t, "call_abc", call.ID, "the API's id is kept")
	require.Equal(t, "search", call.Name)
	require.JSONEq(t, `{"query":"first program"}`, string(call.Arguments), "assembled from fragments")
	require.Nil(t, call.Signature)
	// The fake's usage, sent in the final chunk only: the words of the
	// messages (5 + 5) and of the answer (3 + `search {"query": "first
	// program"}` 4).
	require.Equal(t, llm.Usage{InputText: 10, Output: 7}, res.Usage)
	require.Equal(t, "llama3.1:8b", res.Model)
	require.Positive(t, res.Duration)

	body := lastOpenAIBody(t, f)
	require.True(t, body.Stream)
	require.Equal(t, map[string]any{"include_usage": true}, body.Options)
	require.Equal(t, []map[string]any{
		{"role": "system", "content": "You answer from the graph."},
		{"role": "user", "content": "Who wrote the first program?"},
	}, body.Messages)
	require.Equal(t, []map[string]any{{"type": "function", "function": map[string]any{
		"name": "search", "description": "Searches the knowledge graph.", "parameters": searchTool().Parameters,
	}}}, body.Tools)
	require.InDelta(t, 0.3, body.Temp, 1e-9)
	require.Equal(t, 256, body.MaxToks, "a local server gets max_tokens")
	require.Zero(t, body.MaxCompl)

	// The next step sends the call back as tool_calls and the result as a
	// tool message.
	msgs = append(msgs,
		llm.Message{Role: llm.RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{
			CallID: call.ID, Name: "search", Content: json.RawMessage(`{"results": [{"name": "Ada Lovelace"}]}`),
		}}},
	)
	deltas = nil
	res, err = c.Chat(context.Background(), "llama3.1:8b", llm.ChatRequest{Messages: msgs, Tools: []llm.Tool{searchTool()}, OnDelta: onDelta})
	require.NoError(t, err)
	require.Equal(t, "Ada Lovelace wrote the first program.", res.Text)
	require.Equal(t, []string{"Ada Lovelace ", "wrote the ", "first program."}, deltas)
	require.Empty(t, res.ToolCalls)
	require.Equal(t, 2, f.Count(llmtest.EndpointGenerate))

	body = lastOpenAIBody(t, f)
	require.Len(t, body.Messages, 4)
	require.Equal(t, map[string]any{
		"role": "assistant", "content": "Let me look.",
		"tool_calls": []any{map[string]any{
			"id": "call_abc", "type": "function",
			"function": map[string]any{"name": "search", "arguments": `{"query":"first program"}`},
		}},
	}, body.Messages[2])
	require.Equal(t, map[string]any{
		"role": "tool", "tool_call_id": "call_abc", "content": `{"results":[{"name":"Ada Lovelace"}]}`,
	}, body.Messages[3])
	chats := f.Chats()
	require.Equal(t, []llmtest.OpenAICall{{ID: "call_abc", Name: "search", Arguments: `{"query":"first program"}`}}, chats[1].Messages[2].ToolCalls)
}

// TestOpenAIChatMaxCompletionTokens: the OpenAI API gets
// max_completion_tokens (its reasoning models refuse max_tokens).
func TestOpenAIChatMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t)
	c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "https://api.openai.com/v1", HTTPClient: redirectTo(t, f.URL())})
	require.NoError(t, err)
	f.SetChat(func(llmtest.OpenAIChat) string { return "hi" })
	res, err := c.Chat(context.Background(), "gpt-4o-mini", llm.ChatRequest{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hello"}}, MaxOutputTokens: 64})
	require.NoError(t, err)
	require.Equal(t, "hi", res.Text)
	body := lastOpenAIBody(t, f)
	require.Equal(t, 64, body.MaxCompl)
	require.Zero(t, body.MaxToks)
}

// TestOpenAIChatToolErrorAndCallIDs: parallel calls keep their order, a
// call without an id gets one counting the conversation's calls, each
// result is its own tool message and a failed tool's goes as
// {"error": content}.
func TestOpenAIChatToolErrorAndCallIDs(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	f.SetChatStream(func(llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		return []llmtest.OpenAIDelta{
			{Call: &llmtest.OpenAICall{ID: "call_x7", Name: "search", Arguments: `{"query":"a long query to fragment"}`}},
			{Call: &llmtest.OpenAICall{Name: "search"}},
		}
	})
	msgs := []llm.Message{
		{Role: llm.RoleUser, Text: "q"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{"query":"q"}`)},
			{ID: "call_2", Name: "search"},
		}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{
			{CallID: "call_1", Name: "search", Content: json.RawMessage(`"index offline"`), IsError: true},
			{CallID: "call_2", Name: "search", Content: json.RawMessage(`["x"]`)},
		}},
	}
	res, err := c.Chat(context.Background(), "m", llm.ChatRequest{Messages: msgs, Tools: []llm.Tool{searchTool()}})
	require.NoError(t, err)
	require.Empty(t, res.Text)
	require.Len(t, res.ToolCalls, 2, "parallel calls")
	require.Equal(t, "call_x7", res.ToolCalls[0].ID)
	require.JSONEq(t, `{"query":"a long query to fragment"}`, string(res.ToolCalls[0].Arguments))
	require.Equal(t, "call_4", res.ToolCalls[1].ID, "made-up ids count the conversation's calls")
	require.JSONEq(t, `{}`, string(res.ToolCalls[1].Arguments))

	body := lastOpenAIBody(t, f)
	require.Len(t, body.Messages, 4, "one tool message per result")
	require.Equal(t, `{"query":"q"}`, body.Messages[1]["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"])
	require.Equal(t, `{}`, body.Messages[1]["tool_calls"].([]any)[1].(map[string]any)["function"].(map[string]any)["arguments"])
	require.NotContains(t, body.Messages[1], "content", "an assistant message of calls only has no content")
	require.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"error":"index offline"}`}, body.Messages[2])
	require.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_2", "content": `["x"]`}, body.Messages[3])
}

// TestOpenAIChatErrors: requests refused before sending, a 429 with
// Retry-After, an error event mid-stream, OnDelta's error, an empty and a
// malformed answer, arguments that are not an object; the key never in
// an error.
func TestOpenAIChatErrors(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	ctx := context.Background()
	user := []llm.Message{{Role: llm.RoleUser, Text: "hello"}}

	for _, req := range []llm.ChatRequest{
		{},
		{Messages: []llm.Message{{Role: llm.RoleSystem, Text: "only a system"}}},
		{Messages: []llm.Message{{Role: "robot", Text: "x"}}},
		{Messages: []llm.Message{{Role: llm.RoleUser}}},
		{Messages: append(user, llm.Message{Role: llm.RoleAssistant})},
		{Messages: append(user, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "search", Arguments: json.RawMessage(`[1]`)}}})},
		{Messages: append(user, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "search", Arguments: json.RawMessage(`{}`)}}})},
		{Messages: append(user, llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "c1", Name: "search", Content: json.RawMessage(`{oops`)}}})},
		{Messages: append(user, llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{Name: "search", Content: json.RawMessage(`1`)}}})},
		{Messages: append(user, llm.Message{Role: llm.RoleTool})},
		{Messages: user, Tools: []llm.Tool{searchTool(), searchTool()}},
		{Messages: user, Tools: []llm.Tool{{Description: "no name"}}},
	} {
		_, err := c.Chat(ctx, "m", req)
		requireKind(t, err, llm.ErrorInvalid, 0)
	}
	_, err := c.Chat(ctx, "", llm.ChatRequest{Messages: user})
	requireKind(t, err, llm.ErrorInvalid, 0)
	require.Zero(t, f.Count(llmtest.EndpointGenerate))

	// A 429 with Retry-After before the stream.
	f.FailNext(1, http.StatusTooManyRequests, "7")
	_, err = c.Chat(ctx, "m", llm.ChatRequest{Messages: user})
	requireKind(t, err, llm.ErrorRateLimit, http.StatusTooManyRequests)
	require.Equal(t, 7*time.Second, llmError(t, err).RetryAfter)
	requireNoSecrets(t, err, []string{openAIKey})

	// A wrong key: the server's message quotes it, the error does not.
	bad, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: f.URL(), APIKey: "sk-wrong-key-0123456789"})
	require.NoError(t, err)
	_, err = bad.Chat(ctx, "m", llm.ChatRequest{Messages: user})
	requireKind(t, err, llm.ErrorAuth, http.StatusUnauthorized)
	requireNoSecrets(t, err, []string{"sk-wrong-key-0123456789"})

	// An error event in the middle of the stream: the deltas before it
	// were delivered.
	f.SetChatStream(func(llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		return []llmtest.OpenAIDelta{{Content: "Half "}, {Content: "an answer"}}
	})
	f.FailStreamAfter(1, "The server had an error while processing your request.")
	var deltas []string
	_, err = c.Chat(ctx, "m", llm.ChatRequest{Messages: user, OnDelta: func(d string) error { deltas = append(deltas, d); return nil }})
	requireKind(t, err, llm.ErrorTransient, 0)
	require.Contains(t, err.Error(), "The server had an error while processing your request.")
	require.Equal(t, []string{"Half "}, deltas)

	// OnDelta's error ends the call as it is, after the first delta.
	gone := errors.New("client gone")
	calls := 0
	_, err = c.Chat(ctx, "m", llm.ChatRequest{Messages: user, OnDelta: func(string) error { calls++; return gone }})
	require.ErrorIs(t, err, gone)
	var le *llm.Error
	require.NotErrorAs(t, err, &le)
	require.Equal(t, 1, calls)

	// Arguments that are not an object.
	f.SetChatStream(func(llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		return []llmtest.OpenAIDelta{{Call: &llmtest.OpenAICall{ID: "c9", Name: "search", Arguments: `["a"]`}}}
	})
	_, err = c.Chat(ctx, "m", llm.ChatRequest{Messages: user, Tools: []llm.Tool{searchTool()}})
	requireKind(t, err, llm.ErrorInvalid, 0)
	require.Contains(t, err.Error(), "not a JSON object")

	// Nothing usable, and a malformed stream.
	f.SetChatStream(func(llmtest.OpenAIChat) []llmtest.OpenAIDelta { return nil })
	_, err = c.Chat(ctx, "m", llm.ChatRequest{Messages: user})
	requireKind(t, err, llm.ErrorInvalid, 0)
	require.Contains(t, err.Error(), "empty response")
	f.SetMalformed(true)
	_, err = c.Chat(ctx, "m", llm.ChatRequest{Messages: user})
	requireKind(t, err, llm.ErrorInvalid, 0)
	require.Contains(t, err.Error(), "malformed response")
	require.Equal(t, 7, f.Count(llmtest.EndpointGenerate), "one request per call")
}

// redirectTo is an HTTP client that sends every request to base (an
// httptest server's URL), whatever host it names.
func redirectTo(t *testing.T, base string) *http.Client {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
