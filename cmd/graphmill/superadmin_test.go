package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

type pagedBody struct {
	Data []map[string]any `json:"data"`
	Meta struct {
		Page       int  `json:"page"`
		Limit      int  `json:"limit"`
		Total      int  `json:"total"`
		TotalPages int  `json:"totalPages"`
		HasNext    bool `json:"hasNext"`
		HasPrev    bool `json:"hasPrev"`
	} `json:"meta"`
}

func TestSuperadminMe(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	_, user := s.newUser("u@example.com", []string{"admin:read"}, "")
	_, noScope := s.newUser("n@example.com", []string{"documents:read"}, "")
	_, bound := s.newUser("b@example.com", []string{"admin:read"}, project)

	s.must(401, "GET", "/api/superadmin/me", "", nil)
	s.must(403, "GET", "/api/superadmin/me", noScope, nil)
	require.Equal(t, true, s.must(200, "GET", "/api/superadmin/me", s.admin, nil).JSON(t)["isSuperadmin"])
	require.Equal(t, false, s.must(200, "GET", "/api/superadmin/me", user, nil).JSON(t)["isSuperadmin"])
	require.Equal(t, false, s.must(200, "GET", "/api/superadmin/me", bound, nil).JSON(t)["isSuperadmin"])
}

func TestSuperadminRoutesRefuseOthers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	userID, user := s.newMember("u@example.com", allScopes, project, "admin")
	// The admin's own token, bound to a project, is not a superadmin token.
	var bound map[string]any
	s.must(201, "POST", "/api/projects/"+project+"/tokens", s.admin, map[string]any{"name": "b", "scopes": allScopes}).Decode(t, &bound)
	_, reader := s.newUser("r@example.com", []string{"admin:read"}, "")

	routes := []struct{ method, path string }{
		{"GET", "/api/superadmin/users"},
		{"POST", "/api/superadmin/users"},
		{"DELETE", "/api/superadmin/users/" + userID},
		{"POST", "/api/superadmin/users/" + userID + "/tokens"},
		{"GET", "/api/superadmin/organizations"},
		{"DELETE", "/api/superadmin/organizations/" + org},
		{"GET", "/api/superadmin/projects"},
		{"DELETE", "/api/superadmin/projects/" + project},
		{"GET", "/api/superadmin/audit"},
	}
	for _, rt := range routes {
		body := map[string]any{}
		if rt.method == "POST" {
			body = map[string]any{"primaryEmail": "x@example.com", "name": "x", "scopes": []string{"admin:read"}}
		}
		s.must(401, rt.method, rt.path, "", body)
		r := s.must(403, rt.method, rt.path, user, body)
		require.Contains(t, r.Detail(t), "superadmin")
		s.must(403, rt.method, rt.path, bound["token"].(string), body)
	}
	// The superadmin still needs the scope.
	var tok map[string]any
	s.must(201, "POST", "/api/tokens", s.admin, map[string]any{"name": "ro", "scopes": []string{"admin:read"}}).Decode(t, &tok)
	s.must(200, "GET", "/api/superadmin/users", tok["token"].(string), nil)
	require.Contains(t, s.must(403, "DELETE", "/api/superadmin/users/"+userID, tok["token"].(string), nil).Detail(t), "admin:write")
	// Nothing was deleted by the refused calls.
	s.must(200, "GET", "/api/projects/"+project, user, nil)
	s.must(200, "GET", "/api/projects", reader, nil)
}

func TestSuperadminUsers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	aliceID, _ := s.newUser("alice@example.com", []string{"admin:read"}, "")
	s.newUser("bob@example.com", []string{"admin:read"}, "")
	s.addMember(project, aliceID, "editor")

	var page pagedBody
	s.must(200, "GET", "/api/superadmin/users", s.admin, nil).Decode(t, &page)
	require.Equal(t, 3, page.Meta.Total)
	require.Equal(t, 1, page.Meta.Page)
	require.Equal(t, 20, page.Meta.Limit)
	require.False(t, page.Meta.HasNext)

	s.must(200, "GET", "/api/superadmin/users?limit=2&page=2", s.admin, nil).Decode(t, &page)
	require.Len(t, page.Data, 1)
	require.Equal(t, 2, page.Meta.TotalPages)
	require.True(t, page.Meta.HasPrev)
	require.False(t, page.Meta.HasNext)

	s.must(200, "GET", "/api/superadmin/users?search=ALICE", s.admin, nil).Decode(t, &page)
	require.Len(t, page.Data, 1)
	alice := page.Data[0]
	require.Equal(t, aliceID, alice["id"])
	require.Equal(t, "alice@example.com", alice["primaryEmail"])
	require.NotEmpty(t, alice["lastActivityAt"], "the fixture's token was used, so activity is recorded")
	orgs := alice["organizations"].([]any)
	require.Len(t, orgs, 1)
	m := orgs[0].(map[string]any)
	require.Equal(t, org, m["orgId"])
	require.Equal(t, "default", m["orgName"])
	require.Equal(t, "member", m["role"])
	require.NotEmpty(t, m["joinedAt"])

	// Search wildcards are literal.
	s.must(200, "GET", "/api/superadmin/users?search=%25", s.admin, nil).Decode(t, &page)
	require.Empty(t, page.Data)
	s.must(200, "GET", "/api/superadmin/users?orgId="+org, s.admin, nil).Decode(t, &page)
	require.Equal(t, 2, page.Meta.Total) // admin and alice
	s.must(400, "GET", "/api/superadmin/users?orgId=x", s.admin, nil)
	s.must(400, "GET", "/api/superadmin/users?limit=101", s.admin, nil)
	s.must(400, "GET", "/api/superadmin/users?page=0", s.admin, nil)

	// Creating users: bad input and conflicts.
	require.Contains(t, s.must(400, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": "nope"}).Detail(t), "email")
	// Not one bare address: a space, a control character (U+0085 was
	// stored), a display name. Each was a user whose address no email,
	// and no invitation, could reach.
	for _, bad := range []string{"a b@example.com", "c@example.com\u0085x", "Ann <ann@example.com>"} {
		require.Contains(t, s.must(400, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": bad}).Detail(t), "primaryEmail must be an email address", bad)
	}
	s.must(409, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": "Alice@example.com"})
	s.must(400, "POST", "/api/superadmin/users/"+aliceID+"/tokens", s.admin, map[string]any{"name": "x", "scopes": []string{"bogus"}})
	s.must(404, "POST", "/api/superadmin/users/"+"01900000-0000-7000-8000-000000000000"+"/tokens", s.admin, map[string]any{"name": "x", "scopes": []string{"admin:read"}})
	s.must(404, "POST", "/api/superadmin/users/"+aliceID+"/tokens", s.admin, map[string]any{"name": "x", "scopes": []string{"admin:read"}, "projectId": "01900000-0000-7000-8000-000000000000"})

	// Deleting: unknown and malformed ids are 404, yourself is refused.
	s.must(404, "DELETE", "/api/superadmin/users/01900000-0000-7000-8000-000000000000", s.admin, nil)
	s.must(404, "DELETE", "/api/superadmin/users/x", s.admin, nil)
	var me map[string]any
	s.must(200, "GET", "/api/superadmin/me", s.admin, nil).Decode(t, &me)
	require.Equal(t, "failed_precondition", s.must(409, "DELETE", "/api/superadmin/users/"+me["userId"].(string), s.admin, nil).JSON(t)["code"])
	s.must(200, "DELETE", "/api/superadmin/users/"+aliceID, s.admin, nil)
	s.must(404, "DELETE", "/api/superadmin/users/"+aliceID, s.admin, nil)
	s.must(200, "GET", "/api/superadmin/users", s.admin, nil).Decode(t, &page)
	require.Equal(t, 2, page.Meta.Total)
	// The email is free again.
	s.must(201, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": "alice@example.com"})
}

func TestSuperadminOrganizationsAndProjects(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	defProject, defOrg := s.defaultProject()
	ownerID, owner := s.newUser("owner@example.com", []string{"admin:read", "admin:write"}, "")
	var org idBody
	s.must(201, "POST", "/api/orgs", owner, map[string]any{"name": "Acme"}).Decode(t, &org)
	var p idBody
	for i := range 3 {
		s.must(201, "POST", "/api/projects", owner, map[string]any{"name": fmt.Sprintf("p%d", i), "orgId": org.ID}).Decode(t, &p)
	}
	_ = ownerID

	var orgs pagedBody
	s.must(200, "GET", "/api/superadmin/organizations", s.admin, nil).Decode(t, &orgs)
	require.Equal(t, 2, orgs.Meta.Total)
	counts := map[string][2]float64{}
	for _, o := range orgs.Data {
		counts[o["id"].(string)] = [2]float64{o["memberCount"].(float64), o["projectCount"].(float64)}
	}
	require.Equal(t, [2]float64{1, 1}, counts[defOrg])
	require.Equal(t, [2]float64{1, 3}, counts[org.ID])

	var projects pagedBody
	s.must(200, "GET", "/api/superadmin/projects?orgId="+org.ID+"&limit=2", s.admin, nil).Decode(t, &projects)
	require.Equal(t, 3, projects.Meta.Total)
	require.True(t, projects.Meta.HasNext)
	require.Equal(t, "Acme", projects.Data[0]["organizationName"])
	require.Equal(t, org.ID, projects.Data[0]["organizationId"])
	require.Equal(t, float64(0), projects.Data[0]["documentCount"])
	s.must(400, "GET", "/api/superadmin/projects?orgId=bad", s.admin, nil)

	// Deleting a project.
	var res map[string]any
	s.must(200, "DELETE", "/api/superadmin/projects/"+p.ID, s.admin, nil).Decode(t, &res)
	require.Equal(t, true, res["success"])
	require.Equal(t, float64(1), res["deletedCount"])
	s.must(404, "GET", "/api/projects/"+p.ID, owner, nil)
	s.must(404, "DELETE", "/api/superadmin/projects/"+p.ID, s.admin, nil)
	s.must(404, "DELETE", "/api/superadmin/projects/x", s.admin, nil)

	// Deleting an organization takes its projects with it.
	s.must(200, "DELETE", "/api/superadmin/organizations/"+org.ID, s.admin, nil)
	s.must(404, "DELETE", "/api/superadmin/organizations/"+org.ID, s.admin, nil)
	s.must(404, "DELETE", "/api/superadmin/organizations/x", s.admin, nil)
	var l listBody
	s.must(200, "GET", "/api/projects", owner, nil).Decode(t, &l)
	require.Empty(t, l.Data)
	s.must(200, "GET", "/api/orgs", owner, nil).Decode(t, &l)
	require.Empty(t, l.Data)
	s.must(200, "GET", "/api/superadmin/organizations", s.admin, nil).Decode(t, &orgs)
	require.Equal(t, 1, orgs.Meta.Total)
	s.must(200, "GET", "/api/superadmin/organizations?includeDeleted=true", s.admin, nil).Decode(t, &orgs)
	require.Equal(t, 2, orgs.Meta.Total)
	s.must(200, "GET", "/api/superadmin/projects", s.admin, nil).Decode(t, &projects)
	require.Equal(t, 1, projects.Meta.Total)
	require.Equal(t, defProject, projects.Data[0]["id"])
}

// TestSuperadminListsBoundPage: every superadmin list takes pages 1 to
// 999,999 (offsets stay far inside the database's integers); a larger
// page is 400 with a detail naming the bound, never a 500. The last page
// allowed answers an empty page.
func TestSuperadminListsBoundPage(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, list := range []string{
		"/api/superadmin/users", "/api/superadmin/organizations", "/api/superadmin/projects",
		"/api/superadmin/extraction-jobs", "/api/superadmin/document-parsing-jobs", "/api/superadmin/embedding-jobs",
		"/api/superadmin/email-jobs", "/api/superadmin/audit",
	} {
		for _, page := range []string{"1000000", "30000000", "100000000000000000"} {
			detail := s.must(400, "GET", list+"?limit=100&page="+page, s.admin, nil).Detail(t)
			require.Contains(t, detail, "query.page: expected number <= 999999", list)
		}
		var l struct {
			Data []any `json:"data"`
			Meta struct {
				Page  int `json:"page"`
				Total int `json:"total"`
			} `json:"meta"`
		}
		s.must(200, "GET", list+"?limit=100&page=999999", s.admin, nil).Decode(t, &l)
		require.Empty(t, l.Data, list)
		require.Equal(t, 999999, l.Meta.Page, list)
	}
}
