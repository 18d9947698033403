package main

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleBrowserAuth drives the identity provider sign-in in
// chromium (testdata/console-browser/auth.mjs): the provider on another
// site (localhost; the console is at 127.0.0.1), its link on the sign-in
// page, the round trip through the provider, the projects page reached
// with the SameSite=Strict session (the callback's page navigates on by
// itself), a project the user was made a member of meanwhile, its
// documents page whose stream keeps the last event's id in its URL
// (console.js), and sign-out, which revokes the refresh token at the
// provider.
func TestConsoleBrowserAuth(t *testing.T) {
	t.Parallel()
	op := newOIDCProvider(t, "localhost")
	s := newOIDCConsoleServer(t, op)
	project, _ := s.defaultProject()

	out, shots := runConsoleScript(t, s, "auth.mjs", project, nil, func(name string) string {
		switch name {
		case "member":
			users := s.usersBySubject(op.sub)
			require.Len(t, users, 1)
			s.addMember(project, users[0].ID, "viewer")
			return "ok"
		case "upload":
			doc := consoleUpload(t, s, project, "streamed.md", "# Streamed\n\nA document the page sees arrive.")
			s.waitDocument(project, doc)
			var id int64
			require.NoError(t, s.pool().QueryRow(t.Context(),
				`SELECT max(id) FROM events WHERE project_id = $1 AND type = 'document.converted'`, project).Scan(&id))
			return strconv.FormatInt(id, 10)
		}
		t.Errorf("unknown step %q", name)
		return ""
	})
	var report struct {
		Pages          []string `json:"pages"`
		SigninURL      string   `json:"signinURL"`
		Button         string   `json:"button"`
		Navigations    []string `json:"navigations"`
		AfterSigninURL string   `json:"afterSigninURL"`
		ScriptCookies  string   `json:"scriptCookies"`
		Cookie         *struct {
			HTTPOnly bool   `json:"httpOnly"`
			SameSite string `json:"sameSite"`
		} `json:"cookie"`
		ProjectURL        string `json:"projectURL"`
		StreamURLBefore   string `json:"streamURLBefore"`
		StreamURLAfter    string `json:"streamURLAfter"`
		AfterSignoutURL   string `json:"afterSignoutURL"`
		AfterSignoutVisit string `json:"afterSignoutVisit"`
	}
	require.NoError(t, json.Unmarshal(out, &report), "report: %s", out)
	require.Equal(t, "/signin", report.SigninURL)
	require.Contains(t, report.Button, "Sign in with localhost:")
	require.Equal(t, []string{"127.0.0.1/signin/oidc", "localhost/authorize", "127.0.0.1/signin/oidc/callback", "127.0.0.1/"}, report.Navigations,
		"the provider's round trip, then the callback page's own navigation")
	require.Equal(t, "/", report.AfterSigninURL)
	require.NotContains(t, report.ScriptCookies, "graphmill_session")
	require.NotNil(t, report.Cookie)
	require.True(t, report.Cookie.HTTPOnly)
	require.Equal(t, "Strict", report.Cookie.SameSite)
	require.Equal(t, "/projects/"+project, report.ProjectURL)
	stream := "/stream/projects/" + project + "/documents"
	require.Equal(t, stream, report.StreamURLBefore)
	require.Regexp(t, `^`+stream+`\?lastEventId=\d+$`, report.StreamURLAfter)
	require.Equal(t, "/signin", report.AfterSignoutURL)
	require.Equal(t, "/signin", report.AfterSignoutVisit)
	require.Equal(t, []string{"signin-oidc", "projects-oidc", "project-oidc"}, report.Pages)
	requireScreenshots(t, shots, report.Pages)

	grants, live, revoked := op.state()
	require.Equal(t, []string{"authorization_code"}, grants)
	require.Len(t, revoked, 1, "sign-out revoked the refresh token")
	require.Zero(t, live)
	require.Len(t, s.usersBySubject(op.sub), 1)
}
