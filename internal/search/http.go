package search

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type searchIn struct {
	Body Request
}

// Register adds POST /api/search (project from X-Project-ID or the token).
func Register(api huma.API, svc *Service) {
	huma.Register(api, httpapi.Op("search", http.MethodPost, "/api/search",
		"Search the project's chunks and graph objects (keyword, vector or hybrid)",
		auth.Rule{Scope: auth.SearchRead, Resource: auth.Project}), handlers{svc: svc}.search)
}

// handlers are search's API handlers.
type handlers struct {
	svc *Service
}

func (h handlers) search(ctx context.Context, in *searchIn) (*httpapi.Out[Response], error) {
	return httpapi.Reply(h.svc.Search(ctx, auth.AccessFrom(ctx).ProjectID, in.Body))
}
