package llm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

const openAIKey = "sk-test-openai-0123456789abcdef"

// peopleSchema is a schema in the shape extraction sends: an optional
// property, nested objects.
func peopleSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"entities": map[string]any{"type": "array", "items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":        map[string]any{"type": "string"},
					"type":        map[string]any{"type": "string"},
					"description": map[string]any{"type": "string"},
				},
				"required": []any{"name", "type"},
			}},
		},
		"required": []any{"entities"},
	}
}

// chatFormats lists the response_format type of each chat request.
func chatFormats(f *llmtest.OpenAI) []string {
	var out []string
	for _, c := range f.Chats() {
		out = append(out, c.Format)
	}
	return out
}

func newOpenAI(t *testing.T) (llm.Client, *llmtest.OpenAI) {
	t.Helper()
	f := llmtest.NewOpenAI(t)
	f.SetAPIKey(openAIKey)
	c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: f.URL(), APIKey: openAIKey, Organization: "org-1", Project: "proj-1"})
	require.NoError(t, err)
	return c, f
}

// TestOpenAIGenerateJSONSchema: structured output goes as response_format
// json_schema, strict, the optional property made nullable and every
// object closed; the answer's nulls are dropped; headers carry the key,
// organization and project; usage comes from the response.
func TestOpenAIGenerateJSONSchema(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	f.SetChat(func(call llmtest.OpenAIChat) string {
		return `{"entities":[{"name":"Ada Lovelace","type":"Person","description":null}]}`
	})
	res, err := c.Generate(context.Background(), "gpt-4o-mini", llm.GenerateRequest{
		System: "Extract.", Prompt: "Find the people.", Text: "Ada Lovelace wrote notes.", Schema: peopleSchema(),
	})
	require.NoError(t, err)
	require.JSONEq(t, `{"entities":[{"name":"Ada Lovelace","type":"Person"}]}`, string(res.JSON))
	require.Equal(t, "gpt-4o-mini", res.Model)
	require.Positive(t, res.Usage.InputText)
	require.Positive(t, res.Usage.Output)

	reqs := f.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/v1/chat/completions", reqs[0].Path)
	require.Equal(t, "Bearer "+openAIKey, reqs[0].Header.Get("Authorization"))
	require.Equal(t, "org-1", reqs[0].Header.Get("OpenAI-Organization"))
	require.Equal(t, "proj-1", reqs[0].Header.Get("OpenAI-Project"))
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Strict bool           `json:"strict"`
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].Body, &body))
	require.Equal(t, "json_schema", body.ResponseFormat.Type)
	require.True(t, body.ResponseFormat.JSONSchema.Strict)
	item := body.ResponseFormat.JSONSchema.Schema["properties"].(map[string]any)["entities"].(map[string]any)["items"].(map[string]any)
	require.Equal(t, false, item["additionalProperties"])
	require.ElementsMatch(t, []any{"name", "type", "description"}, item["required"])
	require.Equal(t, []any{"string", "null"}, item["properties"].(map[string]any)["description"].(map[string]any)["type"])
	require.Len(t, body.Messages, 2)
	require.Equal(t, "system", body.Messages[0].Role)
	require.Equal(t, "Find the people.\n\nAda Lovelace wrote notes.", body.Messages[1].Content)
}

// TestOpenAIGenerateFallsBackWithoutJSONSchema: a server refusing
// json_schema gets JSON mode with the schema in the system message; an
// answer that does not validate gets one repair call; the refusal is
// remembered for that model, so the next call goes straight to JSON mode.
func TestOpenAIGenerateFallsBackWithoutJSONSchema(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	f.SetNoJSONSchema(true)
	f.SetChat(func(call llmtest.OpenAIChat) string {
		last := call.Messages[len(call.Messages)-1].Content
		if strings.Contains(last, "not valid") {
			return `{"entities":[{"name":"Ada Lovelace","type":"Person"}]}`
		}
		return "```json\n{\"entities\":[{\"name\":\"Ada Lovelace\"}]}\n```" // type missing: invalid
	})
	req := llm.GenerateRequest{Prompt: "Find the people.", Text: "Ada Lovelace wrote notes.", Schema: peopleSchema()}
	res, err := c.Generate(context.Background(), "llama3.1:8b", req)
	require.NoError(t, err)
	require.JSONEq(t, `{"entities":[{"name":"Ada Lovelace","type":"Person"}]}`, string(res.JSON))

	for _, call := range f.Chats() {
		if call.Format == "json_object" {
			require.Equal(t, "system", call.Messages[0].Role)
			require.Contains(t, call.Messages[0].Content, `"required":["name","type"]`, "the schema is in the system message")
		}
	}
	formats := chatFormats(f)
	require.Equal(t, []string{"json_schema", "json_object", "json_object"}, formats, "refused, JSON mode, one repair")
	require.Equal(t, int64(6), res.Usage.Output, "usage of both answered calls is summed (4 + 2 words)")

	// Remembered: the next call does not try json_schema again.
	f.SetChat(func(llmtest.OpenAIChat) string { return `{"entities":[]}` })
	_, err = c.Generate(context.Background(), "llama3.1:8b", req)
	require.NoError(t, err)
	reqs := f.Requests()
	require.Len(t, reqs, 4)
	require.Contains(t, string(reqs[3].Body), `"json_object"`)

	// A repair that still does not validate is an invalid response.
	f.SetChat(func(llmtest.OpenAIChat) string { return `{"entities":"none"}` })
	_, err = c.Generate(context.Background(), "llama3.1:8b", req)
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.ErrorInvalid, le.Kind)
	require.Contains(t, le.Message, "after one repair")
	require.Len(t, f.Requests(), 6)
}

// TestOpenAIEmbedBatched: one request for the whole batch, vectors in
// order, the dimension that of the response, tokens as reported.
func TestOpenAIEmbedBatched(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	texts := []string{"alpha beta", "gamma", "delta epsilon zeta"}
	res, err := c.Embed(context.Background(), "nomic-embed-text", texts, 0)
	require.NoError(t, err)
	require.Equal(t, 1, f.Count(llmtest.EndpointEmbed))
	require.Len(t, res.Vectors, 3)
	for i, v := range res.Vectors {
		require.Len(t, v, 16)
		require.InDeltaSlice(t, llmtest.Vector(texts[i], 16), v, 1e-6)
	}
	require.Equal(t, int64(6), res.Usage.InputText)

	res, err = c.Embed(context.Background(), "text-embedding-3-small", texts[:1], 8)
	require.NoError(t, err)
	require.Len(t, res.Vectors[0], 8)
	require.Contains(t, string(f.Requests()[1].Body), `"dimensions":8`)

	_, err = c.Embed(context.Background(), "nomic-embed-text", []string{"x", " "}, 0)
	require.ErrorContains(t, err, "text 1 is empty")
}

// TestOpenAIListModels: the endpoint's model list, types inferred from the
// names, speech models left out.
func TestOpenAIListModels(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	f.SetModels("gpt-4o-mini", "text-embedding-3-small", "whisper-1", "llama3.1:8b", "nomic-embed-text:latest", "tts-1")
	ms, err := c.ListModels(context.Background())
	require.NoError(t, err)
	got := map[string]string{}
	for _, m := range ms {
		got[m.Name] = m.Type
	}
	require.Equal(t, map[string]string{
		"gpt-4o-mini": "generative", "llama3.1:8b": "generative",
		"text-embedding-3-small": "embedding", "nomic-embed-text:latest": "embedding",
	}, got)
	for _, m := range ms {
		if m.Name == "text-embedding-3-small" {
			require.Equal(t, 1536, m.Dimension)
		}
	}
}

// TestOpenAIErrors: 429 with Retry-After is a rate limit with its delay
// (the job waits without spending a retry), 5xx transient, 401 auth; the
// SDK does not retry on its own; the key is never in a message.
func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	ctx := context.Background()
	req := llm.GenerateRequest{Prompt: "p", Schema: peopleSchema()}

	f.FailNext(1, http.StatusTooManyRequests, "7")
	_, err := c.Generate(ctx, "gpt-4o-mini", req)
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.ErrorRateLimit, le.Kind)
	require.Equal(t, 7*time.Second, le.RetryAfter)
	require.Equal(t, 1, f.Count(llmtest.EndpointGenerate), "no retry inside the SDK")
	require.Equal(t, jobqueue.RateLimited(err, 7*time.Second), llm.JobError(err))

	f.FailNext(1, http.StatusServiceUnavailable, "")
	_, err = c.Embed(ctx, "nomic-embed-text", []string{"a"}, 0)
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.ErrorTransient, le.Kind)
	require.Equal(t, http.StatusServiceUnavailable, le.Status)

	f.FailNext(1, http.StatusInternalServerError, "")
	_, err = c.ListModels(ctx)
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.ErrorTransient, le.Kind)

	bad, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: f.URL(), APIKey: "sk-wrong-" + openAIKey})
	require.NoError(t, err)
	_, err = bad.Generate(ctx, "gpt-4o-mini", req)
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.ErrorAuth, le.Kind)
	require.NotContains(t, err.Error(), openAIKey)
	require.Equal(t, 4, f.Count(llmtest.EndpointGenerate)+f.Count(llmtest.EndpointEmbed)+f.Count(llmtest.EndpointModels))

	_, err = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "ftp://example.com"})
	require.ErrorContains(t, err, "not an absolute http(s) URL")
}

// TestOpenAINoKeyForLocalServers: without a key no Authorization header
// goes out, whatever the process environment holds for the SDK.
func TestOpenAINoKeyForLocalServers(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t)
	c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: f.URL()})
	require.NoError(t, err)
	_, err = c.Generate(context.Background(), "llama3.1:8b", llm.GenerateRequest{Prompt: "p"})
	require.NoError(t, err)
	h := f.Requests()[0].Header
	require.Empty(t, h.Get("Authorization"))
	require.Empty(t, h.Get("OpenAI-Organization"))
	require.True(t, llm.Unpriced(c), "a local endpoint costs nothing")
	_, err = c.Generate(context.Background(), "llama3.1:8b", llm.GenerateRequest{Prompt: "p", MaxOutputTokens: 300})
	require.NoError(t, err)
	require.Contains(t, string(f.Requests()[1].Body), `"max_tokens":300`, "what local servers take")
	official, err := llm.NewOpenAI(llm.OpenAIConfig{APIKey: "k"})
	require.NoError(t, err)
	require.False(t, llm.Unpriced(official))
}

// TestOpenAISchemaWithOpenObject: extraction's schema has a property named
// "properties" holding free-form facts (an open object). The property map
// is transformed as property definitions (no "required" or
// "additionalProperties" added among them), and since strict mode cannot
// express an open object, the schema goes with strict false.
func TestOpenAISchemaWithOpenObject(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"objects": map[string]any{"type": "array", "items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":       map[string]any{"type": "string"},
					"properties": map[string]any{"type": "object", "description": "facts"},
				},
				"required": []any{"name"},
			}},
		},
		"required": []any{"objects"},
	}
	_, err := c.Generate(context.Background(), "gpt-4o-mini", llm.GenerateRequest{Prompt: "p", Schema: schema})
	require.NoError(t, err)
	var body struct {
		ResponseFormat struct {
			JSONSchema struct {
				Strict bool           `json:"strict"`
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	require.NoError(t, json.Unmarshal(f.Requests()[0].Body, &body))
	require.False(t, body.ResponseFormat.JSONSchema.Strict)
	item := body.ResponseFormat.JSONSchema.Schema["properties"].(map[string]any)["objects"].(map[string]any)["items"].(map[string]any)
	props := item["properties"].(map[string]any)
	require.Len(t, props, 2, "no keyword added among the property definitions")
	require.Equal(t, map[string]any{"type": []any{"object", "null"}, "description": "facts"}, props["properties"])
	require.Equal(t, false, item["additionalProperties"])
	require.Equal(t, []any{"name", "properties"}, item["required"])
}

// TestOpenAIGenerateFormatIgnored: a server that accepts json_schema but
// answers prose (it ignores the format) is treated as one refusing it:
// JSON mode from then on for that model.
func TestOpenAIGenerateFormatIgnored(t *testing.T) {
	t.Parallel()
	c, f := newOpenAI(t)
	f.SetChat(func(call llmtest.OpenAIChat) string {
		if call.Format == "json_schema" {
			return "Sure! The people are Ada Lovelace."
		}
		return `{"entities":[{"name":"Ada Lovelace","type":"Person"}]}`
	})
	req := llm.GenerateRequest{Prompt: "p", Schema: peopleSchema()}
	for range 2 {
		res, err := c.Generate(context.Background(), "phi3", req)
		require.NoError(t, err)
		require.JSONEq(t, `{"entities":[{"name":"Ada Lovelace","type":"Person"}]}`, string(res.JSON))
	}
	formats := chatFormats(f)
	require.Equal(t, []string{"json_schema", "json_object", "json_object"}, formats)
}
