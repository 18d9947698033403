package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Chat implements Client with chat-completions function calling, streamed
// (stream_options.include_usage): system messages keep the system role,
// assistant messages carry their tool_calls (arguments as JSON text), and
// each tool result is its own "tool" message naming its tool_call_id, its
// content the result's JSON ({"error": content} for a failed tool). Content
// deltas go to OnDelta as they arrive; tool calls are assembled from their
// deltas by index.
func (c *openAIClient) Chat(ctx context.Context, model string, req ChatRequest) (*ChatResult, error) {
	op := "chat " + model
	if model == "" {
		return nil, c.invalid("chat", "no model given")
	}
	msgs, err := openAIMessages(req.Messages)
	if err != nil {
		return nil, c.invalid(op, err.Error())
	}
	if err := checkTools(req.Tools); err != nil {
		return nil, c.invalid(op, err.Error())
	}
	params := openai.ChatCompletionNewParams{
		Model: model, Messages: msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	for _, t := range req.Tools {
		def := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		if t.Parameters != nil {
			def.Parameters = shared.FunctionParameters(t.Parameters)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	c.sampling(&params, req.Temperature, req.MaxOutputTokens)

	start := c.now()
	res := &ChatResult{Model: model}
	var (
		text    strings.Builder
		refusal strings.Builder
		finish  string
		calls   = map[int64]*openAIPendingCall{}
	)
	stream := c.sdk.Chat.Completions.NewStreaming(ctx, params)
	defer func() { _ = stream.Close() }()
	for stream.Next() {
		chunk := stream.Current()
		if chunk.JSON.Usage.Valid() {
			res.Usage = Usage{InputText: chunk.Usage.PromptTokens, Output: chunk.Usage.CompletionTokens}.Bounded()
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
			refusal.WriteString(ch.Delta.Refusal)
			for _, d := range ch.Delta.ToolCalls {
				p := calls[d.Index]
				if p == nil {
					p = &openAIPendingCall{index: d.Index}
					calls[d.Index] = p
				}
				if d.ID != "" {
					p.id = d.ID
				}
				if d.Function.Name != "" {
					p.name = d.Function.Name
				}
				p.args.WriteString(d.Function.Arguments)
			}
			if ch.Delta.Content == "" {
				continue
			}
			text.WriteString(ch.Delta.Content)
			if req.OnDelta != nil {
				if err := req.OnDelta(ch.Delta.Content); err != nil {
					return nil, fmt.Errorf("%s %s: %w", ProviderOpenAI, op, err)
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, c.classify(ctx, op, err)
	}
	res.Text = text.String()
	res.ToolCalls, err = openAIToolCalls(calls, callCount(req.Messages))
	if err != nil {
		return nil, c.invalid(op, err.Error())
	}
	if strings.TrimSpace(res.Text) == "" && len(res.ToolCalls) == 0 {
		if refusal.Len() > 0 {
			return nil, c.invalid(op, "the model refused: "+truncate(refusal.String(), 300))
		}
		note := ""
		if finish != "" && finish != "stop" {
			note = " (finish reason " + finish + ")"
		}
		return nil, c.invalid(op, "empty response"+note)
	}
	res.Duration = c.now().Sub(start)
	return res, nil
}

// openAIPendingCall is a tool call being assembled from stream deltas.
type openAIPendingCall struct {
	index    int64
	id, name string
	args     strings.Builder
}

// openAIToolCalls finishes the streamed calls in index order; a call
// without an id gets "call_<n>", n counting the conversation's calls
// (made counts those before this response).
func openAIToolCalls(calls map[int64]*openAIPendingCall, made int) ([]ToolCall, error) {
	pending := make([]*openAIPendingCall, 0, len(calls))
	for _, p := range calls {
		pending = append(pending, p)
	}
	slices.SortFunc(pending, func(a, b *openAIPendingCall) int { return cmp.Compare(a.index, b.index) })
	var out []ToolCall
	for _, p := range pending {
		args, err := compactArguments(json.RawMessage(p.args.String()))
		if err != nil {
			return nil, fmt.Errorf("%w: %s", err, p.name)
		}
		made++
		id := p.id
		if id == "" {
			id = fmt.Sprintf("call_%d", made)
		}
		out = append(out, ToolCall{ID: id, Name: p.name, Arguments: args})
	}
	return out, nil
}

// compactArguments checks that a call's arguments are a JSON object (empty
// means none: {}) and compacts them.
func compactArguments(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if _, err := argumentsMap(raw); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, errBadArguments
	}
	return buf.Bytes(), nil
}

// openAIMessages converts messages to chat-completions messages.
func openAIMessages(messages []Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	var (
		out  []openai.ChatCompletionMessageParamUnion
		turn bool
	)
	for i, m := range messages {
		switch m.Role {
		case RoleSystem:
			if m.Text != "" {
				out = append(out, openai.SystemMessage(m.Text))
			}
			continue
		case RoleUser:
			if m.Text == "" {
				return nil, fmt.Errorf("message %d (user) has no text", i)
			}
			out = append(out, openai.UserMessage(m.Text))
		case RoleAssistant:
			if m.Text == "" && len(m.ToolCalls) == 0 {
				return nil, fmt.Errorf("message %d (assistant) has neither text nor tool calls", i)
			}
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, tc := range m.ToolCalls {
				args, err := compactArguments(tc.Arguments)
				if err != nil {
					return nil, fmt.Errorf("message %d (assistant), call %s: %w", i, tc.Name, err)
				}
				if tc.ID == "" {
					return nil, fmt.Errorf("message %d (assistant), call %s has no id", i, tc.Name)
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(args)},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			if len(m.ToolResults) == 0 {
				return nil, fmt.Errorf("message %d (tool) has no results", i)
			}
			for j, r := range m.ToolResults {
				content, err := openAIToolContent(r)
				if err != nil {
					return nil, fmt.Errorf("message %d (tool), result %d: %w", i, j, err)
				}
				out = append(out, openai.ToolMessage(content, r.CallID))
			}
		default:
			return nil, fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
		turn = true
	}
	if !turn {
		return nil, errors.New("the request has no user, assistant or tool message")
	}
	return out, nil
}

// openAIToolContent is a tool message's content: the result's JSON, or
// {"error": content} for a failed tool (the API has no error flag).
func openAIToolContent(r ToolResult) (string, error) {
	if r.CallID == "" {
		return "", fmt.Errorf("the result of %s answers no call id", r.Name)
	}
	raw := bytes.TrimSpace(r.Content)
	if len(raw) == 0 {
		raw = []byte("null")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", fmt.Errorf("the result of %s is not JSON", r.Name)
	}
	if !r.IsError {
		return buf.String(), nil
	}
	b, err := json.Marshal(map[string]json.RawMessage{"error": buf.Bytes()})
	if err != nil {
		return "", fmt.Errorf("the result of %s: %w", r.Name, err)
	}
	return string(b), nil
}
