package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/postgres"
)

// ErrNoProvider is the resolver's answer when nothing is configured.
var ErrNoProvider = errors.New("no provider configured")

// Handle is a resolved client and model for one project and purpose. Every
// call through it is paced by the rate governor and recorded in the usage
// ledger; it is the only way the rest of Graphmill calls a provider.
type Handle struct {
	s         *Service
	client    llm.Client
	provider  string
	model     Model
	source    string
	govKey    string
	orgID     uuid.UUID
	projectID uuid.UUID
	dimension int
	preferred string // the model asked for (ResolveModel), empty otherwise
}

// Provider is the resolved provider.
func (h *Handle) Provider() string { return h.provider }

// Model is the resolved model's name (llm.Embedder).
func (h *Handle) Model() string { return h.model.ModelName }

// Source says where the credentials came from: project, organization,
// environment or local.
func (h *Handle) Source() string { return h.source }

// Dimension is the embedding model's vector length as the catalog gives
// it (0 when unknown; the vectors tell).
func (h *Handle) Dimension() int { return h.dimension }

// Resolve returns the client and model project uses for purpose
// (Embedding or Generative), in this order: the project's own credentials
// (policy project); its organization's credentials (policy organization,
// which is also what a project without a policy follows); the credentials
// of the environment; the offline local provider when enabled. key-ai,
// account-ai and openai are tried in that order at each step.
func (s *Service) Resolve(ctx context.Context, project uuid.UUID, purpose string) (*Handle, error) {
	return s.resolve(ctx, project, purpose, "")
}

// ResolveModel is Resolve with a preferred model: when model names a
// catalog model of purpose of the provider that Resolve picks, the handle
// uses it; otherwise (another provider's model, an unknown name, empty) the
// handle has the model Resolve would choose. Callers compare Model() with
// what they asked for. The embedding worker uses it for the models that
// embedding policies name.
func (s *Service) ResolveModel(ctx context.Context, project uuid.UUID, purpose, model string) (*Handle, error) {
	return s.resolve(ctx, project, purpose, model)
}

func (s *Service) resolve(ctx context.Context, project uuid.UUID, purpose, preferred string) (*Handle, error) {
	if purpose != Embedding && purpose != Generative {
		return nil, fmt.Errorf("resolve: unknown purpose %q", purpose)
	}
	org, err := projectOrg(ctx, s.cfg.Pool, project)
	if err != nil {
		return nil, err
	}
	policies, err := policiesList(ctx, s.cfg.Pool, project)
	if err != nil {
		return nil, err
	}
	byProvider := map[string]policyRow{}
	for _, p := range policies {
		byProvider[p.Provider] = p
	}
	h := &Handle{s: s, orgID: org, projectID: project, preferred: preferred}

	// 1. The project's own credentials.
	for _, provider := range credentialProviders() {
		p, ok := byProvider[provider]
		if !ok || p.Policy.Policy != PolicyProject || p.Secret == nil {
			continue
		}
		key := "project:" + project.String() + ":" + provider
		c, err := s.client(ctx, key, p.UpdatedAt.String(), func(ctx context.Context) (llm.Client, error) {
			payload, err := s.open(*p.Secret, "project_provider_policies", p.ID)
			if err != nil {
				return nil, err
			}
			return s.newClient(ctx, provider, payload, p.GCPProject, p.Location)
		})
		if err != nil {
			return nil, err
		}
		return h.finish(ctx, c, provider, SourceProject, key, purpose, p)
	}

	// 2. The organization's, unless the project opted out.
	creds, err := credentialsList(ctx, s.cfg.Pool, org)
	if err != nil {
		return nil, err
	}
	for _, provider := range credentialProviders() {
		if p, ok := byProvider[provider]; ok && p.Policy.Policy != PolicyOrganization {
			continue
		}
		for _, cr := range creds {
			if cr.Provider != provider {
				continue
			}
			key := "org:" + org.String() + ":" + provider
			c, err := s.client(ctx, key, cr.UpdatedAt.String(), func(ctx context.Context) (llm.Client, error) {
				payload, err := s.open(cr.Secret, "org_provider_credentials", cr.ID)
				if err != nil {
					return nil, err
				}
				return s.newClient(ctx, provider, payload, cr.GCPProject, cr.Location)
			})
			if err != nil {
				return nil, err
			}
			return h.finish(ctx, c, provider, SourceOrganization, key, purpose, byProvider[provider])
		}
	}

	// 3. The environment's.
	for _, provider := range credentialProviders() {
		build, ok := s.envClient(provider)
		if !ok {
			continue
		}
		c, err := build(ctx)
		if err != nil {
			return nil, err
		}
		p := byProvider[provider]
		if provider == OpenAI { // the environment's models, unless the project chose
			env := s.cfg.Environment
			if p.EmbeddingModel == "" {
				p.EmbeddingModel = env.OpenAIEmbeddingModel
			}
			if p.GenerativeModel == "" {
				p.GenerativeModel = env.OpenAIModel
			}
		}
		return h.finish(ctx, c, provider, SourceEnvironment, "env:"+provider, purpose, p)
	}

	// 4. The offline provider.
	if s.cfg.LocalEnabled {
		return h.finish(ctx, s.local, Local, SourceLocal, "local", purpose, policyRow{})
	}
	return nil, fmt.Errorf("%w for project %s: store credentials for its organization (POST /api/v1/organizations/{orgID}/providers/{provider}/credentials) "+
		"or the project (PUT .../policy with policy project), set GRAPHMILL_KEY_AI_API_KEY or GRAPHMILL_OPENAI_BASE_URL, or enable GRAPHMILL_LOCAL_PROVIDER", ErrNoProvider, project)
}

// finish picks the model: the project policy's, else the organization's
// default, else the catalog's default for the provider.
func (h *Handle) finish(ctx context.Context, c llm.Client, provider, source, key, purpose string, p policyRow) (*Handle, error) {
	s := h.s
	name := p.EmbeddingModel
	if purpose == Generative {
		name = p.GenerativeModel
	}
	if name == "" && provider != Local {
		emb, gen, err := orgModelsGet(ctx, s.cfg.Pool, h.orgID, provider)
		if err != nil {
			return nil, err
		}
		name = emb
		if purpose == Generative {
			name = gen
		}
	}
	var m Model
	var ok bool
	var err error
	if name != "" {
		m, ok, err = modelGet(ctx, s.cfg.Pool, h.orgID, provider, name)
		if err == nil && !ok { // removed from the catalog since it was chosen: use it, unpriced
			m, ok = Model{Provider: provider, ModelName: name, ModelType: purpose}, true
		}
	} else {
		m, ok, err = modelDefault(ctx, s.cfg.Pool, provider, purpose)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the catalog has no default %s model for %s", ErrNoProvider, purpose, provider)
	}
	// A preferred model (ResolveModel) replaces that choice when it is a
	// catalog model of provider for purpose.
	if h.preferred != "" && h.preferred != m.ModelName {
		pm, found, err := modelGet(ctx, s.cfg.Pool, h.orgID, provider, h.preferred)
		if err != nil {
			return nil, err
		}
		if found && pm.ModelType == purpose {
			m = pm
		}
	}
	return h.use(c, provider, source, key, purpose, m), nil
}

// use completes h with its client and model.
func (h *Handle) use(c llm.Client, provider, source, key, purpose string, m Model) *Handle {
	h.client, h.provider, h.source, h.model = c, provider, source, m
	h.govKey = key + "|" + m.ModelName
	h.dimension = m.Dimension
	if provider == Local && purpose == Embedding {
		h.dimension = h.s.cfg.LocalDimension
	}
	return h
}

// Cost is the estimated cost in USD of usage u with the resolved model, from
// the catalog's prices (0 when the model has none, and for an openai
// endpoint other than the OpenAI API): what the ledger records.
func (h *Handle) Cost(u llm.Usage) float64 {
	p := h.model.Prices
	if p == nil || llm.Unpriced(h.client) {
		return 0
	}
	return (float64(u.InputText)*p.Text + float64(u.InputImage)*p.Image + float64(u.InputVideo)*p.Video +
		float64(u.InputAudio)*p.Audio + float64(u.Output)*p.Output) / 1e6
}

// InputTokenLimit is the model's input budget from the catalog (0: unknown).
func (h *Handle) InputTokenLimit() int { return h.model.InputTokenLimit }

// Generate makes one structured-output call. The answer comes back as
// the database holds text (postgres.JSONB): every use of it (objects,
// proposals, the call log) may store it.
func (h *Handle) Generate(ctx context.Context, req llm.GenerateRequest) (*llm.GenerateResult, error) {
	est := int64(len(req.System)+len(req.Prompt)+len(req.Text))/4 + int64(req.MaxOutputTokens)
	return metered(ctx, h, "generate", 1, est, func(ctx context.Context) (*llm.GenerateResult, error) {
		res, err := h.client.Generate(ctx, h.model.ModelName, req)
		if err == nil {
			res.JSON = postgres.JSONB(res.JSON)
		}
		return res, err
	}, func(r *llm.GenerateResult) llm.Usage { return r.Usage })
}

// Chat makes one step of a tool-using conversation (llm.Client.Chat),
// paced by the governor and recorded in the ledger as a generation
// (operation "generate"). The answer's text, its streamed deltas and its
// tool calls come back as the database holds text (postgres.Text,
// postgres.JSONB; a call's id and name by postgres.NameText, never as
// another tool's): chat messages and agent run steps store them.
func (h *Handle) Chat(ctx context.Context, req llm.ChatRequest) (*llm.ChatResult, error) {
	est := req.EstimatedInputTokens() + int64(req.MaxOutputTokens)
	if on := req.OnDelta; on != nil {
		req.OnDelta = func(d string) error { return on(postgres.Text(d)) }
	}
	return metered(ctx, h, "generate", 1, est, func(ctx context.Context) (*llm.ChatResult, error) {
		res, err := h.client.Chat(ctx, h.model.ModelName, req)
		if err == nil {
			res.Text = postgres.Text(res.Text)
			for i, c := range res.ToolCalls {
				res.ToolCalls[i].ID, res.ToolCalls[i].Name, res.ToolCalls[i].Arguments = postgres.NameText(c.ID), postgres.NameText(c.Name), postgres.JSONB(c.Arguments)
			}
		}
		return res, err
	}, func(r *llm.ChatResult) llm.Usage { return r.Usage })
}

// Embed embeds texts with one provider call (llm.Embedder).
func (h *Handle) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	var est int64
	for _, t := range texts {
		est += int64(len(t)) / 4
	}
	res, err := metered(ctx, h, "embed", len(texts), est, func(ctx context.Context) (*llm.EmbedResult, error) {
		return h.client.Embed(ctx, h.model.ModelName, texts, 0)
	}, func(r *llm.EmbedResult) llm.Usage { return r.Usage })
	if err != nil {
		return nil, err
	}
	return res.Vectors, nil
}

// metered runs fn through h.call (governor, ledger, span) and returns its
// result, whose usage the ledger records.
func metered[R any](ctx context.Context, h *Handle, op string, items int, estTokens int64,
	fn func(context.Context) (R, error), usage func(R) llm.Usage,
) (R, error) {
	var res R
	err := h.call(ctx, op, items, estTokens, func(ctx context.Context) (llm.Usage, error) {
		var err error
		if res, err = fn(ctx); err != nil {
			return llm.Usage{}, err
		}
		return usage(res), nil
	})
	return res, err
}

// Span attributes of a provider call (the GenAI semantic conventions'
// names where they have one).
const (
	AttrProvider     = attribute.Key("gen_ai.provider.name")
	AttrModel        = attribute.Key("gen_ai.request.model")
	AttrOperation    = attribute.Key("gen_ai.operation.name")
	AttrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	AttrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	AttrItems        = attribute.Key("graphmill.provider.items")
	AttrSource       = attribute.Key("graphmill.provider.source")
	AttrCost         = attribute.Key("graphmill.provider.cost_usd")
)

// call is the one recording path of provider calls: it waits for the
// governor, runs fn, holds the key back on a 429, and writes the ledger
// row, all under the call's span. Errors come back as the job engine's
// kinds (rate limit: wait; auth and invalid requests: permanent; others:
// retry).
func (h *Handle) call(ctx context.Context, op string, items int, estTokens int64, fn func(context.Context) (llm.Usage, error)) (err error) {
	s := h.s
	ctx, span := s.tracer.Start(ctx, "provider "+op, trace.WithSpanKind(trace.SpanKindClient))
	defer func() {
		if err != nil && span.IsRecording() {
			span.SetStatus(codes.Error, errs.MessageOf(err))
		}
		span.End()
	}()
	if span.IsRecording() {
		span.SetAttributes(AttrProvider.String(h.provider), AttrModel.String(h.model.ModelName), AttrOperation.String(op),
			AttrItems.Int(items), AttrSource.String(h.source), jobqueue.AttrProject.String(h.projectID.String()))
	}
	rpm, tpm := h.model.rpm, h.model.tpm
	if s.cfg.RPM > 0 {
		rpm = s.cfg.RPM
	}
	if s.cfg.TPM > 0 {
		tpm = s.cfg.TPM
	}
	if err := s.gov.wait(ctx, h.govKey, rpm, tpm, estTokens); err != nil {
		return err
	}
	start := time.Now()
	at := s.cfg.Now()
	u, err := fn(ctx)
	dur := time.Since(start)
	s.gov.observe(h.govKey, dur)
	var le *llm.Error
	if errors.As(err, &le) && le.RetryAfter > 0 {
		s.gov.hold(h.govKey, le.RetryAfter)
	}
	e := ledgerEntry{
		OrgID: h.orgID, ProjectID: h.projectID, Provider: h.provider, Model: h.model.ModelName, Operation: op, Source: h.source,
		Items: items, Text: u.InputText, Image: u.InputImage, Video: u.InputVideo, Audio: u.InputAudio, Output: u.Output,
		Duration: dur, At: at,
	}
	for _, j := range jobqueue.JobsFrom(ctx) {
		if j.ProjectID != nil && *j.ProjectID == h.projectID {
			e.JobID = &j.ID
			break
		}
	}
	if err != nil {
		e.Err = postgres.TextMax(errs.MessageOf(err), 500)
	}
	e.Cost = h.Cost(u)
	if span.IsRecording() {
		span.SetAttributes(AttrInputTokens.Int64(u.InputText+u.InputImage+u.InputVideo+u.InputAudio), AttrOutputTokens.Int64(u.Output),
			AttrCost.Float64(e.Cost))
		if e.JobID != nil {
			span.SetAttributes(jobqueue.AttrJobID.String(e.JobID.String()))
		}
	}
	if lerr := ledgerInsert(context.WithoutCancel(ctx), s.cfg.Pool, e); lerr != nil {
		s.cfg.Logger.Error("provider usage not recorded", "provider", h.provider, "model", h.model.ModelName, "err", lerr)
	}
	if err != nil {
		return llm.JobError(err)
	}
	return nil
}

// Embedder resolves project's embedding model (document.Embedders).
func (s *Service) Embedder(ctx context.Context, project uuid.UUID) (llm.Embedder, error) {
	return s.Resolve(ctx, project, Embedding)
}

// Stage is the provider and model a pipeline stage uses for projects
// with no credentials of their own or of their organization (what the
// start-up log reports).
type Stage struct {
	// Purpose is Generative (extraction) or Embedding.
	Purpose string
	// Provider is "" when nothing is configured (the stage's jobs fail).
	Provider, Model, Source string
}

// Fallback returns the Stage of extraction (Generative) and embedding, in
// that order: the environment's credentials (key-ai, account-ai, openai),
// else the local provider when enabled.
func (s *Service) Fallback(ctx context.Context) ([]Stage, error) {
	var out []Stage
	for _, purpose := range []string{Generative, Embedding} {
		st := Stage{Purpose: purpose}
		for _, provider := range credentialProviders() {
			if _, ok := s.envClient(provider); ok {
				st.Provider, st.Source = provider, SourceEnvironment
				if provider == OpenAI {
					st.Model = s.cfg.Environment.OpenAIModel
					if purpose == Embedding {
						st.Model = s.cfg.Environment.OpenAIEmbeddingModel
					}
				}
				break
			}
		}
		if st.Provider == "" && s.cfg.LocalEnabled {
			st.Provider, st.Source = Local, SourceLocal
		}
		if st.Provider != "" && st.Model == "" {
			m, _, err := modelDefault(ctx, s.cfg.Pool, st.Provider, purpose)
			if err != nil {
				return nil, err
			}
			st.Model = m.ModelName
		}
		out = append(out, st)
	}
	return out, nil
}
