package console

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
)

// The rules of the MCP server pages: the API's (mcpregistry.Register):
// reading a project's servers and tools needs mcp:use, changing,
// inspecting and syncing them mcp:admin and the project admin role;
// routes by server id take the server's owner.
//
//nolint:gochecknoglobals // constant rules
var (
	mcpReadRule  = auth.Rule{Scope: auth.MCPUse, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	mcpWriteRule = auth.Rule{Scope: auth.MCPAdmin, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
)

// mcpOwner is the API's owner of an MCP server path.
func (h *Handler) mcpOwner() *auth.Owner {
	return &auth.Owner{Param: "server", Kind: "mcp-server", Resolve: auth.InProject(h.cfg.MCP.ServerProject), NotFound: mcpregistry.ErrServerNotFound}
}

// mcpForm is the add-server form as submitted (secrets never echoed
// back: only the names of env variables and headers are kept).
type mcpForm struct {
	Name, Type, URL, Command, Args string
	Problem                        string
}

// mcpServers lists the project's MCP servers (the built-in one first
// created by the service on first list) with the add form for admins.
func (h *Handler) mcpServers(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderMCPServers(w, r, c, http.StatusOK, mcpForm{Type: mcpregistry.TypeHTTP})
}

func (h *Handler) renderMCPServers(w http.ResponseWriter, r *http.Request, c caller, status int, f mcpForm) {
	p, list, pg, err := projectList(h, r, c, mcpReadRule, "/mcp", h.cfg.MCP.ListServers)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pv := projectView{Project: p, CanWrite: h.can(r, c, mcpWriteRule)}
	h.render(w, r, status, mcpServersPage(c.sess.CSRF, pv, list, f, pg))
}

// createMCPServer adds a server from the form (the API's create rule and
// stdio policy); a refusal shows the page again with the API's message
// and the form's values, secrets left out.
func (h *Handler) createMCPServer(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, mcpWriteRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := mcpForm{
		Name: strings.TrimSpace(r.PostFormValue("name")), Type: r.PostFormValue("type"), URL: strings.TrimSpace(r.PostFormValue("url")),
		Command: strings.TrimSpace(r.PostFormValue("command")), Args: r.PostFormValue("args"),
	}
	env, err := pairs(r.PostFormValue("env"), "=", "env")
	if err == nil {
		var headers map[string]string
		headers, err = pairs(r.PostFormValue("headers"), ":", "headers")
		if err == nil {
			var srv mcpregistry.Server
			srv, err = h.cfg.MCP.CreateServer(r.Context(), a.ProjectID, mcpregistry.ServerInput{
				Name: f.Name, Type: f.Type, Command: f.Command, Args: lines(f.Args), Env: env, URL: f.URL, Headers: headers,
			}, mcpregistry.CallerOf(c.p, a))
			if err == nil {
				http.Redirect(w, r, mcpServerURL(p.ID, srv.ID.String()), http.StatusSeeOther)
				return
			}
		}
	}
	h.formRefused(w, r, err, func(status int, problem string) {
		f.Problem = problem
		h.renderMCPServers(w, r, c, status, f)
	})
}

// mcpServer shows a server with its tool catalogue (the built-in server's
// tools with their effective settings).
func (h *Handler) mcpServer(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, srv, err := ownedResource(h, r, c, mcpReadRule, h.mcpOwner(), h.cfg.MCP.Server)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	tools, err := h.cfg.MCP.Tools(r.Context(), a.ProjectID, a.ResourceID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pv := projectView{Project: p, CanWrite: h.can(r, c, mcpWriteRule)}
	h.render(w, r, http.StatusOK, mcpServerPage(c.sess.CSRF, pv, srv, tools))
}

// mcpWrite authorises c to change the path's server (the API's write rule
// and owner).
func (h *Handler) mcpWrite(r *http.Request, c caller) (auth.Access, projectView, error) {
	a, p, err := h.ownedContext(r, c, mcpWriteRule, h.mcpOwner())
	return a, projectView{Project: p, CanWrite: true}, err
}

// enableMCPServer enables or disables a server (form field enabled) and
// answers its new row.
func (h *Handler) enableMCPServer(w http.ResponseWriter, r *http.Request, c caller) {
	a, pv, err := h.mcpWrite(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	on := r.PostFormValue("enabled") == "true"
	srv, err := h.cfg.MCP.UpdateServer(r.Context(), a.ProjectID, a.ResourceID, mcpregistry.ServerUpdate{Enabled: &on}, mcpregistry.CallerOf(c.p, a))
	h.show(w, r, mcpServerRow(pv, srv), err)
}

// deleteMCPServer deletes a server with its tools and answers nothing
// (the row goes).
func (h *Handler) deleteMCPServer(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.mcpWrite(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.cfg.MCP.DeleteServer(r.Context(), a.ProjectID, a.ResourceID); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// syncMCPServer mirrors the live server's tools into the catalogue and
// answers the catalogue.
func (h *Handler) syncMCPServer(w http.ResponseWriter, r *http.Request, c caller) {
	a, pv, err := h.mcpWrite(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := h.cfg.MCP.Sync(r.Context(), a.ProjectID, a.ResourceID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	srv, err := h.cfg.MCP.Server(r.Context(), a.ProjectID, a.ResourceID)
	h.show(w, r, mcpToolTable(pv, srv, res.Tools, &res), err)
}

// inspectMCPServer lists the live server's tools without recording them.
func (h *Handler) inspectMCPServer(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.mcpWrite(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	live, err := h.cfg.MCP.Inspect(r.Context(), a.ProjectID, a.ResourceID)
	h.show(w, r, mcpLiveTools(live), err)
}

// updateMCPTool enables or disables a tool (form field enabled); for a
// configurable built-in tool a non-empty api_key sets the project's key
// (write-only: never shown, *** kept).
func (h *Handler) updateMCPTool(w http.ResponseWriter, r *http.Request, c caller) {
	a, pv, err := h.mcpWrite(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	u := mcpregistry.ToolUpdate{}
	if v := r.PostFormValue("enabled"); v != "" {
		on := v == "true"
		u.Enabled = &on
	}
	if key := r.PostFormValue("api_key"); key != "" {
		u.Config = map[string]any{mcpregistry.ConfigAPIKey: key}
	}
	if u.Enabled == nil && u.Config == nil {
		h.fail(w, r, errs.New(errs.Invalid, "nothing to change: give enabled or an api_key"))
		return
	}
	t, err := h.cfg.MCP.UpdateTool(r.Context(), a.ProjectID, a.ResourceID, chi.URLParam(r, "tool"), u)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	srv, err := h.cfg.MCP.Server(r.Context(), a.ProjectID, a.ResourceID)
	h.show(w, r, mcpToolRow(pv, srv, t), err)
}

// resetMCPTool removes the project's setting of a built-in tool (the
// project falls back to its organization's default, else the global
// one), as DELETE /api/admin/projects/{projectId}/tool-settings/{toolName},
// and answers the tool's row with its inherited setting.
func (h *Handler) resetMCPTool(w http.ResponseWriter, r *http.Request, c caller) {
	a, pv, err := h.mcpWrite(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	srv, err := h.cfg.MCP.Server(r.Context(), a.ProjectID, a.ResourceID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if srv.Type != mcpregistry.TypeBuiltin {
		h.fail(w, r, errs.New(errs.Invalid, "only built-in tools have settings to reset"))
		return
	}
	name := chi.URLParam(r, "tool")
	if err := h.cfg.MCP.DeleteProjectToolSetting(r.Context(), a.ProjectID, name); err != nil {
		h.fail(w, r, err)
		return
	}
	tools, err := h.cfg.MCP.Tools(r.Context(), a.ProjectID, a.ResourceID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, t := range tools {
		if t.ToolName == name {
			h.render(w, r, http.StatusOK, mcpToolRow(pv, srv, t))
			return
		}
	}
	h.fail(w, r, mcpregistry.ErrUnknownBuiltin)
}

// lines splits a textarea into its non-empty trimmed lines.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// pairs reads a textarea of NAME<sep>VALUE lines (env: KEY=value,
// headers: Name: value). Errors: invalid_argument naming the field.
func pairs(s, sep, field string) (map[string]string, error) {
	var out map[string]string
	for i, l := range lines(s) {
		k, v, ok := strings.Cut(l, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, errs.Errorf(errs.Invalid, "%s line %d: write NAME%sVALUE", field, i+1, sep)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}
