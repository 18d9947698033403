package llmtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// geminiEmbedBatchMax is the Gemini API's batchEmbedContents limit.
const geminiEmbedBatchMax = 100

// Gemini fakes the Gemini API (generativelanguage.googleapis.com, API
// version v1beta):
//
//	GET  /v1beta/models
//	POST /v1beta/models/{model}:generateContent
//	POST /v1beta/models/{model}:streamGenerateContent?alt=sse
//	POST /v1beta/models/{model}:batchEmbedContents
//
// Every request must carry the API key in x-goog-api-key; a wrong or
// missing key is answered as the real API does, 400 INVALID_ARGUMENT with
// reason API_KEY_INVALID.
type Gemini struct {
	*Fake
	APIKey string
}

// NewGemini starts a Gemini API fake accepting apiKey, closed when the test
// ends. Its model list holds two Gemini models, two embedding models and
// two models a client should skip (an image model, an answer model).
func NewGemini(t testing.TB, apiKey string) *Gemini {
	t.Helper()
	g := &Gemini{Fake: newFake(t), APIKey: apiKey}
	g.models = []Model{
		{Name: "gemini-2.5-flash", DisplayName: "Gemini 2.5 Flash", Actions: []string{"generateContent", "countTokens", "createCachedContent"}, InputTokenLimit: 1048576, OutputTokenLimit: 65536},
		{Name: "gemini-2.5-pro", DisplayName: "Gemini 2.5 Pro", Actions: []string{"generateContent", "countTokens"}, InputTokenLimit: 1048576, OutputTokenLimit: 65536},
		{Name: "gemini-embedding-001", DisplayName: "Gemini Embedding 001", Actions: []string{"embedContent", "countTextTokens", "countTokens"}, InputTokenLimit: 2048, OutputTokenLimit: 1},
		{Name: "text-embedding-004", DisplayName: "Text Embedding 004", Actions: []string{"embedContent"}, InputTokenLimit: 2048, OutputTokenLimit: 1},
		{Name: "imagen-4.0-generate-001", DisplayName: "Imagen 4", Actions: []string{"predict"}, InputTokenLimit: 480, OutputTokenLimit: 8192},
		{Name: "aqa", DisplayName: "Model that performs Attributed Question Answering.", Actions: []string{"generateAnswer"}, InputTokenLimit: 7168, OutputTokenLimit: 1024},
	}
	g.route = g.serve
	return g
}

func (g *Gemini) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	endpoint, model, method := EndpointUnknown, "", ""
	switch {
	case path == "/v1beta/models":
		endpoint = EndpointModels
	case strings.HasPrefix(path, "/v1beta/models/"):
		model, method, _ = strings.Cut(strings.TrimPrefix(path, "/v1beta/models/"), ":")
		switch method {
		case "generateContent":
			endpoint = EndpointGenerate
		case "streamGenerateContent":
			endpoint = EndpointStream
		case "batchEmbedContents":
			endpoint = EndpointEmbed
		}
	}
	req, err := g.record(r, endpoint, model)
	if err != nil {
		writeError(w, http.StatusBadRequest, "unreadable body")
		return
	}
	wantMethod := http.MethodPost
	if endpoint == EndpointModels {
		wantMethod = http.MethodGet
	}
	if endpoint == EndpointUnknown || r.Method != wantMethod {
		writeError(w, http.StatusNotFound, "Method not found.")
		return
	}
	if r.Header.Get("x-goog-api-key") != g.APIKey || g.APIKey == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(errorBodyWithReason(http.StatusBadRequest, "API key not valid. Please pass a valid API key.", "API_KEY_INVALID", "googleapis.com")))
		return
	}
	if endpoint == EndpointStream {
		g.serveStream(w, r, model, req.Body)
		return
	}
	g.api(w, endpoint, func() (any, int) {
		switch endpoint {
		case EndpointModels:
			return g.modelsPage(r.URL.Query().Get("pageToken"), geminiModel, "models")
		case EndpointGenerate:
			return g.generateResponse(model, req.Body)
		default:
			return g.batchEmbed(model, req.Body)
		}
	})
}

func geminiModel(m Model) map[string]any {
	return map[string]any{
		"name":                       "models/" + m.Name,
		"version":                    "001",
		"displayName":                m.DisplayName,
		"inputTokenLimit":            m.InputTokenLimit,
		"outputTokenLimit":           m.OutputTokenLimit,
		"supportedGenerationMethods": m.Actions,
	}
}

func (g *Gemini) batchEmbed(model string, body []byte) (any, int) {
	var br struct {
		Requests []struct {
			Model   string `json:"model"`
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
			OutputDimensionality int `json:"outputDimensionality"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(body, &br); err != nil {
		return badRequest("Invalid JSON payload received. %v", err)
	}
	if len(br.Requests) == 0 {
		return badRequest("* BatchEmbedContentsRequest.requests: contents is not specified")
	}
	if len(br.Requests) > geminiEmbedBatchMax {
		return badRequest("* BatchEmbedContentsRequest.requests: at most %d requests can be in one batch", geminiEmbedBatchMax)
	}
	embeddings := make([]any, len(br.Requests))
	for i, rq := range br.Requests {
		if rq.Model != "models/"+model {
			return badRequest("* BatchEmbedContentsRequest.requests[%d].model: unexpected model name format", i)
		}
		var parts []string
		for _, p := range rq.Content.Parts {
			parts = append(parts, p.Text)
		}
		text := strings.Join(parts, " ")
		if strings.TrimSpace(text) == "" {
			return badRequest("* BatchEmbedContentsRequest.requests[%d].content: contents is not specified", i)
		}
		embeddings[i] = map[string]any{"values": Vector(text, rq.OutputDimensionality)}
	}
	return map[string]any{"embeddings": embeddings}, http.StatusOK
}
