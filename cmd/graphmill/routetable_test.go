package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/notification"
)

// TestRouteTableAccess walks the OpenAPI document: every operation
// publishes its rule (httpapi.AuthzExtension), every path parameter is
// the tenant the rule checks, the resource of its Owner or one of its
// Keys, and the one middleware enforces the rule as published: no token
// is 401, a token lacking the published scope is 403 (on the caller's own
// resources), another tenant's token is 404 on every path that names a
// project, an organization or a resource. A new route is covered here
// without a case being written; a new Owner kind needs a fixture
// (routeFixtures.id), or the test fails.
func TestRouteTableAccess(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	fx := &routeFixtures{s: s, project: project, ids: map[string]string{}, tokens: map[string]string{}}

	// The other tenant: an organization and project of its own, every
	// scope, nothing in the admin's.
	_, other := s.newUser("other-tenant@example.com", allScopes, "")
	var otherOrg, otherProject struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/orgs", other, map[string]any{"name": "other"}).Decode(t, &otherOrg)
	s.must(201, "POST", "/api/projects", other, map[string]any{"orgId": otherOrg.ID, "name": "other"}).Decode(t, &otherProject)

	var doc struct {
		Paths map[string]map[string]struct {
			ID     string         `json:"operationId"`
			Authz  *httpapi.Authz `json:"x-graphmill-authz"`
			Params []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
			Security []map[string][]string `json:"security"`
		} `json:"paths"`
	}
	s.must(200, "GET", "/api/openapi.json", "", nil).Decode(t, &doc)

	ops, unauth, denied, hidden := 0, 0, 0, 0
	for path, methods := range doc.Paths {
		for method, op := range methods {
			ops++
			method = strings.ToUpper(method)
			what := method + " " + path
			a := op.Authz
			require.NotNil(t, a, "%s publishes no authorization rule", what)
			if a.Resource == "public" {
				require.Empty(t, op.Security, "%s is public", what)
				continue
			}
			scopes := []string{}
			if a.Scope != "" {
				scopes = append(scopes, a.Scope)
			}
			require.Equal(t, []map[string][]string{{"bearer": scopes}}, op.Security, "%s: the security shown is the rule's", what)

			// Every path parameter is accounted for by the rule.
			values := map[string]string{}
			named, unknown := false, false // the path names a tenant or a resource
			for _, p := range op.Params {
				if p.In != "path" {
					continue
				}
				switch {
				case a.Owner != nil && p.Name == a.Owner.Param:
					values[p.Name] = fx.id(t, a.Owner.Kind)
					named = true
				case (p.Name == "projectId" || p.Name == "projectID") && slices.Contains([]string{"project", "project-or-all", "personal"}, a.Resource):
					values[p.Name] = project
					named = true
				case (p.Name == "orgId" || p.Name == "orgID") && a.Resource == "org":
					values[p.Name] = org
					named = true
				case slices.Contains(a.Keys, p.Name):
					values[p.Name] = "k"
				default:
					t.Errorf("%s: path parameter %s is neither the rule's tenant, its Owner nor one of its Keys", what, p.Name)
					unknown = true
				}
			}
			if unknown {
				continue
			}
			target := path
			for k, v := range values {
				target = strings.ReplaceAll(target, "{"+k+"}", v)
			}
			var body any
			if a.BodyField != "" {
				body = map[string]any{a.BodyField: map[string]string{"project": project, "org": org}[a.Resource]}
			}
			own := []header{}
			if a.Owner == nil || a.Owner.NamedProject {
				own = append(own, header{"X-Project-ID", project})
			}
			if a.Resource == "org" && values["orgId"] == "" && values["orgID"] == "" {
				own = append(own, header{"X-Org-ID", org})
			}

			r := s.do(method, target, "", body, own...)
			requireProblem(t, r, 401, "unauthenticated", what)
			unauth++

			if a.Scope != "" {
				r = s.do(method, target, fx.without(t, a.Scope), body, own...)
				requireProblem(t, r, 403, "permission_denied", what)
				require.Contains(t, r.Detail(t), a.Scope, what)
				denied++
			}

			if named && a.Resource != "superadmin" {
				var theirs []header
				if a.Owner != nil && a.Owner.NamedProject {
					theirs = append(theirs, header{"X-Project-ID", otherProject.ID})
				}
				r = s.do(method, target, other, body, theirs...)
				requireProblem(t, r, 404, "not_found", what)
				hidden++
			}
		}
	}
	t.Logf("%d operations: %d refused without a token, %d without their scope, %d hidden from another tenant", ops, unauth, denied, hidden)
	require.Greater(t, ops, 110)
	require.Greater(t, hidden, 60)
}

// routeFixtures creates, once each, a resource of each Owner kind in the
// admin's project, and admin tokens lacking one scope.
type routeFixtures struct {
	s       *testServer
	project string
	ids     map[string]string
	tokens  map[string]string
}

// id is the fixture of kind.
func (f *routeFixtures) id(t *testing.T, kind string) string {
	t.Helper()
	if id, ok := f.ids[kind]; ok {
		return id
	}
	s, hp := f.s, header{"X-Project-ID", f.project}
	var out struct {
		ID string `json:"id"`
	}
	switch kind {
	case "document":
		s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "route.md", "content": "# Route\n\ntable"}, hp).Decode(t, &out)
	case "extraction-job":
		out.ID = s.extractionJobOf(f.id(t, "document"))
	case "mcp-server":
		s.must(201, "POST", "/api/admin/mcp-servers", s.admin, map[string]any{"name": "route", "type": "http", "url": "https://mcp.example.com/mcp"}, hp).Decode(t, &out)
	case "embedding-policy":
		s.must(201, "POST", "/api/graph/embedding-policies", s.admin, embBody(f.project, "route")).Decode(t, &out)
	case "token":
		s.must(201, "POST", "/api/tokens", s.admin, map[string]any{"name": "route", "scopes": []string{"graph:read"}}).Decode(t, &out)
	case "user":
		s.must(201, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": "route@example.com", "displayName": "route"}).Decode(t, &out)
	case "graph-object":
		s.must(201, "POST", "/api/graph/objects", s.admin, map[string]any{"type": "Person", "name": "Route"}, hp).Decode(t, &out)
	case "relationship":
		var other struct {
			ID string `json:"id"`
		}
		s.must(201, "POST", "/api/graph/objects", s.admin, map[string]any{"type": "Location", "name": "Table"}, hp).Decode(t, &other)
		s.must(201, "POST", "/api/graph/relationships", s.admin,
			map[string]any{"type": "LOCATED_IN", "sourceId": f.id(t, "graph-object"), "targetId": other.ID}, hp).Decode(t, &out)
	case "task":
		out.ID = s.createTask(f.project, "route", "review", "route", nil)
	case "notification":
		var me struct {
			UserID string `json:"userId"`
		}
		s.must(200, "GET", "/api/superadmin/me", s.admin, nil).Decode(t, &me)
		out.ID = s.notify(me.UserID, notification.Params{Title: "route", Message: "table"}).ID
	case "chat-session":
		s.must(201, "POST", "/api/chat/sessions", s.admin, map[string]any{"title": "route"}, hp).Decode(t, &out)
	case "discovery-job":
		var started struct {
			JobID string `json:"jobId"`
		}
		doc := f.id(t, "document")
		s.waitDocument(f.project, doc)
		s.must(201, "POST", "/api/discovery-jobs", s.admin, map[string]any{"document_ids": []string{doc}}, hp).Decode(t, &started)
		out.ID = started.JobID
	case "agent":
		out.ID = s.agentCreate(s.admin, f.project, map[string]any{"name": "route", "instructions": "route", "tools": []string{}})
	case "agent-run":
		out.ID = s.agentStart(s.admin, f.id(t, "agent"), "route").ID
	case "template-pack":
		out.ID = s.graphCreatePack(f.project, graphPack("Route"))
	case "org":
		s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": "route"}).Decode(t, &out)
	case "project":
		var org struct {
			ID string `json:"id"`
		}
		s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": "route project"}).Decode(t, &org)
		s.must(201, "POST", "/api/projects", s.admin, map[string]any{"orgId": org.ID, "name": "route"}).Decode(t, &out)
	default:
		t.Fatalf("no fixture for the Owner kind %q: add one to routeFixtures.id", kind)
	}
	require.NotEmpty(t, out.ID, kind)
	f.ids[kind] = out.ID
	return out.ID
}

// without is a token of the admin with every scope but scope.
func (f *routeFixtures) without(t *testing.T, scope string) string {
	t.Helper()
	if tok, ok := f.tokens[scope]; ok {
		return tok
	}
	var scopes []string
	for _, sc := range allScopes {
		if sc != scope {
			scopes = append(scopes, sc)
		}
	}
	var out struct {
		Token string `json:"token"`
	}
	f.s.must(201, "POST", "/api/tokens", f.s.admin, map[string]any{"name": "no " + scope, "scopes": scopes}).Decode(t, &out)
	f.tokens[scope] = out.Token
	return out.Token
}
