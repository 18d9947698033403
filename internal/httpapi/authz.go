package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/danielgtaylor/huma/v2/queryparam"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

const authzKey = "authz"

// AuthzExtension is the OpenAPI extension of every operation that
// publishes its rule (Authz), so that tools and tests read what the
// middleware enforces.
const AuthzExtension = "x-graphmill-authz"

// Authz is a route's auth.Rule as the OpenAPI document publishes it.
type Authz struct {
	Resource    string      `json:"resource"`
	Scope       string      `json:"scope,omitempty"`
	ProjectRole string      `json:"projectRole,omitempty"`
	OrgRole     string      `json:"orgRole,omitempty"`
	Owner       *AuthzOwner `json:"owner,omitempty"`
	BodyField   string      `json:"bodyField,omitempty"`
	Keys        []string    `json:"keys,omitempty"`
}

// AuthzOwner is a rule's auth.Owner as the OpenAPI document publishes it.
type AuthzOwner struct {
	Param        string `json:"param"`
	Kind         string `json:"kind"`
	NamedProject bool   `json:"namedProject,omitempty"`
}

// authzOf is rule as published.
func authzOf(rule auth.Rule) Authz {
	a := Authz{
		Resource: rule.Resource.String(), ProjectRole: string(rule.ProjectRole), OrgRole: string(rule.OrgRole),
		BodyField: rule.BodyField, Keys: rule.Keys,
	}
	if rule.Scope != auth.ScopeNone {
		a.Scope = rule.Scope.String()
	}
	if o := rule.Owner; o != nil {
		a.Owner = &AuthzOwner{Param: o.Param, Kind: o.Kind, NamedProject: o.NamedProject}
	}
	return a
}

// Op describes an operation that rule protects: the middleware applies
// rule, and the OpenAPI document shows it, as the operation's security
// (bearer with the rule's scope) and whole as AuthzExtension.
func Op(id, method, path, summary string, rule auth.Rule) huma.Operation {
	op := huma.Operation{
		OperationID: id, Method: method, Path: path, Summary: summary,
		Metadata:     map[string]any{authzKey: rule},
		Extensions:   map[string]any{AuthzExtension: authzOf(rule)},
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

// RuleOf is the rule op was described with (Op).
func RuleOf(op *huma.Operation) (auth.Rule, bool) {
	rule, ok := op.Metadata[authzKey].(auth.Rule)
	return rule, ok
}

// authMiddleware applies each operation's Rule (authorize). Operations
// without a Rule are refused: every route must declare one.
func authMiddleware(api huma.API, guard *auth.Guard) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		r, w := humachi.Unwrap(ctx)
		op := ctx.Operation()
		rule, ok := RuleOf(op)
		if !ok {
			WriteProblem(w, r, fmt.Errorf("operation %s has no authorization rule", op.OperationID))
			return
		}
		c, err := authorize(guard, rule, r, rule.BodyField != "" && bodyMemberIsUUID(api, op, rule.BodyField))
		if err != nil {
			writeAuthzProblem(w, r, err)
			return
		}
		next(huma.WithContext(ctx, c))
	}
}

// Protect is the authorization wrapper for routes outside huma (event and
// MCP streams): the same check as every huma operation (authorize).
func Protect(guard *auth.Guard, rule auth.Rule, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := authorize(guard, rule, r, false)
		if err != nil {
			writeAuthzProblem(w, r, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(c))
	})
}

// writeAuthzProblem answers a refused request; a domain error of code
// internal says only "internal error", like any other 5xx.
func writeAuthzProblem(w http.ResponseWriter, r *http.Request, err error) {
	if errs.CodeOf(err) == errs.Internal {
		recordCause(r.Context(), err)
		err = errs.New(errs.Internal, "internal error")
	}
	WriteProblem(w, r, err)
}

// authorize is the one check every route runs before its handler:
// it authenticates the caller of r and applies rule through the guard to
// what r names (the project of the path, the projectId/project_id query
// or X-Project-ID; the organization of the path or X-Org-ID; the
// resource the rule's Owner names; the body member it names). It returns
// r's context carrying the caller and what it was authorised for.
// uuidBody says that the body member is declared a UUID, so that a
// malformed one is invalid input, as the body's validation would say.
func authorize(guard *auth.Guard, rule auth.Rule, r *http.Request, uuidBody bool) (context.Context, error) {
	ctx := r.Context()
	if rule.Resource == auth.Public {
		return ctx, nil
	}
	p, err := guard.Authenticate(ctx, r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	query := func(name string) string { return queryparam.Get(r.URL.RawQuery, name) }
	projectHeader, err := headerOnce(r, "X-Project-ID")
	if err != nil {
		return nil, err
	}
	orgHeader, err := headerOnce(r, "X-Org-ID")
	if err != nil {
		return nil, err
	}
	req := auth.Request{
		ProjectID:   first(pathParam(r, "projectId"), pathParam(r, "projectID"), query("projectId"), query("project_id"), projectHeader),
		OrgID:       first(pathParam(r, "orgId"), pathParam(r, "orgID")),
		HeaderOrgID: orgHeader,
	}
	if rule.Owner != nil {
		req.ResourceID = pathParam(r, rule.Owner.Param)
	}
	switch {
	case rule.BodyField != "":
		if req.Body, err = bodyMember(r, rule.BodyField, uuidBody); err != nil {
			return nil, err
		}
	case rule.Owner != nil:
		// A body the route would refuse whatever the resource (a NUL in
		// a string) is refused before the resource is looked up, as on
		// routes without an Owner.
		if err := checkJSONBody(r); err != nil {
			return nil, err
		}
	}
	a, err := guard.Check(ctx, p, rule, req)
	if err != nil {
		return nil, err
	}
	return auth.WithAccess(auth.WithPrincipal(ctx, p), a), nil
}

// headerOnce is the value of r's tenancy header name. The header given
// more than once (two lines, even of one value) is invalid input, as a
// query filter given twice is (QueryOnce): reading its first value would
// answer for a tenant the client may not have meant.
func headerOnce(r *http.Request, name string) (string, error) {
	values := r.Header.Values(name)
	if len(values) > 1 {
		return "", errs.Errorf(errs.Invalid, "header %s given %d times: give it once, with one id", name, len(values))
	}
	return r.Header.Get(name), nil
}

// pathParam is a path parameter of r, unescaped as huma does.
func pathParam(r *http.Request, name string) string {
	v := r.PathValue(name)
	if v == "" {
		v = chi.URLParam(r, name)
	}
	if r.URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// bodyMember returns the string member name of r's JSON body (empty when
// absent or null; any other JSON value as written) and puts the body back
// for the handler. The body is bounded by MaxBodyBytes, as huma bounds it.
func bodyMember(r *http.Request, name string, uuidValue bool) (string, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(raw))
	if err != nil {
		return "", errs.New(errs.Invalid, "cannot read the request body")
	}
	if len(raw) > MaxBodyBytes {
		return "", errs.Errorf(errs.PayloadTooLarge, "request body is too large: at most %d bytes", MaxBodyBytes)
	}
	if err := CheckJSON(raw); err != nil {
		return "", err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return "", errs.Errorf(errs.Invalid, "the body must be a JSON object with %s", name)
	}
	for k := range members {
		// encoding/json matches member names without regard to case;
		// the member checked must be the one the handler reads.
		if k != name && strings.EqualFold(k, name) {
			return "", errs.Errorf(errs.Invalid, "body.%s: unexpected property", k)
		}
	}
	m, ok := members[name]
	if !ok || string(m) == "null" {
		return "", nil
	}
	var v string
	if err := json.Unmarshal(m, &v); err != nil {
		v = string(m)
	}
	if _, err := uuid.Parse(v); err != nil && uuidValue && v != "" {
		return "", errs.Errorf(errs.Invalid, "body.%s: must be a UUID", name)
	}
	return v, nil
}

// checkJSONBody applies CheckJSON to r's JSON body, if any, and puts the
// body back for the handler. A body larger than MaxBodyBytes is left to
// huma, which refuses it.
func checkJSONBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody || !strings.Contains(r.Header.Get("Content-Type"), "json") {
		return nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(raw), r.Body), r.Body}
	if err != nil {
		return errs.New(errs.Invalid, "cannot read the request body")
	}
	if len(raw) > MaxBodyBytes {
		return nil
	}
	return CheckJSON(raw)
}

// bodyMemberIsUUID reports whether op's JSON body declares member name a
// UUID.
func bodyMemberIsUUID(api huma.API, op *huma.Operation, name string) bool {
	if op.RequestBody == nil || op.RequestBody.Content["application/json"] == nil {
		return false
	}
	s := op.RequestBody.Content["application/json"].Schema
	if s != nil && s.Ref != "" {
		s = api.OpenAPI().Components.Schemas.SchemaFromRef(s.Ref)
	}
	if s == nil || s.Properties[name] == nil {
		return false
	}
	return s.Properties[name].Format == "uuid"
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
