package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	"golang.org/x/sync/errgroup"
	"google.golang.org/genai"

	"github.com/graphmill/graphmill/internal/egress"
)

// Per-request limits of the embedding endpoints.
const (
	// geminiEmbedBatchMax is the Gemini API's batchEmbedContents limit.
	geminiEmbedBatchMax = 100
	// vertexPredictBatchMax is the Vertex AI predict limit of the
	// text-embedding models.
	vertexPredictBatchMax = 250
	// vertexPredictTokenBudget bounds the estimated tokens of one predict
	// request: Vertex AI allows 20,000 input tokens per request, and the
	// estimate (EstimateTokens) can undercount, so a quarter is held back.
	vertexPredictTokenBudget = 15000
	// embedConcurrency bounds the requests in flight when one Embed call
	// needs several (more texts than a request takes, or Vertex AI's
	// one-text-per-request Gemini embedding models).
	embedConcurrency = 4
)

// cloudPlatformScope is the OAuth scope of Vertex AI.
const cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// locationDefault is used for account-ai when no location is given: the
// global endpoint, as genai itself defaults.
const locationDefault = "global"

// genaiClient is a Client on google.golang.org/genai, for both backends.
type genaiClient struct {
	provider string
	vertex   bool
	client   *genai.Client
	redact   *strings.Replacer
	now      func() time.Time
}

// NewKeyAI returns the "key-ai" client: the Gemini API with an API key
// (sent as x-goog-api-key). baseURL overrides the endpoint (empty: genai's
// default, https://generativelanguage.googleapis.com/); httpClient may be
// nil. It makes no request.
func NewKeyAI(ctx context.Context, apiKey, baseURL string, httpClient *http.Client) (Client, error) {
	apiKey = strings.TrimSpace(apiKey)
	if apiKey == "" {
		return nil, &Error{Kind: ErrorAuth, Message: ProviderKeyAI + ": the API key is empty"}
	}
	if err := checkBaseURL(baseURL); err != nil {
		return nil, &Error{Kind: ErrorInvalid, Message: ProviderKeyAI + ": " + err.Error()}
	}
	c := &genaiClient{
		provider: ProviderKeyAI,
		redact:   newRedactor(apiKey),
		now:      time.Now,
	}
	gc, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      apiKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  withCaptureTransport(httpClient, nil, c.now),
		HTTPOptions: genai.HTTPOptions{BaseURL: baseURL},
	})
	if err != nil {
		// genai's configuration errors print the whole config, key included.
		return nil, &Error{Kind: ErrorInvalid, Message: c.redact.Replace(ProviderKeyAI + ": configure client: " + err.Error())}
	}
	c.client = gc
	return c, nil
}

// NewAccountAI returns the "account-ai" client: Vertex AI in gcpProject
// (the key file's project_id when empty) and location ("global" when
// empty), authenticated by the service-account key file
// serviceAccountJSON, whose token_uri must be Google's or one that allow
// names (see ValidateServiceAccountJSON). Access tokens come from the
// OAuth JWT-bearer exchange at that token_uri, through httpClient (nil: a
// default client) with redirects refused (they would carry the signed
// assertion elsewhere), and are cached and refreshed by
// cloud.google.com/go/auth. baseURL overrides the endpoint (empty: the
// location's aiplatform endpoint). It makes no request.
func NewAccountAI(ctx context.Context, serviceAccountJSON []byte, gcpProject, location, baseURL string, httpClient *http.Client, allow AllowList) (Client, error) {
	sa, err := parseServiceAccount(serviceAccountJSON, allow)
	if err != nil {
		return nil, &Error{Kind: ErrorAuth, Message: ProviderAccountAI + ": " + err.Error()}
	}
	if err := checkBaseURL(baseURL); err != nil {
		return nil, &Error{Kind: ErrorInvalid, Message: ProviderAccountAI + ": " + err.Error()}
	}
	if gcpProject = strings.TrimSpace(gcpProject); gcpProject == "" {
		gcpProject = sa.ProjectID
	}
	if gcpProject == "" {
		return nil, &Error{Kind: ErrorInvalid, Message: ProviderAccountAI + ": no GCP project given and none in the service account credentials"}
	}
	if location = strings.TrimSpace(location); location == "" {
		location = locationDefault
	}
	c := &genaiClient{
		provider: ProviderAccountAI,
		vertex:   true,
		redact:   newRedactor(sa.secrets()...),
		now:      time.Now,
	}
	tokenClient := &http.Client{}
	if httpClient != nil {
		*tokenClient = *httpClient
	}
	tokenClient.CheckRedirect = func(*http.Request, []*http.Request) error {
		return errors.New("the token endpoint redirected; refused")
	}
	creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, serviceAccountJSON, &credentials.DetectOptions{
		Scopes: []string{cloudPlatformScope},
		Client: tokenClient,
		// Refresh in the calling goroutine: no token goroutines without an
		// owner.
		DisableAsyncRefresh: true,
	})
	if err != nil {
		return nil, &Error{Kind: ErrorAuth, Message: c.redact.Replace(ProviderAccountAI + ": load service account: " + err.Error())}
	}
	// The access token is added by a transport below the redirect logic,
	// so it would go with every hop: a hop to another origin is refused.
	apiClient := &http.Client{}
	if httpClient != nil {
		*apiClient = *httpClient
	}
	apiClient.CheckRedirect = chainRedirect(func(req *http.Request, via []*http.Request) error {
		if egress.CrossOrigin(req, via) {
			return errors.New("the API redirected to another origin; refused, as the request carries the service account's access token")
		}
		return nil
	}, apiClient.CheckRedirect)
	var authErr error
	hc := withCaptureTransport(apiClient, func(base http.RoundTripper) http.RoundTripper {
		authed := &http.Client{Transport: base}
		authErr = httptransport.AddAuthorizationMiddleware(authed, creds)
		return authed.Transport
	}, c.now)
	if authErr != nil {
		return nil, &Error{Kind: ErrorInvalid, Message: c.redact.Replace(ProviderAccountAI + ": " + authErr.Error())}
	}
	headers := http.Header{}
	if sa.QuotaProjectID != "" {
		headers.Set("X-Goog-User-Project", sa.QuotaProjectID)
	}
	gc, err := genai.NewClient(ctx, &genai.ClientConfig{
		Backend:     genai.BackendVertexAI,
		Project:     gcpProject,
		Location:    location,
		HTTPClient:  hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: baseURL, Headers: headers},
	})
	if err != nil {
		return nil, &Error{Kind: ErrorInvalid, Message: c.redact.Replace(ProviderAccountAI + ": configure client: " + err.Error())}
	}
	c.client = gc
	return c, nil
}

func checkBaseURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errors.New("the base URL is not an absolute http(s) URL")
	}
	return nil
}

func newRedactor(secrets ...string) *strings.Replacer {
	var pairs []string
	for _, s := range secrets {
		if s != "" {
			pairs = append(pairs, s, "[redacted]")
		}
	}
	return strings.NewReplacer(pairs...)
}

// Provider implements Client.
func (c *genaiClient) Provider() string { return c.provider }

// Generate implements Client. The prompt and the source text go as two
// parts of one user turn; the response is requested as application/json
// under req.Schema (as responseJsonSchema).
func (c *genaiClient) Generate(ctx context.Context, model string, req GenerateRequest) (*GenerateResult, error) {
	op := "generate " + model
	if model == "" {
		return nil, c.invalid("generate", "no model given")
	}
	var parts []*genai.Part
	if req.Prompt != "" {
		parts = append(parts, genai.NewPartFromText(req.Prompt))
	}
	if req.Text != "" {
		parts = append(parts, genai.NewPartFromText(req.Text))
	}
	if len(parts) == 0 {
		return nil, c.invalid(op, "the request has neither prompt nor text")
	}
	cfg := &genai.GenerateContentConfig{ResponseMIMEType: "application/json"}
	if req.System != "" {
		cfg.SystemInstruction = genai.NewContentFromText(req.System, genai.RoleUser)
	}
	if req.Schema != nil {
		cfg.ResponseJsonSchema = req.Schema
	}
	genaiSampling(cfg, req.Temperature, req.MaxOutputTokens)
	contents := []*genai.Content{genai.NewContentFromParts(parts, genai.RoleUser)}

	start := c.now()
	cctx, capt := withCapture(ctx)
	resp, err := guard(func() (*genai.GenerateContentResponse, error) {
		return c.client.Models.GenerateContent(cctx, model, contents, cfg)
	})
	if err != nil {
		return nil, c.classify(ctx, op, capt, err)
	}
	dur := c.now().Sub(start)
	text := responseText(resp)
	if text == "" {
		return nil, c.invalid(op, "empty response"+finishNote(resp))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(trimJSONFence(text))); err != nil {
		return nil, c.invalid(op, "the response is not valid JSON"+finishNote(resp))
	}
	return &GenerateResult{
		JSON:     json.RawMessage(buf.Bytes()),
		Usage:    usageFromMetadata(resp.UsageMetadata),
		Model:    model,
		Duration: dur,
	}, nil
}

// genaiSampling sets the temperature (nil: the model's default) and the
// output bound (0: none) of cfg.
func genaiSampling(cfg *genai.GenerateContentConfig, temperature *float64, maxOutput int) {
	if temperature != nil {
		t := float32(*temperature)
		cfg.Temperature = &t
	}
	if maxOutput > 0 {
		cfg.MaxOutputTokens = int32(min(maxOutput, math.MaxInt32)) //nolint:gosec // clamped to int32
	}
}

// responseText concatenates the text parts of the first candidate,
// thoughts excluded.
func responseText(resp *genai.GenerateContentResponse) string {
	if resp == nil || len(resp.Candidates) == 0 || resp.Candidates[0] == nil || resp.Candidates[0].Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range resp.Candidates[0].Content.Parts {
		if p != nil && !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return strings.TrimSpace(b.String())
}

// finishNote explains an unusable response: a blocked prompt or a finish
// reason other than STOP.
func finishNote(resp *genai.GenerateContentResponse) string {
	if resp == nil {
		return ""
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		return fmt.Sprintf(" (prompt blocked: %s)", pf.BlockReason)
	}
	if len(resp.Candidates) > 0 && resp.Candidates[0] != nil {
		if fr := resp.Candidates[0].FinishReason; fr != "" && fr != genai.FinishReasonStop {
			return fmt.Sprintf(" (finish reason %s)", fr)
		}
	}
	return ""
}

// trimJSONFence removes a Markdown code fence some models wrap JSON in.
func trimJSONFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSuffix(strings.TrimSpace(s), "```")
}

// usageFromMetadata splits prompt tokens by modality (documents count as
// text) and counts thinking tokens as output.
func usageFromMetadata(m *genai.GenerateContentResponseUsageMetadata) Usage {
	if m == nil {
		return Usage{}
	}
	u := Usage{Output: int64(m.CandidatesTokenCount) + int64(m.ThoughtsTokenCount)}
	if len(m.PromptTokensDetails) == 0 {
		u.InputText = int64(m.PromptTokenCount)
		return u.Bounded()
	}
	for _, d := range m.PromptTokensDetails {
		if d == nil {
			continue
		}
		n := int64(d.TokenCount)
		switch d.Modality {
		case genai.MediaModalityImage:
			u.InputImage += n
		case genai.MediaModalityVideo:
			u.InputVideo += n
		case genai.MediaModalityAudio:
			u.InputAudio += n
		default:
			u.InputText += n
		}
	}
	return u.Bounded()
}

// Embed implements Client. Texts must not be empty. The Gemini API takes
// up to 100 texts per batchEmbedContents request; Vertex AI's predict
// (text-embedding and text-multilingual-embedding models) up to 250 and
// about 20,000 tokens; Vertex AI's Gemini embedding models one text per
// request, so those calls make one request per text, a few at a time.
func (c *genaiClient) Embed(ctx context.Context, model string, texts []string, dimension int) (*EmbedResult, error) {
	op, problem := embedInputProblem(model, texts, dimension)
	if problem != "" {
		return nil, c.invalid(op, problem)
	}
	start := c.now()
	res := &EmbedResult{Vectors: make([][]float32, len(texts)), Model: model}
	if len(texts) == 0 {
		return res, nil
	}
	batches := c.embedBatches(model, texts)
	tokens := make([]int64, len(batches))
	run := func(ctx context.Context, i int) error {
		b := batches[i]
		n, err := c.embedBatch(ctx, op, model, texts[b[0]:b[1]], dimension, res.Vectors[b[0]:b[1]])
		tokens[i] = n
		return err
	}
	if len(batches) == 1 {
		if err := run(ctx, 0); err != nil {
			return nil, err
		}
	} else {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(embedConcurrency)
		for i := range batches {
			g.Go(func() error { return run(gctx, i) })
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	dim := len(res.Vectors[0])
	for i, v := range res.Vectors {
		if len(v) != dim {
			return nil, c.invalid(op, fmt.Sprintf("vector %d has %d dimensions, vector 0 has %d", i, len(v), dim))
		}
	}
	for _, n := range tokens {
		res.Usage.InputText += n
	}
	res.Duration = c.now().Sub(start)
	return res, nil
}

// embedBatches splits texts into [start, end) ranges of at most one
// request each.
func (c *genaiClient) embedBatches(model string, texts []string) [][2]int {
	maxTexts, tokenBudget := geminiEmbedBatchMax, int64(0)
	if c.vertex {
		maxTexts, tokenBudget = vertexPredictBatchMax, vertexPredictTokenBudget
		// genai sends Vertex AI's Gemini embedding models (and
		// gemini-embedding-001, which Vertex AI limits to one text) one
		// content per request.
		if strings.Contains(model, "gemini") || strings.Contains(model, "maas") {
			maxTexts = 1
		}
	}
	var out [][2]int
	start, budget := 0, int64(0)
	for i, t := range texts {
		n := EstimateTokens(t)
		full := i-start >= maxTexts || (tokenBudget > 0 && i > start && budget+n > tokenBudget)
		if full {
			out = append(out, [2]int{start, i})
			start, budget = i, 0
		}
		budget += n
	}
	return append(out, [2]int{start, len(texts)})
}

// embedBatch makes one request for texts, writes the vectors into out and
// returns the input tokens: reported per text when the provider reports
// them, estimated otherwise.
func (c *genaiClient) embedBatch(ctx context.Context, op, model string, texts []string, dimension int, out [][]float32) (int64, error) {
	contents := make([]*genai.Content, len(texts))
	for i, t := range texts {
		contents[i] = genai.NewContentFromText(t, genai.RoleUser)
	}
	cfg := &genai.EmbedContentConfig{}
	if dimension > 0 {
		d := int32(min(dimension, math.MaxInt32)) //nolint:gosec // clamped to int32
		cfg.OutputDimensionality = &d
	}
	cctx, capt := withCapture(ctx)
	resp, err := guard(func() (*genai.EmbedContentResponse, error) {
		return c.client.Models.EmbedContent(cctx, model, contents, cfg)
	})
	if err != nil {
		return 0, c.classify(ctx, op, capt, err)
	}
	if len(resp.Embeddings) != len(texts) {
		return 0, c.invalid(op, fmt.Sprintf("%d embeddings for %d texts", len(resp.Embeddings), len(texts)))
	}
	var tokens int64
	for i, e := range resp.Embeddings {
		if e == nil || len(e.Values) == 0 {
			return 0, c.invalid(op, fmt.Sprintf("embedding %d is empty", i))
		}
		if dimension > 0 && len(e.Values) != dimension {
			return 0, c.invalid(op, fmt.Sprintf("embedding %d has %d dimensions, asked for %d", i, len(e.Values), dimension))
		}
		out[i] = e.Values
		if e.Statistics != nil && e.Statistics.TokenCount > 0 {
			tokens += int64(e.Statistics.TokenCount)
		} else {
			tokens += EstimateTokens(texts[i])
		}
	}
	return tokens, nil
}

// ListModels implements Client. The Gemini API lists every model of the
// key with its supported actions and token limits. Vertex AI lists
// Google's publisher models (genai's QueryBase): the list is partial, as it
// carries no token limits or supported actions and leaves out models
// enabled only in the project (tuned or Model Garden deployments); models
// are classified by name there and those that are neither Gemini nor
// embedding models are left out.
func (c *genaiClient) ListModels(ctx context.Context) ([]ModelInfo, error) {
	cctx, capt := withCapture(ctx)
	ms, err := guard(func() ([]*genai.Model, error) {
		var out []*genai.Model
		for m, err := range c.client.Models.All(cctx) {
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
		return out, nil
	})
	if err != nil {
		return nil, c.classify(ctx, "list models", capt, err)
	}
	var out []ModelInfo
	for _, m := range ms {
		if info, ok := modelInfo(m); ok {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b ModelInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func modelInfo(m *genai.Model) (ModelInfo, bool) {
	if m == nil {
		return ModelInfo{}, false
	}
	name := m.Name
	if i := strings.LastIndex(name, "/models/"); i >= 0 {
		name = name[i+len("/models/"):]
	}
	name = strings.TrimPrefix(name, "models/")
	if name == "" {
		return ModelInfo{}, false
	}
	info := ModelInfo{
		Name:             name,
		DisplayName:      m.DisplayName,
		InputTokenLimit:  int(m.InputTokenLimit),
		OutputTokenLimit: int(m.OutputTokenLimit),
	}
	if info.DisplayName == "" {
		info.DisplayName = name
	}
	switch {
	case slices.Contains(m.SupportedActions, "embedContent") || slices.Contains(m.SupportedActions, "batchEmbedContents"):
		info.Type = ModelTypeEmbedding
	case slices.Contains(m.SupportedActions, "generateContent"):
		info.Type = ModelTypeGenerative
	case len(m.SupportedActions) > 0:
		return ModelInfo{}, false
	case strings.Contains(name, "embedding"):
		info.Type = ModelTypeEmbedding
	case strings.HasPrefix(name, "gemini"):
		info.Type = ModelTypeGenerative
	default:
		return ModelInfo{}, false
	}
	if info.Type == ModelTypeEmbedding {
		info.Dimension = embeddingDimensionDefault(name)
	}
	return info, true
}

// embeddingDimensionDefault is the default output dimension of Google's
// published embedding models, 0 when unknown.
func embeddingDimensionDefault(name string) int {
	switch {
	case strings.HasPrefix(name, "gemini-embedding"):
		return 3072
	case strings.HasPrefix(name, "text-embedding"), strings.HasPrefix(name, "text-multilingual-embedding"), strings.HasPrefix(name, "embedding-"):
		return 768
	case strings.HasPrefix(name, "multimodalembedding"):
		return 1408
	default:
		return 0
	}
}

// panicError is a panic inside genai, which indexes decoded responses with
// unchecked type assertions: a malformed response must not take the worker
// down.
type panicError struct{ v any }

func (e panicError) Error() string { return fmt.Sprintf("undecodable response (%v)", e.v) }

// guard runs f, turning a panic into a panicError.
func guard[T any](f func() (T, error)) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError{v: r}
		}
	}()
	return f()
}

func (c *genaiClient) invalid(op, msg string) *Error {
	return &Error{Kind: ErrorInvalid, Message: c.redact.Replace(c.provider + " " + op + ": " + msg)}
}

// classify turns an error from genai into an *Error, or into the context's
// error when the call was cancelled.
func (c *genaiClient) classify(ctx context.Context, op string, capt *callCapture, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s %s: %w", c.provider, op, ctxErr)
	}
	sent, status, retryAfter := capt.snapshot()
	e := &Error{Status: status, RetryAfter: retryAfter}
	var (
		msg     string
		apiErr  genai.APIError
		authErr *auth.Error
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
		panicE  panicError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &apiErr):
		if apiErr.Code != 0 {
			e.Status = apiErr.Code
		}
		e.Kind = kindForStatus(e.Status)
		if e.Kind == ErrorInvalid && isAuthReason(errorReason(apiErr.Details)) {
			e.Kind = ErrorAuth
		}
		e.RetryAfter = max(e.RetryAfter, retryDelayFromDetails(apiErr.Details))
		msg = apiErr.Message
		if msg == "" {
			msg = apiErr.Status
		}
		if msg == "" {
			msg = http.StatusText(e.Status)
		}
	case errors.As(err, &authErr):
		// The token endpoint refused the service account's assertion (a
		// network failure on the way there is a net.Error, below).
		msg = "service-account token exchange failed"
		e.Status, e.RetryAfter = 0, 0
		if r := authErr.Response; r != nil {
			e.Status = r.StatusCode
			e.RetryAfter = parseRetryAfter(r.Header.Get("Retry-After"), c.now())
		}
		switch kindForStatus(e.Status) {
		case ErrorRateLimit:
			e.Kind = ErrorRateLimit
		case ErrorTransient:
			e.Kind = ErrorTransient
		default:
			e.Kind = ErrorAuth
		}
		if m := oauthErrorMessage(authErr.Body); m != "" {
			msg += ": " + m
		}
	case errors.As(err, &syntax), errors.As(err, &typeErr), errors.As(err, &panicE):
		e.Kind = ErrorInvalid
		msg = "malformed response"
		switch {
		case syntax != nil:
			msg += ": " + syntax.Error()
		case typeErr != nil:
			msg += ": " + typeErr.Error()
		default:
			msg += ": " + panicE.Error()
		}
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		e.Kind = ErrorTransient
		msg = err.Error()
	case sent && status >= 200 && status < 300:
		e.Kind = ErrorInvalid
		msg = "undecodable response: " + err.Error()
	case !sent:
		e.Kind = ErrorInvalid
		msg = "request not sent: " + err.Error()
	default:
		e.Kind = ErrorTransient
		msg = err.Error()
	}
	if e.Kind != ErrorRateLimit && e.Kind != ErrorTransient {
		e.RetryAfter = 0
	}
	e.Message = truncate(c.redact.Replace(c.provider+" "+op+": "+msg), messageMax)
	return e
}
