// Package llm is the language-model boundary: one small Client interface per
// provider credential (structured generation, tool-calling chat with
// streamed text, batched embeddings, model listing), its real
// implementations on google.golang.org/genai
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
	"strings"
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
//
// The three discovery purposes share one wire contract (schema discovery,
// internal/discovery, sends the JSON Schema of these shapes; the local
// provider answers in them):
//
//   - PurposeDiscovery: Text holds a batch of documents, each as
//     <document id="UUID" name="NAME">\n...text...\n</document>. The
//     response is {"types": [T]} where T is {"type_name", "description",
//     "properties": {name: {"type": "string|number|integer|boolean|array",
//     "description"}}, "required_properties": [name], "instances": [{"name",
//     "quote" (verbatim from the document), "document_id"}], "confidence"
//     (0..1)}.
//   - PurposeDiscoveryRefine: Text is a merged candidate list {"types": [T]};
//     the response is the revised list in the same shape (types merged,
//     split or renamed; instances kept with their types).
//   - PurposeDiscoveryRelationships: Text is {"types": [T]} followed by a
//     blank line and the documents as for PurposeDiscovery. The response
//     is {"relationships": [{"source_type", "target_type",
//     "relation_type", "description", "cardinality"
//     ("one_to_one|one_to_many|many_to_many"), "confidence"}]}.
const (
	PurposeExtraction             = "extraction"
	PurposeDiscovery              = "discovery"
	PurposeDiscoveryRefine        = "discovery_refine"
	PurposeDiscoveryRelationships = "discovery_relationships"
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

// MaxCallTokens bounds each count of one call's Usage: five times the
// largest context window offered (2M tokens), so that a real call is
// never cut, and small enough that a call's counts add up within the
// int columns of the extraction and discovery call logs. Counts are what
// an endpoint reports, and a tenant's OpenAI-compatible endpoint reports
// anything: a negative count would go into the usage ledger as is, and
// counts near the int64 limit made its sums overflow (every usage
// summary of the project and organization failing from then on).
const MaxCallTokens = 10_000_000

// Bounded is u with each count within 0 and MaxCallTokens.
func (u Usage) Bounded() Usage {
	b := func(n int64) int64 { return min(max(n, 0), MaxCallTokens) }
	return Usage{InputText: b(u.InputText), InputImage: b(u.InputImage), InputVideo: b(u.InputVideo), InputAudio: b(u.InputAudio), Output: b(u.Output)}
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
	// Chat makes one step of a tool-using conversation: one request,
	// streamed, whose result is the model's text or its tool calls. The
	// caller runs the tools and calls again with the assistant message and
	// a tool message appended. A tool call whose arguments are not a JSON
	// object is an ErrorInvalid.
	Chat(ctx context.Context, model string, req ChatRequest) (*ChatResult, error)
}

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool messages carry the results of the tool calls of the
	// assistant message before them.
	RoleTool = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	// Role is RoleSystem, RoleUser, RoleAssistant or RoleTool.
	Role string
	// Text is the message's text (empty for a tool message, and for an
	// assistant message that only called tools).
	Text string
	// ToolCalls are the calls an assistant message made, as ChatResult
	// returned them (ID and Signature included).
	ToolCalls []ToolCall
	// ToolResults are a tool message's results, one per call answered.
	ToolResults []ToolResult
}

// Tool declares a function the model may call.
type Tool struct {
	// Name is what ToolCall.Name will say: letters, digits, '_', '-', '.'
	// and ':', at most 64 characters (the strictest provider's rule).
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, an object schema; nil
	// means the tool takes none.
	Parameters map[string]any
}

// ToolCall is the model's request to run a tool.
type ToolCall struct {
	// ID identifies the call; its ToolResult names it. Providers that give
	// no id get one made up (unique within the conversation).
	ID   string
	Name string
	// Arguments is a JSON object.
	Arguments json.RawMessage
	// Signature is provider state that must go back with the call in the
	// next request (Gemini's thought signature); opaque to callers.
	Signature []byte
}

// ToolResult is what a tool returned for one call.
type ToolResult struct {
	// CallID is the ToolCall.ID answered; Name its tool.
	CallID, Name string
	// Content is the tool's output as JSON (any value; a string for plain
	// text).
	Content json.RawMessage
	// IsError says Content describes a failure of the tool.
	IsError bool
}

// Purposes of a chat request (ChatRequest.Purpose). The real providers
// only pass them along; the local provider answers them without a model:
//
//   - PurposeGroundedAnswer: the last user message holds the numbered
//     sources, each as <source index="N" document="NAME">\n...text...\n</source>,
//     then the question as <question>\n...\n</question>; the texts are
//     escaped (EscapePromptText), so that no tag comes from them. The answer cites
//     sources with markers [N]. The local provider answers extractively:
//     "Extractive answer (local provider):" and the source sentences that
//     share the most words with the question, each with its marker; with
//     no sentence sharing a word, it says the sources do not answer.
//   - PurposeSummary: the last user message is a conversation transcript
//     ("user: ..." and "assistant: ..." paragraphs); the answer summarises
//     it. The local provider keeps the first sentence of each paragraph.
const (
	PurposeGroundedAnswer = "grounded_answer"
	PurposeSummary        = "summary"
)

// EscapePromptText escapes text that goes inside a tag of a prompt (the
// sources and the question of PurposeGroundedAnswer): &, < and > as
// &amp;, &lt; and &gt;, so that the text cannot close its tag or open
// another.
func EscapePromptText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// UnescapePromptText reverses EscapePromptText.
func UnescapePromptText(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// ChatRequest is one step of a tool-using conversation.
type ChatRequest struct {
	// Purpose is PurposeGroundedAnswer, PurposeSummary or "" (a tool-using
	// conversation).
	Purpose string
	// Messages is the conversation so far; system messages are the system
	// instruction wherever they appear.
	Messages []Message
	// Tools the model may call (none: it can only answer).
	Tools []Tool
	// Temperature is the sampling temperature; nil leaves the model default.
	Temperature *float64
	// MaxOutputTokens bounds the response; 0 leaves the model default.
	MaxOutputTokens int
	// OnDelta, when set, receives the response's text as it arrives, in
	// order, from the goroutine that called Chat; the deltas concatenate to
	// ChatResult.Text. An error from it ends the call with that error
	// (a chat endpoint forwards deltas as server-sent events and stops when
	// its client is gone).
	OnDelta func(delta string) error
}

// EstimatedInputTokens estimates the request's input tokens
// (EstimateTokens of its texts, calls, results and tool declarations), as
// the rate governor needs before a call and the local provider reports.
func (req ChatRequest) EstimatedInputTokens() int64 {
	var n int64
	for _, m := range req.Messages {
		n += EstimateTokens(m.Text)
		for _, tc := range m.ToolCalls {
			n += EstimateTokens(tc.Name + string(tc.Arguments))
		}
		for _, r := range m.ToolResults {
			n += EstimateTokens(r.Name + string(r.Content))
		}
	}
	for _, t := range req.Tools {
		b, _ := json.Marshal(t.Parameters) //nolint:errchkjson // a decoded JSON Schema
		n += EstimateTokens(t.Name + " " + t.Description + " " + string(b))
	}
	return n
}

// ChatResult is one step's outcome: text, tool calls, or both (text said
// before calling tools).
type ChatResult struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
	Model     string
	Duration  time.Duration
}
