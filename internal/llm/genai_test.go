package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// loopback is the allow list of tests: the fakes' token endpoints listen
// on 127.0.0.1.
var loopback = mustGuard("127.0.0.0/8") //nolint:gochecknoglobals // test fixture

func mustGuard(allow ...string) *egress.Guard {
	g, err := egress.New(allow)
	if err != nil {
		panic(err)
	}
	return g
}

const (
	testAPIKey   = "AIzaSy-test-key-0123456789abcdefghij"
	testProject  = "graphmill-test"
	testLocation = "europe-west4"
)

// provider is one real provider wired to its fake.
type provider struct {
	name string
	// embedModel batches many texts per request.
	embedModel string
	// genPath is the path of a generateContent request for model "m".
	genPath string
	setup   func(t *testing.T) bundle
}

type bundle struct {
	client llm.Client
	fake   *llmtest.Fake
	vertex *llmtest.Vertex // nil for key-ai
	// secrets must never appear in an error message.
	secrets []string
}

func providers() []provider {
	return []provider{
		{
			name:       llm.ProviderKeyAI,
			embedModel: "gemini-embedding-001",
			genPath:    "/v1beta/models/m:generateContent",
			setup: func(t *testing.T) bundle {
				t.Helper()
				fake := llmtest.NewGemini(t, testAPIKey)
				c, err := llm.NewKeyAI(context.Background(), testAPIKey, fake.URL(), fake.Client())
				require.NoError(t, err)
				return bundle{client: c, fake: fake.Fake, secrets: []string{testAPIKey}}
			},
		},
		{
			name:       llm.ProviderAccountAI,
			embedModel: "text-embedding-005",
			genPath:    "/v1beta1/projects/" + testProject + "/locations/" + testLocation + "/publishers/google/models/m:generateContent",
			setup: func(t *testing.T) bundle {
				t.Helper()
				fake := llmtest.NewVertex(t, testProject, testLocation)
				sa := fake.ServiceAccountJSON()
				c, err := llm.NewAccountAI(context.Background(), sa, testProject, testLocation, fake.URL(), fake.Client(), loopback)
				require.NoError(t, err)
				return bundle{client: c, fake: fake.Fake, vertex: fake, secrets: serviceAccountSecrets(t, sa)}
			},
		},
	}
}

// serviceAccountSecrets are the private key (whole and its base64 lines)
// and key id of a service-account file.
func serviceAccountSecrets(t *testing.T, sa []byte) []string {
	t.Helper()
	var f struct {
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
	}
	require.NoError(t, json.Unmarshal(sa, &f))
	out := []string{f.PrivateKey, f.PrivateKeyID}
	for _, line := range strings.Split(f.PrivateKey, "\n") {
		if len(line) > 20 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

func requireNoSecrets(t *testing.T, err error, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		require.NotContains(t, err.Error(), s, "error message leaks a secret")
		require.NotContains(t, fmt.Sprintf("%+v", err), s, "error value leaks a secret")
	}
}

// requireKind checks that err is an *llm.Error of kind and HTTP status.
func requireKind(t *testing.T, err error, kind llm.ErrorKind, status int) {
	t.Helper()
	e := llmError(t, err)
	require.Equal(t, kind, e.Kind, "%v", err)
	require.Equal(t, status, e.Status, "%v", err)
}

func llmError(t *testing.T, err error) *llm.Error {
	t.Helper()
	require.Error(t, err)
	var e *llm.Error
	require.ErrorAs(t, err, &e, "got %T: %v", err, err)
	return e
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := p.setup(t)
			b.fake.SetUsage(llmtest.Usage{PromptText: 120, PromptImage: 30, PromptAudio: 4, Candidates: 17, Thoughts: 5})
			b.fake.SetGenerate(func(c llmtest.GenerateCall) string {
				return fmt.Sprintf("{\n  \"objects\": [{\"name\": \"Acme\"}],\n  \"parts\": %d\n}", len(c.Parts))
			})
			temp := 0.2
			schema := map[string]any{"type": "object", "properties": map[string]any{"objects": map[string]any{"type": "array"}}}
			res, err := b.client.Generate(context.Background(), "m", llm.GenerateRequest{
				Purpose: llm.PurposeExtraction, System: "You extract objects.", Prompt: "Extract the objects.",
				Text: "Acme Corp is in Berlin.", Schema: schema, Temperature: &temp, MaxOutputTokens: 512,
			})
			require.NoError(t, err)
			require.JSONEq(t, `{"objects":[{"name":"Acme"}],"parts":2}`, string(res.JSON))
			require.Equal(t, `{"objects":[{"name":"Acme"}],"parts":2}`, string(res.JSON), "compacted")
			require.Equal(t, llm.Usage{InputText: 120, InputImage: 30, InputAudio: 4, Output: 22}, res.Usage)
			require.Equal(t, "m", res.Model)
			require.Positive(t, res.Duration)
			require.Equal(t, p.name, b.client.Provider())

			require.Equal(t, 1, b.fake.Count(llmtest.EndpointGenerate))
			var got llmtest.Request
			for _, r := range b.fake.Requests() {
				if r.Endpoint == llmtest.EndpointGenerate {
					got = r
				}
			}
			require.Equal(t, p.genPath, got.Path)
			var body struct {
				Contents []struct {
					Role  string `json:"role"`
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"contents"`
				SystemInstruction struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"systemInstruction"`
				GenerationConfig struct {
					ResponseMIMEType   string         `json:"responseMimeType"`
					ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
					Temperature        float64        `json:"temperature"`
					MaxOutputTokens    int            `json:"maxOutputTokens"`
				} `json:"generationConfig"`
			}
			require.NoError(t, json.Unmarshal(got.Body, &body))
			require.Len(t, body.Contents, 1)
			require.Equal(t, "user", body.Contents[0].Role)
			require.Len(t, body.Contents[0].Parts, 2, "prompt and text are separate parts")
			require.Equal(t, "Extract the objects.", body.Contents[0].Parts[0].Text)
			require.Equal(t, "Acme Corp is in Berlin.", body.Contents[0].Parts[1].Text)
			require.Equal(t, "You extract objects.", body.SystemInstruction.Parts[0].Text)
			require.Equal(t, "application/json", body.GenerationConfig.ResponseMIMEType)
			require.Equal(t, schema, body.GenerationConfig.ResponseJSONSchema)
			require.InDelta(t, 0.2, body.GenerationConfig.Temperature, 1e-6)
			require.Equal(t, 512, body.GenerationConfig.MaxOutputTokens)
			if b.vertex == nil {
				require.Equal(t, testAPIKey, got.Header.Get("x-goog-api-key"))
			} else {
				require.True(t, strings.HasPrefix(got.Header.Get("Authorization"), "Bearer ya29.llmtest-"))
				require.Empty(t, got.Header.Get("x-goog-api-key"))
			}
		})
	}
}

func TestGenerateDefaultUsageAndFence(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewGemini(t, testAPIKey)
	c, err := llm.NewKeyAI(context.Background(), testAPIKey, fake.URL(), fake.Client())
	require.NoError(t, err)
	fake.SetGenerate(func(llmtest.GenerateCall) string { return "```json\n{\"a\": [1, 2]}\n```" })
	res, err := c.Generate(context.Background(), "gemini-2.5-flash", llm.GenerateRequest{Prompt: "one two three", Text: "four five"})
	require.NoError(t, err)
	require.Equal(t, `{"a":[1,2]}`, string(res.JSON))
	// The fake's default usage: words of the request as text, of the answer
	// (fence included) as output.
	require.Equal(t, llm.Usage{InputText: 5, Output: 5}, res.Usage)
}

func TestGenerateNotJSON(t *testing.T) {
	t.Parallel()
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := p.setup(t)
			b.fake.SetGenerate(func(llmtest.GenerateCall) string { return "Sure! Here are the objects: Acme" })
			_, err := b.client.Generate(context.Background(), "m", llm.GenerateRequest{Prompt: "x"})
			requireKind(t, err, llm.ErrorInvalid, 0)
			require.Contains(t, err.Error(), "not valid JSON")
			require.True(t, jobqueue.IsPermanent(llm.JobError(err)))

			_, err = b.client.Generate(context.Background(), "m", llm.GenerateRequest{})
			requireKind(t, err, llm.ErrorInvalid, 0)
			require.Equal(t, 1, b.fake.Count(llmtest.EndpointGenerate), "an empty request is refused before sending")
		})
	}
}

func TestEmbedBatch(t *testing.T) {
	t.Parallel()
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := p.setup(t)
			texts := make([]string, 32)
			var estimate, words int64
			for i := range texts {
				texts[i] = fmt.Sprintf("chunk %d of the document about graph databases and embeddings", i)
				estimate += llm.EstimateTokens(texts[i])
				words += int64(llmtest.WordTokens(texts[i]))
			}
			res, err := b.client.Embed(context.Background(), p.embedModel, texts, 256)
			require.NoError(t, err)
			require.Equal(t, 1, b.fake.Count(llmtest.EndpointEmbed), "one request for the batch")
			require.Len(t, res.Vectors, 32)
			for i, v := range res.Vectors {
				require.Equal(t, llmtest.Vector(texts[i], 256), v, "vector %d in order", i)
			}
			require.Equal(t, p.embedModel, res.Model)
			require.Positive(t, res.Duration)
			if b.vertex != nil {
				require.Equal(t, words, res.Usage.InputText, "Vertex AI reports token counts")
			} else {
				require.Equal(t, estimate, res.Usage.InputText, "the Gemini API does not: estimated")
			}
			require.NotEqual(t, words, estimate, "the test must tell the two apart")

			// Dimension 0: the model default, no outputDimensionality sent.
			res, err = b.client.Embed(context.Background(), p.embedModel, texts[:2], 0)
			require.NoError(t, err)
			require.Len(t, res.Vectors[0], llmtest.DimensionDefault)
			reqs := b.fake.Requests()
			require.NotContains(t, string(reqs[len(reqs)-1].Body), "outputDimensionality")

			// No texts: no request.
			res, err = b.client.Embed(context.Background(), p.embedModel, nil, 0)
			require.NoError(t, err)
			require.Empty(t, res.Vectors)
			require.Equal(t, 2, b.fake.Count(llmtest.EndpointEmbed))

			_, err = b.client.Embed(context.Background(), p.embedModel, []string{"a", "  "}, 0)
			requireKind(t, err, llm.ErrorInvalid, 0)
			require.Contains(t, err.Error(), "text 1 is empty")
		})
	}
}

func TestEmbedSplitsAboveTheRequestLimit(t *testing.T) {
	t.Parallel()
	t.Run("key-ai 100 per request", func(t *testing.T) {
		t.Parallel()
		fake := llmtest.NewGemini(t, testAPIKey)
		c, err := llm.NewKeyAI(context.Background(), testAPIKey, fake.URL(), fake.Client())
		require.NoError(t, err)
		texts := make([]string, 250)
		for i := range texts {
			texts[i] = fmt.Sprintf("text number %d", i)
		}
		res, err := c.Embed(context.Background(), "gemini-embedding-001", texts, 8)
		require.NoError(t, err)
		require.Equal(t, 3, fake.Count(llmtest.EndpointEmbed))
		for i, v := range res.Vectors {
			require.Equal(t, llmtest.Vector(texts[i], 8), v, "vector %d in order", i)
		}
	})
	t.Run("account-ai gemini models one per request", func(t *testing.T) {
		t.Parallel()
		fake := llmtest.NewVertex(t, testProject, testLocation)
		c, err := llm.NewAccountAI(context.Background(), fake.ServiceAccountJSON(), testProject, testLocation, fake.URL(), fake.Client(), loopback)
		require.NoError(t, err)
		texts := []string{"alpha beta", "gamma", "delta epsilon zeta", "eta", "theta iota"}
		for _, model := range []string{"gemini-embedding-001", "gemini-embedding-2"} { // predict, embedContent
			before := fake.Count(llmtest.EndpointEmbed)
			res, err := c.Embed(context.Background(), model, texts, 16)
			require.NoError(t, err, model)
			require.Equal(t, len(texts), fake.Count(llmtest.EndpointEmbed)-before, model)
			for i, v := range res.Vectors {
				require.Equal(t, llmtest.Vector(texts[i], 16), v, "%s vector %d", model, i)
			}
			require.Equal(t, int64(9), res.Usage.InputText, "%s: reported word tokens", model)
		}
		paths := map[string]bool{}
		for _, r := range fake.Requests() {
			if r.Endpoint == llmtest.EndpointEmbed {
				paths[r.Path[strings.LastIndex(r.Path, ":"):]] = true
			}
		}
		require.Equal(t, map[string]bool{":predict": true, ":embedContent": true}, paths)
	})
	t.Run("account-ai predict token budget", func(t *testing.T) {
		t.Parallel()
		fake := llmtest.NewVertex(t, testProject, testLocation)
		c, err := llm.NewAccountAI(context.Background(), fake.ServiceAccountJSON(), testProject, testLocation, fake.URL(), fake.Client(), loopback)
		require.NoError(t, err)
		long := strings.Repeat("word ", 8000) // 10,000 estimated tokens
		_, err = c.Embed(context.Background(), "text-embedding-005", []string{long, long, "short"}, 4)
		require.NoError(t, err)
		require.Equal(t, 2, fake.Count(llmtest.EndpointEmbed), "20,000 estimated tokens do not fit one request")
	})
}

func TestListModels(t *testing.T) {
	t.Parallel()
	t.Run("key-ai", func(t *testing.T) {
		t.Parallel()
		fake := llmtest.NewGemini(t, testAPIKey)
		c, err := llm.NewKeyAI(context.Background(), testAPIKey, fake.URL(), fake.Client())
		require.NoError(t, err)
		ms, err := c.ListModels(context.Background())
		require.NoError(t, err)
		require.Equal(t, []llm.ModelInfo{
			{Name: "gemini-2.5-flash", DisplayName: "Gemini 2.5 Flash", Type: llm.ModelTypeGenerative, InputTokenLimit: 1048576, OutputTokenLimit: 65536},
			{Name: "gemini-2.5-pro", DisplayName: "Gemini 2.5 Pro", Type: llm.ModelTypeGenerative, InputTokenLimit: 1048576, OutputTokenLimit: 65536},
			{Name: "gemini-embedding-001", DisplayName: "Gemini Embedding 001", Type: llm.ModelTypeEmbedding, InputTokenLimit: 2048, OutputTokenLimit: 1, Dimension: 3072},
			{Name: "text-embedding-004", DisplayName: "Text Embedding 004", Type: llm.ModelTypeEmbedding, InputTokenLimit: 2048, OutputTokenLimit: 1, Dimension: 768},
		}, ms, "image and answer models are left out")
		require.Equal(t, 3, fake.Count(llmtest.EndpointModels), "every page is read")
	})
	t.Run("account-ai", func(t *testing.T) {
		t.Parallel()
		fake := llmtest.NewVertex(t, testProject, testLocation)
		c, err := llm.NewAccountAI(context.Background(), fake.ServiceAccountJSON(), testProject, testLocation, fake.URL(), fake.Client(), loopback)
		require.NoError(t, err)
		ms, err := c.ListModels(context.Background())
		require.NoError(t, err)
		require.Equal(t, []llm.ModelInfo{
			{Name: "gemini-2.5-flash", DisplayName: "gemini-2.5-flash", Type: llm.ModelTypeGenerative},
			{Name: "gemini-2.5-pro", DisplayName: "gemini-2.5-pro", Type: llm.ModelTypeGenerative},
			{Name: "gemini-embedding-001", DisplayName: "gemini-embedding-001", Type: llm.ModelTypeEmbedding, Dimension: 3072},
			{Name: "text-embedding-005", DisplayName: "text-embedding-005", Type: llm.ModelTypeEmbedding, Dimension: 768},
			{Name: "text-multilingual-embedding-002", DisplayName: "text-multilingual-embedding-002", Type: llm.ModelTypeEmbedding, Dimension: 768},
		}, ms)
		require.Equal(t, 4, fake.Count(llmtest.EndpointModels))
		for _, r := range fake.Requests() {
			if r.Endpoint == llmtest.EndpointModels {
				require.Equal(t, "/v1beta1/publishers/google/models", r.Path)
			}
		}
	})
}

func TestErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		program    func(f *llmtest.Fake)
		kind       llm.ErrorKind
		status     int
		retryAfter time.Duration // exact, or (with approx) roughly
		approx     bool
	}{
		{"401", func(f *llmtest.Fake) { f.FailNext(1, 401, "", "") }, llm.ErrorAuth, 401, 0, false},
		{"403", func(f *llmtest.Fake) { f.FailNext(1, 403, "", "") }, llm.ErrorAuth, 403, 0, false},
		{"429 Retry-After seconds", func(f *llmtest.Fake) { f.FailNext(1, 429, "7", "") }, llm.ErrorRateLimit, 429, 7 * time.Second, false},
		{"429 Retry-After date", func(f *llmtest.Fake) {
			f.FailNext(1, 429, time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat), "")
		}, llm.ErrorRateLimit, 429, 90 * time.Second, true},
		{"429 RetryInfo", func(f *llmtest.Fake) {
			f.FailNext(1, 429, "", llmtest.ErrorBody(429, "Resource has been exhausted (e.g. check quota).", "31s"))
		}, llm.ErrorRateLimit, 429, 31 * time.Second, false},
		{"429 bare", func(f *llmtest.Fake) { f.FailNext(1, 429, "", "") }, llm.ErrorRateLimit, 429, 0, false},
		{"400", func(f *llmtest.Fake) { f.FailNext(1, 400, "", "") }, llm.ErrorInvalid, 400, 0, false},
		{"404", func(f *llmtest.Fake) { f.FailNext(1, 404, "", "") }, llm.ErrorInvalid, 404, 0, false},
		{"500", func(f *llmtest.Fake) { f.FailNext(1, 500, "", "") }, llm.ErrorTransient, 500, 0, false},
		{"503 plain text", func(f *llmtest.Fake) { f.FailNext(1, 503, "", "upstream connect error") }, llm.ErrorTransient, 503, 0, false},
		{"malformed JSON", func(f *llmtest.Fake) { f.SetMalformed(true) }, llm.ErrorInvalid, 200, 0, false},
	}
	calls := []struct {
		name string
		call func(c llm.Client, embedModel string) error
	}{
		{"generate", func(c llm.Client, _ string) error {
			_, err := c.Generate(context.Background(), "m", llm.GenerateRequest{Prompt: "p"})
			return err
		}},
		{"embed", func(c llm.Client, model string) error {
			_, err := c.Embed(context.Background(), model, []string{"a", "b"}, 0)
			return err
		}},
		{"list", func(c llm.Client, _ string) error {
			_, err := c.ListModels(context.Background())
			return err
		}},
	}
	for _, p := range providers() {
		for _, tc := range cases {
			for _, call := range calls {
				t.Run(p.name+"/"+tc.name+"/"+call.name, func(t *testing.T) {
					t.Parallel()
					b := p.setup(t)
					tc.program(b.fake)
					err := call.call(b.client, p.embedModel)
					requireKind(t, err, tc.kind, tc.status)
					e := llmError(t, err)
					if tc.approx {
						require.InDelta(t, tc.retryAfter.Seconds(), e.RetryAfter.Seconds(), 3)
					} else {
						require.Equal(t, tc.retryAfter, e.RetryAfter)
					}
					require.Contains(t, err.Error(), p.name)
					requireNoSecrets(t, err, b.secrets)

					je := llm.JobError(err)
					switch tc.kind {
					case llm.ErrorRateLimit:
						require.Equal(t, jobqueue.RateLimited(err, e.RetryAfter), je)
						require.False(t, jobqueue.IsPermanent(je))
					case llm.ErrorAuth, llm.ErrorInvalid:
						require.True(t, jobqueue.IsPermanent(je))
					default:
						require.Same(t, err, je, "transient errors stay plain: retried with backoff")
					}
					require.ErrorAs(t, je, &e, "the *llm.Error stays reachable")

					// The failure was one-off (except malformed mode): the next call works.
					if tc.name != "malformed JSON" {
						require.NoError(t, call.call(b.client, p.embedModel))
					}
				})
			}
		}
	}
}

func TestKeyAIWrongKey(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewGemini(t, testAPIKey)
	wrong := "AIzaSy-wrong-key-9876543210zyxwvuts"
	c, err := llm.NewKeyAI(context.Background(), wrong, fake.URL(), fake.Client())
	require.NoError(t, err)
	_, err = c.Generate(context.Background(), "m", llm.GenerateRequest{Prompt: "p"})
	requireKind(t, err, llm.ErrorAuth, 400)
	require.Contains(t, err.Error(), "API key not valid")
	requireNoSecrets(t, err, []string{wrong, testAPIKey})
	require.True(t, jobqueue.IsPermanent(llm.JobError(err)))
}

func TestAccountAITokenExchange(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewVertex(t, testProject, testLocation)
	sa := fake.ServiceAccountJSON()
	secrets := serviceAccountSecrets(t, sa)
	c, err := llm.NewAccountAI(context.Background(), sa, "", testLocation, fake.URL(), fake.Client(), loopback)
	require.NoError(t, err, "the project defaults to the key file's project_id")
	require.Equal(t, 0, fake.Count(llmtest.EndpointToken), "no request before the first call")

	// A rejected assertion is an auth error that names the OAuth error.
	fake.FailTokenNext(1, 400, "")
	_, err = c.Generate(context.Background(), "m", llm.GenerateRequest{Prompt: "p"})
	requireKind(t, err, llm.ErrorAuth, 400)
	require.Contains(t, err.Error(), "invalid_grant")
	requireNoSecrets(t, err, secrets)
	require.Equal(t, 0, fake.Count(llmtest.EndpointGenerate), "nothing sent without a token")

	// A token endpoint outage is transient.
	fake.FailTokenNext(1, 503, `{"error":"backend_error"}`)
	_, err = c.Generate(context.Background(), "m", llm.GenerateRequest{Prompt: "p"})
	requireKind(t, err, llm.ErrorTransient, 503)

	// The exchange works, and the token is reused.
	for range 3 {
		_, err = c.Generate(context.Background(), "m", llm.GenerateRequest{Prompt: "p"})
		require.NoError(t, err)
	}
	require.Equal(t, 3, fake.Count(llmtest.EndpointToken), "two failed exchanges, then one token for three calls")
	require.Equal(t, 3, fake.Count(llmtest.EndpointGenerate))
	for _, r := range fake.Requests() {
		if r.Endpoint == llmtest.EndpointToken {
			require.Contains(t, string(r.Body), "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer")
		}
	}

	// A key the token endpoint does not know.
	other := llmtest.NewVertex(t, testProject, testLocation)
	c, err = llm.NewAccountAI(context.Background(), other.ServiceAccountJSON(), testProject, testLocation, fake.URL(), fake.Client(), loopback)
	require.NoError(t, err)
	_, err = c.Generate(context.Background(), "m", llm.GenerateRequest{Prompt: "p"})
	// The other fake's token_uri answers, but the API (this fake) does not
	// know its token.
	requireKind(t, err, llm.ErrorAuth, 401)
}

func TestAccountAIWrongProject(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewVertex(t, testProject, testLocation)
	c, err := llm.NewAccountAI(context.Background(), fake.ServiceAccountJSON(), "someone-else", testLocation, fake.URL(), fake.Client(), loopback)
	require.NoError(t, err)
	_, err = c.Generate(context.Background(), "m", llm.GenerateRequest{Prompt: "p"})
	requireKind(t, err, llm.ErrorInvalid, 404)
}

func TestNetworkErrorIsTransient(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url, client := srv.URL, srv.Client()
	srv.Close()
	c, err := llm.NewKeyAI(context.Background(), testAPIKey, url, client)
	require.NoError(t, err)
	_, err = c.Generate(context.Background(), "m", llm.GenerateRequest{Prompt: "p"})
	requireKind(t, err, llm.ErrorTransient, 0)
	requireNoSecrets(t, err, []string{testAPIKey})
	require.Same(t, err, llm.JobError(err))
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := p.setup(t)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := b.client.Generate(ctx, "m", llm.GenerateRequest{Prompt: "p"})
			require.ErrorIs(t, err, context.Canceled)
			var e *llm.Error
			require.False(t, errors.As(err, &e), "a cancelled call is not a provider error")
			_, err = b.client.Embed(ctx, p.embedModel, []string{"a"}, 0)
			require.ErrorIs(t, err, context.Canceled)
		})
	}
}

func TestConstructorErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := llm.NewKeyAI(ctx, " ", "", nil)
	requireKind(t, err, llm.ErrorAuth, 0)
	_, err = llm.NewKeyAI(ctx, testAPIKey, "not a url", nil)
	requireKind(t, err, llm.ErrorInvalid, 0)
	requireNoSecrets(t, err, []string{testAPIKey})

	fake := llmtest.NewVertex(t, testProject, testLocation)
	sa := fake.ServiceAccountJSON()
	_, err = llm.NewAccountAI(ctx, []byte(`{"type":"authorized_user"}`), testProject, testLocation, "", nil, loopback)
	requireKind(t, err, llm.ErrorAuth, 0)
	require.Contains(t, llmError(t, err).Message, `"type" is "authorized_user"`)
	_, err = llm.NewAccountAI(ctx, sa, testProject, testLocation, "ftp://x", nil, loopback)
	requireKind(t, err, llm.ErrorInvalid, 0)
	noProject := strings.Replace(string(sa), `"project_id": "`+testProject+`"`, `"project_id": ""`, 1)
	require.NotEqual(t, string(sa), noProject)
	_, err = llm.NewAccountAI(ctx, []byte(noProject), "", testLocation, "", nil, loopback)
	requireKind(t, err, llm.ErrorInvalid, 0)
	require.Contains(t, err.Error(), "no GCP project")

	// Defaults: genai's endpoints, no request made.
	c, err := llm.NewKeyAI(ctx, testAPIKey, "", nil)
	require.NoError(t, err)
	require.Equal(t, llm.ProviderKeyAI, c.Provider())
	c, err = llm.NewAccountAI(ctx, sa, testProject, "", "", nil, loopback)
	require.NoError(t, err)
	require.Equal(t, llm.ProviderAccountAI, c.Provider())
}

func TestJobError(t *testing.T) {
	t.Parallel()
	require.NoError(t, llm.JobError(nil))
	plain := errors.New("boom")
	require.Same(t, plain, llm.JobError(plain))

	rl := fmt.Errorf("extract window 3: %w", &llm.Error{Kind: llm.ErrorRateLimit, Status: 429, RetryAfter: time.Minute, Message: "slow down"})
	require.Equal(t, jobqueue.RateLimited(rl, time.Minute), llm.JobError(rl))
	require.Contains(t, llm.JobError(rl).Error(), "retry after 1m0s")

	for _, k := range []llm.ErrorKind{llm.ErrorAuth, llm.ErrorInvalid} {
		err := &llm.Error{Kind: k, Message: "no"}
		require.True(t, jobqueue.IsPermanent(llm.JobError(err)), k)
	}
	tr := &llm.Error{Kind: llm.ErrorTransient, Status: 502, Message: "bad gateway"}
	require.Equal(t, error(tr), llm.JobError(tr))
	require.Equal(t, "llm transient (HTTP 502): bad gateway", tr.Error())
}

// TestAccountAITokenEndpointEgress: the token endpoint a service-account
// file names is checked when the client is built (Google's, or one the
// allow list names), never followed through a redirect, and the provider
// calls dial through the egress guard, redirects included.
func TestAccountAITokenEndpointEgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := llmtest.NewVertex(t, testProject, testLocation)
	sa := fake.ServiceAccountJSON() // token_uri http://127.0.0.1:<port>/token

	// Not named by the allow list: refused before any request.
	for _, allow := range []*egress.Guard{nil, mustGuard(), mustGuard("10.0.0.0/8", "oauth2.example.com")} {
		_, err := llm.NewAccountAI(ctx, sa, testProject, testLocation, fake.URL(), fake.Client(), allow)
		requireKind(t, err, llm.ErrorAuth, 0)
		require.Contains(t, err.Error(), "token_uri")
		require.Contains(t, err.Error(), "GRAPHMILL_EGRESS_ALLOW")
	}
	require.Zero(t, fake.Count(llmtest.EndpointToken))

	// A token endpoint that redirects: the signed assertion is not sent on.
	var redirected int
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected++
		http.Redirect(w, r, fake.URL()+llmtest.TokenPath, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	moved := strings.Replace(string(sa), fake.URL()+llmtest.TokenPath, redirector.URL+"/token", 1)
	require.NotEqual(t, string(sa), moved)
	c, err := llm.NewAccountAI(ctx, []byte(moved), testProject, testLocation, fake.URL(), fake.Client(), loopback)
	require.NoError(t, err)
	_, err = c.Generate(ctx, "m", llm.GenerateRequest{Prompt: "p"})
	require.Error(t, err)
	require.Equal(t, 1, redirected)
	require.Zero(t, fake.Count(llmtest.EndpointToken), "the redirect was not followed")

	// The API calls dial through the guard: a redirect to an address the
	// guard does not allow is refused at the dial.
	_, fakePort, err := net.SplitHostPort(strings.TrimPrefix(fake.URL(), "http://"))
	require.NoError(t, err)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fake.URL()+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(api.Close)
	guard := mustGuard(strings.TrimPrefix(api.URL, "http://")) // the API's host:port only
	c, err = llm.NewKeyAI(ctx, testAPIKey, api.URL, guard.Client(0))
	require.NoError(t, err)
	_, err = c.Generate(ctx, "m", llm.GenerateRequest{Prompt: "p"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "GRAPHMILL_EGRESS_ALLOW")
	require.Contains(t, err.Error(), fakePort)
	require.Zero(t, fake.Count(llmtest.EndpointGenerate))
}

// TestRedirectToAnotherOriginCarriesNoCredential: whatever client they
// are given, the provider clients follow the egress redirect policy. A
// redirect of the API to another origin gets neither the API key (genai
// sets it as a header, which Go would copy) nor a Referer; the access
// token of a service account (added by a transport below the redirect
// logic, so it would be added again) is never sent there: the hop is
// refused.
func TestRedirectToAnotherOriginCarriesNoCredential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var landed []http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		landed = append(landed, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error": {"code": 404, "message": "not here", "status": "NOT_FOUND"}}`))
	}))
	t.Cleanup(other.Close)
	moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(moved.Close)
	received := func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), landed...)
	}

	c, err := llm.NewKeyAI(ctx, testAPIKey, moved.URL+"/?key=query-secret-1", moved.Client())
	require.NoError(t, err)
	_, err = c.Generate(ctx, "m", llm.GenerateRequest{Prompt: "p"})
	require.Error(t, err)
	require.NotEmpty(t, received(), "the redirect was followed")
	for _, h := range received() {
		require.Empty(t, h.Values("X-Goog-Api-Key"))
		require.Empty(t, h.Values("Referer"))
	}

	vertex := llmtest.NewVertex(t, testProject, testLocation)
	before := len(received())
	c, err = llm.NewAccountAI(ctx, vertex.ServiceAccountJSON(), testProject, testLocation, moved.URL, vertex.Client(), loopback)
	require.NoError(t, err)
	_, err = c.Generate(ctx, "m", llm.GenerateRequest{Prompt: "p"})
	require.Error(t, err)
	for _, h := range received()[before:] {
		require.Empty(t, h.Values("Authorization"))
	}
	require.Contains(t, err.Error(), "redirect")
	require.Len(t, received(), before, "the hop to another origin is refused")
}
