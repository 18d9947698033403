package gitrepo_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
)

// gitServer is `git http-backend` (smart HTTP) behind net/http/cgi on
// loopback, serving the bare repositories under root.
type gitServer struct {
	root  string
	url   string
	token string // when set, requests need basic auth with it as password

	uploadPacks atomic.Int64 // POST .../git-upload-pack requests
	requests    atomic.Int64
	authorized  atomic.Int64 // requests that carried an Authorization header

	mu      sync.Mutex
	lastReq string // body of the last upload-pack request
}

// lastUploadPack is the body of the last upload-pack request (wants,
// haves, shallows, capabilities, filter).
func (s *gitServer) lastUploadPack() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastReq
}

type serverOption func(*gitServer)

func withToken(token string) serverOption { return func(s *gitServer) { s.token = token } }

func newGitServer(t testing.TB, opts ...serverOption) *gitServer {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	require.NoError(t, err, "the git CLI is needed (Debian package git)")
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	_, err = os.Stat(backend)
	require.NoError(t, err, "git-http-backend is needed (Debian package git)")

	s := &gitServer{root: t.TempDir()}
	for _, o := range opts {
		o(s)
	}
	cgiHandler := &cgi.Handler{
		Path: backend,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"HOME=" + s.root,
			"GIT_CONFIG_NOSYSTEM=1",
		},
		Stderr: io.Discard,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			s.authorized.Add(1)
		}
		if s.token != "" {
			if _, pass, ok := r.BasicAuth(); !ok || pass != s.token {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			s.uploadPacks.Add(1)
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			s.mu.Lock()
			s.lastReq = string(body)
			s.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		cgiHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// gitRepo is a bare repository served by a gitServer, with a work tree
// beside it that commits are made in and pushed from.
type gitRepo struct {
	t    testing.TB
	bare string
	work string
	url  string
}

func (s *gitServer) newRepo(t testing.TB, name string) *gitRepo {
	t.Helper()
	r := &gitRepo{t: t, bare: filepath.Join(s.root, name+".git"), work: t.TempDir(), url: s.url + "/" + name + ".git"}
	r.git(s.root, "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	r.git(r.work, "init", "--quiet", "--initial-branch=main")
	return r
}

func (r *gitRepo) git(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{
		"-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false",
	}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(r.t, err, "git %v: %s", args, stderr.String())
	return strings.TrimSpace(string(out))
}

// commit writes files (path to content), removes paths, commits and pushes
// branch; it returns the commit hash.
func (r *gitRepo) commit(branch string, files map[string]string, remove ...string) string {
	r.t.Helper()
	for p, content := range files {
		full := filepath.Join(r.work, filepath.FromSlash(p))
		require.NoError(r.t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(r.t, os.WriteFile(full, []byte(content), 0o644))
	}
	for _, p := range remove {
		require.NoError(r.t, os.Remove(filepath.Join(r.work, filepath.FromSlash(p))))
	}
	r.git(r.work, "add", "-A")
	r.git(r.work, "commit", "--quiet", "-m", "change")
	r.git(r.work, "push", "--quiet", "--force", r.bare, "HEAD:refs/heads/"+branch)
	return r.git(r.work, "rev-parse", "HEAD")
}

// blob is the blob hash of a file at the work tree's HEAD.
func (r *gitRepo) blob(p string) string {
	r.t.Helper()
	return r.git(r.work, "rev-parse", "HEAD:"+p)
}

// setConfig sets a config value of the served bare repository.
func (r *gitRepo) setConfig(key, value string) {
	r.t.Helper()
	r.git(r.bare, "config", key, value)
}

// countingTransport counts the requests that went through Env.HTTP.
type countingTransport struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// env is a connector environment with a counting plain client (the
// egress guard is the integration domain's) and a fresh cache directory.
func newEnv(t testing.TB) (connector.Env, *countingTransport) {
	t.Helper()
	ct := &countingTransport{next: connectortest.Transport()}
	return connector.Env{HTTP: &http.Client{Transport: ct}, CacheDir: t.TempDir()}, ct
}

func config(t testing.TB, fields map[string]any) connector.Config {
	t.Helper()
	cfg := connector.Config{}
	for k, v := range fields {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		cfg[k] = raw
	}
	return cfg
}

// servedRepo starts a server and creates the repository name on it with
// one commit of files on main, whose hash it returns.
func servedRepo(t testing.TB, name string, files map[string]string, opts ...serverOption) (*gitServer, *gitRepo, string) {
	t.Helper()
	srv := newGitServer(t, opts...)
	repo := srv.newRepo(t, name)
	return srv, repo, repo.commit("main", files)
}
