package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/integration"
)

// SyncsEvent is the SSE event the integrations stream sends when one of
// the project's syncs ended: the history reloads its rows.
const SyncsEvent = "syncs"

// The rules of the integration pages: the API's (integration.Register).
// The list needs integrations:read; an integration's page (its config,
// masked) and every change integrations:write and the project admin
// role, as GET /api/integrations/{name} and the changing routes. The
// sync history and logs, which the API shows only to superadmins, take
// the admin rule of the integration they belong to.
//
//nolint:gochecknoglobals // constant rules
var (
	integrationsRule     = auth.Rule{Scope: auth.IntegrationsRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	integrationAdminRule = auth.Rule{Scope: auth.IntegrationsWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
)

// mountIntegrations adds the MCP server, integration and discovery pages.
func (h *Handler) mountIntegrations(p pages) {
	mcp := "/projects/{project}/mcp"
	p.get(mcp, h.mcpServers)
	p.post(mcp, h.createMCPServer)
	p.get(mcp+"/{server}", h.mcpServer)
	p.post(mcp+"/{server}/enabled", h.enableMCPServer)
	p.post(mcp+"/{server}/delete", h.deleteMCPServer)
	p.post(mcp+"/{server}/sync", h.syncMCPServer)
	p.post(mcp+"/{server}/inspect", h.inspectMCPServer)
	p.post(mcp+"/{server}/tools/{tool}", h.updateMCPTool)
	p.post(mcp+"/{server}/tools/{tool}/reset", h.resetMCPTool)

	in := "/projects/{project}/integrations"
	p.get(in, h.integrations)
	p.get(in+"/new", h.newIntegration)
	p.post(in, h.createIntegration)
	p.get(in+"/{name}", h.integrationPage)
	p.post(in+"/{name}", h.updateIntegration)
	p.post(in+"/{name}/sync", h.syncIntegration)
	p.post(in+"/{name}/test", h.testIntegration)
	p.post(in+"/{name}/delete", h.deleteIntegration)
	p.get(in+"/{name}/syncs", h.syncRows)
	p.get(in+"/{name}/syncs/{job}", h.syncJob)
	p.get(StreamPrefix+"projects/{project}/integrations", h.integrationStream)

	d := "/projects/{project}/discovery"
	p.get(d, h.discoveryJobs)
	p.get(d+"/rows", h.discoveryRows)
	p.get(d+"/new", h.newDiscovery)
	p.post(d, h.startDiscovery)
	p.get(d+"/{id}", h.discoveryJob)
	p.get(d+"/{id}/live", h.discoveryLive)
	p.post(d+"/{id}/cancel", h.cancelDiscovery)
	p.post(d+"/{id}/finalize", h.finalizeDiscovery)
	p.get(StreamPrefix+"projects/{project}/discovery", h.discoveryStream)
	p.get(StreamPrefix+"projects/{project}/discovery/{id}", h.discoveryJobStream)
}

func integrationURL(project uuid.UUID, name string) string {
	return projectURL(project) + "/integrations/" + url.PathEscape(name)
}

// integrationForm is the add or configure form as submitted: the
// provider's fields, secrets never echoed back.
type integrationForm struct {
	Name, DisplayName string
	Desc              connector.Descriptor
	Values            map[string]string
	Problem           string
}

// integrations lists the project's integrations and the providers an
// admin may add.
func (h *Handler) integrations(w http.ResponseWriter, r *http.Request, c caller) {
	p, list, pg, err := projectList(h, r, c, integrationsRule, "/integrations", h.cfg.Integrations.List)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pv := projectView{Project: p, CanWrite: h.can(r, c, integrationAdminRule)}
	h.render(w, r, http.StatusOK, integrationsPage(c.sess.CSRF, pv, list, h.cfg.Integrations.Available(), pg))
}

// newIntegration is the add form of one provider (query provider).
func (h *Handler) newIntegration(w http.ResponseWriter, r *http.Request, c caller) {
	_, p, err := h.projectContext(r, c, integrationAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d, ok := h.cfg.Integrations.Descriptor(r.URL.Query().Get("provider"))
	if !ok {
		h.fail(w, r, errs.New(errs.Invalid, "provider must be one of the available integrations"))
		return
	}
	h.render(w, r, http.StatusOK, integrationNewPage(c.sess.CSRF, projectView{Project: p, CanWrite: true}, integrationForm{Desc: d}))
}

// createIntegration configures an integration from the form; a refusal
// shows the form again with the API's message, secrets left out.
func (h *Handler) createIntegration(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, integrationAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d, ok := h.cfg.Integrations.Descriptor(r.PostFormValue("provider_type"))
	if !ok {
		h.fail(w, r, errs.New(errs.Invalid, "provider_type must be one of the available integrations"))
		return
	}
	f := integrationForm{Name: strings.TrimSpace(r.PostFormValue("name")), DisplayName: strings.TrimSpace(r.PostFormValue("display_name")), Desc: d}
	cfg, values, err := configOf(r, d, nil)
	f.Values = values
	if err == nil {
		var user *uuid.UUID
		if c.p.UserID != uuid.Nil {
			user = &c.p.UserID
		}
		_, err = h.cfg.Integrations.Create(r.Context(), a.ProjectID, user, integration.CreateParams{
			Name: f.Name, DisplayName: f.DisplayName, ProviderType: d.Name, Config: cfg,
		})
		if err == nil {
			http.Redirect(w, r, integrationURL(p.ID, f.Name), http.StatusSeeOther)
			return
		}
	}
	h.formRefused(w, r, err, func(status int, problem string) {
		f.Problem = problem
		h.render(w, r, status, integrationNewPage(c.sess.CSRF, projectView{Project: p, CanWrite: true}, f))
	})
}

// allFields are a provider's fields and the domain's own settings.
func allFields(d connector.Descriptor) []connector.Field {
	out := append(append([]connector.Field{}, d.RequiredFields...), d.OptionalFields...)
	return append(out,
		connector.Field{Name: integration.FieldSyncInterval, Type: connector.TypeInteger, Description: "Minutes between scheduled syncs (empty: manual only)."},
		connector.Field{Name: integration.FieldMaxDeleteFraction, Type: "number", Description: "Share of the documents one sync may delete (default 0.5)."},
	)
}

// configOf reads the form's config fields by their types (arrays one
// item a line); an empty field is left out, except that an empty secret
// of a configured integration (stored, shown masked) keeps its value.
// It returns the values to show again, secrets left out: every field's,
// those after a field that does not parse too. Errors: invalid_argument
// naming the (first) field.
func configOf(r *http.Request, d connector.Descriptor, stored map[string]any) (map[string]json.RawMessage, map[string]string, error) {
	fields := allFields(d)
	values := map[string]string{}
	for _, f := range fields {
		if !f.Secret {
			values[f.Name] = strings.TrimSpace(r.PostFormValue("config." + f.Name))
		}
	}
	cfg := map[string]json.RawMessage{}
	for _, f := range fields {
		raw := strings.TrimSpace(r.PostFormValue("config." + f.Name))
		var v any
		switch {
		case raw == "" && f.Secret && stored[f.Name] != nil:
			v = stored[f.Name] // masked: the service keeps the stored secret
		case raw == "":
			continue
		case f.Type == "array":
			v = lines(raw)
		case f.Type == connector.TypeInteger:
			n, err := strconv.Atoi(raw)
			if err != nil {
				return nil, values, errs.Errorf(errs.Invalid, "%s must be a whole number", f.Name)
			}
			v = n
		case f.Type == "number":
			n, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				return nil, values, errs.Errorf(errs.Invalid, "%s must be a number", f.Name)
			}
			v = n
		case f.Type == "boolean":
			v = raw == "true" || raw == "on"
		default:
			v = raw
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, values, errs.Errorf(errs.Invalid, "%s: %v", f.Name, err)
		}
		cfg[f.Name] = b
	}
	return cfg, values, nil
}

// integrationPage shows an integration (config masked), the configure
// form, Sync now, and the sync history, live.
func (h *Handler) integrationPage(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderIntegration(w, r, c, http.StatusOK, nil, "")
}

// renderIntegration answers the integration's page with status and
// problem, why its configure or delete form was refused; typed, when set,
// is the configure form as submitted (else the stored config).
func (h *Handler) renderIntegration(w http.ResponseWriter, r *http.Request, c caller, status int, typed *integrationForm, problem string) {
	a, p, err := h.projectContext(r, c, integrationAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name := chi.URLParam(r, "name")
	in, err := h.cfg.Integrations.Get(r.Context(), a.ProjectID, name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset := pageOffset(r)
	syncs, total, err := h.cfg.Integrations.SyncHistory(r.Context(), a.ProjectID, name, PageSize, offset)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d, _ := h.cfg.Integrations.Descriptor(in.ProviderType)
	f := integrationForm{DisplayName: in.DisplayName, Desc: d, Values: shownConfig(d, in.Config)}
	if typed != nil {
		f.DisplayName, f.Values = typed.DisplayName, typed.Values
	}
	f.Problem = problem
	pv := projectView{Project: p, CanWrite: true}
	h.render(w, r, status, integrationPage(c.sess.CSRF, pv, in, f, syncs,
		pager{Offset: offset, Total: total, Base: integrationURL(p.ID, name)}))
}

// shownConfig is a configured integration's non-secret values, as the
// form shows them (arrays one item a line).
func shownConfig(d connector.Descriptor, cfg map[string]any) map[string]string {
	out := map[string]string{}
	for _, f := range allFields(d) {
		v, ok := cfg[f.Name]
		if !ok || f.Secret || v == nil {
			continue
		}
		out[f.Name] = formText(v)
	}
	return out
}

// formText is a config value (JSON as stored, or a decoded value) as a
// form field's text: strings as they are, arrays one item a line, others
// as JSON.
func formText(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		var decoded any
		if json.Unmarshal(raw, &decoded) == nil {
			v = decoded
		}
	}
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var b strings.Builder
		for _, item := range x {
			b.WriteString(formText(item) + "\n")
		}
		return b.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// updateIntegration replaces the integration's config from the form
// (a given config replaces the stored one; an empty secret keeps its
// stored value) and its display name.
func (h *Handler) updateIntegration(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.projectContext(r, c, integrationAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name := chi.URLParam(r, "name")
	in, err := h.cfg.Integrations.Get(r.Context(), a.ProjectID, name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d, ok := h.cfg.Integrations.Descriptor(in.ProviderType)
	if !ok {
		h.fail(w, r, errs.Errorf(errs.FailedPrecondition, "the provider %q is not available on this server", in.ProviderType))
		return
	}
	cfg, values, err := configOf(r, d, in.Config)
	typed := integrationForm{DisplayName: strings.TrimSpace(r.PostFormValue("display_name")), Values: values}
	if err == nil {
		_, err = h.cfg.Integrations.Update(r.Context(), a.ProjectID, name, integration.UpdateParams{DisplayName: &typed.DisplayName, Config: cfg})
		if err == nil {
			http.Redirect(w, r, integrationURL(in.ProjectID, in.Name), http.StatusSeeOther)
			return
		}
	}
	h.formRefused(w, r, err, func(status int, problem string) {
		h.renderIntegration(w, r, c, status, &typed, problem)
	})
}

// syncIntegration queues a manual sync, as POST /api/integrations/{name}/sync,
// and answers the history's rows.
func (h *Handler) syncIntegration(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, integrationAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name := chi.URLParam(r, "name")
	res, err := h.cfg.Integrations.Sync(r.Context(), a.ProjectID, name, integration.TriggerManual, integration.SyncOptions{FullSync: r.PostFormValue("full_sync") == "true"})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !res.Success {
		h.fail(w, r, errs.New(errs.Conflict, res.Message))
		return
	}
	syncs, _, err := h.cfg.Integrations.SyncHistory(r.Context(), a.ProjectID, name, PageSize, 0)
	h.show(w, r, syncRowList(p.ID, name, syncs), err)
}

// testIntegration connects to the integration's source, as POST
// /api/integrations/{name}/test, and answers the outcome's message (the
// service keeps secrets out of it).
func (h *Handler) testIntegration(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.projectContext(r, c, integrationAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := h.cfg.Integrations.Test(r.Context(), a.ProjectID, chi.URLParam(r, "name"))
	h.show(w, r, testOutcome(res), err)
}

// deleteIntegration removes the integration (its documents stay), as
// DELETE /api/integrations/{name}, and goes back to the list.
func (h *Handler) deleteIntegration(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, integrationAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.cfg.Integrations.Delete(r.Context(), a.ProjectID, chi.URLParam(r, "name")); err != nil {
		h.formRefused(w, r, err, func(status int, problem string) {
			h.renderIntegration(w, r, c, status, nil, problem)
		})
		return
	}
	http.Redirect(w, r, projectURL(p.ID)+"/integrations", http.StatusSeeOther)
}

// syncRows is the sync history's rows, which the page reloads when a
// sync of the project ends.
func (h *Handler) syncRows(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, integrationAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name := chi.URLParam(r, "name")
	syncs, _, err := h.cfg.Integrations.SyncHistory(r.Context(), a.ProjectID, name, PageSize, pageOffset(r))
	h.show(w, r, syncRowList(p.ID, name, syncs), err)
}

// syncJob shows one sync with its counters, and its log to superadmins.
func (h *Handler) syncJob(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, integrationAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	id, err := httpapi.ParseID(chi.URLParam(r, "job"), integration.ErrSyncNotFound)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name := chi.URLParam(r, "name")
	j, log, err := h.cfg.Integrations.SyncJob(r.Context(), a.ProjectID, name, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// The log is the API's superadmin record (GET
	// /api/superadmin/sync-jobs/{jobID}/logs, its rule): a project admin
	// sees the job's counters only, which every sync's
	// integration.sync.completed event gives the project already.
	var logs []integration.LogEntry
	showLog := h.can(r, c, superRead)
	if showLog {
		logs = log.Logs
	}
	h.render(w, r, http.StatusOK, syncJobPage(c.sess.CSRF, projectView{Project: p}, name, j, showLog, logs))
}

// integrationEvents selects the events of project that end a sync.
func integrationEvents(project uuid.UUID) func(e streamEvent) (string, bool) {
	return func(e streamEvent) (string, bool) {
		if e.ProjectID != nil && *e.ProjectID == project && e.Type == events.TypeIntegrationSyncCompleted {
			return SyncsEvent, true
		}
		return "", false
	}
}

func (h *Handler) integrationStream(w http.ResponseWriter, r *http.Request, c caller) {
	h.stream(w, r, c, integrationsRule, integrationEvents)
}
