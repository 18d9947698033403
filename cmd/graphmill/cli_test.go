package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cliRun is one client command's outcome.
type cliRun struct {
	stdout, stderr string
	code           int
	err            error
}

// cliEnviron is an environment with its own configuration folder and, when
// token is not empty, the server and token in GRAPHMILL_URL and
// GRAPHMILL_TOKEN.
func (s *testServer) cliEnviron(t *testing.T, token string) []string {
	t.Helper()
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	if token != "" {
		env = append(env, "GRAPHMILL_URL="+s.base, "GRAPHMILL_TOKEN="+token)
	}
	return env
}

// cli runs a client command line in environ, as main would, with stdin
// empty.
func runCLI(t *testing.T, environ []string, args ...string) cliRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := runIO(context.Background(), args, environ, strings.NewReader(""), &stdout, &stderr)
	r := cliRun{stdout: stdout.String(), stderr: stderr.String(), err: err}
	if err != nil {
		r.code = exitCode(err)
	}
	return r
}

// decodeCLI decodes a --json command's output.
func decodeCLI(t *testing.T, r cliRun, v any) {
	t.Helper()
	require.NoError(t, r.err, "stderr: %s", r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), v), "stdout: %s", r.stdout)
}

func TestCLILogin(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, "")
	cfgDir := strings.TrimPrefix(env[0], "XDG_CONFIG_HOME=")

	// Not logged in: a usage error (2), before any request.
	r := runCLI(t, env, "tokens", "ls")
	require.Equal(t, exitUsage, r.code, "%v", r.err)
	require.ErrorContains(t, r.err, "graphmill login")

	// A wrong token is refused by the server (3) and nothing is written.
	r = runCLI(t, env, "login", "--server", s.base, "--token", "gm_wrong")
	require.Equal(t, exitAuth, r.code, "%v", r.err)
	_, err := os.Stat(filepath.Join(cfgDir, "graphmill", "config.json"))
	require.ErrorIs(t, err, os.ErrNotExist)

	r = runCLI(t, env, "login", "--server", s.base, "--token", s.admin)
	require.NoError(t, r.err, r.stderr)
	path := filepath.Join(cfgDir, "graphmill", "config.json")
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	var saved cliConfig
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &saved))
	require.Equal(t, cliConfig{Server: s.base, Token: s.admin}, saved)

	// The saved login works; GRAPHMILL_TOKEN overrides it.
	var tokens []map[string]any
	decodeCLI(t, runCLI(t, env, "tokens", "ls", "--json"), &tokens)
	require.NotEmpty(t, tokens)
	r = runCLI(t, append(env, "GRAPHMILL_TOKEN=gm_wrong"), "tokens", "ls")
	require.Equal(t, exitAuth, r.code, "%v", r.err)

	// A bad flag is a usage error.
	require.Equal(t, exitUsage, runCLI(t, env, "tokens", "ls", "--nope").code)
}

func TestCLIIngest(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	project, _ := s.defaultProject()

	dir := t.TempDir()
	files := map[string]string{
		"a.md":          "# Ada\n\nAda Lovelace wrote the first program for the Analytical Engine.\n",
		"b.txt":         "Charles Babbage designed the Analytical Engine in London.\n",
		"nested/c.md":   "# Notes\n\nThe engine was never finished.\n",
		".hidden.md":    "# Hidden\n\nnot sent\n",
		".git/config.x": "not sent either\n",
	}
	for name, body := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}

	var results []ingestResult
	r := runCLI(t, env, "ingest", "--wait", "--json", dir)
	decodeCLI(t, r, &results)
	require.Len(t, results, 3, r.stdout)
	for _, res := range results {
		require.Equal(t, ingestUploaded, res.Result, "%+v", res)
		require.Equal(t, "parsed", res.Status, "%+v", res)
		require.Positive(t, res.Chunks)
		require.Equal(t, res.Chunks, res.EmbeddedChunks, "%+v", res)
		require.Equal(t, []string{"completed"}, res.Extraction, "%+v", res)
	}
	for _, phase := range []string{"upload: 3 file(s)", "parse: 3/3", "extract: 3/3", "embed: 3/3"} {
		require.Contains(t, r.stderr, phase)
	}

	// The documents exist, with the files' names and hashes.
	var docs struct {
		Data []struct {
			ID       string `json:"id"`
			Filename string `json:"filename"`
			SHA256   string `json:"sha256"`
			Status   string `json:"status"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &docs)
	require.Len(t, docs.Data, 3)
	byName := map[string]string{}
	for _, d := range docs.Data {
		byName[d.Filename] = d.SHA256
		require.Equal(t, "parsed", d.Status)
	}
	for _, res := range results {
		require.Equal(t, res.SHA256, byName[filepath.Base(res.Path)], res.Path)
	}

	// A second run sends nothing: every file is unchanged.
	r = runCLI(t, env, "ingest", "--json", dir)
	decodeCLI(t, r, &results)
	require.Len(t, results, 3)
	for _, res := range results {
		require.Equal(t, ingestUnchanged, res.Result, "%+v", res)
	}
	s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &docs)
	require.Len(t, docs.Data, 3)

	// A changed file is sent again; the others are not.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("Babbage also designed the Difference Engine.\n"), 0o600))
	decodeCLI(t, runCLI(t, env, "ingest", "--json", dir), &results)
	got := map[string]string{}
	for _, res := range results {
		got[filepath.Base(res.Path)] = res.Result
	}
	require.Equal(t, map[string]string{"a.md": ingestUnchanged, "b.txt": ingestUploaded, "c.md": ingestUnchanged}, got)

	// Exit codes: a missing path is a usage error; no argument too.
	require.Equal(t, exitUsage, runCLI(t, env, "ingest", filepath.Join(dir, "missing")).code)
	require.Equal(t, exitUsage, runCLI(t, env, "ingest").code)

	// A file the server refuses: exit 4, the other files still sent.
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "empty.txt"), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "ok.md"), []byte("# Fine\n\nA good file.\n"), 0o600))
	r = runCLI(t, env, "ingest", "--json", bad)
	require.Equal(t, exitFailed, r.code, "%v %s", r.err, r.stdout)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &results))
	got = map[string]string{}
	for _, res := range results {
		got[filepath.Base(res.Path)] = res.Result
	}
	require.Equal(t, map[string]string{"empty.txt": ingestFailed, "ok.md": ingestUploaded}, got)
}
