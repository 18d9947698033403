package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// LocalGenerateModel is the model name of the local heuristic generator.
const LocalGenerateModel = "local/heuristic-v1"

// localClient is the offline provider: feature-hashing embeddings and
// deterministic heuristic generation. It needs no key and no network.
type localClient struct {
	embedder *LocalEmbedder
	lex      *lexicon
	now      func() time.Time
}

// NewLocal returns the offline "local" provider. Its embeddings are
// LocalEmbedder's (model LocalEmbedModel, embedDimension by default, the
// package default when <= 0); its generation (model LocalGenerateModel) is
// a deterministic analysis of GenerateRequest.Text by named-entity
// heuristics and sentence co-occurrence, shaped by the request's Purpose
// and Schema. Token counts are estimates (EstimateTokens).
func NewLocal(embedDimension int) Client {
	return &localClient{
		embedder: NewLocalEmbedder(embedDimension),
		lex:      newLexicon(),
		now:      time.Now,
	}
}

// Provider implements Client.
func (c *localClient) Provider() string { return ProviderLocal }

// Embed implements Client. model must be LocalEmbedModel or empty.
func (c *localClient) Embed(ctx context.Context, model string, texts []string, dimension int) (*EmbedResult, error) {
	if model != "" && model != LocalEmbedModel {
		return nil, &Error{Kind: ErrorInvalid, Message: fmt.Sprintf("local embed: unknown model %q (the local provider embeds with %s)", model, LocalEmbedModel)}
	}
	if dimension < 0 {
		return nil, &Error{Kind: ErrorInvalid, Message: fmt.Sprintf("local embed: negative dimension %d", dimension)}
	}
	start := c.now()
	e := c.embedder
	if dimension > 0 && dimension != e.Dimension() {
		e = NewLocalEmbedder(dimension)
	}
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("local embed: %w", err)
	}
	var tokens int64
	for _, t := range texts {
		tokens += EstimateTokens(t)
	}
	return &EmbedResult{Vectors: vs, Usage: Usage{InputText: tokens}, Model: LocalEmbedModel, Duration: c.now().Sub(start)}, nil
}

// ListModels implements Client.
func (c *localClient) ListModels(context.Context) ([]ModelInfo, error) {
	return []ModelInfo{
		{Name: LocalEmbedModel, DisplayName: "Local feature-hashing embedder (offline)", Type: ModelTypeEmbedding, Dimension: c.embedder.Dimension()},
		{Name: LocalGenerateModel, DisplayName: "Local heuristic extractor (offline)", Type: ModelTypeGenerative},
	}, nil
}

// Generate implements Client. model must be LocalGenerateModel or empty.
// PurposeExtraction returns objects and relationships found in req.Text,
// restricted to the type enums of req.Schema; the three discovery
// purposes answer in the shapes written on PurposeDiscovery (see
// local_discovery.go for the heuristics); any other purpose returns a
// minimal instance of req.Schema. The same request always gives the same
// bytes.
func (c *localClient) Generate(ctx context.Context, model string, req GenerateRequest) (*GenerateResult, error) {
	if model != "" && model != LocalGenerateModel {
		return nil, &Error{Kind: ErrorInvalid, Message: fmt.Sprintf("local generate: unknown model %q (the local provider generates with %s)", model, LocalGenerateModel)}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("local generate: %w", err)
	}
	start := c.now()
	var out any
	switch req.Purpose {
	case PurposeExtraction:
		a := analyse(req.Text, c.lex)
		out = extraction(a, allowedEnum(req.Schema, "objects"), allowedEnum(req.Schema, "relationships"))
	case PurposeDiscovery:
		out = discover(req.Text, c.lex)
	case PurposeDiscoveryRefine:
		var err error
		if out, err = refineCandidates(req.Text); err != nil {
			return nil, err
		}
	case PurposeDiscoveryRelationships:
		var err error
		if out, err = relationships(req.Text, c.lex); err != nil {
			return nil, err
		}
	default:
		out = minimalInstance(req.Schema)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, &Error{Kind: ErrorInvalid, Message: "local generate: " + err.Error()}
	}
	in := EstimateTokens(req.System) + EstimateTokens(req.Prompt) + EstimateTokens(req.Text)
	return &GenerateResult{
		JSON:     b,
		Usage:    Usage{InputText: in, Output: EstimateTokens(string(b))},
		Model:    LocalGenerateModel,
		Duration: c.now().Sub(start),
	}, nil
}

// allowedEnum reads the type enum at
// properties.<list>.items.properties.type.enum; nil means no constraint.
func allowedEnum(schema map[string]any, list string) []string {
	node := any(schema)
	for _, k := range []string{"properties", list, "items", "properties", "type", "enum"} {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[k]
	}
	var out []string
	switch vs := node.(type) {
	case []any:
		for _, v := range vs {
			if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		}
	case []string:
		for _, s := range vs {
			if strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		}
	default:
		return nil
	}
	if out == nil {
		// An enum that names nothing allows nothing.
		return []string{}
	}
	return out
}
