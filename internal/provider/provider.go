// Package provider manages the language-model providers of each tenant:
// organization credentials (sealed at rest), the model catalog, organization
// default models, project policies, the resolver that picks the client and
// model for a project, the rate governor and the usage and cost ledger that
// every provider call goes through.
package provider

import (
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// Provider values.
const (
	KeyAI     = "key-ai"
	AccountAI = "account-ai"
	OpenAI    = "openai"
	Local     = "local"
)

// Model types (the resolver's purposes).
const (
	Embedding  = "embedding"
	Generative = "generative"
)

// Policy values.
const (
	PolicyNone         = "none"
	PolicyOrganization = "organization"
	PolicyProject      = "project"
)

// Sources: where a resolved client's credentials came from.
const (
	SourceProject      = "project"
	SourceOrganization = "organization"
	SourceEnvironment  = "environment"
	SourceLocal        = "local"
)

// Errors.
var (
	ErrUnknownProvider = errs.New(errs.NotFound, "unknown provider: use key-ai, account-ai or openai")
	ErrNoCredential    = errs.New(errs.NotFound, "no credentials stored for this provider")
	ErrNoPolicy        = errs.New(errs.NotFound, "no policy set for this provider in this project; projects without one use their organization's credentials")
)

// credentialProviders are the providers that take credentials, in the
// resolver's order.
func credentialProviders() [3]string { return [3]string{KeyAI, AccountAI, OpenAI} }

func checkCredentialProvider(p string) error {
	if p == KeyAI || p == AccountAI || p == OpenAI {
		return nil
	}
	return ErrUnknownProvider
}

// Credential is the metadata of an organization's credentials; the key or
// service-account content is never part of it.
type Credential struct {
	ID         uuid.UUID `json:"id"`
	OrgID      uuid.UUID `json:"orgId"`
	Provider   string    `json:"provider"`
	GCPProject string    `json:"gcpProject,omitempty"`
	Location   string    `json:"location,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// Model is a catalog entry (the spec's Supported model, plus the figures
// the ledger and the governor use).
type Model struct {
	ID               uuid.UUID `json:"id"`
	Provider         string    `json:"provider"`
	ModelName        string    `json:"modelName"`
	ModelType        string    `json:"modelType"`
	DisplayName      string    `json:"displayName,omitempty"`
	Dimension        int       `json:"dimension,omitempty" doc:"Vector length of an embedding model."`
	InputTokenLimit  int       `json:"inputTokenLimit,omitempty"`
	OutputTokenLimit int       `json:"outputTokenLimit,omitempty"`
	Prices           *Prices   `json:"pricesPerMillionTokens,omitempty" doc:"USD per million tokens; absent when unknown."`
	IsDefault        bool      `json:"isDefault"`
	LastSynced       time.Time `json:"lastSynced"`
	rpm, tpm         int
	// org is the organization whose endpoint listed the model (uuid.Nil:
	// the shared catalog).
	org uuid.UUID
}

// Prices are USD per million tokens by input modality and for output.
type Prices struct {
	Text   float64 `json:"text"`
	Image  float64 `json:"image"`
	Video  float64 `json:"video"`
	Audio  float64 `json:"audio"`
	Output float64 `json:"output"`
}

// OrgModels are an organization's default models for one provider.
type OrgModels struct {
	OrgID           uuid.UUID `json:"orgId"`
	Provider        string    `json:"provider"`
	EmbeddingModel  string    `json:"embeddingModel,omitempty"`
	GenerativeModel string    `json:"generativeModel,omitempty"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// Policy is a project's provider policy; project credentials are never
// part of it.
type Policy struct {
	ID              uuid.UUID `json:"id"`
	ProjectID       uuid.UUID `json:"projectId"`
	Provider        string    `json:"provider"`
	Policy          string    `json:"policy"`
	GCPProject      string    `json:"gcpProject,omitempty"`
	Location        string    `json:"location,omitempty"`
	EmbeddingModel  string    `json:"embeddingModel,omitempty"`
	GenerativeModel string    `json:"generativeModel,omitempty"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// UsageRow sums the ledger for one provider and model.
type UsageRow struct {
	Provider         string  `json:"provider"`
	Model            string  `json:"model"`
	TotalText        int64   `json:"total_text"`
	TotalImage       int64   `json:"total_image"`
	TotalVideo       int64   `json:"total_video"`
	TotalAudio       int64   `json:"total_audio"`
	TotalOutput      int64   `json:"total_output"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
}

// UsageSummary is the spec's usage summary.
type UsageSummary struct {
	Note string     `json:"note"`
	Data []UsageRow `json:"data"`
}

// UsageNote says how costs are estimated.
const UsageNote = "Token counts are those the providers reported (estimated at 4 characters a token where a provider reports none, " +
	"as for Gemini API embeddings). Costs are estimated from the model catalog's list prices per million tokens at the time of each call, " +
	"by input modality and for output; models without a listed price, the offline local provider and openai endpoints other than the OpenAI API count as 0. " +
	"Failed calls are listed with the tokens they were charged, normally none. Invoices from the provider are authoritative."
