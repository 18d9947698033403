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
// documents (its Go file left out); a re-sync of the unchanged repository
// moves nothing; one edited file is updated and nothing else moves.
func TestIntegrationSyncGit(t *testing.T) {
	t.Parallel()
	repo := newGitRemote(t)
	repo.commit(map[string]string{
		"README.md":        "# Orbit\n\nOrbit was started by Maria Gonzalez at Northwind Labs in Berlin. It uses the obsidiane planner.\n",
		"docs/team.md":     "# Team\n\nDavid Chen works for Acme Corporation in Toronto.\n",
		"docs/install.txt": "Installing Orbit\n\nPriya Raman wrote the installer at Contoso Systems in Madrid.\n",
		"main.go":          "package main\n",
	})
	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	in := s.createIntegration(project, "repo", "git", map[string]any{"repository_url": repo.url, "branch": "main"})

	docs := in.firstSync(3, "obsidiane")
	require.Contains(t, docs, "docs/team.md")

	before := in.resyncUnchanged()

	repo.commit(map[string]string{"docs/team.md": "# Team\n\nDavid Chen works for Acme Corporation in Toronto on the vermilite console.\n"})
	require.Equal(t, syncCounts{Total: 3, Processed: 3, Updated: 1, Unchanged: 2}, in.sync(nil))
	in.waitExtractionIdle()
	in.requireOnlyMoved(before, []string{"docs/team.md"}, nil)
	in.requireFound("vermilite", docs["docs/team.md"].ID)
}
