package console

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

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

// ownedResource is ownedContext that reads the resource too, with get:
// its service's read of an id in a project (Documents.Get, say).
func ownedResource[T any](h *Handler, r *http.Request, c caller, rule auth.Rule, owner *auth.Owner,
	get func(ctx context.Context, project, id uuid.UUID) (T, error),
) (auth.Access, tenancy.Project, T, error) {
	var v T
	a, p, err := h.ownedContext(r, c, rule, owner)
	if err != nil {
		return a, p, v, err
	}
	v, err = get(r.Context(), a.ProjectID, a.ResourceID)
	return a, p, v, err
}

// checkOwned is check for the path's resource that owner resolves.
func (h *Handler) checkOwned(r *http.Request, c caller, rule auth.Rule, owner *auth.Owner) (auth.Access, error) {
	return h.check(r, c, rule.WithOwner(owner), chi.URLParam(r, owner.Param))
}
