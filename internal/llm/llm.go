// Package llm is the language-model boundary: one small Client interface per
// provider credential (structured generation, batched embeddings, model
// listing), its real implementations on google.golang.org/genai
// ("key-ai" on the Gemini API, "account-ai" on Vertex AI) and on
// github.com/openai/openai-go ("openai": any OpenAI-compatible endpoint,
// Ollama and vLLM among them), the offline
// "local" provider that needs no key and no network, and the Embedder the
// document pipeline uses.
//
// Errors of the real providers are *Error values whose Kind says what a job
// should do about them; JobError turns them into the job engine's
// vocabulary. No error message ever contains an API key or service-account
// key material.
package llm

import (
	"context"
	"encoding/json"
	"time"
)

// Embedder turns texts into vectors, many texts per call: callers batch,
// and an implementation makes one provider request per call (or as few as
// the provider's batch limit allows).
type Embedder interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the model, stored beside every vector.
	Model() string
	// Dimension is the length of every vector.
	Dimension() int
}

// Provider names, as stored with credentials and shown with every call.
const (
	ProviderKeyAI     = "key-ai"
	ProviderAccountAI = "account-ai"
	ProviderOpenAI    = "openai"
	ProviderLocal     = "local"
)

// Purposes of a generation request. The real providers only pass them
// along; the local provider chooses its heuristic by them.
const (
	PurposeExtraction = "extraction"
	PurposeDiscovery  = "discovery"
)

// Model types reported by ListModels.
const (
	ModelTypeEmbedding  = "embedding"
	ModelTypeGenerative = "generative"
)

// Usage is a call's token counts by modality. Inputs are the prompt side
// (system instruction, prompt and source text); Output is what the model
// produced, thinking included, since both are billed as output.
type Usage struct {
	InputText, InputImage, InputVideo, InputAudio, Output int64
}

// GenerateRequest is one structured-output call.
type GenerateRequest struct {
	// Purpose is PurposeExtraction, PurposeDiscovery or "" (generic).
	Purpose string
	// System is the system instruction.
	System string
	// Prompt holds the instructions.
	Prompt string
	// Text is the source text the prompt is about. The real providers send
	// it as its own part after the prompt; the local provider analyses it.
	Text string
	// Schema is the JSON Schema of the response.
	Schema map[string]any
	// Temperature is the sampling temperature; nil leaves the model default.
	Temperature *float64
	// MaxOutputTokens bounds the response; 0 leaves the model default.
	MaxOutputTokens int
}

// GenerateResult is a generation's parsed JSON response and what it cost.
type GenerateResult struct {
	JSON     json.RawMessage
	Usage    Usage
	Model    string
	Duration time.Duration
}

// EmbedResult holds one vector per input text, in order. Usage.InputText is
// the provider-reported token count where the provider reports one (Vertex
// AI predict statistics, Vertex embedContent usage metadata) and otherwise
// an estimate of one token per four characters (EstimateTokens).
type EmbedResult struct {
	Vectors  [][]float32
	Usage    Usage
	Model    string
	Duration time.Duration
}

// ModelInfo describes a model a credential can use. Limits and Dimension
// are 0 where the provider does not say (Dimension is the default output
// dimension of an embedding model, known for Google's published models).
type ModelInfo struct {
	Name, DisplayName string
	// Type is ModelTypeEmbedding or ModelTypeGenerative.
	Type                              string
	InputTokenLimit, OutputTokenLimit int
	Dimension                         int
}

// Client is one provider credential. Implementations are safe for
// concurrent use.
type Client interface {
	// Provider is ProviderKeyAI, ProviderAccountAI, ProviderOpenAI or
	// ProviderLocal.
	Provider() string
	// Generate makes one structured-output call and returns the response
	// parsed as JSON. A response that is not valid JSON is an ErrorInvalid.
	Generate(ctx context.Context, model string, req GenerateRequest) (*GenerateResult, error)
	// Embed returns one vector per text. It makes one request per call,
	// splitting only above the provider's per-request limit. dimension 0
	// asks for the model's default dimension.
	Embed(ctx context.Context, model string, texts []string, dimension int) (*EmbedResult, error)
	// ListModels lists the embedding and generative models of the
	// credential.
	ListModels(ctx context.Context) ([]ModelInfo, error)
}
