package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// Protect is the authorization wrapper for routes outside huma (event and
// MCP streams): the same authentication and Guard.Check as every huma
// operation, with the project taken from the path (projectId), the
// projectId/project_id query, or X-Project-ID.
func Protect(guard *auth.Guard, rule auth.Rule, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := guard.Authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			WriteProblem(w, r, err)
			return
		}
		q := r.URL.Query()
		req := auth.Request{
			ProjectID:   first(chi.URLParam(r, "projectId"), q.Get("projectId"), q.Get("project_id"), r.Header.Get("X-Project-ID")),
			OrgID:       chi.URLParam(r, "orgId"),
			HeaderOrgID: r.Header.Get("X-Org-ID"),
		}
		access, err := guard.Check(r.Context(), p, rule, req)
		if err != nil {
			if errs.CodeOf(err) == errs.Internal {
				err = errs.New(errs.Internal, "internal error")
			}
			WriteProblem(w, r, err)
			return
		}
		ctx := auth.WithAccess(auth.WithPrincipal(r.Context(), p), access)
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
