// Package llmtest fakes the Gemini API and Vertex AI at the wire, for tests
// of the llm clients and of the code built on them. NewGemini and NewVertex
// start an httptest server speaking the REST format google.golang.org/genai
// uses: generateContent with usage metadata, batched embeddings
// (batchEmbedContents, predict, embedContent), the model list and, for
// Vertex AI, the OAuth token endpoint of the service-account JWT-bearer
// exchange. Fakes check credentials as the real services do, can be told to
// fail the next requests or to answer malformed JSON, and record every
// request. They are safe for concurrent use.
package llmtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Endpoint classifies the requests a fake serves.
type Endpoint string

// The endpoints.
const (
	EndpointGenerate Endpoint = "generate" // :generateContent
	EndpointEmbed    Endpoint = "embed"    // :batchEmbedContents, :predict, :embedContent
	EndpointModels   Endpoint = "models"   // the model list
	EndpointStream   Endpoint = "stream"   // :streamGenerateContent (alt=sse)
	EndpointToken    Endpoint = "token"    // the OAuth token endpoint (Vertex AI)
	EndpointUnknown  Endpoint = "unknown"
)

// Request is a request a fake received.
type Request struct {
	Endpoint     Endpoint
	Method, Path string
	// Model is the model of the URL, without prefix ("gemini-2.5-flash").
	Model  string
	Header http.Header
	Body   []byte
}

// GenerateCall is a decoded generateContent request, handed to the
// function set with SetGenerate.
type GenerateCall struct {
	Model    string
	System   string
	Parts    []string        // the text parts of the contents, in order
	Schema   json.RawMessage // generationConfig.responseJsonSchema
	MIMEType string
	// Temperature and MaxOutputTokens are nil / 0 when not sent.
	Temperature     *float64
	MaxOutputTokens int
}

// Usage is the usage metadata a fake reports for a generateContent call.
type Usage struct {
	PromptText, PromptImage, PromptVideo, PromptAudio int
	Candidates, Thoughts                              int
}

// Model is an entry of a fake's model list. Actions are the Gemini API's
// supportedGenerationMethods (Vertex AI's publisher list has none).
type Model struct {
	Name, DisplayName                 string
	Actions                           []string
	InputTokenLimit, OutputTokenLimit int
}

// DimensionDefault is the vector length of fake embeddings when the
// request gives no outputDimensionality.
const DimensionDefault = 768

// modelsPageSize is the page size of the fake model lists, small so that
// clients must follow nextPageToken.
const modelsPageSize = 2

type failure struct {
	status     int
	retryAfter string
	body       string
	only       Endpoint // "" fails a request to any endpoint
}

// Fake is the state and behaviour shared by the Gemini and Vertex fakes.
type Fake struct {
	srv   *httptest.Server
	route func(w http.ResponseWriter, r *http.Request) // the backend's

	mu         sync.Mutex
	failures   []failure
	malformed  bool
	generate   func(GenerateCall) string
	stream     func(StreamCall) []Part
	streamFail *streamFailure
	usage      *Usage
	models     []Model
	requestLog
}

func newFake(t testing.TB) *Fake {
	t.Helper()
	f := &Fake{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.dispatch))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the base URL to give the client (genai's HTTPOptions.BaseURL).
func (f *Fake) URL() string { return f.srv.URL }

// Client returns an http.Client for the fake; its idle connections are
// closed when the test ends.
func (f *Fake) Client() *http.Client { return f.srv.Client() }

// FailNext makes the next n API requests (not token requests) fail with
// status, a Retry-After header when retryAfter is not empty (seconds or an
// HTTP-date), and body (a Google error JSON for status when empty; see
// ErrorBody).
func (f *Fake) FailNext(n, status int, retryAfter, body string) {
	if body == "" {
		body = ErrorBody(status, http.StatusText(status), "")
	}
	f.failNext("", n, failure{status: status, retryAfter: retryAfter, body: body})
}

// FailNextOn is FailNext for requests to endpoint e only (the status's
// Google error body, no Retry-After): other requests, such as a catalog
// refresh running meanwhile, go through.
func (f *Fake) FailNextOn(e Endpoint, n, status int) {
	f.FailNextOnWith(e, n, status, http.StatusText(status))
}

// FailNextOnWith is FailNextOn with the error's message.
func (f *Fake) FailNextOnWith(e Endpoint, n, status int, message string) {
	f.failNext(e, n, failure{status: status, body: ErrorBody(status, message, "")})
}

func (f *Fake) failNext(e Endpoint, n int, fl failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl.only = e
	for range n {
		f.failures = append(f.failures, fl)
	}
}

// SetMalformed makes API requests succeed with a body that is not valid
// JSON, until called with false.
func (f *Fake) SetMalformed(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.malformed = on
}

// SetGenerate sets the text of the generateContent candidate as a
// function of the request. The default answers `{}`.
func (f *Fake) SetGenerate(fn func(GenerateCall) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.generate = fn
}

// SetUsage fixes the usage metadata of generateContent responses. By
// default the prompt counts WordTokens of the system instruction and parts
// as text and the candidates count WordTokens of the answer.
func (f *Fake) SetUsage(u Usage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usage = &u
}

// SetModels replaces the model list.
func (f *Fake) SetModels(ms []Model) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.models = append([]Model(nil), ms...)
}

// requestLog is the record of the requests a fake received, shared by
// every fake of the package.
type requestLog struct {
	mu       sync.Mutex
	requests []Request
	counts   map[Endpoint]int
}

func (l *requestLog) add(req Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[Endpoint]int{}
	}
	l.requests = append(l.requests, req)
	l.counts[req.Endpoint]++
}

// Requests returns the requests received so far, in order.
func (l *requestLog) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.requests...)
}

// Count returns how many requests of an endpoint were received, failed
// ones included.
func (l *requestLog) Count(e Endpoint) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[e]
}

// record stores a request, reading its body.
func (f *Fake) record(r *http.Request, e Endpoint, model string) (*Request, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	req := Request{Endpoint: e, Method: r.Method, Path: r.URL.Path, Model: model, Header: r.Header.Clone(), Body: body}
	f.add(req)
	return &req, nil
}

// nextFailure pops the first programmed failure for a request to e.
func (f *Fake) nextFailure(e Endpoint) (failure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, fl := range f.failures {
		if fl.only == "" || fl.only == e {
			f.failures = append(f.failures[:i:i], f.failures[i+1:]...)
			return fl, true
		}
	}
	return failure{}, false
}

func (f *Fake) isMalformed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.malformed
}

// dispatch hands a request to the backend's router.
func (f *Fake) dispatch(w http.ResponseWriter, r *http.Request) {
	f.route(w, r)
}

// serveFailure answers the next programmed failure, if any, and says
// whether it did.
func (f *Fake) serveFailure(w http.ResponseWriter, e Endpoint) bool {
	fl, ok := f.nextFailure(e)
	if !ok {
		return false
	}
	if fl.retryAfter != "" {
		w.Header().Set("Retry-After", fl.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(fl.status)
	_, _ = io.WriteString(w, fl.body)
	return true
}

// api runs the shared steps of an API request after authentication:
// programmed failures, malformed mode, then handle.
func (f *Fake) api(w http.ResponseWriter, e Endpoint, handle func() (any, int)) {
	if f.serveFailure(w, e) {
		return
	}
	if f.isMalformed() {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"candidates": [{"content": {"parts": [{"text": "`)
		return
	}
	v, status := handle()
	writeJSON(w, status, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers a Google error JSON.
func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, ErrorBody(status, message, ""))
}

// rpcStatus is the google.rpc.Code name Google APIs give with an HTTP
// status.
func rpcStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	default:
		if status >= 500 {
			return "INTERNAL"
		}
		return "UNKNOWN"
	}
}

// ErrorBody is a Google API error body: {"error": {code, message, status,
// details}}, with a google.rpc.RetryInfo detail when retryDelay (a JSON
// duration such as "30s") is not empty.
func ErrorBody(status int, message, retryDelay string) string {
	e := map[string]any{"code": status, "message": message, "status": rpcStatus(status)}
	if retryDelay != "" {
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retryDelay}}
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return string(b)
}

// errorBodyWithReason is an error body with a google.rpc.ErrorInfo detail.
func errorBodyWithReason(status int, message, reason, domain string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": status, "message": message, "status": rpcStatus(status),
		"details": []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": domain}},
	}})
	return string(b)
}

// WordTokens is the token count the fakes report for a text: its number
// of whitespace-separated words (deliberately unlike the clients'
// character-based estimate, so tests can tell reported counts from
// estimates).
func WordTokens(s string) int { return len(strings.Fields(s)) }

// Vector is the deterministic, L2-normalised embedding the fakes return
// for text at dimension dim (DimensionDefault when dim <= 0).
func Vector(text string, dim int) []float32 {
	if dim <= 0 {
		dim = DimensionDefault
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	state := h.Sum64() | 1
	v := make([]float32, dim)
	var norm float64
	for i := range v {
		// xorshift64*
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		x := float64(state*2685821657736338717>>11)/float64(1<<53)*2 - 1
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// generateRequest is the part of a generateContent body the fakes read.
type generateRequest struct {
	Contents []struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"contents"`
	SystemInstruction *Content `json:"systemInstruction"`
	GenerationConfig  struct {
		ResponseMIMEType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		Temperature        *float64        `json:"temperature"`
		MaxOutputTokens    int             `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

// generateResponse answers a generateContent request body.
func (f *Fake) generateResponse(model string, body []byte) (any, int) {
	var gr generateRequest
	if err := json.Unmarshal(body, &gr); err != nil {
		return errorObject(http.StatusBadRequest, "Invalid JSON payload received. "+err.Error()), http.StatusBadRequest
	}
	call := GenerateCall{
		Model:           model,
		Schema:          gr.GenerationConfig.ResponseJSONSchema,
		MIMEType:        gr.GenerationConfig.ResponseMIMEType,
		Temperature:     gr.GenerationConfig.Temperature,
		MaxOutputTokens: gr.GenerationConfig.MaxOutputTokens,
		System:          gr.SystemInstruction.text(),
	}
	for _, c := range gr.Contents {
		for _, p := range c.Parts {
			call.Parts = append(call.Parts, p.Text)
		}
	}
	if len(call.Parts) == 0 {
		return errorObject(http.StatusBadRequest, "contents is not specified"), http.StatusBadRequest
	}
	f.mu.Lock()
	fn, fixed := f.generate, f.usage
	f.mu.Unlock()
	text := "{}"
	if fn != nil {
		text = fn(call)
	}
	u := Usage{PromptText: WordTokens(call.System) + WordTokens(strings.Join(call.Parts, " ")), Candidates: WordTokens(text)}
	if fixed != nil {
		u = *fixed
	}
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": usageMetadata(u),
		"modelVersion":  model,
		"responseId":    "fake-" + strconv.Itoa(f.Count(EndpointGenerate)),
	}, http.StatusOK
}

// usageMetadata is the usageMetadata object of a response reporting u.
func usageMetadata(u Usage) map[string]any {
	details := []map[string]any{}
	for _, d := range []struct {
		modality string
		n        int
	}{{"TEXT", u.PromptText}, {"IMAGE", u.PromptImage}, {"VIDEO", u.PromptVideo}, {"AUDIO", u.PromptAudio}} {
		if d.n > 0 {
			details = append(details, map[string]any{"modality": d.modality, "tokenCount": d.n})
		}
	}
	prompt := u.PromptText + u.PromptImage + u.PromptVideo + u.PromptAudio
	usage := map[string]any{
		"promptTokenCount":     prompt,
		"candidatesTokenCount": u.Candidates,
		"totalTokenCount":      prompt + u.Candidates + u.Thoughts,
		"promptTokensDetails":  details,
	}
	if u.Thoughts > 0 {
		usage["thoughtsTokenCount"] = u.Thoughts
	}
	return usage
}

func errorObject(status int, message string) map[string]any {
	return map[string]any{"error": map[string]any{"code": status, "message": message, "status": rpcStatus(status)}}
}

// modelsPage returns a page of the model list, as encoded by enc.
func (f *Fake) modelsPage(token string, enc func(Model) map[string]any, field string) (any, int) {
	f.mu.Lock()
	ms := append([]Model(nil), f.models...)
	f.mu.Unlock()
	start := 0
	if token != "" {
		n, err := strconv.Atoi(token)
		if err != nil || n < 0 || n > len(ms) {
			return errorObject(http.StatusBadRequest, "Invalid page token."), http.StatusBadRequest
		}
		start = n
	}
	end := min(start+modelsPageSize, len(ms))
	list := []any{}
	for _, m := range ms[start:end] {
		list = append(list, enc(m))
	}
	out := map[string]any{field: list}
	if end < len(ms) {
		out["nextPageToken"] = strconv.Itoa(end)
	}
	return out, http.StatusOK
}

// badRequest is a helper for 400 answers.
func badRequest(format string, args ...any) (any, int) {
	return errorObject(http.StatusBadRequest, fmt.Sprintf(format, args...)), http.StatusBadRequest
}
