package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
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
	// Form is the add form's values: as typed when it was refused.
	Form memberForm
}

// memberForm is the add-member form's values.
type memberForm struct{ UserID, Role string }

func (h *Handler) members(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderMembers(w, r, c, http.StatusOK, notice{}, memberForm{Role: string(auth.ProjectViewer)})
}

// renderMembers answers the members page with status, n and the add
// form's values f (after an action, or its refusal).
func (h *Handler) renderMembers(w http.ResponseWriter, r *http.Request, c caller, status int, n notice, f memberForm) {
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
		Members:     list, Pager: pager{Offset: offset, Total: total, Base: projectURL(p.ID) + "/members"}, Notice: n, Form: f,
	}
	h.render(w, r, status, membersPage(c.sess.CSRF, v))
}

// addMember adds a member or changes a member's role (form fields
// userId and role), as the API's add-project-member route.
func (h *Handler) addMember(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.projectContext(r, c, memberAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := memberForm{UserID: strings.TrimSpace(r.PostFormValue("userId")), Role: r.PostFormValue("role")}
	var m tenancy.Member
	user, err := uuid.Parse(f.UserID)
	if err != nil {
		err = errs.New(errs.Invalid, "The user must be given by its id (a UUID).")
	} else {
		m, err = h.cfg.Projects.AddMember(r.Context(), a.ProjectID, user, f.Role)
	}
	if err != nil {
		h.formRefused(w, r, err, func(status int, problem string) {
			h.renderMembers(w, r, c, status, notice{Problem: problem}, f)
		}, tenancy.ErrUserNotFound)
		return
	}
	h.renderMembers(w, r, c, http.StatusOK, notice{Message: memberName(m) + " is now " + m.Role + "."}, memberForm{Role: string(auth.ProjectViewer)})
}

// removeMember removes the path's member, as the API's
// remove-project-member route.
func (h *Handler) removeMember(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, err := h.projectContext(r, c, memberAdminRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := memberForm{Role: string(auth.ProjectViewer)}
	user, err := httpapi.ParseID(chi.URLParam(r, "userId"), tenancy.ErrMemberNotFound)
	if err == nil {
		err = h.cfg.Projects.RemoveMember(r.Context(), a.ProjectID, user)
	}
	if err != nil {
		// The row's member may be gone already: the list again, with why.
		h.formRefused(w, r, err, func(status int, problem string) {
			h.renderMembers(w, r, c, status, notice{Problem: problem}, f)
		}, tenancy.ErrMemberNotFound)
		return
	}
	h.renderMembers(w, r, c, http.StatusOK, notice{Message: "The member was removed."}, f)
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
	// Form is the create form's values: as typed when it was refused.
	Form tokenForm
}

// tokenForm is the create-token form's values.
type tokenForm struct {
	Name      string
	Scopes    []string
	ExpiresAt string
}

func (h *Handler) tokens(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderTokens(w, r, c, http.StatusOK, notice{}, nil, tokenForm{})
}

func (h *Handler) renderTokens(w http.ResponseWriter, r *http.Request, c caller, status int, n notice, created *tenancy.Token, f tokenForm) {
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
		Notice: n, Created: created, Scopes: c.p.Scopes.Names(), Form: f,
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
	f := tokenForm{Name: r.PostFormValue("name"), Scopes: r.PostForm["scope"], ExpiresAt: strings.TrimSpace(r.PostFormValue("expiresAt"))}
	params := tenancy.CreateTokenParams{UserID: c.p.UserID, ProjectID: &a.ProjectID, Name: f.Name, Scopes: f.Scopes}
	var t tenancy.Token
	if f.ExpiresAt != "" {
		at, ok := parseDate(f.ExpiresAt)
		if !ok {
			err = errs.New(errs.Invalid, "The expiry must be a date such as 2030-01-31.")
		}
		params.ExpiresAt = &at
	}
	if err == nil {
		t, err = h.cfg.Projects.CreateToken(r.Context(), c.p, params, nil)
	}
	if err != nil {
		h.formRefused(w, r, err, func(status int, problem string) {
			h.renderTokens(w, r, c, status, notice{Problem: problem}, nil, f)
		})
		return
	}
	h.renderTokens(w, r, c, http.StatusCreated, notice{Message: "Token " + t.Name + " created."}, &t, tokenForm{})
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
	id, err := httpapi.ParseID(chi.URLParam(r, "id"), tenancy.ErrTokenNotFound)
	if err == nil {
		err = h.cfg.Projects.RevokeProjectToken(r.Context(), c.p, a, id)
	}
	if err != nil {
		h.formRefused(w, r, err, func(status int, problem string) {
			h.renderTokens(w, r, c, status, notice{Problem: problem}, nil, tokenForm{})
		}, tenancy.ErrTokenNotFound)
		return
	}
	h.renderTokens(w, r, c, http.StatusOK, notice{Message: "The token was revoked."}, nil, tokenForm{})
}
