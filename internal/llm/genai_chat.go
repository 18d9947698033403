package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genai"
)

// deltaError is an error returned by ChatRequest.OnDelta: it ends the call
// as it is, not classified as a provider error.
type deltaError struct{ err error }

func (e deltaError) Error() string { return e.err.Error() }

// Chat implements Client with Gemini function calling over
// streamGenerateContent (server-sent events): system messages become the
// system instruction, assistant messages "model" turns with their
// functionCall parts (thought signatures sent back), tool messages "user"
// turns of functionResponse parts (consecutive tool messages in one turn)
// whose response is {"output": content} or {"error": content}. Text parts are passed to OnDelta as they arrive;
// thoughts are left out. Automatic continuation is off: one Chat is one
// request, as the rate governor counts it.
func (c *genaiClient) Chat(ctx context.Context, model string, req ChatRequest) (*ChatResult, error) {
	op := "chat " + model
	if model == "" {
		return nil, c.invalid("chat", "no model given")
	}
	contents, system, err := genaiContents(req.Messages)
	if err != nil {
		return nil, c.invalid(op, err.Error())
	}
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: genai.Ptr(false)}
	if system != "" {
		cfg.SystemInstruction = genai.NewContentFromText(system, genai.RoleUser)
	}
	if err := checkTools(req.Tools); err != nil {
		return nil, c.invalid(op, err.Error())
	}
	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, len(req.Tools))
		for i, t := range req.Tools {
			decls[i] = &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
			if t.Parameters != nil {
				decls[i].ParametersJsonSchema = t.Parameters
			}
		}
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	genaiSampling(cfg, req.Temperature, req.MaxOutputTokens)

	start := c.now()
	cctx, capt := withCapture(ctx)
	res := &ChatResult{Model: model}
	var (
		text  strings.Builder
		usage *genai.GenerateContentResponseUsageMetadata
		last  *genai.GenerateContentResponse
	)
	nextID := callCount(req.Messages)
	_, err = guard(func() (struct{}, error) {
		for chunk, err := range c.client.Models.GenerateContentStream(cctx, model, contents, cfg) {
			if err != nil {
				return struct{}{}, err
			}
			last = chunk
			// Within one request each chunk's usage is the running total.
			if chunk.UsageMetadata != nil {
				usage = chunk.UsageMetadata
			}
			if len(chunk.Candidates) == 0 || chunk.Candidates[0] == nil || chunk.Candidates[0].Content == nil {
				continue
			}
			for _, p := range chunk.Candidates[0].Content.Parts {
				switch {
				case p == nil || p.Thought:
				case p.FunctionCall != nil:
					call, err := toolCallFromGenai(p, &nextID)
					if err != nil {
						return struct{}{}, err
					}
					res.ToolCalls = append(res.ToolCalls, call)
				case p.Text != "":
					text.WriteString(p.Text)
					if req.OnDelta != nil {
						if err := req.OnDelta(p.Text); err != nil {
							return struct{}{}, deltaError{err: err}
						}
					}
				}
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		if de, ok := errors.AsType[deltaError](err); ok {
			return nil, fmt.Errorf("%s %s: %w", c.provider, op, de.err)
		}
		if errors.Is(err, errBadArguments) {
			return nil, c.invalid(op, err.Error())
		}
		return nil, c.classify(ctx, op, capt, err)
	}
	res.Text = text.String()
	if strings.TrimSpace(res.Text) == "" && len(res.ToolCalls) == 0 {
		return nil, c.invalid(op, "empty response"+finishNote(last))
	}
	res.Usage = usageFromMetadata(usage)
	res.Duration = c.now().Sub(start)
	return res, nil
}

// errBadArguments marks a function call whose arguments are not an object.
var errBadArguments = errors.New("tool call arguments are not a JSON object")

// toolCallFromGenai converts a functionCall part; a call without an id gets
// "call_<n>", n counting the conversation's calls.
func toolCallFromGenai(p *genai.Part, next *int) (ToolCall, error) {
	fc := p.FunctionCall
	args := fc.Args
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return ToolCall{}, fmt.Errorf("%w: %s: %w", errBadArguments, fc.Name, err)
	}
	*next++
	id := fc.ID
	if id == "" {
		id = fmt.Sprintf("call_%d", *next)
	}
	return ToolCall{ID: id, Name: fc.Name, Arguments: b, Signature: p.ThoughtSignature}, nil
}

// callCount is the number of tool calls in messages.
func callCount(messages []Message) int {
	n := 0
	for _, m := range messages {
		n += len(m.ToolCalls)
	}
	return n
}

// checkTools refuses tools without a name and duplicate names.
func checkTools(tools []Tool) error {
	seen := map[string]bool{}
	for i, t := range tools {
		if strings.TrimSpace(t.Name) == "" {
			return fmt.Errorf("tool %d has no name", i)
		}
		if seen[t.Name] {
			return fmt.Errorf("tool %q is declared twice", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// genaiContents converts messages to Gemini contents and the system
// instruction.
func genaiContents(messages []Message) ([]*genai.Content, string, error) {
	var (
		system   []string
		contents []*genai.Content
	)
	for i, m := range messages {
		switch m.Role {
		case RoleSystem:
			if m.Text != "" {
				system = append(system, m.Text)
			}
		case RoleUser:
			if m.Text == "" {
				return nil, "", fmt.Errorf("message %d (user) has no text", i)
			}
			contents = append(contents, genai.NewContentFromText(m.Text, genai.RoleUser))
		case RoleAssistant:
			var parts []*genai.Part
			if m.Text != "" {
				parts = append(parts, genai.NewPartFromText(m.Text))
			}
			for _, tc := range m.ToolCalls {
				args, err := argumentsMap(tc.Arguments)
				if err != nil {
					return nil, "", fmt.Errorf("message %d (assistant), call %s: %w", i, tc.Name, err)
				}
				parts = append(parts, &genai.Part{
					FunctionCall:     &genai.FunctionCall{ID: tc.ID, Name: tc.Name, Args: args},
					ThoughtSignature: tc.Signature,
				})
			}
			if len(parts) == 0 {
				return nil, "", fmt.Errorf("message %d (assistant) has neither text nor tool calls", i)
			}
			contents = append(contents, genai.NewContentFromParts(parts, genai.RoleModel))
		case RoleTool:
			if len(m.ToolResults) == 0 {
				return nil, "", fmt.Errorf("message %d (tool) has no results", i)
			}
			parts := make([]*genai.Part, len(m.ToolResults))
			for j, r := range m.ToolResults {
				if r.Name == "" {
					return nil, "", fmt.Errorf("message %d (tool), result %d names no tool", i, j)
				}
				var v any
				if len(r.Content) > 0 {
					if err := json.Unmarshal(r.Content, &v); err != nil {
						return nil, "", fmt.Errorf("message %d (tool), result of %s is not JSON", i, r.Name)
					}
				}
				key := "output"
				if r.IsError {
					key = "error"
				}
				parts[j] = &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: r.CallID, Name: r.Name, Response: map[string]any{key: v}}}
			}
			// Consecutive tool messages are one turn: Gemini wants as many
			// functionResponse parts as the model turn had calls.
			if i > 0 && messages[i-1].Role == RoleTool {
				prev := contents[len(contents)-1]
				prev.Parts = append(prev.Parts, parts...)
				continue
			}
			contents = append(contents, genai.NewContentFromParts(parts, genai.RoleUser))
		default:
			return nil, "", fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
	}
	if len(contents) == 0 {
		return nil, "", errors.New("the request has no user, assistant or tool message")
	}
	return contents, strings.Join(system, "\n\n"), nil
}

// argumentsMap decodes a call's arguments, which must be a JSON object
// (empty means none).
func argumentsMap(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errBadArguments
	}
	return m, nil
}
