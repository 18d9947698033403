package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/secrets"
)

// Environment holds the global credentials from the process environment.
type Environment struct {
	KeyAIAPIKey string
	// AccountAIJSON is the service-account file's content.
	AccountAIJSON                       []byte
	AccountAIProject, AccountAILocation string
	// OpenAIBaseURL and OpenAIAPIKey configure the openai provider (either
	// enables it); the models name its generative and embedding models
	// (empty: the catalog's defaults).
	OpenAIBaseURL, OpenAIAPIKey       string
	OpenAIModel, OpenAIEmbeddingModel string
}

// Config wires a Service.
type Config struct {
	Pool   *pgxpool.Pool
	Box    *secrets.Box
	Logger *slog.Logger
	Now    func() time.Time
	// Egress guards the provider calls. Its allow list
	// (GRAPHMILL_EGRESS_ALLOW) names the token endpoints, besides Google's,
	// that a service-account file may name; the calls dial through it, the
	// base URLs' hosts allowed too (nil: a guard allowing nothing).
	Egress *egress.Guard
	// HTTPClient carries provider requests (nil: a client dialling through
	// Egress).
	HTTPClient *http.Client
	// Base URLs override the providers' endpoints (tests, corporate
	// proxies). They are the operator's choice, so their hosts are dialled
	// even when private.
	KeyAIBaseURL, AccountAIBaseURL string
	Environment                    Environment
	// LocalEnabled allows the offline provider as the last resort.
	LocalEnabled   bool
	LocalDimension int
	// RPM and TPM override the catalog's rates for every model (0: catalog).
	RPM, TPM int
	// SyncTimeout bounds the model-list refresh done when credentials are
	// saved (default 15 s).
	SyncTimeout time.Duration
	// Tracer traces every provider call (a client span per call of a
	// Handle); nil is the no-op provider.
	Tracer trace.TracerProvider
}

// Service is the provider domain.
type Service struct {
	cfg    Config
	gov    *governor
	local  llm.Client
	tracer trace.Tracer

	mu      sync.Mutex
	clients map[string]cachedClient
}

type cachedClient struct {
	version string
	client  llm.Client
}

// NewService builds the service.
func NewService(c Config) *Service {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Egress == nil {
		c.Egress, _ = egress.New(nil)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = c.Egress.WithHosts(llm.HostPort(c.KeyAIBaseURL), llm.HostPort(c.AccountAIBaseURL), llm.HostPort(c.Environment.OpenAIBaseURL)).Client(0)
	}
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = 15 * time.Second
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider()
	}
	return &Service{
		cfg: c, gov: newGovernor(c.Now), local: llm.NewLocal(c.LocalDimension), clients: map[string]cachedClient{},
		tracer: c.Tracer.Tracer("github.com/graphmill/graphmill/internal/provider"),
	}
}

// InFlight is how many provider calls must be under way at once to use
// the request rate of every credential and model in use at its observed
// latency (rate × latency, Little's law); 0 before any limited call.
// Workers size their concurrency from it (extraction.Config.InFlight).
func (s *Service) InFlight() int {
	return s.gov.inFlight()
}

// client returns the cached client for key at version, building it when the
// credentials changed.
func (s *Service) client(ctx context.Context, key, version string, build func(context.Context) (llm.Client, error)) (llm.Client, error) {
	s.mu.Lock()
	c, ok := s.clients[key]
	s.mu.Unlock()
	if ok && c.version == version {
		return c.client, nil
	}
	cl, err := build(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.clients[key] = cachedClient{version: version, client: cl}
	s.mu.Unlock()
	return cl, nil
}

// secretPayload is what a sealed credential holds.
type secretPayload struct {
	APIKey             string          `json:"apiKey,omitempty"`
	ServiceAccountJSON json.RawMessage `json:"serviceAccountJson,omitempty"`
	// BaseURL is the openai endpoint a tenant set ("" is the OpenAI API);
	// Organization and Project its optional headers.
	BaseURL      string `json:"baseUrl,omitempty"`
	Organization string `json:"organization,omitempty"`
	Project      string `json:"project,omitempty"`
}

func (s *Service) newClient(ctx context.Context, provider string, p secretPayload, gcpProject, location string) (llm.Client, error) {
	switch provider {
	case OpenAI:
		// A tenant's base URL is checked again at use (the allow list may
		// have changed); the dial goes through the guard either way.
		if err := checkTenantURL(p.BaseURL, s.cfg.Egress); err != nil {
			return nil, &llm.Error{Kind: llm.ErrorInvalid, Message: "openai: " + errs.MessageOf(err)}
		}
		return llm.NewOpenAI(llm.OpenAIConfig{BaseURL: p.BaseURL, APIKey: p.APIKey, Organization: p.Organization, Project: p.Project, HTTPClient: s.cfg.HTTPClient})
	case KeyAI:
		return llm.NewKeyAI(ctx, p.APIKey, s.cfg.KeyAIBaseURL, s.cfg.HTTPClient)
	case AccountAI:
		return llm.NewAccountAI(ctx, p.ServiceAccountJSON, gcpProject, location, s.cfg.AccountAIBaseURL, s.cfg.HTTPClient, s.cfg.Egress)
	}
	return nil, ErrUnknownProvider
}

// open unseals the secret column of row id of table.
func (s *Service) open(sealed, table string, id uuid.UUID) (secretPayload, error) {
	raw, err := s.cfg.Box.Open(sealed, secrets.Place(table, "secret", id.String()))
	if err != nil {
		return secretPayload{}, fmt.Errorf("credentials %s of %s: %w", id, table, err)
	}
	var p secretPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return secretPayload{}, fmt.Errorf("credentials %s of %s do not decode", id, table)
	}
	return p, nil
}

// Credentials are one provider's credentials as given: APIKey for key-ai
// and openai; BaseURL, Organization and Project (the OpenAI-Organization
// and OpenAI-Project headers) for openai; the service-account file,
// GCPProject and Location for account-ai.
type Credentials struct {
	APIKey, BaseURL, Organization, Project string
	ServiceAccountJSON                     []byte
	GCPProject, Location                   string
}

// given reports whether c holds any credential (not only placement).
func (c Credentials) given() bool {
	return c.APIKey != "" || c.BaseURL != "" || c.Organization != "" || c.Project != "" || len(c.ServiceAccountJSON) > 0
}

// checkTenantURL checks an openai base URL a tenant gives (the egress
// rule of tenant-set URLs): "" (the OpenAI API), or an absolute https URL
// of a public host, or an http(s) URL whose host GRAPHMILL_EGRESS_ALLOW
// names. No user part, query or fragment.
func checkTenantURL(raw string, g *egress.Guard) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errs.New(errs.Invalid, "baseUrl must be an absolute http(s) URL without user, query or fragment, such as https://api.openai.com/v1")
	}
	if g.Names(u.Hostname(), u.Port()) {
		return nil
	}
	if u.Scheme != "https" {
		return errs.New(errs.Invalid, "baseUrl must use https unless GRAPHMILL_EGRESS_ALLOW names its host")
	}
	host := strings.ToLower(u.Hostname())
	if ip, err := netip.ParseAddr(host); err == nil && !g.AllowsAddr(ip) {
		return errs.New(errs.Invalid, "baseUrl names a non-public address; allow it with GRAPHMILL_EGRESS_ALLOW")
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".internal") || strings.HasSuffix(host, ".local") {
		return errs.New(errs.Invalid, "baseUrl names a local host; allow it with GRAPHMILL_EGRESS_ALLOW")
	}
	return nil
}

// sealCredentials validates credentials for provider and returns the
// payload to seal.
func sealCredentials(provider string, c Credentials, g *egress.Guard) (secretPayload, error) {
	apiKey, serviceAccountJSON, gcpProject, location := c.APIKey, c.ServiceAccountJSON, c.GCPProject, c.Location
	if provider != OpenAI && (c.BaseURL != "" || c.Organization != "" || c.Project != "") {
		return secretPayload{}, errs.Errorf(errs.Invalid, "baseUrl, organization and project are taken by openai only, not %s", provider)
	}
	switch provider {
	case OpenAI:
		if len(serviceAccountJSON) > 0 || gcpProject != "" || location != "" {
			return secretPayload{}, errs.New(errs.Invalid, "openai takes a baseUrl and an optional apiKey, not a service account, gcpProject or location")
		}
		if strings.ContainsAny(apiKey, " \t\r\n") {
			return secretPayload{}, errs.New(errs.Invalid, "apiKey must not contain whitespace")
		}
		baseURL := strings.TrimRight(strings.TrimSpace(c.BaseURL), "/")
		if err := checkTenantURL(baseURL, g); err != nil {
			return secretPayload{}, err
		}
		if apiKey == "" && llm.IsOpenAIOfficial(baseURL) {
			return secretPayload{}, errs.New(errs.Invalid, "apiKey is required for the OpenAI API; give a baseUrl for a server that needs none")
		}
		if !validHeader(c.Organization) || !validHeader(c.Project) {
			return secretPayload{}, errs.New(errs.Invalid, "organization and project may hold only letters, digits, '-', '_' and '.' (at most 100)")
		}
		return secretPayload{APIKey: apiKey, BaseURL: baseURL, Organization: c.Organization, Project: c.Project}, nil
	case KeyAI:
		if len(serviceAccountJSON) > 0 || gcpProject != "" || location != "" {
			return secretPayload{}, errs.New(errs.Invalid, "key-ai takes an apiKey, not a service account, gcpProject or location")
		}
		if strings.TrimSpace(apiKey) == "" {
			return secretPayload{}, errs.New(errs.Invalid, "apiKey is empty")
		}
		if strings.ContainsAny(apiKey, " \t\r\n") {
			return secretPayload{}, errs.New(errs.Invalid, "apiKey must not contain whitespace")
		}
		return secretPayload{APIKey: apiKey}, nil
	case AccountAI:
		if apiKey != "" {
			return secretPayload{}, errs.New(errs.Invalid, "account-ai takes a serviceAccountJson, gcpProject and location, not an apiKey")
		}
		if len(serviceAccountJSON) == 0 {
			return secretPayload{}, errs.New(errs.Invalid, "serviceAccountJson is required")
		}
		if err := llm.ValidateServiceAccountJSON(serviceAccountJSON, g); err != nil {
			return secretPayload{}, errs.Errorf(errs.Invalid, "serviceAccountJson: %s", err.Error())
		}
		if strings.TrimSpace(gcpProject) == "" || strings.TrimSpace(location) == "" {
			return secretPayload{}, errs.New(errs.Invalid, "gcpProject and location are required for account-ai")
		}
		if !validLocation(location) || !validLocation(gcpProject) {
			return secretPayload{}, errs.New(errs.Invalid, "gcpProject and location may hold only letters, digits, '-', '_', '.' and ':'")
		}
		return secretPayload{ServiceAccountJSON: serviceAccountJSON}, nil
	}
	return secretPayload{}, ErrUnknownProvider
}

// validHeader reports whether s may go as an OpenAI-Organization or
// OpenAI-Project header ("" sends none).
func validHeader(s string) bool { return onlyChars(s, "-_.") }

func validLocation(s string) bool { return onlyChars(s, "-_.:") }

// onlyChars reports whether s is at most 100 letters, digits and runes of
// extra.
func onlyChars(s, extra string) bool {
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(extra, r)
		if !ok {
			return false
		}
	}
	return len(s) <= 100
}

// SaveCredentials stores an organization's credentials for provider
// (replacing earlier ones) and refreshes the model catalog with them.
func (s *Service) SaveCredentials(ctx context.Context, org uuid.UUID, provider string, c Credentials) error {
	payload, err := sealCredentials(provider, c, s.cfg.Egress)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(payload) //nolint:gosec // G117: the payload is sealed right after, never sent or logged
	now := s.cfg.Now()
	err = postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		id, err := credentialID(ctx, tx, org, provider)
		if err != nil {
			return err
		}
		sealed := s.cfg.Box.Seal(raw, secrets.Place("org_provider_credentials", "secret", id.String()))
		return credentialPut(ctx, tx, id, org, provider, sealed, c.GCPProject, c.Location, now)
	})
	if err != nil {
		return err
	}
	s.syncWith(ctx, catalogOwner(org, provider, payload), provider, func(ctx context.Context) (llm.Client, error) {
		return s.newClient(ctx, provider, payload, c.GCPProject, c.Location)
	})
	return nil
}

// catalogOwner is whose catalog rows the models listed with payload, an
// organization's credentials for provider, belong to: org's own for an
// endpoint it set (tenant data), else (uuid.Nil) the shared catalog.
func catalogOwner(org uuid.UUID, provider string, p secretPayload) uuid.UUID {
	if provider == OpenAI && p.BaseURL != "" && !llm.IsOpenAIOfficial(p.BaseURL) {
		return org
	}
	return uuid.Nil
}

// DeleteCredentials removes an organization's credentials for provider.
func (s *Service) DeleteCredentials(ctx context.Context, org uuid.UUID, provider string) error {
	if err := checkCredentialProvider(provider); err != nil {
		return err
	}
	ok, err := credentialDelete(ctx, s.cfg.Pool, org, provider)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNoCredential
	}
	return nil
}

// Credentials lists an organization's credential metadata.
func (s *Service) Credentials(ctx context.Context, org uuid.UUID) ([]Credential, error) {
	rows, err := credentialsList(ctx, s.cfg.Pool, org)
	if err != nil {
		return nil, err
	}
	out := make([]Credential, len(rows))
	for i, r := range rows {
		out[i] = r.Credential
	}
	return out, nil
}

// Models lists the catalog for provider as org sees it (the shared
// catalog and the models of org's own endpoint; uuid.Nil: the shared
// catalog only), optionally of one model type.
func (s *Service) Models(ctx context.Context, org uuid.UUID, provider, modelType string) ([]Model, error) {
	switch provider {
	case KeyAI, AccountAI, OpenAI, Local:
	default:
		return nil, errs.New(errs.NotFound, "unknown provider: use key-ai, account-ai, openai or local")
	}
	switch modelType {
	case "", Embedding, Generative:
	default:
		return nil, errs.New(errs.Invalid, "modelType must be embedding or generative")
	}
	return modelsList(ctx, s.cfg.Pool, org, provider, modelType)
}

// checkModel reports a 400 unless name is a model of provider and
// modelType in the catalog org sees (empty name: nothing to check).
// endpoint tells whether org has an openai endpoint of its own (or the
// environment one): only then is a name the catalog lacks taken.
func (s *Service) checkModel(ctx context.Context, org uuid.UUID, provider, modelType, field, name string, endpoint bool) error {
	if name == "" {
		return nil
	}
	db := s.cfg.Pool
	m, ok, err := modelGet(ctx, db, org, provider, name)
	if err != nil {
		return err
	}
	if provider == OpenAI && (ok && m.ModelType != modelType || !ok && endpoint) {
		// An endpoint's model list says nothing of types: the name chosen
		// here as a model of modelType fixes its type (a model another
		// refresh will not change), and adds a model the list missed to
		// org's own rows.
		if ok && m.IsDefault {
			return errs.Errorf(errs.Invalid, "%s: that model of %s is the catalog's default %s model", field, provider, m.ModelType)
		}
		owner := org
		if ok {
			owner = m.org
		}
		return modelFixType(ctx, db, owner, provider, name, modelType, s.cfg.Now())
	}
	if !ok {
		return errs.Errorf(errs.Invalid, "%s: %s has no model of that name (see GET /api/v1/providers/%s/models)", field, provider, provider)
	}
	if m.ModelType != modelType {
		return errs.Errorf(errs.Invalid, "%s: that model of %s has modelType %s, not %s", field, provider, m.ModelType, modelType)
	}
	return nil
}

// SetOrgModels sets an organization's default models for provider; an
// empty name leaves that one unchanged.
func (s *Service) SetOrgModels(ctx context.Context, org uuid.UUID, provider, embedding, generative string) (OrgModels, error) {
	if err := checkCredentialProvider(provider); err != nil {
		return OrgModels{}, err
	}
	if embedding == "" && generative == "" {
		return OrgModels{}, errs.New(errs.Invalid, "give embeddingModel, generativeModel or both")
	}
	endpoint, err := s.hasEndpoint(ctx, org, provider)
	if err != nil {
		return OrgModels{}, err
	}
	if err := s.checkModel(ctx, org, provider, Embedding, "embeddingModel", embedding, endpoint); err != nil {
		return OrgModels{}, err
	}
	if err := s.checkModel(ctx, org, provider, Generative, "generativeModel", generative, endpoint); err != nil {
		return OrgModels{}, err
	}
	return orgModelsPut(ctx, s.cfg.Pool, org, provider, embedding, generative, s.cfg.Now())
}

// PolicyInput is a project policy to set; credentials only with policy
// project.
type PolicyInput struct {
	Policy string
	Credentials
	EmbeddingModel, GenerativeModel string
}

// PutPolicy sets project's policy for provider. A project policy needs
// credentials: given here, or kept from an earlier project policy. Other
// policies drop stored project credentials.
func (s *Service) PutPolicy(ctx context.Context, project uuid.UUID, provider string, in PolicyInput) (Policy, error) {
	if err := checkCredentialProvider(provider); err != nil {
		return Policy{}, err
	}
	switch in.Policy {
	case PolicyNone, PolicyOrganization, PolicyProject:
	default:
		return Policy{}, errs.New(errs.Invalid, "policy must be none, organization or project")
	}
	hasCreds := in.given()
	if in.Policy != PolicyProject && (hasCreds || in.GCPProject != "" || in.Location != "") {
		return Policy{}, errs.Errorf(errs.Invalid, "credentials, gcpProject and location are only taken with policy project, not %s", in.Policy)
	}
	var payload secretPayload
	if hasCreds {
		var err error
		if payload, err = sealCredentials(provider, in.Credentials, s.cfg.Egress); err != nil {
			return Policy{}, err
		}
	}
	org, err := projectOrg(ctx, s.cfg.Pool, project)
	if err != nil {
		return Policy{}, err
	}
	endpoint, err := s.hasEndpoint(ctx, org, provider)
	if err != nil {
		return Policy{}, err
	}
	// A project's own endpoint (given now or kept) may serve any name.
	endpoint = endpoint || in.Policy == PolicyProject && (payload.BaseURL != "" || !hasCreds)
	if err := s.checkModel(ctx, org, provider, Embedding, "embeddingModel", in.EmbeddingModel, endpoint); err != nil {
		return Policy{}, err
	}
	if err := s.checkModel(ctx, org, provider, Generative, "generativeModel", in.GenerativeModel, endpoint); err != nil {
		return Policy{}, err
	}
	var out Policy
	err = postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		cur, found, err := policyForUpdate(ctx, tx, project, provider)
		if err != nil {
			return err
		}
		id := cur.ID
		if !found {
			id = uuid.Must(uuid.NewV7())
		}
		row := policyRow{Policy: Policy{
			ID: id, ProjectID: project, Provider: provider, Policy: in.Policy, CreatedAt: s.cfg.Now(),
			EmbeddingModel: in.EmbeddingModel, GenerativeModel: in.GenerativeModel,
		}}
		if in.Policy == PolicyProject {
			switch {
			case hasCreds:
				raw, _ := json.Marshal(payload) //nolint:gosec // G117: sealed right after, never sent or logged //nolint:gosec // G117: the payload is sealed right after, never sent or logged
				sealed := s.cfg.Box.Seal(raw, secrets.Place("project_provider_policies", "secret", id.String()))
				row.Secret, row.GCPProject, row.Location = &sealed, in.GCPProject, in.Location
			case found && cur.Secret != nil:
				row.Secret, row.GCPProject, row.Location = cur.Secret, cur.GCPProject, cur.Location
			case provider == KeyAI:
				return errs.New(errs.Invalid, "policy project needs the project's credentials: give apiKey")
			case provider == OpenAI:
				return errs.New(errs.Invalid, "policy project needs the project's credentials: give baseUrl, apiKey or both")
			default:
				return errs.New(errs.Invalid, "policy project needs the project's credentials: give serviceAccountJson, gcpProject and location")
			}
		}
		out, err = policyPut(ctx, tx, row)
		return err
	})
	return out, err
}

// Policy returns project's policy for provider.
func (s *Service) Policy(ctx context.Context, project uuid.UUID, provider string) (Policy, error) {
	if err := checkCredentialProvider(provider); err != nil {
		return Policy{}, err
	}
	list, err := s.Policies(ctx, project)
	if err != nil {
		return Policy{}, err
	}
	for _, p := range list {
		if p.Provider == provider {
			return p, nil
		}
	}
	return Policy{}, ErrNoPolicy
}

// Policies lists project's policies.
func (s *Service) Policies(ctx context.Context, project uuid.UUID) ([]Policy, error) {
	rows, err := policiesList(ctx, s.cfg.Pool, project)
	if err != nil {
		return nil, err
	}
	out := make([]Policy, len(rows))
	for i, r := range rows {
		out[i] = r.Policy
	}
	return out, nil
}

// Usage sums the ledger of project (or, with project nil, of the whole
// organization) between since and until (either may be nil).
func (s *Service) Usage(ctx context.Context, org uuid.UUID, project *uuid.UUID, since, until *time.Time) (UsageSummary, error) {
	if since != nil && until != nil && until.Before(*since) {
		return UsageSummary{}, errs.New(errs.Invalid, "until is before since")
	}
	if project != nil {
		var err error
		if org, err = projectOrg(ctx, s.cfg.Pool, *project); err != nil {
			return UsageSummary{}, err
		}
	}
	rows, err := usageSum(ctx, s.cfg.Pool, org, project, since, until)
	if err != nil {
		return UsageSummary{}, err
	}
	return UsageSummary{Note: UsageNote, Data: rows}, nil
}

// syncWith refreshes provider's catalog rows of org (uuid.Nil: the shared
// catalog) with a client from build, logging (not returning) a failure: a
// provider that cannot list its models does not stop credentials from
// being saved.
func (s *Service) syncWith(ctx context.Context, org uuid.UUID, provider string, build func(context.Context) (llm.Client, error)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.SyncTimeout)
	defer cancel()
	c, err := build(ctx)
	if err == nil {
		_, err = s.syncModels(ctx, org, provider, c)
	}
	if err != nil {
		s.cfg.Logger.Warn("model catalog refresh failed", "provider", provider, "err", err)
	}
}

// syncModels records c's model list in org's rows: a model whose name
// holds a NUL is left out, a NUL in its display name dropped.
func (s *Service) syncModels(ctx context.Context, org uuid.UUID, provider string, c llm.Client) (int, error) {
	infos, err := c.ListModels(ctx)
	if err != nil {
		return 0, err
	}
	list := make([]syncedModel, 0, len(infos))
	for _, m := range infos {
		if m.Type != Embedding && m.Type != Generative {
			continue
		}
		if !postgres.ValidText(m.Name) {
			// It could not be asked for by another name.
			s.cfg.Logger.WarnContext(ctx, "model catalog refresh: a model whose name holds a NUL is left out", "provider", provider, "model", postgres.Text(m.Name))
			continue
		}
		list = append(list, syncedModel{
			Name: m.Name, DisplayName: postgres.Text(m.DisplayName), Type: m.Type,
			InputLimit: m.InputTokenLimit, OutputLimit: m.OutputTokenLimit, Dimension: m.Dimension,
		})
	}
	return modelsUpsert(ctx, s.cfg.Pool, org, provider, list, s.cfg.Now())
}

// SyncCatalog refreshes the shared catalog of every provider for which
// shared credentials exist (the environment's first, else the most
// recently saved organization credentials on the provider's public API),
// and each organization's own openai endpoint into that organization's
// rows. It is the scheduler's model-sync task.
func (s *Service) SyncCatalog(ctx context.Context) error {
	var failed []string
	for _, provider := range credentialProviders() {
		syncs, err := s.catalogSources(ctx, provider)
		if err != nil {
			return err
		}
		for _, src := range syncs {
			c, err := src.build(ctx)
			if err == nil {
				_, err = s.syncModels(ctx, src.org, provider, c)
			}
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", provider, err))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("model catalog refresh: %s", strings.Join(failed, "; "))
	}
	return nil
}

// catalogSource is a client to list models with, and whose rows they
// fill (uuid.Nil: the shared catalog).
type catalogSource struct {
	org   uuid.UUID
	build func(context.Context) (llm.Client, error)
}

// catalogSources returns what refreshes provider's catalog: one source
// for the shared rows (the environment, else the most recent credentials
// on the public API) and one per organization with an endpoint of its own.
func (s *Service) catalogSources(ctx context.Context, provider string) ([]catalogSource, error) {
	var out []catalogSource
	env, shared := s.envClient(provider)
	if shared {
		out = append(out, catalogSource{build: env})
	}
	rows, _ := s.cfg.Pool.Query(ctx, `SELECT `+credentialColumns+` FROM org_provider_credentials c
		WHERE provider = $1 AND EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id AND o.deleted_at IS NULL)
		ORDER BY updated_at DESC`, provider)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[credentialRow])
	if err != nil {
		return nil, fmt.Errorf("find credentials: %w", err)
	}
	for _, row := range list {
		if shared && provider != OpenAI {
			break // only openai credentials may name an endpoint of their own
		}
		p, err := s.open(row.Secret, "org_provider_credentials", row.ID)
		if err != nil {
			s.cfg.Logger.Warn("model catalog refresh: credentials unreadable", "provider", provider, "org", row.OrgID, "err", err)
			continue
		}
		owner := catalogOwner(row.OrgID, provider, p)
		if owner == uuid.Nil && shared {
			continue
		}
		shared = shared || owner == uuid.Nil
		out = append(out, catalogSource{org: owner, build: func(ctx context.Context) (llm.Client, error) {
			return s.newClient(ctx, provider, p, row.GCPProject, row.Location)
		}})
	}
	return out, nil
}

// hasEndpoint reports whether org's openai calls may go to an endpoint
// other than the OpenAI API (its credentials' base URL, or the
// environment's), which may serve models no list shows.
func (s *Service) hasEndpoint(ctx context.Context, org uuid.UUID, provider string) (bool, error) {
	if provider != OpenAI {
		return false, nil
	}
	if s.cfg.Environment.OpenAIBaseURL != "" {
		return true, nil
	}
	row, err := postgres.One[credentialRow](ctx, s.cfg.Pool, nil, `SELECT `+credentialColumns+` FROM org_provider_credentials
		WHERE org_id = $1 AND provider = $2`, org, provider)
	if err != nil {
		return false, fmt.Errorf("look up credential: %w", err)
	}
	if row.ID == uuid.Nil {
		return false, nil
	}
	p, err := s.open(row.Secret, "org_provider_credentials", row.ID)
	if err != nil {
		return false, err
	}
	return catalogOwner(org, provider, p) != uuid.Nil, nil
}

// envClient returns a builder for the environment's credentials of provider.
func (s *Service) envClient(provider string) (func(context.Context) (llm.Client, error), bool) {
	env := s.cfg.Environment
	switch {
	case provider == KeyAI && env.KeyAIAPIKey != "":
		return func(ctx context.Context) (llm.Client, error) {
			return s.client(ctx, "env:"+KeyAI, "", func(ctx context.Context) (llm.Client, error) {
				return s.newClient(ctx, KeyAI, secretPayload{APIKey: env.KeyAIAPIKey}, "", "")
			})
		}, true
	case provider == OpenAI && (env.OpenAIBaseURL != "" || env.OpenAIAPIKey != ""):
		return func(ctx context.Context) (llm.Client, error) {
			return s.client(ctx, "env:"+OpenAI, "", func(context.Context) (llm.Client, error) {
				// The operator's base URL: not a tenant's, so no URL check;
				// its host is allowed in the guard (NewService).
				return llm.NewOpenAI(llm.OpenAIConfig{BaseURL: env.OpenAIBaseURL, APIKey: env.OpenAIAPIKey, HTTPClient: s.cfg.HTTPClient})
			})
		}, true
	case provider == AccountAI && len(env.AccountAIJSON) > 0:
		return func(ctx context.Context) (llm.Client, error) {
			return s.client(ctx, "env:"+AccountAI, "", func(ctx context.Context) (llm.Client, error) {
				return s.newClient(ctx, AccountAI, secretPayload{ServiceAccountJSON: env.AccountAIJSON}, env.AccountAIProject, env.AccountAILocation)
			})
		}, true
	}
	return nil, false
}
