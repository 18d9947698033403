package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleBrowserProject drives the project administration pages in
// chromium (testdata/console-browser/project.mjs): add a member, create a
// token (shown once) and revoke it, set a provider key (never shown
// again), open the usage chart after an extraction and the extraction
// job's LLM calls. Screenshots of each page; the server's state after.
func TestConsoleBrowserProject(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	// An extraction with the local provider: LLM calls and ledger rows.
	job := s.extractionJobOf(s.extractionUpload(project, "looms.md", "# Looms\n\nThe Jacquard loom reads punched cards. Joseph Marie Jacquard built it in Lyon."))
	s.extractionWaitJob(job, "completed", "requires_review")
	require.Positive(t, s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1`, job))
	const secret = "AIzaBrowserSecret0123456789"

	var user string
	out, shots := runConsoleScript(t, s, "project.mjs", project, []string{job, secret}, func(name string) string {
		if name == "user" {
			user, _ = s.newUser("newcomer@example.com", []string{"documents:read"}, "")
			return user
		}
		t.Errorf("unknown step %q", name)
		return ""
	})
	var report struct {
		Pages                []string `json:"pages"`
		MemberNotice         string   `json:"memberNotice"`
		MemberProblem        string   `json:"memberProblem"`
		MemberKept           []string `json:"memberKept"`
		Token                string   `json:"token"`
		TokenShownAgain      bool     `json:"tokenShownAgain"`
		NewTokenBoxAgain     bool     `json:"newTokenBoxAgain"`
		RevokeNotice         string   `json:"revokeNotice"`
		TokenRowsAfterRevoke int      `json:"tokenRowsAfterRevoke"`
		PolicyNotice         string   `json:"policyNotice"`
		Policy               string   `json:"policy"`
		SecretAfterSave      bool     `json:"secretAfterSave"`
		SecretAfterVisit     bool     `json:"secretAfterVisit"`
		UsageBars            int      `json:"usageBars"`
		UsageNonEmptyBars    int      `json:"usageNonEmptyBars"`
		UsageRows            []string `json:"usageRows"`
		Calls                int      `json:"calls"`
		RequestHidden        bool     `json:"requestHidden"`
		RequestShown         bool     `json:"requestShown"`
		Request              string   `json:"request"`
	}
	require.NoError(t, json.Unmarshal(out, &report), "report: %s", out)
	require.Equal(t, []string{"project", "members", "token-created", "tokens", "providers", "usage", "monitoring", "llm-calls"}, report.Pages)
	requireScreenshots(t, shots, report.Pages)

	require.Equal(t, "user not found", report.MemberProblem, "a refused add: the form again with why")
	require.Equal(t, []string{"0190a0a0-0000-7000-8000-000000000000", "editor"}, report.MemberKept, "and what was typed")
	require.Equal(t, "newcomer@example.com is now editor.", report.MemberNotice)
	require.Equal(t, "editor", consoleMembers(t, s, project)[user])

	require.True(t, strings.HasPrefix(report.Token, "gm_"), report.Token)
	require.False(t, report.TokenShownAgain, "the token is shown once")
	require.False(t, report.NewTokenBoxAgain)
	require.Equal(t, "The token was revoked.", report.RevokeNotice)
	require.Zero(t, report.TokenRowsAfterRevoke)
	s.must(401, "GET", "/api/documents", report.Token, nil)

	require.Equal(t, "The key-ai policy is now project.", report.PolicyNotice)
	require.Equal(t, "project", report.Policy)
	require.False(t, report.SecretAfterSave, "the secret in the page after saving")
	require.False(t, report.SecretAfterVisit, "the secret in the page on the next visit")
	require.Equal(t, "project", s.must(200, "GET", "/api/v1/projects/"+project+"/providers/key-ai/policy", s.admin, nil).JSON(t)["policy"])

	require.Equal(t, 30, report.UsageBars)
	require.Positive(t, report.UsageNonEmptyBars, "today's bar")
	require.NotEmpty(t, report.UsageRows)

	require.Positive(t, report.Calls)
	require.True(t, report.RequestHidden, "payloads are folded")
	require.True(t, report.RequestShown)
	require.NotEmpty(t, report.Request)
}
