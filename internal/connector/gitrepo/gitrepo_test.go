package gitrepo_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/connector/gitrepo"
	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
)

// baseFiles is the repository most tests start from: documents with and
// without an extension, a Go file and an image (without include globs the
// connector offers the files named as documents; the integration domain
// decides, as for an upload, what is one).
var baseFiles = map[string]string{
	"LICENSE":        "MIT License\n",
	"README.md":      "# Readme\n",
	"docs/guide.md":  "# Guide\nv1\n",
	"docs/old.txt":   "old notes\n",
	"site/page.html": "<html><body>page</body></html>",
	"notes/keep.md":  "keep\n",
	"src/main.go":    "package main\n",
	"logo.png":       "\x89PNG",
}

// packs lists the pack files of the cached clone.
func packs(t *testing.T, cacheDir string) []string {
	t.Helper()
	return objectFiles(t, cacheDir, "pack", "*.pack")
}

// looseObjects lists the loose objects of the cached clone.
func looseObjects(t *testing.T, cacheDir string) []string {
	t.Helper()
	return objectFiles(t, cacheDir, "[0-9a-f][0-9a-f]", "*")
}

func objectFiles(t *testing.T, cacheDir, dir, file string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cacheDir, "repo.git", "objects", dir, file))
	require.NoError(t, err)
	return files
}

func TestWalkIncremental(t *testing.T) {
	t.Parallel()
	srv, repo, head1 := servedRepo(t, "docs", baseFiles)
	env, ct := newEnv(t)
	cfg := config(t, map[string]any{"repository_url": repo.url, "branch": "main"})
	c := gitrepo.New()
	ctx := context.Background()

	// First walk: every file named as a document (an extension of a
	// format, or none) is an Item with its content, blob hash and source
	// URL, and no media type of the connector's own: the format is the
	// document parser's call. Source code and images are not offered.
	w1 := connectortest.NewWalker(nil)
	require.NoError(t, c.Walk(ctx, env, cfg, connector.Options{}, w1))
	require.Equal(t, []string{"LICENSE", "README.md", "docs/guide.md", "docs/old.txt", "notes/keep.md", "site/page.html"}, w1.ItemIDs())
	require.Empty(t, w1.UnchangedIDs())
	for id, it := range w1.Items() {
		require.Equal(t, baseFiles[id], string(it.Content), id)
		require.Equal(t, repo.blob(id), it.Version, id)
		require.Equal(t, filepath.Base(id), it.Filename)
		require.Empty(t, it.MimeType, id)
		require.Equal(t, "git+"+repo.url+"@"+head1+"#"+id, it.URL)
	}
	require.JSONEq(t, `{"commit":"`+head1+`"}`, string(w1.State()))
	require.Equal(t, int64(1), srv.uploadPacks.Load())
	require.NotContains(t, srv.lastUploadPack(), "have ")
	firstPacks := packs(t, env.CacheDir)
	require.Len(t, firstPacks, 1)
	shallow, err := os.ReadFile(filepath.Join(env.CacheDir, "repo.git", "shallow"))
	require.NoError(t, err)
	require.Equal(t, head1, strings.TrimSpace(string(shallow)), "the clone is shallow at the tip")

	// Second walk of the unchanged repository: all Unchanged, no pack fetched.
	w2 := w1.Next()
	require.NoError(t, c.Walk(ctx, env, cfg, connector.Options{}, w2))
	require.Empty(t, w2.Items())
	require.ElementsMatch(t, w1.ItemIDs(), w2.UnchangedIDs())
	require.Equal(t, int64(1), srv.uploadPacks.Load(), "nothing fetched for an unchanged repository")
	require.Equal(t, firstPacks, packs(t, env.CacheDir))
	require.JSONEq(t, `{"commit":"`+head1+`"}`, string(w2.State()))

	// A commit edits one file, adds one and removes one.
	head2 := repo.commit("main", map[string]string{
		"docs/guide.md": "# Guide\nv2\n",
		"docs/new.md":   "# New\n",
		"src/other.go":  "package main\n",
	}, "docs/old.txt")
	w3 := w2.Next()
	require.NoError(t, c.Walk(ctx, env, cfg, connector.Options{}, w3))
	require.Equal(t, []string{"docs/guide.md", "docs/new.md"}, w3.ItemIDs())
	require.Equal(t, "# Guide\nv2\n", string(w3.Items()["docs/guide.md"].Content))
	require.Equal(t, repo.blob("docs/guide.md"), w3.Items()["docs/guide.md"].Version)
	require.Equal(t, "# New\n", string(w3.Items()["docs/new.md"].Content))
	require.Equal(t, "git+"+repo.url+"@"+head2+"#docs/new.md", w3.Items()["docs/new.md"].URL)
	require.ElementsMatch(t, []string{"LICENSE", "README.md", "notes/keep.md", "site/page.html"}, w3.UnchangedIDs())
	require.NotContains(t, w3.UnchangedIDs(), "docs/old.txt")
	require.JSONEq(t, `{"commit":"`+head2+`"}`, string(w3.State()))
	logs := w3.Logs()
	require.Len(t, logs, 1)
	details, err := json.Marshal(logs[0].Details)
	require.NoError(t, err)
	require.Contains(t, string(details), `"changes":{"added":1,"deleted":1,"modified":1}`)
	require.Contains(t, string(details), `"previous_commit":"`+head1+`"`)

	// The cached clone was fetched into, not cloned again: the first pack
	// is still there and the new objects came as a thin pack stored loose.
	require.Equal(t, int64(2), srv.uploadPacks.Load())
	req := srv.lastUploadPack()
	require.Contains(t, req, "want "+head2)
	require.Contains(t, req, "have "+head1)
	require.Contains(t, req, "shallow "+head1)
	require.Contains(t, req, "deepen 1")
	require.Contains(t, req, "thin-pack")
	require.Equal(t, firstPacks, packs(t, env.CacheDir))
	require.FileExists(t, filepath.Join(env.CacheDir, "repo.git", "objects", head2[:2], head2[2:]))
	shallow, err = os.ReadFile(filepath.Join(env.CacheDir, "repo.git", "shallow"))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{head1, head2}, strings.Fields(string(shallow)))

	// Every request went through Env.HTTP.
	require.Equal(t, srv.requests.Load(), ct.n.Load())
}

func TestWalkIncrementalFetchSendsOnlyNewObjects(t *testing.T) {
	t.Parallel()
	srv := newGitServer(t)
	repo := srv.newRepo(t, "big")
	files := map[string]string{}
	for i := range 200 {
		files["docs/f"+strconv.Itoa(i)+".md"] = strings.Repeat("content ", 200) + strconv.Itoa(i)
	}
	repo.commit("main", files)
	env, _ := newEnv(t)
	cfg := config(t, map[string]any{"repository_url": repo.url})
	c := gitrepo.New()
	w1 := connectortest.NewWalker(nil)
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w1))
	require.Len(t, w1.Items(), 200)
	require.Len(t, packs(t, env.CacheDir), 1)
	require.Empty(t, looseObjects(t, env.CacheDir))

	repo.commit("main", map[string]string{"docs/one-more.md": "one more"})
	w2 := w1.Next()
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w2))
	require.Equal(t, []string{"docs/one-more.md"}, w2.ItemIDs())
	require.Len(t, w2.UnchangedIDs(), 200)
	// The server sent the new commit, its two trees and the one new blob,
	// not the 200 unchanged blobs again.
	require.Len(t, looseObjects(t, env.CacheDir), 4)
	require.Len(t, packs(t, env.CacheDir), 1)
}

func TestWalkClonesAgainAfterMaxFetches(t *testing.T) {
	t.Parallel()
	srv, repo, head1 := servedRepo(t, "maxfetch", map[string]string{"a.md": "a1", "b.md": "b"})
	env, _ := newEnv(t)
	cfg := config(t, map[string]any{"repository_url": repo.url})
	c := &gitrepo.Connector{MaxFetches: 2}

	w1 := connectortest.NewWalker(nil)
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w1))
	head2 := repo.commit("main", map[string]string{"a.md": "a2"})
	w2 := w1.Next()
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w2))
	require.Contains(t, srv.lastUploadPack(), "have "+head1, "second fetch is incremental")
	require.NotEmpty(t, looseObjects(t, env.CacheDir))

	head3 := repo.commit("main", map[string]string{"a.md": "a3"})
	w3 := w2.Next()
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w3))
	require.NotContains(t, srv.lastUploadPack(), "have ", "the third fetch clones again")
	require.NotContains(t, srv.lastUploadPack(), "shallow "+head2)
	require.Empty(t, looseObjects(t, env.CacheDir))
	require.Len(t, packs(t, env.CacheDir), 1)
	shallow, err := os.ReadFile(filepath.Join(env.CacheDir, "repo.git", "shallow"))
	require.NoError(t, err)
	require.Equal(t, head3, strings.TrimSpace(string(shallow)))
	// The walk is still incremental for the integration.
	require.Equal(t, []string{"a.md"}, w3.ItemIDs())
	require.Equal(t, "a3", string(w3.Items()["a.md"].Content))
	require.Equal(t, []string{"b.md"}, w3.UnchangedIDs())
}

func TestWalkGlobs(t *testing.T) {
	t.Parallel()
	srv := newGitServer(t)
	repo := srv.newRepo(t, "globs")
	repo.commit("main", map[string]string{
		"README.md":             "r",
		"docs/a.md":             "a",
		"docs/deep/b.markdown":  "b",
		"docs/drafts/c.md":      "c",
		"docs/manual.pdf":       "%PDF-1.4",
		"docs/spec.docx":        "PK",
		"blog/post.md":          "p",
		"blog/drafts/secret.md": "s",
		"other/x.txt":           "x",
	})
	env, _ := newEnv(t)
	cfg := config(t, map[string]any{
		"repository_url": repo.url,
		"include":        []string{"docs/**", "/README.md", "blog/*.md"},
		"exclude":        []string{"drafts/", "*.docx"},
	})
	w := connectortest.NewWalker(nil)
	require.NoError(t, gitrepo.New().Walk(context.Background(), env, cfg, connector.Options{}, w))
	require.Equal(t, []string{"README.md", "blog/post.md", "docs/a.md", "docs/deep/b.markdown", "docs/manual.pdf"}, w.ItemIDs())

	// Without globs every regular file named as a document is offered: not symlinks
	// (a link could point outside the repository).
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(repo.work, "passwd.txt")))
	require.NoError(t, os.Symlink("README.md", filepath.Join(repo.work, "alias.md")))
	repo.commit("main", nil)
	w = connectortest.NewWalker(nil)
	require.NoError(t, gitrepo.New().Walk(context.Background(), env, config(t, map[string]any{"repository_url": repo.url}), connector.Options{}, w))
	require.Len(t, w.Items(), 9)
	require.Contains(t, w.Items(), "other/x.txt")
	require.NotContains(t, w.Items(), "passwd.txt")
	require.NotContains(t, w.Items(), "alias.md")
}

// TestWalkDefaultSkipsBuildFiles: without include globs, files without an
// extension are offered when they are prose (README, CHANGELOG), not when
// they are build or tool files, under bin/ or executable; include globs
// still select any of them.
func TestWalkDefaultSkipsBuildFiles(t *testing.T) {
	t.Parallel()
	srv := newGitServer(t)
	repo := srv.newRepo(t, "build")
	repo.commit("main", map[string]string{
		"README": "r", "CHANGELOG": "c", "NOTICE": "n", "docs/AUTHORS": "a", "bin/README.md": "b",
		"Makefile": "all:\n", "Dockerfile": "FROM scratch\n", "Jenkinsfile": "pipeline {}\n", "Procfile": "web: run\n",
		"Gemfile": "source 'x'\n", "Rakefile": "task :a\n", "Vagrantfile": "Vagrant\n", "bin/setup": "#!/bin/sh\n",
		"scripts/deploy": "#!/bin/sh\n",
	})
	require.NoError(t, os.Chmod(filepath.Join(repo.work, "scripts", "deploy"), 0o755))
	repo.commit("main", nil)
	require.Equal(t, "100755", strings.Fields(repo.git(repo.work, "ls-tree", "HEAD", "scripts/deploy"))[0])
	env, _ := newEnv(t)
	w := connectortest.NewWalker(nil)
	require.NoError(t, gitrepo.New().Walk(context.Background(), env, config(t, map[string]any{"repository_url": repo.url}), connector.Options{}, w))
	require.Equal(t, []string{"CHANGELOG", "NOTICE", "README", "bin/README.md", "docs/AUTHORS"}, w.ItemIDs())

	w = connectortest.NewWalker(nil)
	cfg := config(t, map[string]any{"repository_url": repo.url, "include": []string{"Makefile", "bin/**", "scripts/**"}})
	require.NoError(t, gitrepo.New().Walk(context.Background(), env, cfg, connector.Options{}, w))
	require.Equal(t, []string{"Makefile", "bin/README.md", "bin/setup", "scripts/deploy"}, w.ItemIDs())
}

func TestWalkBranches(t *testing.T) {
	t.Parallel()
	_, repo, _ := servedRepo(t, "branches", map[string]string{"main.md": "main"})
	repo.commit("dev", map[string]string{"dev.md": "dev"})
	c := gitrepo.New()

	// No branch: the remote HEAD's (main).
	env, _ := newEnv(t)
	w := connectortest.NewWalker(nil)
	require.NoError(t, c.Walk(context.Background(), env, config(t, map[string]any{"repository_url": repo.url}), connector.Options{}, w))
	require.Equal(t, []string{"main.md"}, w.ItemIDs())

	w = connectortest.NewWalker(nil)
	require.NoError(t, c.Walk(context.Background(), env, config(t, map[string]any{"repository_url": repo.url, "branch": "dev"}), connector.Options{}, w))
	require.Equal(t, []string{"dev.md", "main.md"}, w.ItemIDs())

	err := c.Walk(context.Background(), env, config(t, map[string]any{"repository_url": repo.url, "branch": "nope"}), connector.Options{}, connectortest.NewWalker(nil))
	require.EqualError(t, err, `branch "nope" not found in `+repo.url)
}

func TestWalkFullSyncAndSkip(t *testing.T) {
	t.Parallel()
	_, repo, _ := servedRepo(t, "full", map[string]string{"a.md": "a", "b.md": "b", "c.md": "c"})
	env, _ := newEnv(t)
	cfg := config(t, map[string]any{"repository_url": repo.url})
	c := gitrepo.New()

	// ErrSkipItem from the walker skips one item and the walk goes on.
	w1 := connectortest.NewWalker(nil)
	var offered []string
	w1.ItemFunc = func(it connector.Item) error {
		offered = append(offered, it.ExternalID)
		if it.ExternalID == "b.md" {
			return connector.ErrSkipItem
		}
		return nil
	}
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w1))
	require.Equal(t, []string{"a.md", "b.md", "c.md"}, offered)
	require.Equal(t, []string{"a.md", "c.md"}, w1.ItemIDs())

	// The skipped item is not known, so it is offered again; the others are unchanged.
	w2 := w1.Next()
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w2))
	require.Equal(t, []string{"b.md"}, w2.ItemIDs())
	require.ElementsMatch(t, []string{"a.md", "c.md"}, w2.UnchangedIDs())

	// A full sync reports every file with its content.
	w3 := w2.Next()
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{FullSync: true}, w3))
	require.Equal(t, []string{"a.md", "b.md", "c.md"}, w3.ItemIDs())
	require.Empty(t, w3.UnchangedIDs())
}

func TestWalkRepositoryChangeResetsCache(t *testing.T) {
	t.Parallel()
	srv := newGitServer(t)
	one := srv.newRepo(t, "one")
	one.commit("main", map[string]string{"one.md": "1"})
	two := srv.newRepo(t, "two")
	two.commit("main", map[string]string{"two.md": "2"})
	env, _ := newEnv(t)
	c := gitrepo.New()

	w1 := connectortest.NewWalker(nil)
	require.NoError(t, c.Walk(context.Background(), env, config(t, map[string]any{"repository_url": one.url}), connector.Options{}, w1))
	require.Equal(t, []string{"one.md"}, w1.ItemIDs())

	w2 := w1.Next()
	require.NoError(t, c.Walk(context.Background(), env, config(t, map[string]any{"repository_url": two.url}), connector.Options{}, w2))
	require.Equal(t, []string{"two.md"}, w2.ItemIDs())
	require.Empty(t, w2.UnchangedIDs())
	require.Len(t, packs(t, env.CacheDir), 1, "the other repository's clone was removed")
}

func TestWalkBasicAuth(t *testing.T) {
	t.Parallel()
	const token = "ghp_s3cretTOKENvalue"
	_, repo, _ := servedRepo(t, "private", map[string]string{"doc.md": "private"}, withToken(token))
	env, _ := newEnv(t)
	c := gitrepo.New()

	w := connectortest.NewWalker(nil)
	require.NoError(t, c.Walk(context.Background(), env, config(t, map[string]any{"repository_url": repo.url, "access_token": token}), connector.Options{}, w))
	require.Equal(t, []string{"doc.md"}, w.ItemIDs())
	require.Equal(t, "private", string(w.Items()["doc.md"].Content))
	require.NotEmpty(t, w.Logs())
	for _, l := range w.Logs() {
		line, err := json.Marshal(l)
		require.NoError(t, err)
		require.NotContains(t, string(line), token)
	}
	require.NoError(t, c.Test(context.Background(), env, config(t, map[string]any{"repository_url": repo.url, "access_token": token})))

	const wrong = "ghp_wrongTOKENvalue"
	err := c.Test(context.Background(), env, config(t, map[string]any{"repository_url": repo.url, "access_token": wrong}))
	require.Error(t, err)
	require.Contains(t, err.Error(), "refused the access token")
	require.NotContains(t, err.Error(), wrong)
	require.NotContains(t, err.Error(), token)
	require.Equal(t, errs.BadGateway, errs.CodeOf(err))

	w = connectortest.NewWalker(nil)
	err = c.Walk(context.Background(), env, config(t, map[string]any{"repository_url": repo.url, "access_token": wrong}), connector.Options{}, w)
	require.ErrorContains(t, err, "refused the access token")
	require.NotContains(t, err.Error(), wrong)
	require.Empty(t, w.Items())

	err = c.Test(context.Background(), env, config(t, map[string]any{"repository_url": repo.url}))
	require.ErrorContains(t, err, "requires authentication: set access_token")
}

func TestRedirectToAnotherOriginDropsToken(t *testing.T) {
	t.Parallel()
	other, repo, _ := servedRepo(t, "moved", map[string]string{"doc.md": "moved"})
	var redirected atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, other.url+r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(origin.Close)
	env, _ := newEnv(t)
	cfg := config(t, map[string]any{"repository_url": origin.URL + "/moved.git", "access_token": "tok_never_elsewhere"})

	w := connectortest.NewWalker(nil)
	require.NoError(t, gitrepo.New().Walk(context.Background(), env, cfg, connector.Options{}, w))
	require.Equal(t, []string{"doc.md"}, w.ItemIDs(), "the repository was read at %s", repo.url)
	require.Positive(t, redirected.Load())
	require.Positive(t, other.requests.Load())
	require.Zero(t, other.authorized.Load(), "the token is not sent to the origin a redirect leads to")
}

func TestServerErrorBodyNotEchoed(t *testing.T) {
	t.Parallel()
	const token = "tok_echoed_by_server"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad request with "+r.Header.Get("Authorization")+" "+token, http.StatusInternalServerError)
	}))
	t.Cleanup(echo.Close)
	env, _ := newEnv(t)
	err := gitrepo.New().Test(context.Background(), env, config(t, map[string]any{"repository_url": echo.URL + "/r.git", "access_token": token}))
	require.EqualError(t, err, strings.TrimPrefix(echo.URL, "http://")+" answered HTTP 500")
}

func TestTest(t *testing.T) {
	t.Parallel()
	srv, repo, _ := servedRepo(t, "tested", map[string]string{"src/a.go": "package a", "docs/a.md": "a"})
	env, _ := newEnv(t)
	c := gitrepo.New()
	ctx := context.Background()

	require.NoError(t, c.Test(ctx, env, config(t, map[string]any{"repository_url": repo.url})))
	require.NotContains(t, srv.lastUploadPack(), "filter", "the server does not allow filters")
	require.Contains(t, srv.lastUploadPack(), "deepen 1")

	// With partial clones allowed, Test fetches no blobs at all.
	repo.setConfig("uploadpack.allowFilter", "true")
	require.NoError(t, c.Test(ctx, env, config(t, map[string]any{"repository_url": repo.url, "branch": "main"})))
	require.Contains(t, srv.lastUploadPack(), "filter blob:none")
	entries, err := os.ReadDir(env.CacheDir)
	require.NoError(t, err)
	require.Empty(t, entries, "Test leaves nothing in the cache directory")

	err = c.Test(ctx, env, config(t, map[string]any{"repository_url": repo.url, "branch": "release"}))
	require.EqualError(t, err, `branch "release" not found in `+repo.url)

	err = c.Test(ctx, env, config(t, map[string]any{"repository_url": repo.url, "include": []string{"*.pdf"}}))
	require.EqualError(t, err, `no file on branch "main" matches the globs`)

	err = c.Test(ctx, env, config(t, map[string]any{"repository_url": srv.url + "/missing.git"}))
	require.EqualError(t, err, "repository "+srv.url+"/missing.git not found (or not visible without a token)")

	empty := srv.newRepo(t, "empty")
	err = c.Test(ctx, env, config(t, map[string]any{"repository_url": empty.url}))
	require.EqualError(t, err, "repository "+empty.url+" is empty")
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv, repo, _ := servedRepo(t, "guarded", map[string]string{"a.md": "a"})
	c := gitrepo.New()
	cfg := config(t, map[string]any{"repository_url": repo.url, "access_token": "tok_abcdef123456"})

	// The egress guard (not allowing loopback) refuses the server: the
	// connector's only way out is Env.
	guard, err := egress.New(nil)
	require.NoError(t, err)
	env := connector.Env{HTTP: guard.Client(10 * time.Second), CacheDir: t.TempDir()}
	err = c.Test(context.Background(), env, cfg)
	require.ErrorContains(t, err, "cannot reach "+strings.TrimPrefix(srv.url, "http://")+": ")
	require.NotContains(t, err.Error(), "tok_abcdef123456")
	err = c.Walk(context.Background(), env, cfg, connector.Options{}, connectortest.NewWalker(nil))
	require.ErrorContains(t, err, "cannot reach ")
	require.Zero(t, srv.requests.Load())

	// A closed port.
	env, _ = newEnv(t)
	err = c.Test(context.Background(), env, config(t, map[string]any{"repository_url": "http://127.0.0.1:1/r.git"}))
	require.ErrorContains(t, err, "cannot reach 127.0.0.1:1: ")
	require.ErrorContains(t, err, "connection refused")
}

func TestWalkCancelled(t *testing.T) {
	t.Parallel()
	_, repo, _ := servedRepo(t, "cancel", map[string]string{"a.md": "a", "b.md": "b"})
	env, _ := newEnv(t)
	cfg := config(t, map[string]any{"repository_url": repo.url})
	c := gitrepo.New()
	w1 := connectortest.NewWalker(nil)
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w1))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w2 := w1.Next()
	err := c.Walk(ctx, env, cfg, connector.Options{FullSync: true}, w2)
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, w2.Items())
	require.Equal(t, w1.State(), w2.State(), "no state saved by a cancelled walk")
}

func TestWalkCancelledInFlight(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	env, _ := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- gitrepo.New().Walk(ctx, env, config(t, map[string]any{"repository_url": hang.URL + "/r.git"}), connector.Options{}, connectortest.NewWalker(nil))
	}()
	<-entered
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	c := gitrepo.New()
	valid := map[string]any{
		"repository_url": "https://example.com/org/repo.git",
		"branch":         "release/1.x",
		"include":        []string{"docs/**", "*.md"},
		"exclude":        []string{"drafts/"},
		"access_token":   "tok",
	}
	require.NoError(t, c.Validate(config(t, valid)))

	for _, tc := range []struct {
		name   string
		change map[string]any
		detail string
	}{
		{"file", map[string]any{"repository_url": "file:///etc"}, "repository_url must be an http or https URL"},
		{"ssh", map[string]any{"repository_url": "ssh://git@example.com/r.git"}, "repository_url must be an http or https URL"},
		{"git", map[string]any{"repository_url": "git://example.com/r.git"}, "repository_url must be an http or https URL"},
		{"scp-like", map[string]any{"repository_url": "git@example.com:org/r.git"}, "repository_url"},
		{"relative", map[string]any{"repository_url": "/srv/git/r.git"}, "repository_url must be an http or https URL"},
		{"no host", map[string]any{"repository_url": "https:///r.git"}, "repository_url has no host"},
		{"credentials", map[string]any{"repository_url": "https://user:tok@example.com/r.git"}, "repository_url must not contain credentials"},
		{"branch", map[string]any{"branch": "a..b"}, `branch "a..b" is not a valid branch name`},
		{"glob", map[string]any{"include": []string{"docs/[a"}}, `include glob "docs/[a" is malformed`},
		{"negation", map[string]any{"exclude": []string{"!keep.md"}}, "exclude glob \"!keep.md\": negation is not supported"},
		{"empty glob", map[string]any{"exclude": []string{" "}}, "exclude has an empty glob"},
	} {
		cfg := map[string]any{}
		for k, v := range valid {
			cfg[k] = v
		}
		for k, v := range tc.change {
			cfg[k] = v
		}
		err := c.Validate(config(t, cfg))
		require.Error(t, err, tc.name)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), tc.name)
		require.Contains(t, err.Error(), tc.detail, tc.name)
		require.NotContains(t, err.Error(), "tok@", tc.name)
	}
}

func TestWalkRefusesFileURL(t *testing.T) {
	t.Parallel()
	// A local repository the server could read.
	_, repo, _ := servedRepo(t, "local", map[string]string{"secret.md": "server disk"})
	env, ct := newEnv(t)
	c := gitrepo.New()
	for _, u := range []string{"file://" + repo.bare, repo.bare} {
		w := connectortest.NewWalker(nil)
		err := c.Walk(context.Background(), env, config(t, map[string]any{"repository_url": u}), connector.Options{}, w)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), u)
		require.Empty(t, w.Items())
		require.Equal(t, errs.Invalid, errs.CodeOf(c.Test(context.Background(), env, config(t, map[string]any{"repository_url": u}))))
	}
	require.Zero(t, ct.n.Load())
	entries, err := os.ReadDir(env.CacheDir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestDescriptor(t *testing.T) {
	t.Parallel()
	d := gitrepo.New().Descriptor()
	require.Equal(t, "git", d.Name)
	require.Equal(t, "code", d.Category)
	require.Len(t, d.RequiredFields, 1)
	require.Equal(t, "repository_url", d.RequiredFields[0].Name)
	require.True(t, d.RequiredFields[0].Target)
	names := map[string]connector.Field{}
	for _, f := range d.OptionalFields {
		names[f.Name] = f
	}
	require.Len(t, names, 4)
	require.True(t, names["access_token"].Secret)
	require.Equal(t, connector.TypeArray, names["include"].Type)
	require.Equal(t, connector.TypeArray, names["exclude"].Type)
	require.Equal(t, connector.TypeString, names["branch"].Type)
}

// cutTransport cuts the body of upload-pack responses after limit bytes,
// as a connection lost or a process killed mid-fetch would.
type cutTransport struct {
	next  http.RoundTripper
	limit int64
}

func (c cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, c.limit), resp.Body}
	}
	return resp, err
}

func TestWalkRecoversFromInterruptedFetch(t *testing.T) {
	t.Parallel()
	_, repo, _ := servedRepo(t, "cut", map[string]string{"a.md": "a"})
	env, _ := newEnv(t)
	cfg := config(t, map[string]any{"repository_url": repo.url})
	c := gitrepo.New()
	w1 := connectortest.NewWalker(nil)
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w1))

	random := make([]byte, 200_000)
	_, err := rand.Read(random)
	require.NoError(t, err)
	big := hex.EncodeToString(random)
	head2 := repo.commit("main", map[string]string{"b.md": "b", "big.txt": big})

	cut := env
	cut.HTTP = &http.Client{Transport: cutTransport{next: connectortest.Transport(), limit: 50_000}}
	w2 := w1.Next()
	require.ErrorContains(t, c.Walk(context.Background(), cut, cfg, connector.Options{}, w2), "store pack from")
	require.Equal(t, w1.State(), w2.State())
	// A cut usually leaves the new commit in the clone without its tree
	// (the pack sends commits first); make sure it does.
	copyObject(t, repo.bare, filepath.Join(env.CacheDir, "repo.git"), head2)

	w3 := w1.Next()
	require.NoError(t, c.Walk(context.Background(), env, cfg, connector.Options{}, w3))
	require.Equal(t, []string{"b.md", "big.txt"}, w3.ItemIDs())
	require.Equal(t, big, string(w3.Items()["big.txt"].Content))
	require.Equal(t, []string{"a.md"}, w3.UnchangedIDs())
	require.JSONEq(t, `{"commit":"`+head2+`"}`, string(w3.State()))
}

// copyObject copies one object between two repositories' object stores.
func copyObject(t *testing.T, fromDir, toDir, hash string) {
	t.Helper()
	from := filesystem.NewStorage(osfs.New(fromDir), cache.NewObjectLRUDefault())
	obj, err := from.EncodedObject(plumbing.AnyObject, plumbing.NewHash(hash))
	require.NoError(t, err)
	to := filesystem.NewStorage(osfs.New(toDir), cache.NewObjectLRUDefault())
	_, err = to.SetEncodedObject(obj)
	require.NoError(t, err)
}
