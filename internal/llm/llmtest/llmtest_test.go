package llmtest_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

func do(t *testing.T, c *http.Client, method, u string, header http.Header, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, u, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

func TestGeminiFake(t *testing.T) {
	t.Parallel()
	g := llmtest.NewGemini(t, "k1")
	key := http.Header{"X-Goog-Api-Key": {"k1"}}
	gen := g.URL() + "/v1beta/models/gemini-2.5-flash:generateContent"
	body := `{"contents":[{"role":"user","parts":[{"text":"one two"},{"text":"three"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object"},"temperature":0.5}}`

	status, _, out := do(t, g.Client(), http.MethodPost, gen, nil, body)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, out, "API_KEY_INVALID")

	calls := make(chan llmtest.GenerateCall, 10)
	g.SetGenerate(func(c llmtest.GenerateCall) string { calls <- c; return `{"ok":true}` })
	status, _, out = do(t, g.Client(), http.MethodPost, gen, key, body)
	require.Equal(t, http.StatusOK, status, out)
	got := <-calls
	require.Equal(t, "gemini-2.5-flash", got.Model)
	require.Equal(t, []string{"one two", "three"}, got.Parts)
	require.JSONEq(t, `{"type":"object"}`, string(got.Schema))
	require.Equal(t, "application/json", got.MIMEType)
	require.InDelta(t, 0.5, *got.Temperature, 1e-9)
	var resp struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
		UsageMetadata struct {
			PromptTokenCount     int `json:"promptTokenCount"`
			CandidatesTokenCount int `json:"candidatesTokenCount"`
		} `json:"usageMetadata"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &resp))
	require.Equal(t, `{"ok":true}`, resp.Candidates[0].Content.Parts[0].Text)
	require.Equal(t, 3, resp.UsageMetadata.PromptTokenCount)
	require.Equal(t, 1, resp.UsageMetadata.CandidatesTokenCount)

	// Failures are served in order, then normal service resumes.
	g.FailNext(1, 429, "12", "")
	g.FailNext(1, 503, "", "down")
	status, h, out := do(t, g.Client(), http.MethodPost, gen, key, body)
	require.Equal(t, 429, status)
	require.Equal(t, "12", h.Get("Retry-After"))
	require.Contains(t, out, "RESOURCE_EXHAUSTED")
	status, _, out = do(t, g.Client(), http.MethodPost, gen, key, body)
	require.Equal(t, 503, status)
	require.Equal(t, "down", out)
	status, _, _ = do(t, g.Client(), http.MethodPost, gen, key, body)
	require.Equal(t, 200, status)

	// A failure for one endpoint waits for a request to it.
	g.FailNextOn(llmtest.EndpointGenerate, 1, 400)
	status, _, _ = do(t, g.Client(), http.MethodGet, g.URL()+"/v1beta/models", key, "")
	require.Equal(t, 200, status, "the model list is not a generate request")
	status, _, out = do(t, g.Client(), http.MethodPost, gen, key, body)
	require.Equal(t, 400, status)
	require.Contains(t, out, "INVALID_ARGUMENT")

	g.SetMalformed(true)
	status, _, out = do(t, g.Client(), http.MethodPost, gen, key, body)
	require.Equal(t, 200, status)
	require.False(t, json.Valid([]byte(out)))
	g.SetMalformed(false)

	// Embeddings: per-request model check and the batch limit.
	emb := g.URL() + "/v1beta/models/text-embedding-004:batchEmbedContents"
	var reqs []string
	for i := range 3 {
		reqs = append(reqs, fmt.Sprintf(`{"model":"models/text-embedding-004","content":{"parts":[{"text":"t%d"}]},"outputDimensionality":4}`, i))
	}
	status, _, out = do(t, g.Client(), http.MethodPost, emb, key, `{"requests":[`+strings.Join(reqs, ",")+`]}`)
	require.Equal(t, 200, status, out)
	var er struct {
		Embeddings []struct {
			Values []float32 `json:"values"`
		} `json:"embeddings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &er))
	require.Len(t, er.Embeddings, 3)
	require.Equal(t, llmtest.Vector("t1", 4), er.Embeddings[1].Values)
	many := strings.Repeat(reqs[0]+",", 100) + reqs[0]
	status, _, _ = do(t, g.Client(), http.MethodPost, emb, key, `{"requests":[`+many+`]}`)
	require.Equal(t, 400, status, "101 requests exceed the limit")
	status, _, _ = do(t, g.Client(), http.MethodPost, g.URL()+"/v1beta/models/other:batchEmbedContents", key, `{"requests":[`+reqs[0]+`]}`)
	require.Equal(t, 400, status, "request model must match the URL")

	require.Equal(t, 7, g.Count(llmtest.EndpointGenerate), "refused and failed requests count too")
	require.Equal(t, 3, g.Count(llmtest.EndpointEmbed))
	require.Len(t, g.Requests(), 11)

	status, _, _ = do(t, g.Client(), http.MethodGet, g.URL()+"/v1/other", key, "")
	require.Equal(t, 404, status)
}

func TestVertexFakeTokenEndpoint(t *testing.T) {
	t.Parallel()
	v := llmtest.NewVertex(t, "p", "us-central1")
	var sa struct {
		ClientEmail string `json:"client_email"`
		TokenURI    string `json:"token_uri"`
	}
	require.NoError(t, json.Unmarshal(v.ServiceAccountJSON(), &sa))
	require.Equal(t, v.URL()+llmtest.TokenPath, sa.TokenURI)

	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"a.b.c"}}
	hdr := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	status, _, out := do(t, v.Client(), http.MethodPost, sa.TokenURI, hdr, form.Encode())
	require.Equal(t, 400, status)
	require.Contains(t, out, "invalid_grant")

	// An assertion signed by another key is refused.
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	form.Set("assertion", signJWT(t, other, sa.ClientEmail, sa.TokenURI))
	status, _, out = do(t, v.Client(), http.MethodPost, sa.TokenURI, hdr, form.Encode())
	require.Equal(t, 400, status)
	require.Contains(t, out, "invalid JWT signature")

	// API calls need a token.
	status, _, out = do(t, v.Client(), http.MethodGet, v.URL()+"/v1beta1/publishers/google/models", nil, "")
	require.Equal(t, 401, status)
	require.Contains(t, out, "UNAUTHENTICATED")
	require.Equal(t, 2, v.Count(llmtest.EndpointToken))
	require.Equal(t, 1, v.Count(llmtest.EndpointModels))
}

func TestVectorAndWordTokens(t *testing.T) {
	t.Parallel()
	a := llmtest.Vector("hello", 64)
	require.Len(t, a, 64)
	require.Equal(t, a, llmtest.Vector("hello", 64))
	require.NotEqual(t, a, llmtest.Vector("hello!", 64))
	var n float64
	for _, x := range a {
		n += float64(x) * float64(x)
	}
	require.InDelta(t, 1, math.Sqrt(n), 1e-5)
	require.Len(t, llmtest.Vector("x", 0), llmtest.DimensionDefault)
	require.Equal(t, 3, llmtest.WordTokens(" a  b\nc "))
}

func TestFakeConcurrentUse(t *testing.T) {
	t.Parallel()
	g := llmtest.NewGemini(t, "k")
	key := http.Header{"X-Goog-Api-Key": {"k"}}
	g.FailNext(10, 500, "", "")
	var wg sync.WaitGroup
	codes := make([]int, 40)
	for i := range codes {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, g.URL()+"/v1beta/models", nil)
			if err != nil {
				return
			}
			req.Header = key.Clone()
			resp, err := g.Client().Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	failed := 0
	for _, c := range codes {
		if c == 500 {
			failed++
		} else {
			require.Equal(t, 200, c)
		}
	}
	require.Equal(t, 10, failed)
	require.Equal(t, 40, g.Count(llmtest.EndpointModels))
}

// TestGeminiFakeStream checks the stream's wire format: server-sent events
// of response chunks, CRLF-separated, with the running usage, a finish
// reason on the last, and the decoded request handed to SetStream.
func TestGeminiFakeStream(t *testing.T) {
	t.Parallel()
	g := llmtest.NewGemini(t, "k1")
	key := http.Header{"X-Goog-Api-Key": {"k1"}}
	u := g.URL() + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	body := `{"contents":[{"role":"user","parts":[{"text":"who wrote it"}]},` +
		`{"role":"model","parts":[{"functionCall":{"id":"c1","name":"search","args":{"q":"it"}},"thoughtSignature":"c2ln"}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"search","response":{"output":"Ada"}}}]}],` +
		`"systemInstruction":{"parts":[{"text":"be brief"}]},` +
		`"tools":[{"functionDeclarations":[{"name":"search","description":"d","parametersJsonSchema":{"type":"object"}}]}]}`
	calls := make(chan llmtest.StreamCall, 1)
	g.SetStream(func(c llmtest.StreamCall) []llmtest.Part {
		calls <- c
		return []llmtest.Part{{Text: "Ada wrote"}, {Text: " it."}}
	})
	status, h, out := do(t, g.Client(), http.MethodPost, u, key, body)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "text/event-stream", h.Get("Content-Type"))
	c := <-calls
	require.Equal(t, "be brief", c.System)
	require.Len(t, c.Contents, 3)
	require.Equal(t, "c2ln", c.Contents[1].Parts[0].ThoughtSignature)
	require.Equal(t, map[string]any{"q": "it"}, c.Contents[1].Parts[0].FunctionCall.Args)
	require.Equal(t, "Ada", c.Contents[2].Parts[0].FunctionResponse.Response["output"])
	require.Equal(t, "search", c.Tools[0].Name)
	require.JSONEq(t, `{"type":"object"}`, string(c.Tools[0].ParametersJSONSchema))

	events := strings.Split(strings.TrimSuffix(out, "\r\n\r\n"), "\r\n\r\n")
	require.Len(t, events, 2)
	type chunk struct {
		Candidates []struct {
			Content      llmtest.Content `json:"content"`
			FinishReason string          `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata struct {
			PromptTokenCount     int `json:"promptTokenCount"`
			CandidatesTokenCount int `json:"candidatesTokenCount"`
		} `json:"usageMetadata"`
	}
	var chunks []chunk
	for _, e := range events {
		data, ok := strings.CutPrefix(e, "data: ")
		require.True(t, ok, e)
		var ch chunk
		require.NoError(t, json.Unmarshal([]byte(data), &ch))
		chunks = append(chunks, ch)
	}
	require.Equal(t, "Ada wrote", chunks[0].Candidates[0].Content.Parts[0].Text)
	require.Empty(t, chunks[0].Candidates[0].FinishReason)
	require.Equal(t, "STOP", chunks[1].Candidates[0].FinishReason)
	// Prompt: "be brief" (2), "who wrote it" (3), the call and response
	// words; candidates: "Ada wrote it." (3), reported in the last chunk.
	require.Equal(t, chunks[0].UsageMetadata.PromptTokenCount, chunks[1].UsageMetadata.PromptTokenCount)
	require.Greater(t, chunks[0].UsageMetadata.PromptTokenCount, 5)
	require.Zero(t, chunks[0].UsageMetadata.CandidatesTokenCount)
	require.Equal(t, 3, chunks[1].UsageMetadata.CandidatesTokenCount)

	status, _, _ = do(t, g.Client(), http.MethodPost, strings.TrimSuffix(u, "?alt=sse"), key, body)
	require.Equal(t, http.StatusBadRequest, status, "only the SSE form is faked")
	require.Equal(t, 2, g.Count(llmtest.EndpointStream))
}

// TestOpenAIFakeRateLimit: SetRateLimit lets rpm chat completions through
// in a minute and refuses the next with a 429, a Retry-After up to a
// minute and the rate-limit type; other endpoints are not limited.
func TestOpenAIFakeRateLimit(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t)
	f.SetRateLimit(2, 0)
	post := func(path string) *http.Response {
		t.Helper()
		resp, err := http.Post(f.URL()+path, "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}],"input":"x"}`))
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	require.Equal(t, http.StatusOK, post("/chat/completions").StatusCode)
	require.Equal(t, http.StatusOK, post("/chat/completions").StatusCode)
	resp := post("/chat/completions")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, ra >= 1 && ra <= 60, "Retry-After %d", ra)
	var body struct {
		Error struct{ Type string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "rate_limit_exceeded", body.Error.Type)
	require.Equal(t, 1, f.RateLimited())
	require.Equal(t, http.StatusOK, post("/embeddings").StatusCode)
	require.Equal(t, 1, f.RateLimited(), "a refused call does not count in the window")
	require.Equal(t, 3, f.Count(llmtest.EndpointGenerate))
}
