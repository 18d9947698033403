package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// searchTool is the tool the chat tests declare.
func searchTool() llm.Tool {
	return llm.Tool{
		Name: "search", Description: "Searches the knowledge graph.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"query": map[string]any{"type": "string"}},
			"required":   []any{"query"},
		},
	}
}

// streamBody is the part of a streamGenerateContent request body the chat
// tests check.
type streamBody struct {
	Contents          []llmtest.Content `json:"contents"`
	SystemInstruction llmtest.Content   `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string         `json:"name"`
			Description          string         `json:"description"`
			ParametersJSONSchema map[string]any `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		Temperature     float64 `json:"temperature"`
		MaxOutputTokens int     `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

func lastStream(t *testing.T, f *llmtest.Fake) (llmtest.Request, streamBody) {
	t.Helper()
	var got llmtest.Request
	for _, r := range f.Requests() {
		if r.Endpoint == llmtest.EndpointStream {
			got = r
		}
	}
	var body streamBody
	require.NoError(t, json.Unmarshal(got.Body, &body))
	return got, body
}

func TestChatToolCallsAtTheWire(t *testing.T) {
	t.Parallel()
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := p.setup(t)
			b.fake.SetUsage(llmtest.Usage{PromptText: 40, Candidates: 9, Thoughts: 3})
			b.fake.SetStream(func(c llmtest.StreamCall) []llmtest.Part {
				last := c.Contents[len(c.Contents)-1]
				if last.Parts[0].FunctionResponse != nil {
					return []llmtest.Part{{Text: "Ada Lovelace "}, {Text: "wrote the "}, {Text: "first program."}}
				}
				return []llmtest.Part{
					{Text: "The user asks about programs.", Thought: true},
					{Text: "Let me look."},
					{FunctionCall: &llmtest.FunctionCall{Name: "search", Args: map[string]any{"query": "first program"}}, ThoughtSignature: "c2lnMQ=="},
				}
			})
			temp := 0.3
			msgs := []llm.Message{
				{Role: llm.RoleSystem, Text: "You answer from the graph."},
				{Role: llm.RoleUser, Text: "Who wrote the first program?"},
			}
			var deltas []string
			onDelta := func(d string) error { deltas = append(deltas, d); return nil }
			res, err := b.client.Chat(context.Background(), "m", llm.ChatRequest{
				Messages: msgs, Tools: []llm.Tool{searchTool()}, Temperature: &temp, MaxOutputTokens: 256, OnDelta: onDelta,
			})
			require.NoError(t, err)
			require.Equal(t, "Let me look.", res.Text, "thoughts are left out")
			require.Equal(t, []string{"Let me look."}, deltas)
			require.Len(t, res.ToolCalls, 1)
			call := res.ToolCalls[0]
			require.Equal(t, "call_1", call.ID, "Gemini gave no id: one is made up")
			require.Equal(t, "search", call.Name)
			require.JSONEq(t, `{"query":"first program"}`, string(call.Arguments))
			require.Equal(t, []byte("sig1"), call.Signature)
			require.Equal(t, llm.Usage{InputText: 40, Output: 12}, res.Usage, "the last chunk's usage, not a sum")
			require.Equal(t, "m", res.Model)
			require.Positive(t, res.Duration)

			got, body := lastStream(t, b.fake)
			require.Equal(t, strings.Replace(p.genPath, ":generateContent", ":streamGenerateContent", 1), got.Path)
			require.Equal(t, "You answer from the graph.", body.SystemInstruction.Parts[0].Text)
			require.Len(t, body.Contents, 1)
			require.Equal(t, "user", body.Contents[0].Role)
			require.Equal(t, "Who wrote the first program?", body.Contents[0].Parts[0].Text)
			require.Len(t, body.Tools, 1)
			require.Len(t, body.Tools[0].FunctionDeclarations, 1)
			decl := body.Tools[0].FunctionDeclarations[0]
			require.Equal(t, "search", decl.Name)
			require.Equal(t, "Searches the knowledge graph.", decl.Description)
			require.Equal(t, searchTool().Parameters, decl.ParametersJSONSchema)
			require.InDelta(t, 0.3, body.GenerationConfig.Temperature, 1e-6)
			require.Equal(t, 256, body.GenerationConfig.MaxOutputTokens)

			// The next step sends the call back with its signature, and the
			// result as a functionResponse.
			msgs = append(msgs,
				llm.Message{Role: llm.RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls},
				llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{
					CallID: call.ID, Name: "search", Content: json.RawMessage(`{"results":[{"name":"Ada Lovelace"}]}`),
				}}},
			)
			deltas = nil
			res, err = b.client.Chat(context.Background(), "m", llm.ChatRequest{Messages: msgs, Tools: []llm.Tool{searchTool()}, OnDelta: onDelta})
			require.NoError(t, err)
			require.Equal(t, "Ada Lovelace wrote the first program.", res.Text)
			require.Equal(t, []string{"Ada Lovelace ", "wrote the ", "first program."}, deltas)
			require.Empty(t, res.ToolCalls)
			require.Equal(t, 2, b.fake.Count(llmtest.EndpointStream))
			require.Zero(t, b.fake.Count(llmtest.EndpointGenerate))

			_, body = lastStream(t, b.fake)
			require.Len(t, body.Contents, 3)
			model := body.Contents[1]
			require.Equal(t, "model", model.Role)
			require.Len(t, model.Parts, 2)
			require.Equal(t, "Let me look.", model.Parts[0].Text)
			require.Equal(t, &llmtest.FunctionCall{ID: "call_1", Name: "search", Args: map[string]any{"query": "first program"}}, model.Parts[1].FunctionCall)
			require.Equal(t, "c2lnMQ==", model.Parts[1].ThoughtSignature)
			resp := body.Contents[2]
			require.Equal(t, "user", resp.Role)
			require.Len(t, resp.Parts, 1)
			require.Equal(t, &llmtest.FunctionResponse{
				ID: "call_1", Name: "search",
				Response: map[string]any{"output": map[string]any{"results": []any{map[string]any{"name": "Ada Lovelace"}}}},
			}, resp.Parts[0].FunctionResponse)
		})
	}
}

func TestChatToolErrorAndCallIDs(t *testing.T) {
	t.Parallel()
	b := providers()[0].setup(t)
	b.fake.SetStream(func(llmtest.StreamCall) []llmtest.Part {
		return []llmtest.Part{
			{FunctionCall: &llmtest.FunctionCall{ID: "fc-7", Name: "search", Args: map[string]any{"query": "a"}}},
			{FunctionCall: &llmtest.FunctionCall{Name: "search"}},
		}
	})
	msgs := []llm.Message{
		{Role: llm.RoleUser, Text: "q"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{"query":"q"}`)}}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "call_1", Name: "search", Content: json.RawMessage(`"index offline"`), IsError: true}}},
	}
	res, err := b.client.Chat(context.Background(), "m", llm.ChatRequest{Messages: msgs, Tools: []llm.Tool{searchTool()}})
	require.NoError(t, err)
	require.Empty(t, res.Text)
	require.Len(t, res.ToolCalls, 2, "parallel calls")
	require.Equal(t, "fc-7", res.ToolCalls[0].ID, "the provider's id is kept")
	require.Equal(t, "call_3", res.ToolCalls[1].ID, "made-up ids count the conversation's calls")
	require.JSONEq(t, `{}`, string(res.ToolCalls[1].Arguments))

	_, body := lastStream(t, b.fake)
	require.Equal(t, map[string]any{"error": "index offline"}, body.Contents[2].Parts[0].FunctionResponse.Response)

	// The two calls answered by one tool message each go back as one turn.
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "fc-7", Name: "search", Content: json.RawMessage(`[]`)}}},
		llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "call_3", Name: "search", Content: json.RawMessage(`["x"]`)}}},
	)
	_, err = b.client.Chat(context.Background(), "m", llm.ChatRequest{Messages: msgs, Tools: []llm.Tool{searchTool()}})
	require.NoError(t, err)
	_, body = lastStream(t, b.fake)
	require.Len(t, body.Contents, 5)
	last := body.Contents[4]
	require.Equal(t, "user", last.Role)
	require.Len(t, last.Parts, 2)
	require.Equal(t, "fc-7", last.Parts[0].FunctionResponse.ID)
	require.Equal(t, "call_3", last.Parts[1].FunctionResponse.ID)
	require.Equal(t, map[string]any{"output": []any{"x"}}, last.Parts[1].FunctionResponse.Response)
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := p.setup(t)
			ctx := context.Background()
			user := []llm.Message{{Role: llm.RoleUser, Text: "hello"}}

			// Refused before sending.
			for _, req := range []llm.ChatRequest{
				{},
				{Messages: []llm.Message{{Role: llm.RoleSystem, Text: "only a system"}}},
				{Messages: []llm.Message{{Role: "robot", Text: "x"}}},
				{Messages: []llm.Message{{Role: llm.RoleUser}}},
				{Messages: append(user, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "search", Arguments: json.RawMessage(`[1]`)}}})},
				{Messages: append(user, llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{Name: "search", Content: json.RawMessage(`{oops`)}}})},
				{Messages: user, Tools: []llm.Tool{searchTool(), searchTool()}},
				{Messages: user, Tools: []llm.Tool{{Description: "no name"}}},
			} {
				_, err := b.client.Chat(ctx, "m", req)
				requireKind(t, err, llm.ErrorInvalid, 0)
			}
			_, err := b.client.Chat(ctx, "", llm.ChatRequest{Messages: user})
			requireKind(t, err, llm.ErrorInvalid, 0)
			require.Zero(t, b.fake.Count(llmtest.EndpointStream))

			// A 429 with Retry-After before the stream.
			b.fake.FailNext(1, http.StatusTooManyRequests, "7", "")
			_, err = b.client.Chat(ctx, "m", llm.ChatRequest{Messages: user})
			requireKind(t, err, llm.ErrorRateLimit, http.StatusTooManyRequests)
			require.Equal(t, 7*time.Second, llmError(t, err).RetryAfter)
			requireNoSecrets(t, err, b.secrets)

			// An error event in the middle of the stream: the deltas before
			// it were delivered.
			b.fake.SetStream(func(llmtest.StreamCall) []llmtest.Part {
				return []llmtest.Part{{Text: "Half "}, {Text: "an answer"}}
			})
			b.fake.FailStreamAfter(1, http.StatusServiceUnavailable, "The model is overloaded.")
			var deltas []string
			_, err = b.client.Chat(ctx, "m", llm.ChatRequest{Messages: user, OnDelta: func(d string) error { deltas = append(deltas, d); return nil }})
			requireKind(t, err, llm.ErrorTransient, http.StatusServiceUnavailable)
			require.Contains(t, err.Error(), "The model is overloaded.")
			require.Equal(t, []string{"Half "}, deltas)

			// OnDelta's error ends the call as it is.
			gone := errors.New("client gone")
			_, err = b.client.Chat(ctx, "m", llm.ChatRequest{Messages: user, OnDelta: func(string) error { return gone }})
			require.ErrorIs(t, err, gone)
			var le *llm.Error
			require.NotErrorAs(t, err, &le)

			// Nothing usable, and a malformed stream.
			b.fake.SetStream(func(llmtest.StreamCall) []llmtest.Part { return []llmtest.Part{{Text: "only thinking", Thought: true}} })
			_, err = b.client.Chat(ctx, "m", llm.ChatRequest{Messages: user})
			requireKind(t, err, llm.ErrorInvalid, 0)
			require.Contains(t, err.Error(), "empty response")
			b.fake.SetMalformed(true)
			_, err = b.client.Chat(ctx, "m", llm.ChatRequest{Messages: user})
			requireKind(t, err, llm.ErrorInvalid, http.StatusOK)
			require.Contains(t, err.Error(), "malformed response")
			require.Equal(t, 5, b.fake.Count(llmtest.EndpointStream), "one request per call")
		})
	}
}
