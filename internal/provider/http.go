package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	orgIn struct {
		OrgID string `path:"orgID"`
	}
	keyAIIn struct {
		OrgID string `path:"orgID"`
		Body  struct {
			APIKey string `json:"apiKey" maxLength:"4096" doc:"The API key; stored sealed and never returned."`
		}
	}
	openAIIn struct {
		OrgID string `path:"orgID"`
		Body  struct {
			APIKey       string `json:"apiKey,omitempty" maxLength:"4096" doc:"The API key, optional for servers that need none; stored sealed and never returned."`
			BaseURL      string `json:"baseUrl,omitempty" maxLength:"2048" doc:"The OpenAI-compatible endpoint, such as https://api.openai.com/v1 (the default); stored sealed and never returned. A non-public host needs GRAPHMILL_EGRESS_ALLOW."`
			Organization string `json:"organization,omitempty" maxLength:"100" doc:"Optional OpenAI-Organization header."`
			Project      string `json:"project,omitempty" maxLength:"100" doc:"Optional OpenAI-Project header."`
		}
	}
	accountAIIn struct {
		OrgID string `path:"orgID"`
		Body  accountAIBody
	}
	accountAIBody struct {
		ServiceAccountJSON serviceAccount `json:"serviceAccountJson" doc:"The service-account key file, as a JSON object or a string holding it; stored sealed and never returned."`
		GCPProject         string         `json:"gcpProject" maxLength:"100"`
		Location           string         `json:"location" maxLength:"100"`
	}
	orgProviderIn struct {
		OrgID    string `path:"orgID"`
		Provider string `path:"provider"`
	}
	orgModelsIn struct {
		OrgID    string `path:"orgID"`
		Provider string `path:"provider"`
		Body     struct {
			EmbeddingModel  string `json:"embeddingModel,omitempty" maxLength:"200"`
			GenerativeModel string `json:"generativeModel,omitempty" maxLength:"200"`
		}
	}
	modelsIn struct {
		Provider  string `path:"provider"`
		ModelType string `query:"modelType" doc:"embedding or generative"`
	}
	projectProviderIn struct {
		ProjectID string `path:"projectID"`
		Provider  string `path:"provider"`
	}
	policyPutIn struct {
		ProjectID string `path:"projectID"`
		Provider  string `path:"provider"`
		Body      struct {
			Policy             string         `json:"policy" doc:"none, organization or project"`
			APIKey             string         `json:"apiKey,omitempty" maxLength:"4096"`
			BaseURL            string         `json:"baseUrl,omitempty" maxLength:"2048" doc:"openai only: the endpoint."`
			Organization       string         `json:"organization,omitempty" maxLength:"100" doc:"openai only: the OpenAI-Organization header."`
			Project            string         `json:"project,omitempty" maxLength:"100" doc:"openai only: the OpenAI-Project header."`
			ServiceAccountJSON serviceAccount `json:"serviceAccountJson,omitempty"`
			GCPProject         string         `json:"gcpProject,omitempty" maxLength:"100"`
			Location           string         `json:"location,omitempty" maxLength:"100"`
			EmbeddingModel     string         `json:"embeddingModel,omitempty" maxLength:"200"`
			GenerativeModel    string         `json:"generativeModel,omitempty" maxLength:"200"`
		}
	}
	projectIn struct {
		ProjectID string `path:"projectID"`
	}
	// UsagePeriod bounds a usage summary. It is exported because huma
	// reads only exported embedded structs.
	UsagePeriod struct {
		Since string `query:"since" doc:"RFC 3339; calls at or after this time."`
		Until string `query:"until" doc:"RFC 3339; calls before this time."`
	}
	projectUsageIn struct {
		ProjectID string `path:"projectID"`
		UsagePeriod
	}
	orgUsageIn struct {
		OrgID string `path:"orgID"`
		UsagePeriod
	}
)

// serviceAccount takes the service-account key file either as a JSON
// object or as a string holding one.
type serviceAccount []byte

// UnmarshalJSON implements json.Unmarshaler.
func (s *serviceAccount) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		*s = serviceAccount(str)
		return nil
	}
	if string(b) == "null" {
		*s = nil
		return nil
	}
	*s = append((*s)[:0], b...)
	return nil
}

// Schema implements huma.SchemaProvider: an object or a string.
func (serviceAccount) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{OneOf: []*huma.Schema{{Type: huma.TypeObject}, {Type: huma.TypeString}}}
}

// usageBounds reads the since and until query parameters.
func usageBounds(sinceRaw, untilRaw string) (since, until *time.Time, err error) {
	if since, err = httpapi.ParseTime("since", sinceRaw); err != nil {
		return nil, nil, err
	}
	if until, err = httpapi.ParseTime("until", untilRaw); err != nil {
		return nil, nil, err
	}
	return since, until, nil
}

// Register adds the provider routes (all under /api/v1).
func Register(api huma.API, svc *Service) {
	orgRead := auth.Rule{Scope: auth.ProvidersRead, Resource: auth.Org}
	orgWrite := auth.Rule{Scope: auth.ProvidersWrite, Resource: auth.Org, OrgRole: auth.OrgAdmin}
	projectRead := auth.Rule{Scope: auth.ProvidersRead, Resource: auth.Project}
	projectWrite := auth.Rule{Scope: auth.ProvidersWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
	h := handlers{svc: svc}

	huma.Register(api, httpapi.Op("save-key-ai-credentials", http.MethodPost, "/api/v1/organizations/{orgID}/providers/key-ai/credentials",
		"Store the organization's key-ai API key (organization admins)", orgWrite), h.saveKeyAiCredentials)
	huma.Register(api, httpapi.Op("save-account-ai-credentials", http.MethodPost, "/api/v1/organizations/{orgID}/providers/account-ai/credentials",
		"Store the organization's account-ai service account (organization admins)", orgWrite), h.saveAccountAiCredentials)
	huma.Register(api, httpapi.Op("save-openai-credentials", http.MethodPost, "/api/v1/organizations/{orgID}/providers/openai/credentials",
		"Store the organization's OpenAI-compatible endpoint and key (organization admins)", orgWrite), h.saveOpenAiCredentials)
	huma.Register(api, httpapi.Op("delete-credentials", http.MethodDelete, "/api/v1/organizations/{orgID}/providers/{provider}/credentials",
		"Delete the organization's credentials for a provider (organization admins)", orgWrite.WithKeys("provider")), h.deleteCredentials)
	huma.Register(api, httpapi.Op("list-credentials", http.MethodGet, "/api/v1/organizations/{orgID}/providers/credentials",
		"List the organization's credential metadata (never the secrets)", orgRead), h.listCredentials)
	huma.Register(api, httpapi.Op("set-org-models", http.MethodPut, "/api/v1/organizations/{orgID}/providers/{provider}/models",
		"Set the organization's default models for a provider (organization admins)", orgWrite.WithKeys("provider")), h.setOrgModels)
	huma.Register(api, httpapi.Op("list-models", http.MethodGet, "/api/v1/providers/{provider}/models",
		"List a provider's supported models: the shared catalog and the models of the caller's organization's own endpoint (the X-Org-ID header's organization, else the caller's only one)", auth.Rule{Scope: auth.ProvidersRead, Resource: auth.Personal}.WithKeys("provider")), h.listModels)
	huma.Register(api, httpapi.Op("put-policy", http.MethodPut, "/api/v1/projects/{projectID}/providers/{provider}/policy",
		"Set the project's policy for a provider (project admins)", projectWrite.WithKeys("provider")), h.putPolicy)
	huma.Register(api, httpapi.Op("get-policy", http.MethodGet, "/api/v1/projects/{projectID}/providers/{provider}/policy",
		"Get the project's policy for a provider", projectRead.WithKeys("provider")), h.getPolicy)
	huma.Register(api, httpapi.Op("list-policies", http.MethodGet, "/api/v1/projects/{projectID}/providers/policies",
		"List the project's provider policies", projectRead), h.listPolicies)
	huma.Register(api, httpapi.Op("project-usage", http.MethodGet, "/api/v1/projects/{projectID}/usage",
		"Token usage and estimated cost of the project's provider calls", projectRead), h.projectUsage)
	huma.Register(api, httpapi.Op("org-usage", http.MethodGet, "/api/v1/organizations/{orgID}/usage",
		"Token usage and estimated cost across the organization's projects (organization admins)",
		auth.Rule{Scope: auth.ProvidersRead, Resource: auth.Org, OrgRole: auth.OrgAdmin}), h.orgUsage)
}

// handlers are the provider routes' handlers: each decodes, calls the
// service with what the middleware authorised (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

func (h handlers) saveKeyAiCredentials(ctx context.Context, in *keyAIIn) (*httpapi.NoContent, error) {
	return nil, h.svc.SaveCredentials(ctx, auth.AccessFrom(ctx).OrgID, KeyAI, Credentials{APIKey: in.Body.APIKey})
}

func (h handlers) saveOpenAiCredentials(ctx context.Context, in *openAIIn) (*httpapi.NoContent, error) {
	b := in.Body
	return nil, h.svc.SaveCredentials(ctx, auth.AccessFrom(ctx).OrgID, OpenAI, Credentials{
		APIKey: b.APIKey, BaseURL: b.BaseURL, Organization: b.Organization, Project: b.Project,
	})
}

func (h handlers) saveAccountAiCredentials(ctx context.Context, in *accountAIIn) (*httpapi.NoContent, error) {
	b := in.Body
	return nil, h.svc.SaveCredentials(ctx, auth.AccessFrom(ctx).OrgID, AccountAI, Credentials{
		ServiceAccountJSON: b.ServiceAccountJSON, GCPProject: b.GCPProject, Location: b.Location,
	})
}

func (h handlers) deleteCredentials(ctx context.Context, in *orgProviderIn) (*httpapi.NoContent, error) {
	return nil, h.svc.DeleteCredentials(ctx, auth.AccessFrom(ctx).OrgID, in.Provider)
}

func (h handlers) listCredentials(ctx context.Context, _ *orgIn) (*httpapi.Out[[]Credential], error) {
	return httpapi.Reply(h.svc.Credentials(ctx, auth.AccessFrom(ctx).OrgID))
}

func (h handlers) setOrgModels(ctx context.Context, in *orgModelsIn) (*httpapi.Out[OrgModels], error) {
	return httpapi.Reply(h.svc.SetOrgModels(ctx, auth.AccessFrom(ctx).OrgID, in.Provider, in.Body.EmbeddingModel, in.Body.GenerativeModel))
}

func (h handlers) listModels(ctx context.Context, in *modelsIn) (*httpapi.Out[[]Model], error) {
	return httpapi.Reply(h.svc.Models(ctx, catalogOrg(ctx), in.Provider, in.ModelType))
}

func (h handlers) putPolicy(ctx context.Context, in *policyPutIn) (*httpapi.Out[Policy], error) {
	b := in.Body
	return httpapi.Reply(h.svc.PutPolicy(ctx, auth.AccessFrom(ctx).ProjectID, in.Provider, PolicyInput{
		Policy: b.Policy, EmbeddingModel: b.EmbeddingModel, GenerativeModel: b.GenerativeModel,
		Credentials: Credentials{
			APIKey: b.APIKey, BaseURL: b.BaseURL, Organization: b.Organization, Project: b.Project,
			ServiceAccountJSON: b.ServiceAccountJSON, GCPProject: b.GCPProject, Location: b.Location,
		},
	}))
}

func (h handlers) getPolicy(ctx context.Context, in *projectProviderIn) (*httpapi.Out[Policy], error) {
	return httpapi.Reply(h.svc.Policy(ctx, auth.AccessFrom(ctx).ProjectID, in.Provider))
}

func (h handlers) listPolicies(ctx context.Context, _ *projectIn) (*httpapi.Out[[]Policy], error) {
	return httpapi.Reply(h.svc.Policies(ctx, auth.AccessFrom(ctx).ProjectID))
}

func (h handlers) projectUsage(ctx context.Context, in *projectUsageIn) (*httpapi.Out[UsageSummary], error) {
	project := auth.AccessFrom(ctx).ProjectID
	return h.usage(ctx, uuid.Nil, &project, in.UsagePeriod)
}

func (h handlers) orgUsage(ctx context.Context, in *orgUsageIn) (*httpapi.Out[UsageSummary], error) {
	return h.usage(ctx, auth.AccessFrom(ctx).OrgID, nil, in.UsagePeriod)
}

// usage answers the usage summary of a project or (project nil) an
// organization.
func (h handlers) usage(ctx context.Context, org uuid.UUID, project *uuid.UUID, p UsagePeriod) (*httpapi.Out[UsageSummary], error) {
	since, until, err := usageBounds(p.Since, p.Until)
	if err != nil {
		return nil, err
	}
	return httpapi.Reply(h.svc.Usage(ctx, org, project, since, until))
}

// catalogOrg is the organization whose own endpoint's models a catalog
// listing shows besides the shared ones: the X-Org-ID header's, else the
// caller's only organization (uuid.Nil, the shared catalog only, when it
// has several or none).
func catalogOrg(ctx context.Context) uuid.UUID {
	if a := auth.AccessFrom(ctx); a.OrgID != uuid.Nil {
		return a.OrgID
	}
	p := auth.PrincipalFrom(ctx)
	if p == nil || len(p.OrgRoles) != 1 {
		return uuid.Nil
	}
	for org := range p.OrgRoles {
		return org
	}
	return uuid.Nil
}
