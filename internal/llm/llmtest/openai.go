package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// OpenAI fakes an OpenAI-compatible endpoint (the OpenAI API, Ollama,
// vLLM) at the wire, under the base URL URL()+"/v1":
//
//	GET  /v1/models
//	POST /v1/chat/completions  (response_format text, json_object, json_schema;
//	                            stream true: server-sent chunks, tool calls)
//	POST /v1/embeddings        (input: a string or an array of strings)
//
// After SetAPIKey every request must carry the key as a bearer token (401
// otherwise, as OpenAI answers, the message quoting the key it got). With NoJSONSchema the fake refuses
// response_format json_schema with a 400 naming it, as servers without
// structured output do.
type OpenAI struct {
	srv *httptest.Server
	requestLog

	mu           sync.Mutex
	apiKey       string
	noJSONSchema bool
	dimension    int
	chat         func(OpenAIChat) string
	stream       func(OpenAIChat) []OpenAIDelta
	streamFail   *openAIStreamFailure
	malformed    bool
	models       []string
	failures     []failure
	chats        []OpenAIChat
	rpm          int           // chat completions per sliding minute (0: unlimited)
	delay        time.Duration // before answering a chat completion
	accepted     []time.Time   // arrivals of the chat completions let through in the last minute
	limited      int           // chat completions refused with 429
}

// OpenAIChat is a decoded chat completion request.
type OpenAIChat struct {
	Model string
	// Messages are the role and text of each message, in order.
	Messages []OpenAIMessage
	// Format is response_format.type ("" when not sent); Schema its
	// json_schema.schema and Strict its json_schema.strict.
	Format string
	Schema json.RawMessage
	Strict bool
	// Tools are the function tools declared, in order.
	Tools []OpenAITool
	// Stream and IncludeUsage are stream and stream_options.include_usage.
	Stream, IncludeUsage bool
	// Temperature is nil when not sent; MaxTokens and MaxCompletionTokens
	// 0.
	Temperature                    *float64
	MaxTokens, MaxCompletionTokens int
}

// OpenAIMessage is one message of a chat request: its role and text, an
// assistant message's tool_calls, a tool message's tool_call_id.
type OpenAIMessage struct {
	Role, Content string
	ToolCalls     []OpenAICall
	ToolCallID    string
}

// OpenAICall is a function tool call: in a request's assistant message,
// or one a streamed answer makes (an empty ID is sent as none).
type OpenAICall struct {
	ID, Name string
	// Arguments is the JSON text of the arguments, as on the wire.
	Arguments string
}

// OpenAITool is a function tool of a request.
type OpenAITool struct {
	Type, Name, Description string
	Parameters              json.RawMessage
}

// OpenAIDelta is one piece of a streamed answer: text content, or a tool
// call (streamed as a first delta with its id and name, then its
// arguments in fragments).
type OpenAIDelta struct {
	Content string
	Call    *OpenAICall
}

type openAIStreamFailure struct {
	after   int
	message string
}

// NewOpenAI starts the fake, closed when the test ends. It accepts any key
// (none needed) until SetAPIKey; embeddings have 16 dimensions; chat
// answers `{}`; the model list holds a chat model, an embedding model and
// a speech model.
func NewOpenAI(t testing.TB) *OpenAI {
	t.Helper()
	o := &OpenAI{
		dimension: 16,
		models:    []string{"llama3.1:8b", "nomic-embed-text", "whisper-1"},
		chat:      func(OpenAIChat) string { return "{}" },
	}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.srv.Close)
	return o
}

// URL is the base URL to configure (it ends in /v1).
func (o *OpenAI) URL() string { return o.srv.URL + "/v1" }

// SetAPIKey makes the fake require key as the bearer token.
func (o *OpenAI) SetAPIKey(key string) { o.mu.Lock(); o.apiKey = key; o.mu.Unlock() }

// SetNoJSONSchema makes the fake refuse response_format json_schema.
func (o *OpenAI) SetNoJSONSchema(on bool) { o.mu.Lock(); o.noJSONSchema = on; o.mu.Unlock() }

// SetChat sets the answer's content as a function of the request.
func (o *OpenAI) SetChat(fn func(OpenAIChat) string) { o.mu.Lock(); o.chat = fn; o.mu.Unlock() }

// SetChatStream sets a streamed answer's deltas as a function of the
// request. Without it a streamed answer is SetChat's content in one delta.
func (o *OpenAI) SetChatStream(fn func(OpenAIChat) []OpenAIDelta) {
	o.mu.Lock()
	o.stream = fn
	o.mu.Unlock()
}

// FailStreamAfter makes the next streamed answer send an error event (as
// OpenAI does: {"error": {"message": ..., "code": null}}) after n deltas,
// and end there.
func (o *OpenAI) FailStreamAfter(n int, message string) {
	o.mu.Lock()
	o.streamFail = &openAIStreamFailure{after: n, message: message}
	o.mu.Unlock()
}

// SetMalformed makes streamed answers send a truncated chunk.
func (o *OpenAI) SetMalformed(on bool) { o.mu.Lock(); o.malformed = on; o.mu.Unlock() }

// SetModels replaces the model list.
func (o *OpenAI) SetModels(ids ...string) { o.mu.Lock(); o.models = ids; o.mu.Unlock() }

// SetRateLimit makes the fake allow rpm chat completions in any sliding
// minute, as a provider's requests-per-minute limit: one more is refused
// with 429 and a Retry-After (whole seconds until the oldest leaves the
// minute) and does not count. Each one let through is answered after
// delay. Zero rpm: unlimited.
func (o *OpenAI) SetRateLimit(rpm int, delay time.Duration) {
	o.mu.Lock()
	o.rpm, o.delay = rpm, delay
	o.mu.Unlock()
}

// RateLimited is the number of chat completions refused by SetRateLimit.
func (o *OpenAI) RateLimited() int { o.mu.Lock(); defer o.mu.Unlock(); return o.limited }

// admit applies SetRateLimit to a chat completion arriving at now (o.mu
// held): the Retry-After to answer, "" when it goes through.
func (o *OpenAI) admit(now time.Time) string {
	if o.rpm <= 0 {
		return ""
	}
	i := 0
	for i < len(o.accepted) && now.Sub(o.accepted[i]) >= time.Minute {
		i++
	}
	o.accepted = o.accepted[i:]
	if len(o.accepted) < o.rpm {
		o.accepted = append(o.accepted, now)
		return ""
	}
	o.limited++
	wait := o.accepted[len(o.accepted)-o.rpm].Add(time.Minute).Sub(now)
	return strconv.Itoa(int((wait + time.Second - 1) / time.Second))
}

// FailNext makes the next n requests fail with status and, when not empty,
// a Retry-After header.
func (o *OpenAI) FailNext(n, status int, retryAfter string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for range n {
		o.failures = append(o.failures, failure{status: status, retryAfter: retryAfter})
	}
}

// Chats returns the decoded chat requests received (refused ones
// included), in order.
func (o *OpenAI) Chats() []OpenAIChat {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OpenAIChat(nil), o.chats...)
}

func openAIError(w http.ResponseWriter, status int, message, typ, param string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": typ, "param": param, "code": nil}})
}

func (o *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ep := EndpointUnknown
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		ep = EndpointModels
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		ep = EndpointGenerate
	case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
		ep = EndpointEmbed
	}
	var model struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &model)
	o.add(Request{Endpoint: ep, Method: r.Method, Path: r.URL.Path, Model: model.Model, Header: r.Header.Clone(), Body: body})
	o.mu.Lock()
	key, noSchema, dim, chat, models := o.apiKey, o.noJSONSchema, o.dimension, o.chat, append([]string(nil), o.models...)
	var fail *failure
	if len(o.failures) > 0 {
		fail = &o.failures[0]
		o.failures = o.failures[1:]
	}
	var delay time.Duration
	if fail == nil && ep == EndpointGenerate {
		if ra := o.admit(time.Now()); ra != "" {
			fail = &failure{status: http.StatusTooManyRequests, retryAfter: ra}
		} else {
			delay = o.delay
		}
	}
	o.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}

	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		// Echoes the key it got, as a careless server might: clients must
		// keep it out of their errors.
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		openAIError(w, http.StatusUnauthorized, "Incorrect API key provided: "+got+".", "invalid_request_error", "")
		return
	}
	if fail != nil {
		if fail.retryAfter != "" {
			w.Header().Set("Retry-After", fail.retryAfter)
		}
		typ := "server_error"
		if fail.status == http.StatusTooManyRequests {
			typ = "rate_limit_exceeded"
		}
		openAIError(w, fail.status, http.StatusText(fail.status), typ, "")
		return
	}
	switch ep {
	case EndpointModels:
		data := make([]map[string]any, len(models))
		for i, id := range models {
			data[i] = map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "library"}
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	case EndpointGenerate:
		o.completion(w, body, noSchema, chat)
	case EndpointEmbed:
		o.embeddings(w, body, dim)
	default:
		openAIError(w, http.StatusNotFound, "unknown path "+r.URL.Path, "invalid_request_error", "")
	}
}

// openAIChatRequest is the part of a chat completion body the fake reads.
type openAIChatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature         *float64 `json:"temperature"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
}

// decode is the request as handed to SetChat and SetChatStream.
func (req *openAIChatRequest) decode() OpenAIChat {
	call := OpenAIChat{
		Model: req.Model, Stream: req.Stream, IncludeUsage: req.StreamOptions.IncludeUsage,
		Temperature: req.Temperature, MaxTokens: req.MaxTokens, MaxCompletionTokens: req.MaxCompletionTokens,
	}
	for _, m := range req.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			var parts []struct {
				Type, Text string
			}
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				text += p.Text
			}
		}
		msg := OpenAIMessage{Role: m.Role, Content: text, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, OpenAICall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		call.Messages = append(call.Messages, msg)
	}
	if rf := req.ResponseFormat; rf != nil {
		call.Format = rf.Type
		if rf.JSONSchema != nil {
			call.Schema, call.Strict = rf.JSONSchema.Schema, rf.JSONSchema.Strict
		}
	}
	for _, t := range req.Tools {
		call.Tools = append(call.Tools, OpenAITool{
			Type: t.Type, Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters,
		})
	}
	return call
}

// promptTokens counts the words of a request's messages, calls included.
func (c OpenAIChat) promptTokens() int {
	n := 0
	for _, m := range c.Messages {
		n += WordTokens(m.Content)
		for _, tc := range m.ToolCalls {
			n += WordTokens(tc.Name + " " + tc.Arguments)
		}
	}
	return n
}

func (o *OpenAI) completion(w http.ResponseWriter, body []byte, noSchema bool, chat func(OpenAIChat) string) {
	var req openAIChatRequest
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Messages) == 0 {
		openAIError(w, http.StatusBadRequest, "invalid request: model and messages are required", "invalid_request_error", "")
		return
	}
	call := req.decode()
	o.mu.Lock()
	o.chats = append(o.chats, call)
	o.mu.Unlock()
	if rf := req.ResponseFormat; rf != nil {
		if rf.Type == "json_schema" {
			if noSchema {
				openAIError(w, http.StatusBadRequest, "response_format type json_schema is not supported by this server", "invalid_request_error", "response_format")
				return
			}
			if rf.JSONSchema == nil || rf.JSONSchema.Name == "" || len(rf.JSONSchema.Schema) == 0 {
				openAIError(w, http.StatusBadRequest, "response_format.json_schema needs a name and a schema", "invalid_request_error", "response_format")
				return
			}
		}
	}
	for i, m := range call.Messages {
		if m.Role == "tool" && m.ToolCallID == "" {
			openAIError(w, http.StatusBadRequest, fmt.Sprintf("messages[%d].tool_call_id is required", i), "invalid_request_error", "messages")
			return
		}
	}
	if call.Stream {
		o.streamCompletion(w, call, chat)
		return
	}
	content := chat(call)
	prompt, out := call.promptTokens(), WordTokens(content)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": req.Model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": content, "refusal": nil},
		}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
	})
}

// openAIArgumentsFragment is the size of the pieces a call's arguments are
// streamed in.
const openAIArgumentsFragment = 8

// streamCompletion answers a streamed chat completion as OpenAI does:
// text/event-stream of "data: <chunk JSON>" events, the first chunk
// carrying the role, content deltas, each tool call as a delta with its
// index, id, type and name and then deltas of argument fragments, a last
// chunk with the finish reason, with include_usage a chunk with no
// choices and the usage (the other chunks' usage is null), and
// "data: [DONE]".
func (o *OpenAI) streamCompletion(w http.ResponseWriter, call OpenAIChat, chat func(OpenAIChat) string) {
	o.mu.Lock()
	fn, fail, malformed := o.stream, o.streamFail, o.malformed
	o.streamFail = nil
	o.mu.Unlock()
	deltas := []OpenAIDelta{{Content: chat(call)}}
	if fn != nil {
		deltas = fn(call)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if malformed {
		_, _ = io.WriteString(w, "data: {\"id\": \"chatcmpl-fake\", \"choices\": [{\"delta\": \n\n")
		return
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000, "model": call.Model,
			"system_fingerprint": nil, "usage": nil,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
	}
	failNow := func() {
		send(map[string]any{"error": map[string]any{"message": fail.message, "type": "server_error", "param": nil, "code": nil}})
	}
	send(chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	out, calls := 0, 0
	for i, d := range deltas {
		if fail != nil && i == fail.after {
			failNow()
			return
		}
		if d.Call == nil {
			out += WordTokens(d.Content)
			send(chunk(map[string]any{"content": d.Content}, nil))
			continue
		}
		out += WordTokens(d.Call.Name + " " + d.Call.Arguments)
		head := map[string]any{"index": calls, "type": "function", "function": map[string]any{"name": d.Call.Name, "arguments": ""}}
		if d.Call.ID != "" {
			head["id"] = d.Call.ID
		}
		send(chunk(map[string]any{"tool_calls": []any{head}}, nil))
		for args := d.Call.Arguments; args != ""; {
			n := min(openAIArgumentsFragment, len(args))
			send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": calls, "function": map[string]any{"arguments": args[:n]}}}}, nil))
			args = args[n:]
		}
		calls++
	}
	if fail != nil && fail.after >= len(deltas) {
		failNow()
		return
	}
	finish := "stop"
	if calls > 0 {
		finish = "tool_calls"
	}
	send(chunk(map[string]any{}, finish))
	if call.IncludeUsage {
		prompt := call.promptTokens()
		send(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000, "model": call.Model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
		})
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

func (o *OpenAI) embeddings(w http.ResponseWriter, body []byte, dim int) {
	var req struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Dimensions int             `json:"dimensions"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" {
		openAIError(w, http.StatusBadRequest, "invalid request: model and input are required", "invalid_request_error", "")
		return
	}
	var inputs []string
	if json.Unmarshal(req.Input, &inputs) != nil {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			openAIError(w, http.StatusBadRequest, "input must be a string or an array of strings", "invalid_request_error", "input")
			return
		}
		inputs = []string{one}
	}
	if req.Dimensions > 0 {
		dim = req.Dimensions
	}
	data := make([]map[string]any, len(inputs))
	tokens := 0
	for i, in := range inputs {
		if strings.TrimSpace(in) == "" {
			openAIError(w, http.StatusBadRequest, "input must not be empty", "invalid_request_error", "input")
			return
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": Vector(in, dim)}
		tokens += WordTokens(in)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}
