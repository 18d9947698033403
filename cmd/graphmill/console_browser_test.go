package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/extraction"
)

// TestConsoleBrowser drives the console in Debian's chromium with
// playwright-core (testdata/console-browser: package.json and its lock
// pin it): sign in (a bad token refused first), the projects, the
// project, two uploads (file input and drag and drop) that reach parsed
// without a reload through the event stream, a document's chunks, sign
// out. Screenshots of each page go to the test's artifact directory
// (go test -artifacts keeps them). It needs node, npm and /usr/bin/chromium
// (make test installs chromium when missing).
func TestConsoleBrowser(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the console browser test needs Node.js (node and npm) on PATH")
	npm, err := exec.LookPath("npm")
	require.NoError(t, err, "the console browser test needs npm on PATH")
	_, err = os.Stat("/usr/bin/chromium")
	require.NoError(t, err, "the console browser test needs Debian's chromium (apt-get install chromium; make test installs it)")

	s := newServer(t)
	project, _ := s.defaultProject()

	dir := t.TempDir()
	for _, f := range []string{"browser.mjs", "package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/console-browser", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o600))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	out, err := install.CombinedOutput()
	require.NoError(t, err, "npm ci (playwright-core): %s", out)

	// Extraction jobs stay queued until the jobs step resumes the queue.
	require.NoError(t, s.m.jobs.Pause(ctx, extraction.Queue))

	shots := t.ArtifactDir()
	run := exec.CommandContext(ctx, node, "browser.mjs", s.base, s.admin, project, shots)
	run.Dir = dir
	stdin, err := run.StdinPipe()
	require.NoError(t, err)
	stderrPipe, err := run.StderrPipe()
	require.NoError(t, err)
	var stdout strings.Builder
	run.Stdout = &stdout
	require.NoError(t, run.Start())
	// The script's steps: fixtures between its pages.
	var stderr strings.Builder
	var loomsJob, bakeryJob, taskID string
	lines := bufio.NewScanner(stderrPipe)
	for lines.Scan() {
		line := lines.Text()
		stderr.WriteString(line + "\n")
		switch line {
		case "step:jobs":
			loomsJob, bakeryJob = s.extractionJobOf(consoleDocID(t, s, project, "looms.md")), s.extractionJobOf(consoleDocID(t, s, project, "bakery.md"))
			s.extractionCount(`UPDATE object_extraction_jobs SET status = 'failed', error_msg = 'boom' WHERE id = $1 RETURNING 1`, bakeryJob)
			_, err := io.WriteString(stdin, loomsJob+" "+bakeryJob+"\n")
			require.NoError(t, err)
		case "step:resume":
			require.NoError(t, s.m.jobs.Resume(ctx, extraction.Queue))
			_, err := io.WriteString(stdin, "ok\n")
			require.NoError(t, err)
		case "step:tasks":
			taskID = s.createTask(project, "Merge Jacquard", "suggestion", "", map[string]any{"name": "Jacquard loom"})
			_, err := io.WriteString(stdin, taskID+"\n")
			require.NoError(t, err)
			require.NoError(t, stdin.Close()) // the last step
		}
	}
	err = run.Wait()
	require.NoError(t, err, "node browser.mjs: %s", stderr.String())
	out = []byte(stdout.String())

	var report struct {
		Pages          []string `json:"pages"`
		CSP            []string `json:"csp"`
		Errors         []string `json:"errors"`
		SigninURL      string   `json:"signinURL"`
		BadTokenAlert  string   `json:"badTokenAlert"`
		AfterSigninURL string   `json:"afterSigninURL"`
		ScriptCookies  string   `json:"scriptCookies"`
		Cookie         *struct {
			HTTPOnly bool   `json:"httpOnly"`
			SameSite string `json:"sameSite"`
			Secure   bool   `json:"secure"`
		} `json:"cookie"`
		Progress          []float64                       `json:"progress"`
		NotReloaded       bool                            `json:"notReloaded"`
		SSEMessages       int                             `json:"sseMessages"`
		Rows              []struct{ Name, Status string } `json:"rows"`
		Chunks            []string                        `json:"chunks"`
		JobActions        []string                        `json:"jobActions"`
		JobsNotReloaded   bool                            `json:"jobsNotReloaded"`
		FilteredURL       string                          `json:"filteredURL"`
		Filtered          []string                        `json:"filtered"`
		JobLog            []string                        `json:"jobLog"`
		SearchMarks       []string                        `json:"searchMarks"`
		AfterSignoutURL   string                          `json:"afterSignoutURL"`
		AfterSignoutVisit string                          `json:"afterSignoutVisit"`
	}
	require.NoError(t, json.Unmarshal(out, &report), "report: %s", out)
	require.Empty(t, report.CSP, "Content-Security-Policy violations")
	require.Empty(t, report.Errors, "script errors")
	require.Equal(t, "/signin", report.SigninURL)
	require.Equal(t, "This token is not valid.", report.BadTokenAlert)
	require.Equal(t, "/", report.AfterSigninURL)
	require.NotContains(t, report.ScriptCookies, "graphmill_session", "the session cookie is readable by script")
	require.NotNil(t, report.Cookie)
	require.True(t, report.Cookie.HTTPOnly)
	require.Equal(t, "Strict", report.Cookie.SameSite)
	require.False(t, report.Cookie.Secure, "plain HTTP: not Secure")
	require.Equal(t, []float64{100, 100}, report.Progress)
	require.True(t, report.NotReloaded, "the page was reloaded")
	require.GreaterOrEqual(t, report.SSEMessages, 2, "a documents event per parsed document")
	statuses := map[string]string{}
	for _, r := range report.Rows {
		statuses[r.Name] = r.Status
	}
	require.Equal(t, map[string]string{"looms.md": "parsed", "bakery.md": "parsed"}, statuses)
	require.NotEmpty(t, report.Chunks)
	require.Contains(t, strings.Join(report.Chunks, "\n"), "Jacquard loom reads punched cards")
	require.Equal(t, []string{"cancelled", "queued"}, report.JobActions)
	require.True(t, report.JobsNotReloaded, "the jobs page was reloaded")
	require.Equal(t, "?status=cancelled&type=", report.FilteredURL)
	require.Equal(t, []string{"job-" + loomsJob}, report.Filtered)
	require.NotEmpty(t, report.JobLog)
	require.Contains(t, strings.Join(report.JobLog, "\n"), "job cancelled")
	require.Equal(t, "/signin", report.AfterSignoutURL)
	require.Equal(t, "/signin", report.AfterSignoutVisit)
	require.Equal(t, []string{"signin", "projects", "project", "documents", "document", "jobs", "job", "tasks", "search"}, report.Pages)
	require.Contains(t, report.SearchMarks, "Jacquard")
	for _, p := range report.Pages {
		fi, err := os.Stat(filepath.Join(shots, p+".png"))
		require.NoError(t, err)
		require.Positive(t, fi.Size())
	}

	// The server's state: both documents uploaded by the bootstrap user
	// and parsed.
	var docs struct {
		Data []struct {
			Filename string `json:"filename"`
			Status   string `json:"status"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &docs)
	got := map[string]string{}
	for _, d := range docs.Data {
		got[d.Filename] = d.Status
	}
	require.Equal(t, map[string]string{"looms.md": "parsed", "bakery.md": "parsed"}, got)
	// The jobs: cancelled, and retried to completion, by the admin.
	require.Equal(t, "cancelled", s.extractionGetJob(loomsJob).Status)
	require.Equal(t, "completed", s.extractionGetJob(bakeryJob).Status)
	// The task: accepted by the admin.
	var tk struct {
		Data struct {
			Status     string `json:"status"`
			ResolvedBy string `json:"resolvedBy"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/tasks/"+taskID, s.admin, nil, header{"X-Project-ID", project}).Decode(t, &tk)
	require.Equal(t, "accepted", tk.Data.Status)
	require.NotEmpty(t, tk.Data.ResolvedBy)
}

// consoleDocID is the id of the project's document named filename.
func consoleDocID(t *testing.T, s *testServer, project, filename string) string {
	t.Helper()
	var docs struct {
		Data []struct {
			ID       string `json:"id"`
			Filename string `json:"filename"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &docs)
	for _, d := range docs.Data {
		if d.Filename == filename {
			return d.ID
		}
	}
	t.Fatalf("no document %s", filename)
	return ""
}
