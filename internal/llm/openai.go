package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// OpenAIDefaultBaseURL is the OpenAI API.
const OpenAIDefaultBaseURL = "https://api.openai.com/v1"

// openAIEmbedBatchMax is the OpenAI API's limit of inputs per embeddings
// request.
const openAIEmbedBatchMax = 2048

// OpenAIConfig configures an "openai" client.
type OpenAIConfig struct {
	// BaseURL is the endpoint ("" is OpenAIDefaultBaseURL; Ollama is
	// http://localhost:11434/v1).
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// Organization and Project are the optional OpenAI-Organization and
	// OpenAI-Project headers.
	Organization, Project string
	// HTTPClient carries the requests (nil: a default client).
	HTTPClient *http.Client
}

// openAIClient is a Client on github.com/openai/openai-go for any
// OpenAI-compatible endpoint.
type openAIClient struct {
	sdk      openai.Client
	baseURL  string
	official bool
	redact   *strings.Replacer
	now      func() time.Time

	// noSchema holds the models this endpoint refused json_schema for: they
	// get JSON mode, validation and one repair call.
	mu       sync.Mutex
	noSchema map[string]bool
}

// NewOpenAI returns the "openai" client. The SDK's own environment
// (OPENAI_API_KEY, OPENAI_BASE_URL, ...) is ignored: only cfg counts. The
// SDK does not retry; the job engine and the rate governor do. It makes no
// request.
func NewOpenAI(cfg OpenAIConfig) (Client, error) {
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	if base == "" {
		base = OpenAIDefaultBaseURL
	}
	if err := checkBaseURL(base); err != nil {
		return nil, &Error{Kind: ErrorInvalid, Message: ProviderOpenAI + ": " + err.Error()}
	}
	key := strings.TrimSpace(cfg.APIKey)
	c := &openAIClient{
		baseURL:  base,
		official: IsOpenAIOfficial(base),
		redact:   newRedactor(key),
		now:      time.Now,
		noSchema: map[string]bool{},
	}
	// The headers are set last, by a middleware, so that nothing from the
	// process environment reaches the endpoint.
	headers := func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		req.Header.Del("Authorization")
		req.Header.Del("OpenAI-Organization")
		req.Header.Del("OpenAI-Project")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if cfg.Organization != "" {
			req.Header.Set("OpenAI-Organization", cfg.Organization)
		}
		if cfg.Project != "" {
			req.Header.Set("OpenAI-Project", cfg.Project)
		}
		return next(req)
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(withCaptureTransport(cfg.HTTPClient, nil, c.now)),
		option.WithMaxRetries(0),
		option.WithMiddleware(headers),
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	c.sdk = openai.NewClient(opts...)
	return c, nil
}

// IsOpenAIOfficial reports whether base is the OpenAI API (its prices
// apply; any other endpoint costs 0).
func IsOpenAIOfficial(base string) bool {
	if base == "" {
		return true
	}
	return HostPort(base) == "api.openai.com:443"
}

// HostPort is the host:port of a base URL, the scheme's port when it
// names none ("" when there is no host).
func HostPort(base string) string {
	u, err := url.Parse(base)
	if base == "" || err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "http" {
		return u.Host + ":80"
	}
	return u.Host + ":443"
}

// Provider implements Client.
func (c *openAIClient) Provider() string { return ProviderOpenAI }

// Unpriced reports whether c's calls cost nothing whatever the catalog
// says: "openai" clients of an endpoint other than the OpenAI API (a local
// or self-hosted server). The local provider's catalog prices are 0.
func Unpriced(c Client) bool {
	x, ok := c.(*openAIClient)
	return ok && !x.official
}

// schemaName names the response format.
const schemaName = "graphmill_response"

// Generate implements Client. With a schema it asks for structured output
// (response_format json_schema, strict) unless this endpoint refused that
// for the model before; then, and on the first refusal (a 4xx naming the
// format or schema, or an answer that is not JSON: the format ignored), it
// asks for JSON mode with the schema in the system message, validates the
// answer and makes one repair call when it does not validate.
func (c *openAIClient) Generate(ctx context.Context, model string, req GenerateRequest) (*GenerateResult, error) {
	op := "generate " + model
	if model == "" {
		return nil, c.invalid("generate", "no model given")
	}
	user := strings.TrimSpace(strings.Join(nonEmpty(req.Prompt, req.Text), "\n\n"))
	if user == "" {
		return nil, c.invalid(op, "the request has neither prompt nor text")
	}
	start := c.now()
	var usage Usage
	if req.Schema != nil && !c.refusesSchema(model) {
		out, u, err := c.complete(ctx, op, model, req, c.messages(req.System, user), strictFormat(req.Schema))
		usage = addUsage(usage, u)
		if err != nil && !isSchemaRefusal(err) {
			return nil, err
		}
		if err == nil {
			if text, jerr := compactJSON(out); jerr == nil {
				return &GenerateResult{JSON: dropNulls(text), Usage: usage, Model: model, Duration: c.now().Sub(start)}, nil
			}
			// Prose under json_schema: a server that ignores the response
			// format. It is treated as one that refuses it.
		}
		c.mu.Lock()
		c.noSchema[model] = true
		c.mu.Unlock()
	}
	system := req.System
	var validate func(json.RawMessage) error
	if req.Schema != nil {
		raw, _ := json.Marshal(req.Schema) //nolint:errchkjson // a decoded JSON Schema marshals
		system = strings.TrimSpace(system + "\n\nAnswer with one JSON object, and nothing else, that validates against this JSON Schema:\n" + string(raw))
		var err error
		if validate, err = schemaValidator(req.Schema); err != nil {
			return nil, c.invalid(op, "the response schema does not compile: "+err.Error())
		}
	} else {
		system = strings.TrimSpace(system + "\n\nAnswer with one JSON object and nothing else.")
	}
	msgs := c.messages(system, user)
	format := openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	for attempt := 0; ; attempt++ {
		out, u, err := c.complete(ctx, op, model, req, msgs, format)
		usage = addUsage(usage, u)
		if err != nil {
			return nil, err
		}
		text, problem := compactJSON(out)
		if problem == nil {
			text = dropNulls(text) // an optional field a model filled with null is absent
		}
		if problem == nil && validate != nil {
			problem = validate(text)
		}
		if problem == nil {
			return &GenerateResult{JSON: text, Usage: usage, Model: model, Duration: c.now().Sub(start)}, nil
		}
		if attempt == 1 {
			return nil, c.invalid(op, "the response does not match the schema after one repair: "+truncate(problem.Error(), 300))
		}
		msgs = append(msgs, openai.AssistantMessage(out),
			openai.UserMessage("That answer is not valid: "+truncate(problem.Error(), 500)+
				"\nAnswer again with only the corrected JSON object."))
	}
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

func (c *openAIClient) refusesSchema(model string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.noSchema[model]
}

func (c *openAIClient) messages(system, user string) []openai.ChatCompletionMessageParamUnion {
	var msgs []openai.ChatCompletionMessageParamUnion
	if system != "" {
		msgs = append(msgs, openai.SystemMessage(system))
	}
	return append(msgs, openai.UserMessage(user))
}

// strictFormat is response_format json_schema with the schema made
// acceptable to strict mode (strictSchema); a schema strict mode cannot
// express (an open object: free-form facts) goes with strict false, which
// OpenAI and the local servers honour as a best effort.
func strictFormat(schema map[string]any) openai.ChatCompletionNewParamsResponseFormatUnion {
	out, strict := strictSchema(schema)
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name:   schemaName,
			Strict: openai.Bool(strict),
			Schema: out,
		},
	}}
}

// strictSchema returns a copy of schema as OpenAI's strict mode wants it:
// every object closed (additionalProperties false) with every property
// required, the optional ones made nullable (their nulls are dropped from
// the answer by dropNulls). ok is false when some object has no listed
// properties (strict mode cannot express an open object); the copy is
// still usable without strict.
func strictSchema(v any) (any, bool) {
	m, isMap := v.(map[string]any)
	if !isMap {
		return v, true
	}
	ok := true
	out := make(map[string]any, len(m)+2)
	for k, val := range m {
		switch k {
		case "items", "not", "additionalProperties":
			if sub, isSub := val.(map[string]any); isSub {
				var subOK bool
				out[k], subOK = strictSchema(sub)
				ok = ok && subOK
				continue
			}
			out[k] = val
		case "anyOf", "oneOf", "allOf":
			list, _ := val.([]any)
			cp := make([]any, len(list))
			for i, sub := range list {
				var subOK bool
				cp[i], subOK = strictSchema(sub)
				ok = ok && subOK
			}
			out[k] = cp
		case "properties", "$defs", "definitions":
			defs, _ := val.(map[string]any)
			cp := make(map[string]any, len(defs))
			for name, sub := range defs {
				var subOK bool
				cp[name], subOK = strictSchema(sub)
				ok = ok && subOK
			}
			out[k] = cp
		default:
			out[k] = val
		}
	}
	if !isObjectSchema(m) {
		return out, ok
	}
	props, hasProps := out["properties"].(map[string]any)
	if !hasProps || len(props) == 0 {
		return out, false
	}
	required := SchemaRequired(m)
	keys := slices.Sorted(maps.Keys(props))
	names := make([]any, 0, len(keys))
	for _, k := range keys {
		names = append(names, k)
		if !slices.Contains(required, k) {
			props[k] = nullable(props[k])
		}
	}
	out["required"] = names
	out["additionalProperties"] = false
	return out, ok
}

func isObjectSchema(m map[string]any) bool {
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	_, has := m["properties"]
	return has
}

// nullable lets a property schema take null too.
func nullable(p any) any {
	m, ok := p.(map[string]any)
	if !ok {
		return p
	}
	switch t := m["type"].(type) {
	case string:
		m["type"] = []any{t, "null"}
		return m
	case []any:
		if !slices.Contains(t, any("null")) {
			m["type"] = append(slices.Clone(t), "null")
		}
		return m
	}
	return map[string]any{"anyOf": []any{m, map[string]any{"type": "null"}}}
}

// dropNulls removes null members of objects (the optional properties
// strict mode made nullable).
func dropNulls(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, err := json.Marshal(stripNulls(v))
	if err != nil {
		return raw
	}
	return out
}

func stripNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if val == nil {
				delete(x, k)
				continue
			}
			x[k] = stripNulls(val)
		}
	case []any:
		for i := range x {
			x[i] = stripNulls(x[i])
		}
	}
	return v
}

// schemaValidator compiles schema for the JSON-mode check.
func schemaValidator(schema map[string]any) (func(json.RawMessage) error, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("response.json", doc); err != nil {
		return nil, err
	}
	sch, err := comp.Compile("response.json")
	if err != nil {
		return nil, err
	}
	return func(text json.RawMessage) error {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
		if err != nil {
			return err
		}
		return sch.Validate(v)
	}, nil
}

// compactJSON parses a model's answer (a Markdown fence removed).
func compactJSON(s string) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(trimJSONFence(s))); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	return buf.Bytes(), nil
}

func addUsage(a, b Usage) Usage {
	return Usage{
		InputText: a.InputText + b.InputText, InputImage: a.InputImage + b.InputImage, InputVideo: a.InputVideo + b.InputVideo,
		InputAudio: a.InputAudio + b.InputAudio, Output: a.Output + b.Output,
	}.Bounded()
}

// complete makes one chat completion and returns the answer's text.
func (c *openAIClient) complete(ctx context.Context, op, model string, req GenerateRequest, msgs []openai.ChatCompletionMessageParamUnion,
	format openai.ChatCompletionNewParamsResponseFormatUnion,
) (string, Usage, error) {
	params := openai.ChatCompletionNewParams{Model: model, Messages: msgs, ResponseFormat: format}
	c.sampling(&params, req.Temperature, req.MaxOutputTokens)
	resp, err := c.sdk.Chat.Completions.New(ctx, params)
	if err != nil {
		return "", Usage{}, c.classify(ctx, op, err)
	}
	u := Usage{InputText: resp.Usage.PromptTokens, Output: resp.Usage.CompletionTokens}.Bounded()
	if len(resp.Choices) == 0 {
		return "", u, c.invalid(op, "the response has no choices")
	}
	ch := resp.Choices[0]
	if ch.Message.Refusal != "" {
		return "", u, c.invalid(op, "the model refused: "+truncate(ch.Message.Refusal, 300))
	}
	text := strings.TrimSpace(ch.Message.Content)
	if text == "" {
		note := ""
		if ch.FinishReason != "" && ch.FinishReason != "stop" {
			note = " (finish reason " + ch.FinishReason + ")"
		}
		return "", u, c.invalid(op, "empty response"+note)
	}
	return text, u, nil
}

// sampling sets the temperature (nil: the model's default) and the output
// bound (0: none) of params.
func (c *openAIClient) sampling(params *openai.ChatCompletionNewParams, temperature *float64, maxOutput int) {
	if temperature != nil {
		params.Temperature = openai.Float(*temperature)
	}
	if maxOutput > 0 {
		// OpenAI's reasoning models take only max_completion_tokens; the
		// local servers (Ollama, llama.cpp) only max_tokens.
		if c.official {
			params.MaxCompletionTokens = openai.Int(int64(maxOutput))
		} else {
			params.MaxTokens = openai.Int(int64(maxOutput))
		}
	}
}

// isSchemaRefusal reports whether err is an endpoint refusing
// response_format json_schema (rather than the request as a whole): a 4xx
// other than auth and rate limits whose message names the response format
// or the schema.
func isSchemaRefusal(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrorInvalid || e.Status < 400 || e.Status >= 500 {
		return false
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "response_format") || strings.Contains(m, "json_schema") || strings.Contains(m, "schema") ||
		strings.Contains(m, "structured output")
}

// Embed implements Client: one request for up to 2048 texts.
func (c *openAIClient) Embed(ctx context.Context, model string, texts []string, dimension int) (*EmbedResult, error) {
	op, problem := embedInputProblem(model, texts, dimension)
	if problem != "" {
		return nil, c.invalid(op, problem)
	}
	start := c.now()
	res := &EmbedResult{Vectors: make([][]float32, 0, len(texts)), Model: model}
	for from := 0; from < len(texts); from += openAIEmbedBatchMax {
		batch := texts[from:min(from+openAIEmbedBatchMax, len(texts))]
		params := openai.EmbeddingNewParams{
			Model:          model,
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: batch},
			EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
		}
		if dimension > 0 {
			params.Dimensions = openai.Int(int64(dimension))
		}
		resp, err := c.sdk.Embeddings.New(ctx, params)
		if err != nil {
			return nil, c.classify(ctx, op, err)
		}
		if len(resp.Data) != len(batch) {
			return nil, c.invalid(op, fmt.Sprintf("%d embeddings for %d texts", len(resp.Data), len(batch)))
		}
		vecs := make([][]float32, len(batch))
		for _, e := range resp.Data {
			if e.Index < 0 || int(e.Index) >= len(batch) || vecs[e.Index] != nil {
				return nil, c.invalid(op, fmt.Sprintf("embedding index %d out of range or repeated", e.Index))
			}
			if len(e.Embedding) == 0 {
				return nil, c.invalid(op, fmt.Sprintf("embedding %d is empty", e.Index))
			}
			v := make([]float32, len(e.Embedding))
			for i, f := range e.Embedding {
				v[i] = float32(f)
			}
			vecs[e.Index] = v
		}
		res.Vectors = append(res.Vectors, vecs...)
		if resp.Usage.PromptTokens > 0 {
			res.Usage = addUsage(res.Usage, Usage{InputText: resp.Usage.PromptTokens}.Bounded())
		} else {
			for _, t := range batch {
				res.Usage.InputText += EstimateTokens(t)
			}
		}
	}
	for i, v := range res.Vectors {
		if len(v) != len(res.Vectors[0]) {
			return nil, c.invalid(op, fmt.Sprintf("vector %d has %d dimensions, vector 0 has %d", i, len(v), len(res.Vectors[0])))
		}
		if dimension > 0 && len(v) != dimension {
			return nil, c.invalid(op, fmt.Sprintf("embedding %d has %d dimensions, asked for %d", i, len(v), dimension))
		}
	}
	res.Duration = c.now().Sub(start)
	return res, nil
}

// ListModels implements Client: GET /models of the endpoint, each model's
// type inferred from its name (InferModelType); models that are neither
// (speech, images, moderation) are left out.
func (c *openAIClient) ListModels(ctx context.Context) ([]ModelInfo, error) {
	page, err := c.sdk.Models.List(ctx)
	if err != nil {
		return nil, c.classify(ctx, "list models", err)
	}
	var out []ModelInfo
	for _, m := range page.Data {
		t := InferModelType(m.ID)
		if m.ID == "" || t == "" {
			continue
		}
		info := ModelInfo{Name: m.ID, DisplayName: m.ID, Type: t}
		if t == ModelTypeEmbedding {
			info.Dimension = openAIEmbeddingDimension(m.ID)
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ModelInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// InferModelType guesses a model's type from its name, as OpenAI-compatible
// model lists say nothing of it: embedding models carry "embed" (or are
// well-known embedding families); speech, image, moderation and legacy
// completion models are "" (not listed); everything else is generative.
// An administrator overrides a wrong guess by choosing the model as a
// default of the other type.
func InferModelType(name string) string {
	n := strings.ToLower(name)
	for _, skip := range []string{"whisper", "tts", "dall-e", "gpt-image", "moderation", "davinci", "babbage", "transcribe", "realtime", "sora", "audio"} {
		if strings.Contains(n, skip) {
			return ""
		}
	}
	for _, emb := range []string{"embed", "bge-", "bge:", "e5-", "minilm", "gte-"} {
		if strings.Contains(n, emb) {
			return ModelTypeEmbedding
		}
	}
	return ModelTypeGenerative
}

func openAIEmbeddingDimension(name string) int {
	switch name {
	case "text-embedding-3-small", "text-embedding-ada-002":
		return 1536
	case "text-embedding-3-large":
		return 3072
	}
	return 0
}

func (c *openAIClient) invalid(op, msg string) *Error {
	return &Error{Kind: ErrorInvalid, Message: truncate(c.redact.Replace(ProviderOpenAI+" "+op+": "+msg), messageMax)}
}

// classify turns an SDK error into an *Error (the context's error when the
// call was cancelled). Status, message and Retry-After come from the
// response; the key never appears.
func (c *openAIClient) classify(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s %s: %w", ProviderOpenAI, op, ctxErr)
	}
	e := &Error{}
	var (
		msg       string
		apiErr    *openai.Error
		netErr    net.Error
		syntax    *json.SyntaxError
		streamErr *ssestream.StreamError
	)
	switch {
	case errors.As(err, &apiErr):
		e.Status = apiErr.StatusCode
		e.Kind = kindForStatus(e.Status)
		if apiErr.Response != nil {
			e.RetryAfter = parseRetryAfter(apiErr.Response.Header.Get("Retry-After"), c.now())
		}
		msg = apiErr.Message
		if msg == "" {
			msg = strings.TrimSpace(apiErr.RawJSON())
		}
		if msg == "" {
			msg = http.StatusText(e.Status)
		}
	case errors.As(err, &streamErr):
		// An error event in the middle of a stream: the server failed after
		// answering 200 (OpenAI sends a code of null; vLLM an HTTP status).
		e.Kind, e.Status, msg = ErrorTransient, 0, streamErr.Message
		var ev struct {
			Error struct {
				Message string `json:"message"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(streamErr.Event.Data, &ev) == nil && ev.Error.Message != "" {
			msg = "error in the stream: " + ev.Error.Message
			if code, ok := ev.Error.Code.(float64); ok && code >= 400 && code < 600 {
				e.Status = int(code)
				e.Kind = kindForStatus(e.Status)
			}
		}
	case errors.As(err, &syntax):
		e.Kind = ErrorInvalid
		msg = "malformed response: " + syntax.Error()
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		e.Kind = ErrorTransient
		msg = err.Error()
	default:
		e.Kind = ErrorTransient
		msg = err.Error()
	}
	if e.Kind != ErrorRateLimit && e.Kind != ErrorTransient {
		e.RetryAfter = 0
	}
	e.Message = truncate(c.redact.Replace(ProviderOpenAI+" "+op+": "+msg), messageMax)
	return e
}
