package console

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/provider"
)

// The rules of the providers and usage pages: the API's (provider.Register).
//
//nolint:gochecknoglobals // constant rules
var (
	providersRule      = auth.Rule{Scope: auth.ProvidersRead, Resource: auth.Project}
	providerWriteRule  = auth.Rule{Scope: auth.ProvidersWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
	orgCredentialsRule = auth.Rule{Scope: auth.ProvidersRead, Resource: auth.Org}
	modelsRule         = auth.Rule{Scope: auth.ProvidersRead, Resource: auth.Personal}
	usagePeriods       = []int{7, 30, 90}
	policyChoices      = []string{provider.PolicyOrganization, provider.PolicyProject, provider.PolicyNone}
)

// policyRow is one credential provider as the providers page shows it:
// the project's policy (Set false: none stored, the organization's
// credentials apply).
type policyRow struct {
	Provider string
	Set      bool
	Policy   provider.Policy
	// Form is its form's values: the stored policy's, or those typed
	// when the form was refused (secrets never).
	Form provider.Policy
}

// providersView is the providers page's content.
type providersView struct {
	projectView
	Policies []policyRow
	// OrgCredentials are the organization's credential metadata, shown
	// when the caller may read them (ShowOrg).
	OrgCredentials []provider.Credential
	ShowOrg        bool
	Catalog        string
	Models         []provider.Model
	Notice         notice
}

// catalogProviders are the providers whose model catalog the page shows.
func catalogProviders() []string { return append(credentialProviders(), provider.Local) }

// credentialProviders are the providers a policy is set for.
func credentialProviders() []string {
	return []string{provider.KeyAI, provider.AccountAI, provider.OpenAI}
}

func (h *Handler) providers(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderProviders(w, r, c, http.StatusOK, notice{}, nil)
}

// renderProviders answers the providers page: the project's policies
// (list-policies), the organization's credential metadata
// (list-credentials, when its rule lets the caller) and a provider's
// model catalog (list-models), never a secret; typed, when set, is a
// refused form's values (its provider's form shows them).
func (h *Handler) renderProviders(w http.ResponseWriter, r *http.Request, c caller, status int, n notice, typed *provider.Policy) {
	a, p, err := h.projectContext(r, c, providersRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	list, err := h.cfg.Providers.Policies(r.Context(), a.ProjectID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := providersView{projectView: projectView{Project: p, CanWrite: h.can(r, c, providerWriteRule)}, Notice: n}
	for _, name := range credentialProviders() {
		row := policyRow{Provider: name}
		for _, pol := range list {
			if pol.Provider == name {
				row.Set, row.Policy = true, pol
			}
		}
		row.Form = row.Policy
		if typed != nil && typed.Provider == name {
			row.Form = *typed
		}
		v.Policies = append(v.Policies, row)
	}
	if _, err := h.cfg.Guard.Check(r.Context(), c.p, orgCredentialsRule, auth.Request{OrgID: p.OrgID.String()}); err == nil {
		if v.OrgCredentials, err = h.cfg.Providers.Credentials(r.Context(), p.OrgID); err != nil {
			h.fail(w, r, err)
			return
		}
		v.ShowOrg = true
	}
	v.Catalog = r.URL.Query().Get("catalog")
	if v.Catalog == "" {
		v.Catalog = provider.KeyAI
	}
	ma, err := h.check(r, c, modelsRule, "")
	if err == nil {
		v.Models, err = h.cfg.Providers.Models(r.Context(), ma.OrgID, v.Catalog, "")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, status, providersPage(c.sess.CSRF, v))
}

// putPolicy sets the project's policy for the path's provider (project
// admins), as the API's put-policy route: the credentials of the form
// are sealed and never shown again; empty credential fields keep the
// stored ones of a project policy.
func (h *Handler) putPolicy(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.projectContext(r, c, providerWriteRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name := chi.URLParam(r, "provider")
	f := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	in := provider.PolicyInput{
		Policy: f("policy"), EmbeddingModel: f("embeddingModel"), GenerativeModel: f("generativeModel"),
		Credentials: provider.Credentials{
			APIKey: f("apiKey"), BaseURL: f("baseUrl"), Organization: f("organization"), Project: f("openaiProject"),
			GCPProject: f("gcpProject"), Location: f("location"),
		},
	}
	if sa := f("serviceAccountJson"); sa != "" {
		in.ServiceAccountJSON = []byte(sa)
	}
	pol, err := h.cfg.Providers.PutPolicy(r.Context(), a.ProjectID, name, in)
	if err != nil {
		// The credentials are sealed with the secrets: only the fields the
		// page shows of a stored policy come back.
		typed := provider.Policy{
			Provider: name, Policy: in.Policy, EmbeddingModel: in.EmbeddingModel, GenerativeModel: in.GenerativeModel,
			GCPProject: in.GCPProject, Location: in.Location,
		}
		h.formRefused(w, r, err, func(status int, problem string) {
			h.renderProviders(w, r, c, status, notice{Problem: problem}, &typed)
		})
		return
	}
	h.renderProviders(w, r, c, http.StatusOK, notice{Message: "The " + pol.Provider + " policy is now " + pol.Policy + "."}, nil)
}

// usageView is the usage page's content: the period's sums per provider
// and model, and its days as charts.
type usageView struct {
	projectView
	Days    int
	Summary provider.UsageSummary
	Daily   []provider.UsageDay
	Since   time.Time
}

// usage is the project's token usage and estimated cost over the last
// days (7, 30 or 90): the API's project-usage, under its rule, and the
// same ledger per day.
func (h *Handler) usage(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, providersRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	days := 30
	if raw := r.URL.Query().Get("days"); raw != "" {
		days, err = strconv.Atoi(raw)
		if err != nil || !slices.Contains(usagePeriods, days) {
			h.render(w, r, http.StatusBadRequest, errorPage(http.StatusBadRequest, "days must be 7, 30 or 90"))
			return
		}
	}
	until := h.cfg.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	since := until.AddDate(0, 0, -days)
	// The sums and the days each read the period's ledger: at once.
	var (
		sum   provider.UsageSummary
		daily []provider.UsageDay
	)
	g, ctx := errgroup.WithContext(r.Context())
	g.Go(func() (err error) {
		sum, err = h.cfg.Providers.Usage(ctx, uuid.Nil, &a.ProjectID, &since, &until)
		return err
	})
	g.Go(func() (err error) {
		daily, err = h.cfg.Providers.DailyUsage(ctx, a.ProjectID, since, until)
		return err
	})
	if err := g.Wait(); err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, usagePage(c.sess.CSRF, usageView{projectView: projectView{Project: p}, Days: days, Summary: sum, Daily: daily, Since: since}))
}

// Chart geometry, in SVG user units.
const (
	chartWidth  = 720
	chartHeight = 180
	chartTop    = 16
	chartBottom = 24
	chartLeft   = 64
)

// bar is one day of a chart.
type bar struct {
	X, Y, W, H float64
	Title      string
}

// chart is a bar chart of one series per day, drawn as inline SVG.
type chart struct {
	ID    string
	Label string
	Max   string
	Bars  []bar
	First string
	Last  string
}

// usageChart charts value of each day.
func usageChart(id, label string, days []provider.UsageDay, value func(provider.UsageDay) float64, format func(float64) string) chart {
	c := chart{ID: id, Label: label}
	if len(days) == 0 {
		return c
	}
	top := 0.0
	for _, d := range days {
		top = max(top, value(d))
	}
	c.Max = format(top)
	plot := float64(chartHeight - chartTop - chartBottom)
	slot := float64(chartWidth-chartLeft) / float64(len(days))
	for i, d := range days {
		v := value(d)
		h := 0.0
		if top > 0 {
			h = v / top * plot
		}
		c.Bars = append(c.Bars, bar{
			X: chartLeft + float64(i)*slot + slot*0.1, W: slot * 0.8, Y: chartTop + plot - h, H: h,
			Title: d.Day.Format("2006-01-02") + ": " + format(v),
		})
	}
	c.First, c.Last = days[0].Day.Format("Jan 2"), days[len(days)-1].Day.Format("Jan 2")
	return c
}

func tokensChart(days []provider.UsageDay) chart {
	return usageChart("tokens-chart", "Tokens per day", days, func(d provider.UsageDay) float64 { return float64(d.Tokens) },
		func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) })
}

func costChart(days []provider.UsageDay) chart {
	return usageChart("cost-chart", "Estimated cost per day (USD)", days, func(d provider.UsageDay) float64 { return d.CostUSD }, usd)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// totalTokens sums a usage row's tokens.
func totalTokens(u provider.UsageRow) int64 {
	return u.TotalText + u.TotalImage + u.TotalVideo + u.TotalAudio + u.TotalOutput
}
