package console

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// The pages of one resource (a job, a run, a server) are authorised as
// the API's routes of it are: the page's rule with the resource's owner,
// on the id in the path parameter the owner names (owner.Param).

// ownedContext is projectContext for the path's resource that owner
// resolves.
func (h *Handler) ownedContext(r *http.Request, c caller, rule auth.Rule, owner *auth.Owner) (auth.Access, tenancy.Project, error) {
	return h.projectContext(r, c, rule.WithOwner(owner), chi.URLParam(r, owner.Param))
}

// checkOwned is check for the path's resource that owner resolves.
func (h *Handler) checkOwned(r *http.Request, c caller, rule auth.Rule, owner *auth.Owner) (auth.Access, error) {
	return h.check(r, c, rule.WithOwner(owner), chi.URLParam(r, owner.Param))
}
