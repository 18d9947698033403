package main

import (
	"bytes"
	"io"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// gitRemote is a bare repository served by `git http-backend` behind
// net/http/cgi on loopback, with a work tree beside it that commits are
// pushed from.
type gitRemote struct {
	t    testing.TB
	bare string
	work string
	url  string
}

func newGitRemote(t testing.TB) *gitRemote {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	require.NoError(t, err, "the git CLI is needed (Debian package git)")
	root := t.TempDir()
	srv := httptest.NewServer(&cgi.Handler{
		Path:   filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:    []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "HOME=" + root, "GIT_CONFIG_NOSYSTEM=1"},
		Stderr: io.Discard,
	})
	t.Cleanup(srv.Close)
	r := &gitRemote{t: t, bare: filepath.Join(root, "docs.git"), work: t.TempDir(), url: srv.URL + "/docs.git"}
	r.git(root, "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	r.git(r.work, "init", "--quiet", "--initial-branch=main")
	return r
}

func (r *gitRemote) git(dir string, args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(r.t, cmd.Run(), "git %v: %s", args, stderr.String())
}

// commit writes files (path to content), commits and pushes main.
func (r *gitRemote) commit(files map[string]string) {
	r.t.Helper()
	for p, content := range files {
		full := filepath.Join(r.work, filepath.FromSlash(p))
		require.NoError(r.t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(r.t, os.WriteFile(full, []byte(content), 0o644))
	}
	r.git(r.work, "add", "-A")
	r.git(r.work, "commit", "--quiet", "-m", "change")
	r.git(r.work, "push", "--quiet", "--force", r.bare, "HEAD:refs/heads/main")
}

// TestIntegrationSyncGit: a repository served by git http-backend, synced
// through the whole server, becomes parsed, extracted, searchable
// documents; a re-sync of the unchanged repository
// moves nothing; one edited file is updated and nothing else moves.
func TestIntegrationSyncGit(t *testing.T) {
	t.Parallel()
	repo, s, project := gitSyncServer(t, map[string]string{
		"README.md":        "# Orbit\n\nOrbit was started by Maria Gonzalez at Northwind Labs in Berlin. It uses the obsidiane planner.\n",
		"docs/team.md":     "# Team\n\nDavid Chen works for Acme Corporation in Toronto.\n",
		"docs/install.txt": "Installing Orbit\n\nPriya Raman wrote the installer at Contoso Systems in Madrid.\n",
		"NOTICE":           "Orbit bundles the Halcyon library of Contoso Systems.\n",
	})
	s.extractionSetThreshold(project, 0)
	in := s.createIntegration(project, "repo", "git", map[string]any{"repository_url": repo.url, "branch": "main"})

	docs := in.firstSync(4, "obsidiane")
	require.Contains(t, docs, "docs/team.md")

	before := in.resyncUnchanged()

	repo.commit(map[string]string{"docs/team.md": "# Team\n\nDavid Chen works for Acme Corporation in Toronto on the vermilite console.\n"})
	require.Equal(t, syncCounts{Total: 4, Processed: 4, Updated: 1, Unchanged: 3}, in.sync(nil))
	in.waitExtractionIdle()
	in.requireOnlyMoved(before, []string{"docs/team.md"}, nil)
	in.requireFound("vermilite", docs["docs/team.md"].ID)
}

// TestIntegrationSyncGitFormatsAndSourceURL: without include globs a git
// sync offers the files named as documents (README and LICENSE, which
// have no extension, and Markdown), not source code or images, each
// stored with a sourceUrl naming the file at the synced commit and never
// the token; with include globs naming everything, a source file is a
// document (detected as an upload is) and a PNG is skipped, with the
// reason in the sync log.
func TestIntegrationSyncGitFormatsAndSourceURL(t *testing.T) {
	t.Parallel()
	files := map[string]string{"logo.png": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"}
	for _, p := range []string{"README", "LICENSE", "docs/guide.md", "cmd/main.go"} {
		files[p] = "Orbit\n\n" + p + " of Orbit, by Maria Gonzalez at Northwind Labs in Berlin.\n"
	}
	const token = "ghp_s3cretTokenValue"
	sync := func(config map[string]any, want syncCounts) (map[string]syncDoc, string, string, *testServer) {
		repo, s, project := gitSyncServer(t, files)
		config["repository_url"], config["access_token"] = repo.url, token
		in := s.createIntegration(project, "repo", "git", config)
		var started struct {
			JobID string `json:"job_id"`
		}
		s.must(200, "POST", "/api/integrations/repo/sync", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &started)
		require.Equal(t, want, in.waitSync(started.JobID))
		return in.docs(), repo.url + "@" + repo.head(), started.JobID, s
	}

	docs, at, _, _ := sync(map[string]any{}, syncCounts{Total: 3, Processed: 3, Created: 3})
	require.Len(t, docs, 3)
	for _, p := range []string{"README", "LICENSE", "docs/guide.md"} {
		d, ok := docs[p]
		require.True(t, ok, "%s is a document", p)
		require.Equal(t, "git+"+at+"#"+p, d.SourceURL, p)
		require.NotContains(t, d.SourceURL, token)
	}

	docs, _, job, s := sync(map[string]any{"include": []string{"*"}}, syncCounts{Total: 5, Processed: 5, Created: 4, Failed: 1})
	require.Len(t, docs, 4)
	require.Contains(t, docs, "cmd/main.go", "named by include: a document, as an upload of it is")
	require.NotContains(t, docs, "logo.png")
	var logs struct {
		Logs []struct {
			Level   string         `json:"level"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"logs"`
	}
	s.must(200, "GET", "/api/superadmin/sync-jobs/"+job+"/logs", s.admin, nil).Decode(t, &logs)
	skipped := ""
	for _, l := range logs.Logs {
		if l.Details["externalId"] == "logo.png" {
			skipped = l.Level + " " + l.Message
		}
	}
	require.Equal(t, "warn skipped: unsupported document format: .png (supported: text, Markdown, HTML, PDF and DOCX)", skipped)
}

// gitSyncServer serves a repository holding files and starts a server
// that may reach it; it returns both and the default project.
func gitSyncServer(t *testing.T, files map[string]string) (*gitRemote, *testServer, string) {
	t.Helper()
	repo := newGitRemote(t)
	repo.commit(files)
	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	project, _ := s.defaultProject()
	return repo, s, project
}

// head is the commit main points at.
func (r *gitRemote) head() string {
	r.t.Helper()
	out, err := exec.Command("git", "-C", r.bare, "rev-parse", "refs/heads/main").Output()
	require.NoError(r.t, err)
	return strings.TrimSpace(string(out))
}
