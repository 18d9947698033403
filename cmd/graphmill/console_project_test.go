package main

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/extraction"
)

// consoleMembers is the project's members as the API lists them: role by
// user id.
func consoleMembers(t *testing.T, s *testServer, project string) map[string]string {
	t.Helper()
	var list struct {
		Data []struct {
			UserID string `json:"userId"`
			Role   string `json:"role"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/projects/"+project+"/members", s.admin, nil).Decode(t, &list)
	out := map[string]string{}
	for _, m := range list.Data {
		out[m.UserID] = m.Role
	}
	return out
}

// requireSignedOutRedirect asserts that a signed-out browser is sent to
// the sign-in form by each path (GET) and refused each form (POST).
func requireSignedOutRedirect(t *testing.T, s *testServer, gets, posts []string) {
	t.Helper()
	anon := newConsoleBrowser(t, s)
	for _, p := range gets {
		status, hdr, _ := anon.do("GET", p, nil)
		require.Equal(t, http.StatusSeeOther, status, p)
		require.Equal(t, "/signin", hdr.Get("Location"), p)
	}
	for _, p := range posts {
		status, hdr, _ := anon.do("POST", p, url.Values{})
		require.Equal(t, http.StatusUnauthorized, status, p)
		require.Equal(t, "/signin", hdr.Get("HX-Redirect"), p)
	}
}

// TestConsoleProjectMembers: the members page lists the members with
// their roles; project admins add a member, change a role and remove one
// (the API's add and remove routes and rules); a viewer sees no form and
// is forbidden each action, another project is not found, a form without
// the CSRF token is refused, and bad input is answered with its message.
// Each refusal leaves the memberships as they were.
func TestConsoleProjectMembers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	base := "/projects/" + project + "/members"
	requireSignedOutRedirect(t, s, []string{base}, []string{base, base + "/" + project + "/remove"})

	viewerID, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	newcomer, _ := s.newUser("newcomer@example.com", allScopes, "")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, page := viewer.do("GET", base, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="member-`+viewerID+`" data-role="viewer"`)
	require.NotContains(t, page, `id="add-member"`, "no form for a viewer")
	require.NotContains(t, page, "/remove")
	status, _, _ = viewer.do("POST", base, url.Values{"csrf": {viewer.csrf}, "userId": {newcomer}, "role": {"editor"}})
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = viewer.do("GET", "/projects/"+other+"/members", nil)
	require.Equal(t, http.StatusNotFound, status, "a project the viewer is not in")

	admin := newConsoleBrowser(t, s)
	admin.signIn(s.admin)
	status, _, _ = admin.do("POST", base, url.Values{"userId": {newcomer}, "role": {"editor"}})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	require.NotContains(t, consoleMembers(t, s, project), newcomer)

	for _, bad := range []struct {
		form url.Values
		msg  string
		code int
	}{
		{url.Values{"userId": {"not-a-uuid"}, "role": {"editor"}}, "The user must be given by its id (a UUID).", 400},
		{url.Values{"userId": {newcomer}, "role": {"owner"}}, `role must be admin, editor or viewer, not &#34;owner&#34;`, 400},
		{url.Values{"userId": {"0190a0a0-0000-7000-8000-000000000000"}, "role": {"editor"}}, "user not found", 404},
	} {
		bad.form.Set("csrf", admin.csrf)
		status, _, page = admin.do("POST", base, bad.form)
		requireFormAgain(t, status, page, bad.code, "add-member", "problem", bad.msg,
			`name="userId" value="`+bad.form.Get("userId")+`"`)
	}
	// A role the select offers comes back chosen.
	status, _, page = admin.do("POST", base, url.Values{"csrf": {admin.csrf}, "userId": {"0190a0a0-0000-7000-8000-000000000000"}, "role": {"editor"}})
	requireFormAgain(t, status, page, 404, "add-member", "problem", "user not found", `<option value="editor" selected>`)
	require.NotContains(t, consoleMembers(t, s, project), newcomer)

	// Add, change the role, remove.
	status, _, page = admin.do("POST", base, url.Values{"csrf": {admin.csrf}, "userId": {newcomer}, "role": {"editor"}})
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "newcomer@example.com is now editor.")
	require.Contains(t, page, `id="member-`+newcomer+`" data-role="editor"`)
	require.Equal(t, "editor", consoleMembers(t, s, project)[newcomer])
	status, _, _ = admin.do("POST", base, url.Values{"csrf": {admin.csrf}, "userId": {newcomer}, "role": {"admin"}})
	require.Equal(t, 200, status)
	require.Equal(t, "admin", consoleMembers(t, s, project)[newcomer])

	status, _, _ = viewer.do("POST", base+"/"+newcomer+"/remove", url.Values{"csrf": {viewer.csrf}})
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = admin.do("POST", "/projects/"+other+"/members/"+newcomer+"/remove", url.Values{"csrf": {admin.csrf}})
	require.Equal(t, http.StatusNotFound, status, "not a member of the other project")
	require.Equal(t, "admin", consoleMembers(t, s, project)[newcomer])
	status, _, page = admin.do("POST", base+"/"+newcomer+"/remove", url.Values{"csrf": {admin.csrf}})
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "The member was removed.")
	require.NotContains(t, consoleMembers(t, s, project), newcomer)
	status, _, page = admin.do("POST", base+"/"+newcomer+"/remove", url.Values{"csrf": {admin.csrf}})
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, page, `id="problem">membership not found<`)
}

var newTokenValue = regexp.MustCompile(`id="new-token-value" type="text" readonly value="([^"]+)"`)

// TestConsoleProjectTokens: a project token made on the page is shown
// once (not on the next visit), works for the API bound to the project,
// and stops working when revoked there; the API's rules apply (a viewer
// sees and revokes only their own tokens, another project is not found),
// the CSRF token is needed, and bad input is answered with its message.
func TestConsoleProjectTokens(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	base := "/projects/" + project + "/tokens"
	requireSignedOutRedirect(t, s, []string{base}, []string{base})

	admin := newConsoleBrowser(t, s)
	admin.signIn(s.admin)
	status, _, _ := admin.do("POST", base, url.Values{"name": {"ci"}, "scope": {"documents:read"}})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	for _, bad := range []struct {
		form url.Values
		msg  string
	}{
		{url.Values{"name": {"ci"}}, "scopes must name at least one scope"},
		{url.Values{"name": {"ci"}, "scope": {"documents:eat"}}, "scopes: unknown scope &#34;documents:eat&#34;"},
		{url.Values{"name": {""}, "scope": {"documents:read"}}, "token name"},
		{url.Values{"name": {"ci"}, "scope": {"documents:read"}, "expiresAt": {"tomorrow"}}, "The expiry must be a date such as 2030-01-31."},
	} {
		bad.form.Set("csrf", admin.csrf)
		status, _, page := admin.do("POST", base, bad.form)
		require.Equal(t, http.StatusBadRequest, status, page)
		require.Contains(t, page, bad.msg)
	}
	// The form comes back as typed: name, scopes ticked, expiry.
	status, _, page := admin.do("POST", base, url.Values{
		"csrf": {admin.csrf}, "name": {"nightly ci"}, "scope": {"documents:read", "search:read"}, "expiresAt": {"tomorrow"},
	})
	requireFormAgain(t, status, page, 400, "create-token", "problem", "The expiry must be a date such as 2030-01-31.",
		`name="name" value="nightly ci"`, `name="scope" value="documents:read" checked`, `name="scope" value="search:read" checked`,
		`name="expiresAt" type="date" value="tomorrow"`)
	require.NotContains(t, page, `name="scope" value="documents:write" checked`)
	var list struct {
		Total int `json:"total"`
	}
	s.must(200, "GET", "/api/projects/"+project+"/tokens", s.admin, nil).Decode(t, &list)
	require.Zero(t, list.Total, "no token made by a refused form")

	status, _, page = admin.do("POST", base, url.Values{"csrf": {admin.csrf}, "name": {"ci"}, "scope": {"documents:read", "search:read"}, "expiresAt": {"2099-01-31"}})
	require.Equal(t, http.StatusCreated, status, page)
	m := newTokenValue.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	token := m[1]
	require.True(t, strings.HasPrefix(token, "gm_"), token)
	require.Contains(t, page, "documents:read, search:read")
	require.Contains(t, page, "2099-01-31 23:59:59 UTC")
	status, _, page = admin.do("GET", base, nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, token, "shown once")
	require.NotContains(t, page, "new-token")
	s.must(200, "GET", "/api/documents", token, nil)
	s.must(403, "GET", "/api/documents", token, nil, header{"X-Project-ID", other})
	var tokens struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/projects/"+project+"/tokens", s.admin, nil).Decode(t, &tokens)
	require.Len(t, tokens.Data, 1)
	id := tokens.Data[0].ID
	require.Contains(t, page, `id="token-`+id+`"`)

	// A viewer sees neither another's token nor may revoke it.
	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, page = viewer.do("GET", base, nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, id)
	status, _, _ = viewer.do("POST", base+"/"+id+"/revoke", url.Values{"csrf": {viewer.csrf}})
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = viewer.do("GET", "/projects/"+other+"/tokens", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = admin.do("POST", "/projects/"+other+"/tokens/"+id+"/revoke", url.Values{"csrf": {admin.csrf}})
	require.Equal(t, http.StatusNotFound, status, "a token of another project")
	s.must(200, "GET", "/api/documents", token, nil)

	status, _, _ = admin.do("POST", base+"/"+id+"/revoke", url.Values{})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	status, _, page = admin.do("POST", base+"/"+id+"/revoke", url.Values{"csrf": {admin.csrf}})
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "The token was revoked.")
	require.NotContains(t, page, `id="token-`+id+`"`)
	s.must(401, "GET", "/api/documents", token, nil)
	// Its row's button once more (an older page): the list again, with why.
	status, _, page = admin.do("POST", base+"/"+id+"/revoke", url.Values{"csrf": {admin.csrf}})
	requireFormAgain(t, status, page, http.StatusNotFound, "tokens", "problem", "token not found")
}

// TestConsoleProjectProviders: the providers page lists the project's
// policies, never a secret; project admins set a policy with write-only
// credentials (stored sealed: the API's policy says project, the page and
// the API never show the key); a viewer sees no form and is forbidden,
// another project is not found, the CSRF token is needed, and bad input
// is answered with its message.
func TestConsoleProjectProviders(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	base := "/projects/" + project + "/providers"
	requireSignedOutRedirect(t, s, []string{base, "/projects/" + project + "/usage"}, []string{base + "/key-ai/policy"})
	const secret = "AIzaSecretKeyNeverShown123"

	_, viewerToken := s.newMember("viewer@example.com", allScopes, project, "viewer")
	viewer := newConsoleBrowser(t, s)
	viewer.signIn(viewerToken)
	status, _, viewerPage := viewer.do("GET", base, nil)
	require.Equal(t, 200, status, viewerPage)
	require.Contains(t, viewerPage, `id="policy-key-ai"`)
	require.NotContains(t, viewerPage, "policy-form-", "no form for a viewer")
	status, _, _ = viewer.do("POST", base+"/key-ai/policy", url.Values{"csrf": {viewer.csrf}, "policy": {"project"}, "apiKey": {secret}})
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = viewer.do("GET", "/projects/"+other+"/providers", nil)
	require.Equal(t, http.StatusNotFound, status)

	admin := newConsoleBrowser(t, s)
	admin.signIn(s.admin)
	status, _, page := admin.do("GET", base, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="policy-form-key-ai"`)
	require.Contains(t, page, "<h2>Organization credentials</h2>", "the organization's admin reads its credential metadata")
	require.Contains(t, page, "<td>gemini-2.5-flash</td><td>generative</td>", "the key-ai catalog")
	status, _, page = admin.do("GET", base+"?catalog=openai", nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, "<td>gemini-2.5-flash</td>")
	status, _, page = admin.do("GET", base+"?catalog=nope", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, page, "unknown provider: use key-ai, account-ai, openai or local")
	status, _, _ = admin.do("POST", base+"/key-ai/policy", url.Values{"policy": {"project"}, "apiKey": {secret}})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	for _, bad := range []struct {
		provider string
		form     url.Values
		msg      string
		code     int
	}{
		{"key-ai", url.Values{"policy": {"everyone"}}, "policy must be none, organization or project", 400},
		{"key-ai", url.Values{"policy": {"project"}}, "policy project needs the project&#39;s credentials: give apiKey", 400},
		{"key-ai", url.Values{"policy": {"organization"}, "apiKey": {secret}}, "credentials, gcpProject and location are only taken with policy project", 400},
		{"nope", url.Values{"policy": {"project"}, "apiKey": {secret}}, "unknown provider", 404},
	} {
		bad.form.Set("csrf", admin.csrf)
		status, _, page = admin.do("POST", base+"/"+bad.provider+"/policy", bad.form)
		require.Equal(t, bad.code, status, page)
		require.Contains(t, page, bad.msg)
		require.NotContains(t, page, secret)
	}
	s.must(404, "GET", "/api/v1/projects/"+project+"/providers/key-ai/policy", s.admin, nil)
	// The refused form comes back as typed (its secret never).
	status, _, page = admin.do("POST", base+"/account-ai/policy", url.Values{
		"csrf": {admin.csrf}, "policy": {"organization"}, "gcpProject": {"gcp-typed"}, "location": {"europe-west4"},
		"embeddingModel": {"embed-typed"}, "serviceAccountJson": {secret},
	})
	requireFormAgain(t, status, page, 400, "policy-form-account-ai", "problem", "credentials, gcpProject and location are only taken with policy project, not organization",
		`name="gcpProject" value="gcp-typed"`, `name="location" value="europe-west4"`, `name="embeddingModel" value="embed-typed"`)
	_, form, _ := strings.Cut(page, `id="policy-form-account-ai"`)
	form, _, _ = strings.Cut(form, "</form>")
	require.Contains(t, form, `<option value="organization" selected>`)
	require.NotContains(t, page, secret)

	status, _, page = admin.do("POST", base+"/key-ai/policy", url.Values{"csrf": {admin.csrf}, "policy": {"project"}, "apiKey": {secret}})
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "The key-ai policy is now project.")
	require.Contains(t, page, `id="policy-key-ai" data-policy="project"`)
	require.NotContains(t, page, secret, "the secret is never echoed")
	status, _, page = admin.do("GET", base, nil)
	require.Equal(t, 200, status)
	require.NotContains(t, page, secret)
	got := s.must(200, "GET", "/api/v1/projects/"+project+"/providers/key-ai/policy", s.admin, nil)
	require.Equal(t, "project", got.JSON(t)["policy"])
	require.NotContains(t, string(got.Body), secret)
	var sealed string
	require.NoError(t, s.m.db.pool.QueryRow(t.Context(), `SELECT secret FROM project_provider_policies WHERE project_id = $1 AND provider = 'key-ai'`, project).Scan(&sealed))
	require.NotContains(t, sealed, secret, "stored sealed")

	// Empty credential fields keep the stored ones; organization drops them.
	status, _, _ = admin.do("POST", base+"/key-ai/policy", url.Values{"csrf": {admin.csrf}, "policy": {"project"}})
	require.Equal(t, 200, status)
	status, _, _ = admin.do("POST", base+"/key-ai/policy", url.Values{"csrf": {admin.csrf}, "policy": {"organization"}})
	require.Equal(t, 200, status)
	require.Equal(t, 0, s.extractionCount(`SELECT count(*) FROM project_provider_policies WHERE project_id = $1 AND secret IS NOT NULL`, project))
}

// TestConsoleProjectUsage: the usage page sums the project's ledger by
// provider and model over the period and charts it per day as inline
// SVG (a bar per day, its value in its title); another project's calls
// are not counted, another project is not found, and a bad period is
// answered with its message.
func TestConsoleProjectUsage(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for _, row := range []struct {
		project string
		text    int
		cost    float64
		at      time.Time
	}{
		{project, 1000, 0.25, today.Add(time.Hour)},
		{project, 500, 0.5, today.Add(-48*time.Hour + time.Hour)},
		{other, 7777, 9, today.Add(time.Hour)},
		{project, 3000, 3, today.Add(-60 * 24 * time.Hour)}, // outside 30 days
	} {
		_, err := s.m.db.pool.Exec(context.Background(), `INSERT INTO provider_usage (id, org_id, project_id, provider, model, operation, source,
			text_tokens, output_tokens, duration_ms, status, estimated_cost_usd, created_at)
			VALUES (gen_random_uuid(), $1, $2, 'key-ai', 'gemini-2.5-flash', 'generate', 'environment', $3, 100, 10, 'ok', $4, $5)`,
			org, row.project, row.text, row.cost, row.at)
		require.NoError(t, err)
	}
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page := b.do("GET", "/projects/"+project+"/usage", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `<td>gemini-2.5-flash</td><td>1500</td><td>200</td><td>1700</td><td>$0.75</td>`)
	require.Equal(t, 30, strings.Count(page, `<rect class="bar"`)/2, "a bar per day in each chart")
	require.Contains(t, page, "<title>"+today.Format("2006-01-02")+": 1100</title>")
	require.Contains(t, page, "<title>"+today.Add(-48*time.Hour).Format("2006-01-02")+": $0.50</title>")
	require.Contains(t, page, "<title>"+today.Add(-24*time.Hour).Format("2006-01-02")+": 0</title>")
	require.NotContains(t, page, "7777")
	require.NotContains(t, page, "style=", "no inline style (CSP)")

	status, _, page = b.do("GET", "/projects/"+project+"/usage?days=90", nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `<td>4500</td>`)
	require.Equal(t, 90, strings.Count(page, `<rect class="bar"`)/2)
	status, _, page = b.do("GET", "/projects/"+project+"/usage?days=5", nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "days must be 7, 30 or 90")

	_, strangerToken := s.newUser("stranger@example.com", allScopes, "")
	stranger := newConsoleBrowser(t, s)
	stranger.signIn(strangerToken)
	status, _, _ = stranger.do("GET", "/projects/"+project+"/usage", nil)
	require.Equal(t, http.StatusNotFound, status)
	_, noProviders := s.newMember("noprov@example.com", []string{"admin:read"}, project, "admin")
	np := newConsoleBrowser(t, s)
	np.signIn(noProviders)
	status, _, _ = np.do("GET", "/projects/"+project+"/usage", nil)
	require.Equal(t, http.StatusForbidden, status, "without providers:read")
}

// TestConsoleProjectMonitoring: an extraction job's LLM calls page shows
// each call with its payloads (collapsible), tokens, cost and duration,
// and the job's metrics from the whole call log; the monitoring page
// lists the jobs with their calls and cost. Another project's job is not
// found, a token without extraction:read is forbidden, and a bad filter
// is answered with its message.
func TestConsoleProjectMonitoring(t *testing.T) {
	t.Parallel()
	s, project, other, job, otherJob := consoleJobFixture(t)
	_, err := s.m.db.pool.Exec(t.Context(), `INSERT INTO extraction_llm_calls (id, job_id, project_id, provider, model_name, status, input_tokens, output_tokens, total_tokens,
		cost_usd, duration_ms, started_at, completed_at, request_payload, response_payload, error_message) VALUES
		(gen_random_uuid(), $1, $2, 'key-ai', 'gemini-2.5-flash', 'success', 20, 10, 30, 0.5, 100, now() - interval '9 seconds', now(), '{"window":1,"prompt":"<b>Ada</b>"}', '{"objects":["Ada"]}', NULL),
		(gen_random_uuid(), $1, $2, 'key-ai', 'gemini-2.5-flash', 'error', 0, 0, 0, 0, 300, now() - interval '8 seconds', now(), '{"window":2}', NULL, 'provider said no')`,
		job, project)
	require.NoError(t, err)
	base := "/projects/" + project + "/jobs/" + job + "/llm-calls"
	requireSignedOutRedirect(t, s, []string{base, "/projects/" + project + "/monitoring"}, nil)

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page := b.do("GET", base, nil)
	require.Equal(t, 200, status, page)
	require.Equal(t, 2, strings.Count(page, `class="call call-`))
	require.Contains(t, page, "20 in + 10 out = 30 tokens")
	require.Contains(t, page, `<span class="call-cost">$0.50</span>`)
	require.Contains(t, page, `<span class="call-duration">300 ms</span>`)
	require.Contains(t, page, "<summary>Request</summary><pre>{\n  &#34;prompt&#34;: &#34;&lt;b&gt;Ada&lt;/b&gt;&#34;,\n  &#34;window&#34;: 1\n}</pre>", "indented and escaped")
	require.Contains(t, page, "<summary>Response</summary>")
	require.Equal(t, 1, strings.Count(page, "<summary>Response</summary>"), "the failed call has no response")
	require.Contains(t, page, `<p class="error">provider said no</p>`)
	require.Contains(t, page, "<dt>Calls</dt><dd>2</dd>")
	require.Contains(t, page, "<dt>Succeeded</dt><dd>50%</dd>")
	require.Contains(t, page, "<dt>Average duration</dt><dd>200 ms</dd>")

	status, _, page = b.do("GET", "/projects/"+project+"/jobs/"+job, nil)
	require.Equal(t, 200, status)
	require.Contains(t, page, `id="job-llm-calls" href="`+base+`"`, "the job page links its calls")

	status, _, page = b.do("GET", "/projects/"+project+"/monitoring", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="monitored-`+job+`"`)
	require.Contains(t, page, "<td>2</td><td>$0.50</td>")
	require.NotContains(t, page, otherJob)
	status, _, page = b.do("GET", "/projects/"+project+"/monitoring?status=queued", nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "status must be pending, running, completed or failed")
	status, _, page = b.do("GET", "/projects/"+project+"/monitoring?status=pending&sort_by=total_cost_usd", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `id="monitored-`+job+`"`)

	for _, p := range []string{
		"/projects/" + project + "/jobs/" + otherJob + "/llm-calls", "/projects/" + other + "/jobs/" + job + "/llm-calls",
		"/projects/" + project + "/jobs/not-a-uuid/llm-calls",
	} {
		status, _, page = b.do("GET", p, nil)
		require.Equal(t, http.StatusNotFound, status, p)
		require.NotContains(t, page, "provider said no")
	}
	_, noExtraction := s.newMember("noext@example.com", []string{"admin:read"}, project, "admin")
	ne := newConsoleBrowser(t, s)
	ne.signIn(noExtraction)
	for _, p := range []string{base, "/projects/" + project + "/monitoring"} {
		status, _, _ = ne.do("GET", p, nil)
		require.Equal(t, http.StatusForbidden, status, p)
	}
}

// consoleJobFixture starts a server with the extraction queue paused and
// a queued extraction job in the default project and in another one.
func consoleJobFixture(t *testing.T) (s *testServer, project, other, job, otherJob string) {
	t.Helper()
	s = newServer(t)
	require.NoError(t, s.m.jobs.Pause(t.Context(), extraction.Queue))
	var org string
	project, org = s.defaultProject()
	other = s.newProject(org, "other")
	job = s.extractionJobOf(s.extractionUpload(project, "p.md", "# P\n\nAda."))
	otherJob = s.extractionJobOf(s.extractionUpload(other, "q.md", "# Q\n\nBob."))
	return s, project, other, job, otherJob
}
