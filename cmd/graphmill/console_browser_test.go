package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
	s := newServer(t)
	project, _ := s.defaultProject()
	// Extraction jobs stay queued until the jobs step resumes the queue.
	require.NoError(t, s.m.jobs.Pause(t.Context(), extraction.Queue))

	var loomsJob, bakeryJob, taskID string
	out, shots := runConsoleScript(t, s, "browser.mjs", project, nil, func(name string) string {
		switch name {
		case "jobs":
			loomsJob, bakeryJob = s.extractionJobOf(consoleDocID(t, s, project, "looms.md")), s.extractionJobOf(consoleDocID(t, s, project, "bakery.md"))
			s.extractionCount(`UPDATE object_extraction_jobs SET status = 'failed', error_msg = 'boom' WHERE id = $1 RETURNING 1`, bakeryJob)
			return loomsJob + " " + bakeryJob
		case "resume":
			require.NoError(t, s.m.jobs.Resume(t.Context(), extraction.Queue))
			return "ok"
		case "tasks":
			taskID = s.createTask(project, "Merge Jacquard", "suggestion", "", map[string]any{"name": "Jacquard loom"})
			return taskID
		}
		t.Errorf("unknown step %q", name)
		return ""
	})

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
	requireScreenshots(t, shots, report.Pages)
	require.Contains(t, report.SearchMarks, "Jacquard")

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

// consoleScripts is the folder of the browser scripts with playwright-core
// installed (npm ci from the lock file), set up once per test process.
var consoleScripts = sync.OnceValues(func() (string, error) { return nodeScripts("console-browser") })

// nodeScripts copies testdata/NAME to a folder named by its lock file's
// hash under the temporary directory and installs its packages there (npm
// ci) unless a previous run did, so later runs reuse them; the scripts are
// copied anew.
func nodeScripts(name string) (string, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("the browser tests need npm on PATH")
	}
	lock, err := os.ReadFile(filepath.Join("testdata", name, "package-lock.json"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(lock)
	dir := filepath.Join(os.TempDir(), "graphmill-"+name+"-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join("testdata", name, "*"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			return "", err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci (%s): %w: %s", name, err, out)
	}
	return dir, nil
}

// runConsoleScript runs testdata/console-browser/SCRIPT in Debian's
// chromium against s, signed in as s.admin in project (the script's
// arguments: base URL, token, project, screenshot folder, then args).
// Each "step:NAME" line the script writes on stderr is answered on its
// stdin with step(NAME) (fixtures the Go test sets up between pages). It
// returns the script's JSON report (stdout) and the screenshot folder (the
// test's artifact directory: go test -artifacts keeps it), and fails the
// test on any Content-Security-Policy violation or script error the
// report lists.
func runConsoleScript(t *testing.T, s *testServer, script, project string, args []string, step func(name string) string) ([]byte, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the console browser tests need Node.js (node and npm) on PATH")
	_, err = os.Stat("/usr/bin/chromium")
	require.NoError(t, err, "the console browser tests need Debian's chromium (apt-get install chromium; make test installs it)")
	dir, err := consoleScripts()
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	shots := t.ArtifactDir()
	run := exec.CommandContext(ctx, node, append([]string{script, s.base, s.admin, project, shots}, args...)...)
	run.Dir = dir
	stdin, err := run.StdinPipe()
	require.NoError(t, err)
	stderrPipe, err := run.StderrPipe()
	require.NoError(t, err)
	var stdout strings.Builder
	run.Stdout = &stdout
	require.NoError(t, run.Start())
	var stderr strings.Builder
	lines := bufio.NewScanner(stderrPipe)
	lines.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for lines.Scan() {
		line := lines.Text()
		stderr.WriteString(line + "\n")
		if name, ok := strings.CutPrefix(line, "step:"); ok {
			_, err := io.WriteString(stdin, step(name)+"\n")
			require.NoError(t, err)
		}
	}
	_ = stdin.Close()
	err = run.Wait()
	require.NoError(t, err, "node %s: %s", script, stderr.String())
	var common struct {
		CSP    []string `json:"csp"`
		Errors []string `json:"errors"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout.String()), &common), "report: %s", stdout.String())
	require.Empty(t, common.CSP, "Content-Security-Policy violations")
	require.Empty(t, common.Errors, "script errors")
	return []byte(stdout.String()), shots
}

// requireScreenshots asserts that each page has a non-empty screenshot.
func requireScreenshots(t *testing.T, shots string, pages []string) {
	t.Helper()
	for _, p := range pages {
		fi, err := os.Stat(filepath.Join(shots, p+".png"))
		require.NoError(t, err)
		require.Positive(t, fi.Size())
	}
}
