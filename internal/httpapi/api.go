package httpapi

import (
	"reflect"
	"strings"
	"unicode"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"

	"github.com/graphmill/graphmill/internal/auth"
)

// MaxBodyBytes caps JSON request bodies.
const MaxBodyBytes = 1 << 20

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
