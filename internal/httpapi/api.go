package httpapi

import (
	"net/http"
	"reflect"
	"strings"
	"unicode"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// MaxBodyBytes caps JSON request bodies.
const MaxBodyBytes = 1 << 20

const authzKey = "authz"

// NewAPI returns the huma API on router: OpenAPI 3.1 at
// /api/openapi.json, no docs page, no $schema members, problem bodies for
// every error, and the authorization middleware that applies each
// operation's Rule.
func NewAPI(router chi.Router, guard *auth.Guard, version string) huma.API {
	installErrorModel()
	cfg := huma.DefaultConfig("Graphmill API", version)
	cfg.OpenAPIPath = "/api/openapi"
	cfg.DocsPath = ""
	cfg.SchemasPath = ""
	cfg.CreateHooks = nil
	cfg.Formats = map[string]huma.Format{"application/json": jsonFormat(), "json": jsonFormat()}
	cfg.Info.Description = "Graphmill knowledge-graph server."
	cfg.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaName)
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "An API token (gm_...) or, when configured, an OIDC access token."},
	}
	api := humachi.New(router, cfg)
	api.UseMiddleware(authMiddleware(api, guard))
	return api
}

// schemaName prefixes type names with their package, so that two domains'
// Job types do not collide: extraction.Job becomes ExtractionJob.
func schemaName(t reflect.Type, hint string) string {
	name := huma.DefaultSchemaNamer(t, hint)
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	if pkg == "" || t.Name() == "" {
		return name
	}
	pkg = pkg[strings.LastIndex(pkg, "/")+1:]
	if pkg == "httpapi" || strings.HasPrefix(strings.ToLower(name), pkg) {
		return name
	}
	r := []rune(pkg)
	r[0] = unicode.ToUpper(r[0])
	return string(r) + name
}

// Op describes an operation that rule protects.
func Op(id, method, path, summary string, rule auth.Rule) huma.Operation {
	op := huma.Operation{
		OperationID: id, Method: method, Path: path, Summary: summary,
		Metadata:     map[string]any{authzKey: rule},
		MaxBodyBytes: MaxBodyBytes,
	}
	if rule.Resource != auth.Public {
		scopes := []string{}
		if rule.Scope != auth.ScopeNone {
			scopes = append(scopes, rule.Scope.String())
		}
		op.Security = []map[string][]string{{"bearer": scopes}}
		op.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound}
	}
	return op
}

// authMiddleware authenticates the caller and applies the operation's Rule
// through guard. Operations without a Rule are refused: every route must
// declare one.
func authMiddleware(api huma.API, guard *auth.Guard) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		rule, ok := ctx.Operation().Metadata[authzKey].(auth.Rule)
		if !ok {
			_ = huma.WriteErr(api, ctx, http.StatusInternalServerError, "route has no authorization rule")
			return
		}
		if rule.Resource == auth.Public {
			next(ctx)
			return
		}
		fail := func(err error) {
			if errs.CodeOf(err) == errs.Unauthenticated {
				ctx.SetHeader("WWW-Authenticate", `Bearer realm="graphmill"`)
			}
			_ = huma.WriteErr(api, ctx, StatusOf(errs.CodeOf(err)), errs.MessageOf(err), err)
		}
		p, err := guard.Authenticate(ctx.Context(), ctx.Header("Authorization"))
		if err != nil {
			fail(err)
			return
		}
		req := auth.Request{
			ProjectID:   first(ctx.Param("projectId"), ctx.Param("projectID"), ctx.Query("projectId"), ctx.Query("project_id"), ctx.Header("X-Project-ID")),
			OrgID:       first(ctx.Param("orgId"), ctx.Param("orgID")),
			HeaderOrgID: ctx.Header("X-Org-ID"),
		}
		access, err := guard.Check(ctx.Context(), p, rule, req)
		if err != nil {
			fail(err)
			return
		}
		c := auth.WithAccess(auth.WithPrincipal(ctx.Context(), p), access)
		next(huma.WithContext(ctx, c))
	}
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
