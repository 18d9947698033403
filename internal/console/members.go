package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// The rules of the members and tokens pages: the API's (tenancy.Register
// and its token routes).
//
//nolint:gochecknoglobals // constant rules
var (
	membersRule      = auth.Rule{Scope: auth.AdminRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	memberAdminRule  = auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
	tokensRule       = auth.Rule{Scope: auth.AdminRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	tokenWriteRule   = auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	memberRoles      = []string{string(auth.ProjectAdmin), string(auth.ProjectEditor), string(auth.ProjectViewer)}
	tokenDateFormats = []string{"2006-01-02", time.RFC3339}
)

// mountProjectAdmin adds the project administration pages: members,
// tokens, providers, usage and extraction monitoring.
func (h *Handler) mountProjectAdmin(p pages) {
	p.get("/projects/{project}/members", h.members)
	p.post("/projects/{project}/members", h.addMember)
	p.post("/projects/{project}/members/{userId}/remove", h.removeMember)
	p.get("/projects/{project}/tokens", h.tokens)
	p.post("/projects/{project}/tokens", h.createToken)
	p.post("/projects/{project}/tokens/{id}/revoke", h.revokeToken)
	p.get("/projects/{project}/providers", h.providers)
	p.post("/projects/{project}/providers/{provider}/policy", h.putPolicy)
	p.get("/projects/{project}/usage", h.usage)
	p.get("/projects/{project}/monitoring", h.monitoring)
	p.get("/projects/{project}/jobs/{id}/llm-calls", h.jobCalls)
}

// notice is what a page says after an action: a message, or a problem
// with the form.
type notice struct {
	Message string
	Problem string
}

// membersView is the members page's content.
type membersView struct {
	projectView
	Members []tenancy.Member
	Pager   pager
	Notice  notice
}

func (h *Handler) members(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderMembers(w, r, c, http.StatusOK, notice{})
}

// renderMembers answers the members page with status and n (after an
// action, or its refusal).
func (h *Handler) renderMembers(w http.ResponseWriter, r *http.Request, c caller, status int, n notice) {
	a, p, err := h.projectContext(r, c, membersRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset := pageOffset(r)
	list, total, err := h.cfg.Projects.ListMembers(r.Context(), a.ProjectID, tenancy.Page{Limit: PageSize, Offset: offset})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := membersView{
		projectView: projectView{Project: p, CanWrite: h.can(r, c, memberAdminRule)},
		Members:     list, Pager: pager{Offset: offset, Total: total, Base: projectURL(p.ID) + "/members"}, Notice: n,
	}
	h.render(w, r, status, membersPage(c.sess.CSRF, v))
}

// formProblem answers a refused form: the page again with the message
// of a client error, or the error page for others.
func (h *Handler) formProblem(w http.ResponseWriter, r *http.Request, err error, again func(status int, n notice)) {
	status, msg := statusOf(err)
	if status >= http.StatusInternalServerError {
		h.fail(w, r, err)
		return
	}
	// The project was checked first: a client error is about the form
	// (an unknown user, member or token, a bad role, a scope the caller
	// lacks).
	again(status, notice{Problem: msg})
}

// addMember adds a member or changes a member's role (form fields
// userId and role), as the API's add-project-member route.
func (h *Handler) addMember(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.projectContext(r, c, memberAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	again := func(status int, n notice) { h.renderMembers(w, r, c, status, n) }
	user, err := uuid.Parse(strings.TrimSpace(r.PostFormValue("userId")))
	if err != nil {
		again(http.StatusBadRequest, notice{Problem: "The user must be given by its id (a UUID)."})
		return
	}
	m, err := h.cfg.Projects.AddMember(r.Context(), a.ProjectID, user, r.PostFormValue("role"))
	if err != nil {
		h.formProblem(w, r, err, again)
		return
	}
	again(http.StatusOK, notice{Message: memberName(m) + " is now " + m.Role + "."})
}

// removeMember removes the path's member, as the API's
// remove-project-member route.
func (h *Handler) removeMember(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.projectContext(r, c, memberAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	again := func(status int, n notice) { h.renderMembers(w, r, c, status, n) }
	user, err := httpapi.ParseID(chi.URLParam(r, "userId"), tenancy.ErrMemberNotFound)
	if err == nil {
		err = h.cfg.Projects.RemoveMember(r.Context(), a.ProjectID, user)
	}
	if err != nil {
		h.formProblem(w, r, err, again)
		return
	}
	again(http.StatusOK, notice{Message: "The member was removed."})
}

// memberName is how a page names a member.
func memberName(m tenancy.Member) string {
	switch {
	case m.DisplayName != "":
		return m.DisplayName
	case m.PrimaryEmail != "":
		return m.PrimaryEmail
	}
	return m.UserID.String()
}

// tokensView is the tokens page's content; Created is a token just made,
// shown this once.
type tokensView struct {
	projectView
	Tokens  []tenancy.Token
	Pager   pager
	Notice  notice
	Created *tenancy.Token
	// Scopes are those the caller holds, which a new token may have.
	Scopes []string
}

func (h *Handler) tokens(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderTokens(w, r, c, http.StatusOK, notice{}, nil)
}

func (h *Handler) renderTokens(w http.ResponseWriter, r *http.Request, c caller, status int, n notice, created *tenancy.Token) {
	a, p, err := h.projectContext(r, c, tokensRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset := pageOffset(r)
	list, total, err := h.cfg.Projects.ListProjectTokens(r.Context(), c.p, a, tenancy.Page{Limit: PageSize, Offset: offset})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := tokensView{
		projectView: projectView{Project: p, CanWrite: h.can(r, c, tokenWriteRule)},
		Tokens:      list, Pager: pager{Offset: offset, Total: total, Base: projectURL(p.ID) + "/tokens"},
		Notice: n, Created: created, Scopes: c.p.Scopes.Names(),
	}
	h.render(w, r, status, tokensPage(c.sess.CSRF, v))
}

// createToken mints a token bound to the project (form fields name,
// scope (repeated) and expiresAt, a date), as the API's
// create-project-token route, and shows it this once.
func (h *Handler) createToken(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.projectContext(r, c, tokenWriteRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	again := func(status int, n notice) { h.renderTokens(w, r, c, status, n, nil) }
	if err := r.ParseForm(); err != nil {
		again(http.StatusBadRequest, notice{Problem: "The form could not be read."})
		return
	}
	params := tenancy.CreateTokenParams{UserID: c.p.UserID, ProjectID: &a.ProjectID, Name: r.PostForm.Get("name"), Scopes: r.PostForm["scope"]}
	if raw := strings.TrimSpace(r.PostForm.Get("expiresAt")); raw != "" {
		at, ok := parseDate(raw)
		if !ok {
			again(http.StatusBadRequest, notice{Problem: "The expiry must be a date such as 2030-01-31."})
			return
		}
		params.ExpiresAt = &at
	}
	t, err := h.cfg.Projects.CreateToken(r.Context(), c.p, params)
	if err != nil {
		h.formProblem(w, r, err, again)
		return
	}
	h.renderTokens(w, r, c, http.StatusCreated, notice{Message: "Token " + t.Name + " created."}, &t)
}

// parseDate reads a date (the end of that day, UTC) or an RFC 3339 time.
func parseDate(raw string) (time.Time, bool) {
	for i, f := range tokenDateFormats {
		if t, err := time.Parse(f, raw); err == nil {
			if i == 0 {
				t = t.Add(24*time.Hour - time.Second)
			}
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// revokeToken revokes the path's token, as the API's
// revoke-project-token route (yours; any for project admins).
func (h *Handler) revokeToken(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.projectContext(r, c, tokenWriteRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	again := func(status int, n notice) { h.renderTokens(w, r, c, status, n, nil) }
	id, err := httpapi.ParseID(chi.URLParam(r, "id"), tenancy.ErrTokenNotFound)
	if err == nil {
		err = h.cfg.Projects.RevokeProjectToken(r.Context(), c.p, a, id)
	}
	if err != nil {
		h.formProblem(w, r, err, again)
		return
	}
	again(http.StatusOK, notice{Message: "The token was revoked."})
}
