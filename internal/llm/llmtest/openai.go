package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// OpenAI fakes an OpenAI-compatible endpoint (the OpenAI API, Ollama,
// vLLM) at the wire, under the base URL URL()+"/v1":
//
//	GET  /v1/models
//	POST /v1/chat/completions  (response_format text, json_object, json_schema)
//	POST /v1/embeddings        (input: a string or an array of strings)
//
// After SetAPIKey every request must carry the key as a bearer token (401
// otherwise, as OpenAI answers, the message quoting the key it got). With NoJSONSchema the fake refuses
// response_format json_schema with a 400 naming it, as servers without
// structured output do.
type OpenAI struct {
	srv *httptest.Server

	mu           sync.Mutex
	apiKey       string
	noJSONSchema bool
	dimension    int
	chat         func(OpenAIChat) string
	models       []string
	failures     []failure
	requests     []Request
	chats        []OpenAIChat
	counts       map[Endpoint]int
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
}

// OpenAIMessage is one message of a chat request.
type OpenAIMessage struct{ Role, Content string }

// NewOpenAI starts the fake, closed when the test ends. It accepts any key
// (none needed) until SetAPIKey; embeddings have 16 dimensions; chat
// answers `{}`; the model list holds a chat model, an embedding model and
// a speech model.
func NewOpenAI(t testing.TB) *OpenAI {
	t.Helper()
	o := &OpenAI{
		dimension: 16, counts: map[Endpoint]int{},
		models: []string{"llama3.1:8b", "nomic-embed-text", "whisper-1"},
		chat:   func(OpenAIChat) string { return "{}" },
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

// SetModels replaces the model list.
func (o *OpenAI) SetModels(ids ...string) { o.mu.Lock(); o.models = ids; o.mu.Unlock() }

// FailNext makes the next n requests fail with status and, when not empty,
// a Retry-After header.
func (o *OpenAI) FailNext(n, status int, retryAfter string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for range n {
		o.failures = append(o.failures, failure{status: status, retryAfter: retryAfter})
	}
}

// Requests returns a copy of the requests received.
func (o *OpenAI) Requests() []Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Request(nil), o.requests...)
}

// Chats returns the decoded chat requests received (refused ones
// included), in order.
func (o *OpenAI) Chats() []OpenAIChat {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OpenAIChat(nil), o.chats...)
}

// Count is the number of requests received for e.
func (o *OpenAI) Count(e Endpoint) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[e]
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
	o.mu.Lock()
	o.requests = append(o.requests, Request{Endpoint: ep, Method: r.Method, Path: r.URL.Path, Model: model.Model, Header: r.Header.Clone(), Body: body})
	o.counts[ep]++
	key, noSchema, dim, chat, models := o.apiKey, o.noJSONSchema, o.dimension, o.chat, append([]string(nil), o.models...)
	var fail *failure
	if len(o.failures) > 0 {
		fail = &o.failures[0]
		o.failures = o.failures[1:]
	}
	o.mu.Unlock()

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

func (o *OpenAI) completion(w http.ResponseWriter, body []byte, noSchema bool, chat func(OpenAIChat) string) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		ResponseFormat *struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Messages) == 0 {
		openAIError(w, http.StatusBadRequest, "invalid request: model and messages are required", "invalid_request_error", "")
		return
	}
	call := OpenAIChat{Model: req.Model}
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
		call.Messages = append(call.Messages, OpenAIMessage{Role: m.Role, Content: text})
	}
	if rf := req.ResponseFormat; rf != nil {
		call.Format = rf.Type
		if rf.JSONSchema != nil {
			call.Schema, call.Strict = rf.JSONSchema.Schema, rf.JSONSchema.Strict
		}
	}
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
	content := chat(call)
	var prompt int
	for _, m := range call.Messages {
		prompt += WordTokens(m.Content)
	}
	out := WordTokens(content)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": req.Model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": content, "refusal": nil},
		}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
	})
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
