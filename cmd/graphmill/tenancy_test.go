package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type idBody struct {
	ID string `json:"id"`
}

type listBody struct {
	Data   []map[string]any `json:"data"`
	Total  int              `json:"total"`
	Limit  int              `json:"limit"`
	Offset int              `json:"offset"`
}

func ids(l listBody) []string {
	out := []string{}
	for _, d := range l.Data {
		out = append(out, d["id"].(string))
	}
	return out
}

func TestOrgs(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	_, reader := s.newUser("reader@example.com", []string{"admin:read"}, "")
	_, writer := s.newUser("writer@example.com", []string{"admin:read", "admin:write"}, "")
	_, bound := s.newUser("bound@example.com", []string{"admin:read", "admin:write"}, project)

	// Auth.
	s.must(401, "GET", "/api/orgs", "", nil)
	s.must(401, "POST", "/api/orgs", "gm_"+"x", map[string]any{"name": "a"})
	r := s.must(403, "POST", "/api/orgs", reader, map[string]any{"name": "a"})
	require.Contains(t, r.Detail(t), "admin:write")
	require.Equal(t, "permission_denied", r.JSON(t)["code"])
	s.must(403, "GET", "/api/orgs", bound, nil)

	// Bad input.
	require.Contains(t, s.must(400, "POST", "/api/orgs", writer, map[string]any{"name": "  "}).Detail(t), "must not be empty")
	require.Contains(t, s.must(400, "POST", "/api/orgs", writer, map[string]any{}).Detail(t), "name")
	require.Contains(t, s.must(400, "POST", "/api/orgs", writer, map[string]any{"name": "x", "extra": 1}).Detail(t), "extra")
	require.Equal(t, 400, s.do("POST", "/api/orgs", writer, "{not json").Status)

	// Effect: the creator owns the new org and sees it; others do not.
	var org map[string]any
	s.must(201, "POST", "/api/orgs", writer, map[string]any{"name": "Acme"}).Decode(t, &org)
	require.Equal(t, "owner", org["role"])
	var mine listBody
	s.must(200, "GET", "/api/orgs", writer, nil).Decode(t, &mine)
	require.Equal(t, []string{org["id"].(string)}, ids(mine))
	var theirs listBody
	s.must(200, "GET", "/api/orgs", reader, nil).Decode(t, &theirs)
	require.Empty(t, theirs.Data)
	require.Equal(t, 0, theirs.Total)

	// Names are unique (case-insensitively).
	require.Equal(t, "conflict", s.must(409, "POST", "/api/orgs", writer, map[string]any{"name": "acme"}).JSON(t)["code"])

	// The superadmin sees every org.
	var all listBody
	s.must(200, "GET", "/api/orgs?limit=1&offset=1", s.admin, nil).Decode(t, &all)
	require.Equal(t, 2, all.Total)
	require.Len(t, all.Data, 1)
	require.Equal(t, 1, all.Limit)
	require.Equal(t, 1, all.Offset)
	s.must(400, "GET", "/api/orgs?limit=0", s.admin, nil)
	s.must(400, "GET", "/api/orgs?offset=-1", s.admin, nil)
}

func TestProjects(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	defProject, defOrg := s.defaultProject()
	ownerID, owner := s.newUser("owner@example.com", []string{"admin:read", "admin:write"}, "")
	memberID, member := s.newUser("member@example.com", []string{"admin:read", "admin:write"}, "")
	_, outsider := s.newUser("outsider@example.com", []string{"admin:read", "admin:write"}, "")
	_, noScope := s.newUser("noscope@example.com", []string{"documents:read"}, "")
	_ = ownerID

	var org idBody
	s.must(201, "POST", "/api/orgs", owner, map[string]any{"name": "Acme"}).Decode(t, &org)

	// Creating needs the org to be visible (404), then an admin role (403).
	s.must(401, "POST", "/api/projects", "", map[string]any{"name": "p", "orgId": org.ID})
	s.must(404, "POST", "/api/projects", outsider, map[string]any{"name": "p", "orgId": org.ID})
	var weak struct {
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/tokens", owner, map[string]any{"name": "weak", "scopes": []string{"admin:read"}}).Decode(t, &weak)
	s.must(403, "POST", "/api/projects", weak.Token, map[string]any{"name": "p", "orgId": org.ID})
	s.must(404, "POST", "/api/projects", noScope, map[string]any{"name": "p", "orgId": defOrg}) // invisible: 404 before 403, as on every route
	require.Contains(t, s.must(400, "POST", "/api/projects", owner, map[string]any{"name": "p", "orgId": "nope"}).Detail(t), "orgId")
	s.must(400, "POST", "/api/projects", owner, map[string]any{"orgId": org.ID})

	var p1 map[string]any
	s.must(201, "POST", "/api/projects", owner, map[string]any{"name": "Research", "orgId": org.ID}).Decode(t, &p1)
	require.Equal(t, org.ID, p1["orgId"])
	require.Equal(t, "admin", p1["role"])
	pid := p1["id"].(string)
	s.must(409, "POST", "/api/projects", owner, map[string]any{"name": "research", "orgId": org.ID})

	// A plain org member (added through a project) cannot create projects.
	s.addMember(pid, memberID, "viewer")
	r := s.must(403, "POST", "/api/projects", member, map[string]any{"name": "Other", "orgId": org.ID})
	require.Contains(t, r.Detail(t), "organization role admin")

	// Listing shows what each caller can see.
	var l listBody
	s.must(200, "GET", "/api/projects", owner, nil).Decode(t, &l)
	require.Equal(t, []string{pid}, ids(l))
	s.must(200, "GET", "/api/projects", member, nil).Decode(t, &l)
	require.Equal(t, []string{pid}, ids(l))
	require.Equal(t, "viewer", l.Data[0]["role"])
	s.must(200, "GET", "/api/projects", outsider, nil).Decode(t, &l)
	require.Empty(t, l.Data)
	s.must(200, "GET", "/api/projects?orgId="+defOrg, s.admin, nil).Decode(t, &l)
	require.Equal(t, []string{defProject}, ids(l))
	s.must(400, "GET", "/api/projects?orgId=bad", s.admin, nil)
	s.must(403, "GET", "/api/projects", noScope, nil)

	// Reading one project: member yes, outsider and malformed ids 404.
	s.must(200, "GET", "/api/projects/"+pid, member, nil)
	s.must(404, "GET", "/api/projects/"+pid, outsider, nil)
	s.must(404, "GET", "/api/projects/not-a-uuid", owner, nil)
	s.must(404, "GET", "/api/projects/"+defProject, owner, nil)
	s.must(401, "GET", "/api/projects/"+pid, "", nil)
	// X-Org-ID must match the project's organization.
	s.must(200, "GET", "/api/projects/"+pid, owner, nil, header{"X-Org-ID", org.ID})
	s.must(404, "GET", "/api/projects/"+pid, owner, nil, header{"X-Org-ID", defOrg})

	// Deleting needs the admin role; afterwards the project is gone for all.
	s.must(403, "DELETE", "/api/projects/"+pid, member, nil)
	s.must(404, "DELETE", "/api/projects/"+pid, outsider, nil)
	s.must(204, "DELETE", "/api/projects/"+pid, owner, nil)
	s.must(404, "GET", "/api/projects/"+pid, owner, nil)
	s.must(404, "GET", "/api/projects/"+pid, s.admin, nil)
	s.must(200, "GET", "/api/projects", owner, nil).Decode(t, &l)
	require.Empty(t, l.Data)
	var sa struct {
		Data []map[string]any `json:"data"`
	}
	s.must(200, "GET", "/api/superadmin/projects?includeDeleted=true&orgId="+org.ID, s.admin, nil).Decode(t, &sa)
	require.Len(t, sa.Data, 1)
	require.NotEmpty(t, sa.Data[0]["deletedAt"])
}

func TestMembers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	editorID, editor := s.newUser("editor@example.com", []string{"admin:read", "admin:write"}, "")
	viewerID, viewer := s.newUser("viewer@example.com", []string{"admin:read"}, "")
	_, outsider := s.newUser("outsider@example.com", []string{"admin:read", "admin:write"}, "")
	s.addMember(project, editorID, "editor")
	path := "/api/projects/" + project + "/members"

	s.must(401, "GET", path, "", nil)
	s.must(404, "GET", path, outsider, nil)
	s.must(404, "POST", path, outsider, map[string]any{"userId": viewerID, "role": "viewer"})
	s.must(403, "POST", path, editor, map[string]any{"userId": viewerID, "role": "viewer"})
	require.Contains(t, s.must(400, "POST", path, s.admin, map[string]any{"userId": viewerID, "role": "owner"}).Detail(t), "role")
	s.must(400, "POST", path, s.admin, map[string]any{"userId": "x", "role": "viewer"})
	require.Equal(t, "not_found", s.must(404, "POST", path, s.admin, map[string]any{"userId": "01900000-0000-7000-8000-000000000000", "role": "viewer"}).JSON(t)["code"])

	// Before membership the viewer cannot see the project; after, it can.
	s.must(404, "GET", "/api/projects/"+project, viewer, nil)
	var m map[string]any
	s.must(200, "POST", path, s.admin, map[string]any{"userId": viewerID, "role": "viewer"}).Decode(t, &m)
	require.Equal(t, "viewer", m["role"])
	require.Equal(t, "viewer@example.com", m["primaryEmail"])
	s.must(200, "GET", "/api/projects/"+project, viewer, nil)

	var l listBody
	s.must(200, "GET", path, editor, nil).Decode(t, &l)
	require.Equal(t, 3, l.Total) // admin, editor, viewer
	roles := map[string]string{}
	for _, d := range l.Data {
		roles[d["userId"].(string)] = d["role"].(string)
	}
	require.Equal(t, "editor", roles[editorID])

	// Changing a role replaces it.
	s.must(200, "POST", path, s.admin, map[string]any{"userId": editorID, "role": "admin"})
	s.must(200, "POST", path, editor, map[string]any{"userId": viewerID, "role": "editor"})

	// Removing a member takes the project away from them at once.
	s.must(403, "DELETE", path+"/"+editorID, viewer, nil)
	s.must(204, "DELETE", path+"/"+viewerID, editor, nil)
	s.must(404, "DELETE", path+"/"+viewerID, editor, nil)
	s.must(404, "DELETE", path+"/not-a-uuid", editor, nil)
	s.must(404, "GET", "/api/projects/"+project, viewer, nil)
}

func TestAccountTokens(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	userID, user := s.newUser("user@example.com", []string{"admin:read", "admin:write"}, "")
	_, readOnly := s.newUser("ro@example.com", []string{"admin:read"}, "")
	_, other := s.newUser("other@example.com", []string{"admin:read", "admin:write"}, "")
	s.addMember(project, userID, "viewer")

	s.must(401, "GET", "/api/tokens", "", nil)
	s.must(401, "POST", "/api/tokens", "", map[string]any{"name": "a", "scopes": []string{"admin:read"}})
	s.must(403, "POST", "/api/tokens", readOnly, map[string]any{"name": "a", "scopes": []string{"admin:read"}})

	// Bad input.
	require.Contains(t, s.must(400, "POST", "/api/tokens", user, map[string]any{"name": "a", "scopes": []string{"root"}}).Detail(t), `"root"`)
	s.must(400, "POST", "/api/tokens", user, map[string]any{"name": "a", "scopes": []string{}})
	s.must(400, "POST", "/api/tokens", user, map[string]any{"name": "", "scopes": []string{"admin:read"}})
	require.Contains(t, s.must(400, "POST", "/api/tokens", user, map[string]any{
		"name": "a", "scopes": []string{"admin:read"}, "expiresAt": time.Now().Add(-time.Hour).Format(time.RFC3339),
	}).Detail(t), "future")
	// No escalation: a token cannot grant what its creator lacks.
	require.Contains(t, s.must(403, "POST", "/api/tokens", user, map[string]any{"name": "a", "scopes": []string{"documents:read"}}).Detail(t), "documents:read")

	// Create: the secret is shown once, listings show only the prefix.
	var tok map[string]any
	s.must(201, "POST", "/api/tokens", user, map[string]any{"name": "ci", "scopes": []string{"admin:read"}}).Decode(t, &tok)
	secret := tok["token"].(string)
	require.Regexp(t, `^gm_[A-Za-z0-9_-]{43}$`, secret)
	require.Equal(t, secret[:8], tok["prefix"])
	require.Equal(t, []any{"admin:read"}, tok["scopes"])
	require.NotContains(t, tok, "projectId")
	var l listBody
	r := s.must(200, "GET", "/api/tokens", user, nil)
	require.NotContains(t, string(r.Body), secret)
	r.Decode(t, &l)
	require.Len(t, l.Data, 2) // the fixture's token and "ci"
	s.must(200, "GET", "/api/projects", secret, nil)
	s.must(403, "POST", "/api/tokens", secret, map[string]any{"name": "b", "scopes": []string{"admin:read"}})

	// Revocation: only your own tokens, effective at once.
	s.must(404, "DELETE", "/api/tokens/"+tok["id"].(string), other, nil)
	s.must(404, "DELETE", "/api/tokens/not-a-uuid", user, nil)
	s.must(204, "DELETE", "/api/tokens/"+tok["id"].(string), user, nil)
	require.Equal(t, "unauthenticated", s.must(401, "GET", "/api/projects", secret, nil).JSON(t)["code"])
	s.must(404, "DELETE", "/api/tokens/"+tok["id"].(string), user, nil)
	s.must(200, "GET", "/api/tokens", user, nil).Decode(t, &l)
	require.Len(t, l.Data, 1)

	// Expiry, on the server's clock.
	var exp map[string]any
	s.must(201, "POST", "/api/tokens", user, map[string]any{
		"name": "short", "scopes": []string{"admin:read"}, "expiresAt": s.clock.Now().Add(time.Hour).Format(time.RFC3339),
	}).Decode(t, &exp)
	require.NotEmpty(t, exp["expiresAt"])
	s.must(200, "GET", "/api/projects", exp["token"].(string), nil)
	s.clock.Advance(2 * time.Hour)
	s.must(401, "GET", "/api/projects", exp["token"].(string), nil)
	s.must(200, "GET", "/api/projects", user, nil)
}

func TestProjectTokens(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	userID, user := s.newUser("user@example.com", []string{"admin:read", "admin:write"}, "")
	_, outsider := s.newUser("outsider@example.com", []string{"admin:read", "admin:write"}, "")
	s.addMember(project, userID, "viewer")
	var second idBody
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": "second", "orgId": org}).Decode(t, &second)
	s.addMember(second.ID, userID, "viewer")
	path := "/api/projects/" + project + "/tokens"

	s.must(401, "POST", path, "", map[string]any{"name": "a", "scopes": []string{"admin:read"}})
	s.must(404, "POST", path, outsider, map[string]any{"name": "a", "scopes": []string{"admin:read"}})
	s.must(404, "GET", path, outsider, nil)
	s.must(400, "POST", path, user, map[string]any{"name": "a"})

	var tok map[string]any
	s.must(201, "POST", path, user, map[string]any{"name": "mcp", "scopes": []string{"admin:read"}}).Decode(t, &tok)
	require.Equal(t, project, tok["projectId"])
	bound := tok["token"].(string)

	// A bound token works in its project only, and not on account routes.
	s.must(200, "GET", "/api/projects/"+project, bound, nil)
	require.Contains(t, s.must(403, "GET", "/api/projects/"+second.ID, bound, nil).Detail(t), "bound to another project")
	s.must(403, "GET", "/api/tokens", bound, nil)
	var l listBody
	s.must(200, "GET", "/api/projects", bound, nil).Decode(t, &l)
	require.Equal(t, []string{project}, ids(l))

	// Listing: own tokens for members, all for project admins.
	var adminTok map[string]any
	s.must(201, "POST", path, s.admin, map[string]any{"name": "admin-mcp", "scopes": []string{"admin:read"}}).Decode(t, &adminTok)
	s.must(200, "GET", path, user, nil).Decode(t, &l)
	require.Equal(t, []string{tok["id"].(string)}, ids(l))
	s.must(200, "GET", path, s.admin, nil).Decode(t, &l)
	require.Len(t, l.Data, 2)

	// Revoking: a member cannot revoke another's token; an admin can.
	s.must(404, "DELETE", path+"/"+adminTok["id"].(string), user, nil)
	s.must(404, "DELETE", "/api/projects/"+second.ID+"/tokens/"+tok["id"].(string), user, nil)
	s.must(204, "DELETE", path+"/"+tok["id"].(string), s.admin, nil)
	s.must(401, "GET", "/api/projects/"+project, bound, nil)
}

func TestDeletedUserTokenRefused(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	id, token := s.newUser("gone@example.com", []string{"admin:read"}, "")
	s.must(200, "GET", "/api/projects", token, nil)
	var res map[string]any
	s.must(200, "DELETE", "/api/superadmin/users/"+id, s.admin, nil).Decode(t, &res)
	require.Equal(t, map[string]any{"success": true, "deletedCount": float64(1), "message": "user " + id + " deleted"}, res)
	s.must(401, "GET", "/api/projects", token, nil)
}

// A revocation made through one server is enforced by another server on
// the same database without waiting for the cache to expire.
func TestRevocationCrossesProcesses(t *testing.T) {
	t.Parallel()
	a := newServer(t)
	b := startServer(t, a.dbURL)
	_, user := a.newUser("user@example.com", []string{"admin:read", "admin:write"}, "")
	var tok map[string]any
	a.must(201, "POST", "/api/tokens", user, map[string]any{"name": "x", "scopes": []string{"admin:read"}}).Decode(t, &tok)
	secret := tok["token"].(string)
	b.must(200, "GET", "/api/projects", secret, nil) // cached in b now
	a.must(204, "DELETE", "/api/tokens/"+tok["id"].(string), user, nil)
	require.Eventually(t, func() bool {
		return b.do("GET", "/api/projects", secret, nil).Status == http.StatusUnauthorized
	}, 5*time.Second, 10*time.Millisecond)
}

// TestMintedTokensCannotOutliveTheirMinter: a token created with an
// expiring API token expires no later than it: absent expiresAt takes the
// minter's, a later one is 400, on every token creation route.
func TestMintedTokensCannotOutliveTheirMinter(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	userID, _ := s.newMember("minter@example.com", []string{"admin:read"}, project, "admin")
	type minted struct {
		Token     string     `json:"token"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	// An expiring account token of the superadmin, and one of the user.
	end := time.Now().Add(90 * time.Minute).UTC().Truncate(time.Second)
	var super minted
	s.must(201, "POST", "/api/tokens", s.admin, map[string]any{"name": "expiring", "scopes": allScopes, "expiresAt": end.Format(time.RFC3339)}).Decode(t, &super)
	var user minted
	s.must(201, "POST", "/api/superadmin/users/"+userID+"/tokens", super.Token, map[string]any{
		"name": "u", "scopes": []string{"admin:read", "admin:write", "graph:read"},
	}).Decode(t, &user)
	require.NotNil(t, user.ExpiresAt, "a token minted for a user by an expiring token expires with it")
	require.True(t, end.Equal(*user.ExpiresAt))

	later := end.Add(time.Hour).Format(time.RFC3339)
	for _, c := range []struct{ path, token string }{
		{"/api/tokens", user.Token},
		{"/api/projects/" + project + "/tokens", user.Token},
		{"/api/superadmin/users/" + userID + "/tokens", super.Token},
	} {
		r := s.must(400, "POST", c.path, c.token, map[string]any{"name": "later", "scopes": []string{"admin:read"}, "expiresAt": later})
		require.Contains(t, r.Detail(t), "expiresAt", c.path)
		require.Contains(t, r.Detail(t), end.Format(time.RFC3339), c.path)
		var m minted
		s.must(201, "POST", c.path, c.token, map[string]any{"name": "same", "scopes": []string{"admin:read"}}).Decode(t, &m)
		require.NotNil(t, m.ExpiresAt, c.path)
		require.True(t, end.Equal(*m.ExpiresAt), c.path)
	}
	var n int
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT count(*) FROM api_tokens WHERE name = 'later'`).Scan(&n))
	require.Zero(t, n)
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT count(*) FROM api_tokens WHERE name = 'same' AND expires_at = $1`, end).Scan(&n))
	require.Equal(t, 3, n)
}
