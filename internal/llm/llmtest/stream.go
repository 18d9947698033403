package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// StreamCall is a decoded streamGenerateContent request, handed to the
// function set with SetStream.
type StreamCall struct {
	Model    string
	System   string
	Contents []Content
	// Tools are the function declarations of the request, in order.
	Tools []FunctionDeclaration
	// Temperature and MaxOutputTokens are nil / 0 when not sent.
	Temperature     *float64
	MaxOutputTokens int
}

// Content is one turn of a request, in the Gemini wire format.
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is a part of a content, in the Gemini wire format. A fake streams
// each Part SetStream returns as one server-sent event.
type Part struct {
	Text    string `json:"text,omitempty"`
	Thought bool   `json:"thought,omitempty"`
	// ThoughtSignature is base64, as on the wire.
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// text joins the text parts of c (nil: none) by newlines.
func (c *Content) text() string {
	if c == nil {
		return ""
	}
	parts := make([]string, len(c.Parts))
	for i, p := range c.Parts {
		parts[i] = p.Text
	}
	return strings.Join(parts, "\n")
}

// FunctionCall is a functionCall part.
type FunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// FunctionResponse is a functionResponse part.
type FunctionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

// FunctionDeclaration is a tool's declaration in a request.
type FunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

// streamRequest is the part of a streamGenerateContent body the fakes read.
type streamRequest struct {
	Contents          []Content `json:"contents"`
	SystemInstruction *Content  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		Temperature     *float64 `json:"temperature"`
		MaxOutputTokens int      `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

// SetStream sets the parts streamGenerateContent answers, one server-sent
// event each, as a function of the request. The default answers one text
// part, "ok".
func (f *Fake) SetStream(fn func(StreamCall) []Part) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stream = fn
}

// FailStreamAfter makes the next streamGenerateContent response send an
// error event (a Google error JSON with status and message) after n
// parts, and end there.
func (f *Fake) FailStreamAfter(n, status int, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streamFail = &streamFailure{after: n, status: status, message: message}
}

type streamFailure struct {
	after, status int
	message       string
}

// serveStream answers a streamGenerateContent request as the real API
// does with alt=sse: text/event-stream, one "data: <response JSON>" event
// per chunk separated by CRLF CRLF, each chunk carrying the usage so far
// (the prompt's counts; the candidates' in the last one, with finishReason
// STOP).
func (f *Fake) serveStream(w http.ResponseWriter, r *http.Request, model string, body []byte) {
	if r.URL.Query().Get("alt") != "sse" {
		writeError(w, http.StatusBadRequest, "streamGenerateContent without alt=sse is not faked")
		return
	}
	if f.serveFailure(w, EndpointStream) {
		return
	}
	var sr streamRequest
	if err := json.Unmarshal(body, &sr); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
		return
	}
	if len(sr.Contents) == 0 {
		writeError(w, http.StatusBadRequest, "contents is not specified")
		return
	}
	call := StreamCall{
		Model: model, Contents: sr.Contents,
		Temperature: sr.GenerationConfig.Temperature, MaxOutputTokens: sr.GenerationConfig.MaxOutputTokens,
		System: sr.SystemInstruction.text(),
	}
	for _, t := range sr.Tools {
		call.Tools = append(call.Tools, t.FunctionDeclarations...)
	}
	f.mu.Lock()
	fn, fixed, fail, malformed := f.stream, f.usage, f.streamFail, f.malformed
	f.streamFail = nil
	f.mu.Unlock()
	parts := []Part{{Text: "ok"}}
	if fn != nil {
		parts = fn(call)
	}
	u := Usage{PromptText: WordTokens(call.System) + partsWords(sr.Contents)}
	for _, p := range parts {
		u.Candidates += WordTokens(p.Text) + WordTokens(p.callText())
	}
	if fixed != nil {
		u = *fixed
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	if malformed {
		_, _ = io.WriteString(w, "data: {\"candidates\": [{\"content\": \r\n\r\n")
		return
	}
	id := "fake-stream-" + strconv.Itoa(f.Count(EndpointStream))
	for i, p := range parts {
		if fail != nil && i == fail.after {
			_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", ErrorBody(fail.status, fail.message, ""))
			return
		}
		last := i == len(parts)-1
		running := u
		if !last {
			running.Candidates, running.Thoughts = 0, 0
		}
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": []Part{p}}, "index": 0}
		if last {
			cand["finishReason"] = "STOP"
		}
		b, _ := json.Marshal(map[string]any{
			"candidates": []any{cand}, "usageMetadata": usageMetadata(running), "modelVersion": model, "responseId": id,
		})
		_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		flush()
	}
	if fail != nil && fail.after >= len(parts) {
		_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", ErrorBody(fail.status, fail.message, ""))
	}
}

// callText is the text of a part's function call or response, for word
// counts.
func (p Part) callText() string {
	var v any
	switch {
	case p.FunctionCall != nil:
		v = p.FunctionCall
	case p.FunctionResponse != nil:
		v = p.FunctionResponse
	default:
		return ""
	}
	b, _ := json.Marshal(v)
	return strings.NewReplacer(`"`, " ", ":", " ", ",", " ", "{", " ", "}", " ").Replace(string(b))
}

// partsWords counts the words of contents: texts, calls and responses.
func partsWords(cs []Content) int {
	n := 0
	for _, c := range cs {
		for _, p := range c.Parts {
			n += WordTokens(p.Text) + WordTokens(p.callText())
		}
	}
	return n
}
