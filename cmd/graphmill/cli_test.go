package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/document"
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
	writeTree(t, dir, files)

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

func TestCLICommands(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}

	doc := ingestOne(t, env, "engine.md", "# Engine\n\nCharles Babbage designed the Analytical Engine.\n")

	// jobs ls: the document's extraction job, completed.
	var jobs []struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		DocumentID string `json:"documentId"`
	}
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--json"), &jobs)
	require.Len(t, jobs, 1)
	require.Equal(t, doc, jobs[0].DocumentID)
	require.Equal(t, "completed", jobs[0].Status)
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--status", "failed", "--json"), &jobs)
	require.Empty(t, jobs)
	// watch on a finished job prints it and ends at once.
	r := runCLI(t, env, "jobs", "watch", doc)
	require.Equal(t, exitError, r.code, "an unknown job: %v", r.err)
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--json"), &jobs)
	var watched struct {
		Status string `json:"status"`
	}
	decodeCLI(t, runCLI(t, env, "jobs", "watch", jobs[0].ID, "--json"), &watched) // one status: one line
	require.Equal(t, "completed", watched.Status)
	// Cancelling a finished job is refused by the server.
	r = runCLI(t, env, "jobs", "cancel", jobs[0].ID)
	require.Equal(t, exitError, r.code, "%v", r.err)
	// A failed job: retry queues it again, watch follows it to its end.
	ctx := context.Background()
	_, err := s.m.db.pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'failed', error_msg = 'boom', completed_at = now() WHERE id = $1`, jobs[0].ID)
	require.NoError(t, err)
	require.NoError(t, runCLI(t, env, "jobs", "retry", jobs[0].ID, "--json").err)
	logs := s.extractionLogs(jobs[0].ID)
	require.Contains(t, fmt.Sprint(logs), "manual retry")
	r = runCLI(t, env, "jobs", "watch", jobs[0].ID, "--json")
	require.NoError(t, r.err)
	statuses := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.NoError(t, json.Unmarshal([]byte(statuses[len(statuses)-1]), &watched))
	require.Equal(t, "completed", watched.Status, r.stdout)
	// A running job: cancel ends it.
	_, err = s.m.db.pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'running', completed_at = NULL,
		locked_by = 'other-worker', locked_until = now() + interval '1 hour' WHERE id = $1`, jobs[0].ID)
	require.NoError(t, err)
	var cancelled struct {
		Status string `json:"status"`
	}
	decodeCLI(t, runCLI(t, env, "jobs", "cancel", jobs[0].ID, "--json"), &cancelled)
	require.Equal(t, "cancelled", cancelled.Status)
	require.Equal(t, "cancelled", s.extractionGetJob(jobs[0].ID).Status)
	// watch on a failed job exits 4.
	_, err = s.m.db.pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'failed', error_msg = 'boom', completed_at = now() WHERE id = $1`, jobs[0].ID)
	require.NoError(t, err)
	r = runCLI(t, env, "jobs", "watch", jobs[0].ID)
	require.Equal(t, exitFailed, r.code, "%v", r.err)
	require.Contains(t, r.stdout, "failed")

	// search: the document's chunk is found by keyword.
	var found struct {
		Data []struct {
			Target     string  `json:"target"`
			DocumentID string  `json:"documentId"`
			Score      float64 `json:"score"`
		} `json:"data"`
	}
	decodeCLI(t, runCLI(t, env, "search", "Babbage", "--mode", "keyword", "--json"), &found)
	hitDocs := map[string]string{}
	for _, h := range found.Data {
		hitDocs[h.Target] += h.DocumentID
	}
	require.Equal(t, doc, hitDocs["chunk"], "%+v", found.Data)
	// The table shows the snippet as text: no markup, matches unmarked off a terminal.
	r = runCLI(t, env, "search", "Babbage", "--mode", "keyword")
	require.NoError(t, r.err)
	require.Regexp(t, `chunk\s.*Charles Babbage designed the Analytical Engine\n`, r.stdout)
	require.NotContains(t, r.stdout, "<b>")
	r = runCLI(t, env, "search", "Babbage", "--mode", "nonsense")
	require.Equal(t, exitError, r.code)
	require.ErrorContains(t, r.err, "400")

	// graph get and neighbors.
	ada := s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Ada"})
	acme := s.graphCreateObject(s.admin, project, map[string]any{"type": "Organization", "name": "Acme"})
	var rel struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/graph/relationships", s.admin, map[string]any{"type": "WORKS_FOR", "sourceId": ada, "targetId": acme}, hp).Decode(t, &rel)
	var obj struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Type string `json:"type"`
	}
	decodeCLI(t, runCLI(t, env, "graph", "get", ada, "--json"), &obj)
	require.Equal(t, "Ada", obj.Name)
	require.Equal(t, "Person", obj.Type)
	var rels struct {
		Data []struct {
			ID       string `json:"id"`
			SourceID string `json:"sourceId"`
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"data"`
	}
	decodeCLI(t, runCLI(t, env, "graph", "neighbors", acme, "--json"), &rels)
	require.Len(t, rels.Data, 1)
	require.Equal(t, rel.ID, rels.Data[0].ID)
	require.Equal(t, ada, rels.Data[0].SourceID)
	r = runCLI(t, env, "graph", "neighbors", acme)
	require.NoError(t, r.err)
	require.Regexp(t, rel.ID+`\s+WORKS_FOR\s+in\s+`+ada, r.stdout)
	require.Equal(t, exitError, runCLI(t, env, "graph", "get", doc).code, "not an object")

	// tokens: create (shown once), list, revoke; the revoked token is refused.
	var created struct {
		ID     string   `json:"id"`
		Token  string   `json:"token"`
		Scopes []string `json:"scopes"`
	}
	decodeCLI(t, runCLI(t, env, "tokens", "create", "--name", "ci", "--scopes", "documents:read", "--json"), &created)
	require.True(t, strings.HasPrefix(created.Token, "gm_"), created.Token)
	require.Equal(t, []string{"documents:read"}, created.Scopes)
	s.must(200, "GET", "/api/documents", created.Token, nil, hp)
	var tokens []struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		Token string `json:"token"`
	}
	decodeCLI(t, runCLI(t, env, "tokens", "ls", "--json"), &tokens)
	names := map[string]string{}
	for _, tok := range tokens {
		names[tok.ID] = tok.Name
		require.Empty(t, tok.Token, "a listed token never shows its secret")
	}
	require.Equal(t, "ci", names[created.ID])
	decodeCLI(t, runCLI(t, env, "tokens", "revoke", created.ID, "--json"), &map[string]string{})
	s.must(401, "GET", "/api/documents", created.Token, nil, hp)
	decodeCLI(t, runCLI(t, env, "tokens", "ls", "--json"), &tokens)
	for _, tok := range tokens {
		require.NotEqual(t, created.ID, tok.ID)
	}
	require.Equal(t, exitUsage, runCLI(t, env, "tokens", "create", "--name", "x").code)
	// A token without the scope is refused (3).
	_, narrow := s.newMember("narrow@example.com", []string{"documents:read"}, project, "viewer")
	require.Equal(t, exitAuth, runCLI(t, append(env, "GRAPHMILL_TOKEN="+narrow), "jobs", "ls").code)
}

// startTail runs graphmill events tail --json with env until ctx ends,
// and returns once it follows the stream: its output, the scanner of its
// status lines (past the first, which it read) and its result.
func startTail(ctx context.Context, t *testing.T, env []string) (*io.PipeReader, *bufio.Scanner, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	er, ew := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runIO(ctx, []string{"events", "tail", "--json"}, env, strings.NewReader(""), pw, ew)
		pw.Close()
		ew.Close()
	}()
	status := bufio.NewScanner(er)
	require.True(t, status.Scan(), "tail ended early: %v", status.Err())
	require.Equal(t, "following the event stream (Ctrl-C ends)", status.Text())
	return pr, status, done
}

func TestCLIEventsTail(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, status, done := startTail(ctx, t, env)
	go func() {
		for status.Scan() {
		}
	}()

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\nSome text.\n"), 0o600))
	var ingested []ingestResult
	decodeCLI(t, runCLI(t, env, "ingest", "--wait", "--json", dir), &ingested)

	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		var e struct {
			Type string `json:"type"`
			Data struct {
				DocumentID string `json:"documentId"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &e), lines.Text())
		if e.Type == "document.converted" {
			require.Equal(t, ingested[0].DocumentID, e.Data.DocumentID)
			break
		}
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.NoError(t, <-done, "an interrupted tail ends normally")
}

// ptyOutput collects what a pseudo-terminal's programs write.
type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ch  chan struct{} // a signal for each read
}

func readPTY(ptmx io.Reader) *ptyOutput {
	o := &ptyOutput{ch: make(chan struct{}, 1)}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			o.mu.Lock()
			o.buf.Write(b[:n])
			o.mu.Unlock()
			select {
			case o.ch <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return o
}

// waitFor waits until the output holds want (or the test's deadline).
func (o *ptyOutput) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	timer := time.NewTimer(time.Until(deadline) - 5*time.Second)
	defer timer.Stop()
	for {
		o.mu.Lock()
		s := o.buf.String()
		o.mu.Unlock()
		if strings.Contains(s, want) {
			return
		}
		select {
		case <-o.ch:
		case <-timer.C:
			t.Fatalf("the terminal never showed %q; it shows:\n%s", want, s)
		}
	}
}

// TestCLIChatTerminal runs ingest and chat on a pseudo-terminal: ingest
// draws its bars; chat reads questions line by line, streams the answer
// with its citations and ends at Ctrl-D, the conversation stored.
func TestCLIChatTerminal(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	project, _ := s.defaultProject()
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	defer tty.Close()
	out := readPTY(ptmx)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "zephyr.md"), []byte("# Zephyr maintenance\n\nQuillwort bearings need lubrication every quarter with whale-free grease.\n"), 0o600))
	require.NoError(t, runIO(context.Background(), []string{"ingest", "--wait", dir}, env, tty, tty, tty))
	for _, phase := range []string{"upload", "parse", "extract", "embed"} {
		out.waitFor(t, fmt.Sprintf("%-8s 100%% |", phase))
	}
	out.waitFor(t, "zephyr.md") // the table

	done := make(chan error, 1)
	go func() { done <- runIO(context.Background(), []string{"chat"}, env, tty, tty, tty) }()
	out.waitFor(t, "> ")
	_, err = ptmx.Write([]byte("How often do quillwort bearings need lubrication?\n"))
	require.NoError(t, err)
	out.waitFor(t, "every quarter with whale-free grease")
	out.waitFor(t, "[1] zephyr.md: Quillwort bearings need lubrication every quarter with whale-free grease.\r\n")
	_, err = ptmx.Write([]byte{4}) // Ctrl-D
	require.NoError(t, err)
	require.NoError(t, <-done)

	got := s.onlyChatSession(t, project)
	require.Len(t, got, 2)
	require.Equal(t, "How often do quillwort bearings need lubrication?", got[0])
	require.Contains(t, got[1], "every quarter with whale-free grease")
}

// onlyChatSession is the contents of the messages of the admin's only chat
// session in project (the test fails when there is not exactly one).
func (s *testServer) onlyChatSession(t *testing.T, project string) []string {
	t.Helper()
	var sessions struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/chat/sessions", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &sessions)
	require.Len(t, sessions.Data, 1)
	var got struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	s.must(200, "GET", "/api/chat/sessions/"+sessions.Data[0].ID, s.admin, nil, header{"X-Project-ID", project}).Decode(t, &got)
	contents := make([]string, len(got.Messages))
	for i, m := range got.Messages {
		contents[i] = m.Content
	}
	return contents
}

// TestCLIIngestUnchangedDocuments: a file the project already has is not
// sent again, but its document's state still counts: one whose parsing
// failed is a failure (exit 4) on every later run, and with --wait one an
// earlier, interrupted run sent is followed until it is parsed.
func TestCLIIngestUnchangedDocuments(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	project, _ := s.defaultProject()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.pdf"), []byte("%PDF-1.4\nthis is not really a pdf"), 0o600))

	// The first run ends before following (no --wait).
	var results []ingestResult
	decodeCLI(t, runCLI(t, env, "ingest", "--json", dir), &results)
	require.Len(t, results, 1)
	require.Equal(t, ingestUploaded, results[0].Result)
	require.Equal(t, "failed", s.waitDocument(project, results[0].DocumentID).Status)

	for _, args := range [][]string{{"ingest", "--json", dir}, {"ingest", "--wait", "--json", dir}} {
		r := runCLI(t, env, args...)
		require.Equal(t, exitFailed, r.code, "%v: %v %s", args, r.err, r.stderr)
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &results), r.stdout)
		require.Len(t, results, 1)
		require.Equal(t, ingestFailed, results[0].Result, args)
		require.Equal(t, "failed", results[0].Status)
		require.Contains(t, results[0].Error, "unchanged, and its parsing failed")
	}

	// A document still being parsed when the next run starts is followed.
	require.NoError(t, s.m.jobs.Pause(context.Background(), document.QueueParsing))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.pdf"), []byte("# Notes\n\nThe loom reads cards."), 0o600))
	require.NoError(t, os.Rename(filepath.Join(dir, "broken.pdf"), filepath.Join(dir, "notes.md")))
	decodeCLI(t, runCLI(t, env, "ingest", "--json", dir), &results)
	require.Equal(t, ingestUploaded, results[0].Result)
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = s.m.jobs.Resume(context.Background(), document.QueueParsing)
	}()
	decodeCLI(t, runCLI(t, env, "ingest", "--wait", "--json", dir), &results)
	require.Equal(t, ingestUnchanged, results[0].Result)
	require.Equal(t, "parsed", results[0].Status, "followed until parsed")
	require.Positive(t, results[0].Chunks)
}

// TestCLIGraphNeighborsDirection: graph neighbors --direction takes the
// table's out and in (and the API's outgoing, incoming, both), another
// value being a usage error; the table names the object at each
// relationship's other end.
func TestCLIGraphNeighborsDirection(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	env := append(s.cliEnviron(t, ""), "GRAPHMILL_URL="+s.base, "GRAPHMILL_TOKEN="+s.admin, "GRAPHMILL_PROJECT="+project)
	ada := s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Ada"})
	acme := s.graphCreateObject(s.admin, project, map[string]any{"type": "Organization", "name": "Acme"})
	s.must(201, "POST", "/api/graph/relationships", s.admin, map[string]any{"type": "WORKS_FOR", "sourceId": ada, "targetId": acme}, header{"X-Project-ID", project})
	count := func(object, direction string) int {
		var rels struct {
			Data []any `json:"data"`
		}
		decodeCLI(t, runCLI(t, env, "graph", "neighbors", object, "--direction", direction, "--json"), &rels)
		return len(rels.Data)
	}
	for dir, want := range map[string][2]int{"out": {1, 0}, "outgoing": {1, 0}, "in": {0, 1}, "incoming": {0, 1}, "both": {1, 1}} {
		require.Equal(t, want, [2]int{count(ada, dir), count(acme, dir)}, dir)
	}
	r := runCLI(t, env, "graph", "neighbors", acme, "--direction", "in")
	require.NoError(t, r.err)
	require.Regexp(t, `WORKS_FOR\s+in\s+`+ada+`\s+Person\s+Ada\n`, r.stdout)
	// The id as typed in another spelling (upper case) is the same object:
	// the other end is still Ada, not the object itself.
	r = runCLI(t, env, "graph", "neighbors", strings.ToUpper(acme), "--direction", "in")
	require.NoError(t, r.err)
	require.Regexp(t, `WORKS_FOR\s+in\s+`+ada+`\s+Person\s+Ada\n`, r.stdout)
	r = runCLI(t, env, "graph", "neighbors", acme, "--direction", "sideways")
	require.Equal(t, exitUsage, r.code)
	require.ErrorContains(t, r.err, `--direction must be out, in or both, not "sideways"`)
}

// writeTree writes files (slash path to content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
}
