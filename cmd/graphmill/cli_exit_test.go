package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
)

// TestCLIUsageExitCodes: every bad command line ends 2, cobra's own
// refusals (an unknown command at the root or in a group, an argument to a
// command that takes none) included; a group given no command prints its
// help and succeeds.
func TestCLIUsageExitCodes(t *testing.T) {
	t.Parallel()
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	for _, args := range [][]string{
		{"nosuch"},
		{"login", "extra", "--server", "http://127.0.0.1:1", "--token", "gm_x"},
		{"jobs", "nosuch"},
		{"graph", "nosuch", "x"},
		{"events", "tail", "extra"},
		{"tokens", "ls", "--nope"},
		{"migrate", "extra"},
		{"admin", "nosuch"},
		{"jobs", "ls", "--request-timeout", "-1s"},
	} {
		r := runCLI(t, env, args...)
		require.Equal(t, exitUsage, r.code, "%v: %v", args, r.err)
	}
	r := runCLI(t, env, "jobz")
	require.ErrorContains(t, r.err, `unknown command "jobz" for "graphmill" (did you mean jobs?)`)
	r = runCLI(t, env, "jobs")
	require.NoError(t, r.err)
	require.Contains(t, r.stdout, "graphmill jobs [command]")
}

// TestCLIArgumentCounts: a command given too few or too many arguments
// ends 2 with its own message, before it reads any configuration.
func TestCLIArgumentCounts(t *testing.T) {
	t.Parallel()
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"ingest"}, "ingest needs at least one file or folder"},
		{[]string{"agents", "run", "helper"}, "give the agent (id or name) and the run's input (quoted)"},
		{[]string{"agents", "run", "helper", "input", "more"}, "give the agent (id or name) and the run's input (quoted)"},
		{[]string{"chat", "one", "two"}, "give the question as one argument (quote it)"},
		{[]string{"graph", "get"}, "give one object id"},
		{[]string{"graph", "get", "a", "b"}, "give one object id"},
	} {
		r := runCLI(t, env, c.args...)
		require.Equal(t, exitUsage, r.code, "%v: %v", c.args, r.err)
		require.EqualError(t, r.err, c.msg, "%v", c.args)
	}
}

// TestCLIRequestTimeout: an ordinary request to a server that never
// answers ends with an error after --request-timeout; the event stream is
// not bounded by it: events tail prints an event the server sends well
// after the timeout. When the server then ends the stream, tail opens it
// again and, its token refused, ends 3.
func TestCLIRequestTimeout(t *testing.T) {
	t.Parallel()
	release, next := make(chan struct{}), make(chan struct{})
	var streams, lists atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/events/stream":
			if streams.Add(1) > 1 {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"title":"Unauthorized","status":401,"detail":"the token was revoked"}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: 1\ndata: {\"type\":\"first\"}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
			fmt.Fprint(w, "id: 2\ndata: {\"type\":\"second\"}\n\n")
		default: // silent: accepts and never answers
			lists.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	env := []string{
		"XDG_CONFIG_HOME=" + t.TempDir(), "GRAPHMILL_URL=" + srv.URL, "GRAPHMILL_TOKEN=gm_x",
		"GRAPHMILL_PROJECT=00000000-0000-0000-0000-000000000001",
	}

	r := runCLI(t, env, "jobs", "ls", "--request-timeout", "200ms")
	require.Equal(t, exitError, r.code, "%v", r.err)
	require.ErrorContains(t, r.err, "Client.Timeout exceeded")
	require.Equal(t, int64(1), lists.Load())

	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runIO(context.Background(), []string{"events", "tail", "--json", "--request-timeout", "100ms"}, env, strings.NewReader(""), pw, &errb)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan(), "tail ended early")
	require.JSONEq(t, `{"type":"first"}`, lines.Text())
	time.Sleep(500 * time.Millisecond) // five request timeouts: a bounded stream would be cut by now
	next <- struct{}{}
	require.True(t, lines.Scan(), "the stream was cut: %s", errb.String())
	require.JSONEq(t, `{"type":"second"}`, lines.Text())
	err := <-done
	require.Equal(t, exitAuth, exitCode(err), "%v", err)
	require.ErrorContains(t, err, "the token was revoked")
	require.Equal(t, int64(2), streams.Load(), "opened again once")
}

// TestCLIEventsTailTokenRevoked: the server ends the stream of a token
// revoked meanwhile; tail does not take that for Ctrl-C: it ends 3.
func TestCLIEventsTailTokenRevoked(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	var tok struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/tokens", s.admin, map[string]any{"name": "tail", "scopes": allScopes}).Decode(t, &tok)
	er, ew := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runIO(context.Background(), []string{"events", "tail", "--json"}, s.cliEnviron(t, tok.Token), strings.NewReader(""), io.Discard, ew)
		ew.Close()
	}()
	status := bufio.NewScanner(er)
	require.True(t, status.Scan(), "tail ended early: %v", status.Err())
	go func() { _, _ = io.Copy(io.Discard, er) }()
	s.must(204, "DELETE", "/api/tokens/"+tok.ID, s.admin, nil)
	err := <-done
	require.Equal(t, exitAuth, exitCode(err), "%v", err)
	require.ErrorContains(t, err, "401")
}

// TestCLIChatFailedQuestions: chat checks the session it continues before
// reading any question (an unknown one: 1); in a conversation, a question
// that fails is reported, the next answered, and the command ends 1 at the
// end of its input.
func TestCLIChatFailedQuestions(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	env := append(s.cliEnviron(t, s.admin), "GRAPHMILL_PROJECT="+project)

	var out, errb bytes.Buffer
	err := runIO(context.Background(), []string{"chat", "--session", "00000000-0000-0000-0000-000000000000"}, env,
		strings.NewReader("hello\n"), &out, &errb)
	require.Equal(t, exitError, exitCode(err), "%v", err)
	require.ErrorContains(t, err, "404")
	require.NotContains(t, errb.String(), "> ", "no question read")

	out.Reset()
	errb.Reset()
	questions := strings.Repeat("x", 20001) + "\nWhat do you know?\n" // the first too long: 400
	err = runIO(context.Background(), []string{"chat"}, env, strings.NewReader(questions), &out, &errb)
	require.Equal(t, exitError, exitCode(err), "%v", err)
	require.ErrorContains(t, err, "1 of 2 question(s) failed")
	require.Contains(t, errb.String(), "error: POST /api/chat/sessions/")
	require.NotEmpty(t, strings.TrimSpace(out.String()), "the second question answered")
	got := s.onlyChatSession(t, project)
	require.Len(t, got, 2, "the question refused is not stored")
	require.Equal(t, "What do you know?", got[0])
}

// TestCLIWaitWithoutNotifications: a token without notifications:read
// cannot open the event stream; ingest --wait and jobs watch warn and
// follow by polling.
func TestCLIWaitWithoutNotifications(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	var tok struct {
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/tokens", s.admin, map[string]any{
		"name":   "ingest",
		"scopes": []string{"admin:read", "documents:read", "documents:write", "extraction:read"},
	}).Decode(t, &tok)
	env := append(s.cliEnviron(t, tok.Token), "GRAPHMILL_PROJECT="+project)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\nSome text.\n"), 0o600))

	r := runCLI(t, env, "ingest", "--wait", "--json", dir)
	require.NoError(t, r.err, "stderr: %s", r.stderr)
	require.Contains(t, r.stderr, "warning: event stream refused")
	require.Contains(t, r.stderr, "notifications:read")
	var ingested []ingestResult
	decodeCLI(t, r, &ingested)
	require.Len(t, ingested, 1)
	require.Equal(t, "parsed", ingested[0].Status)
	require.Positive(t, ingested[0].Chunks)
	require.Equal(t, ingested[0].Chunks, ingested[0].EmbeddedChunks)
	require.Equal(t, []string{"completed"}, ingested[0].Extraction)

	var jobs []struct {
		ID string `json:"id"`
	}
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--json"), &jobs)
	require.Len(t, jobs, 1)
	r = runCLI(t, env, "jobs", "watch", jobs[0].ID)
	require.NoError(t, r.err, "stderr: %s", r.stderr)
	require.Contains(t, r.stderr, "warning: event stream refused")
	require.Contains(t, r.stdout, "completed")
}

// TestCLIIngestWithoutEmbeddingModel: on a server with no provider, the
// chunks are never embedded; ingest --wait sees the project's embedding
// queue idle and reports the file failed (4) instead of waiting for its
// timeout. A token that may not read the queue's counts waits until the
// timeout, then prints what it gathered (and ends 1).
func TestCLIIngestWithoutEmbeddingModel(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *config.Config) { off := false; c.LocalProvider = &off })
	project, _ := s.defaultProject()
	env := append(s.cliEnviron(t, s.admin), "GRAPHMILL_PROJECT="+project)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\nSome text.\n"), 0o600))

	r := runCLI(t, env, "ingest", "--wait", "--json", "--timeout", "10m", dir)
	require.Equal(t, exitFailed, r.code, "%v; stderr %s", r.err, r.stderr)
	var ingested []ingestResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ingested), r.stdout)
	require.Len(t, ingested, 1)
	require.Equal(t, ingestFailed, ingested[0].Result)
	require.Equal(t, "parsed", ingested[0].Status)
	require.Positive(t, ingested[0].Chunks)
	require.Zero(t, ingested[0].EmbeddedChunks)

	// Without admin:read: the queue cannot be read; the wait ends at its
	// timeout with the table of what is known.
	var tok struct {
		Token string `json:"token"`
	}
	s.must(201, "POST", "/api/tokens", s.admin, map[string]any{
		"name":   "ingest",
		"scopes": []string{"documents:read", "documents:write", "extraction:read", "notifications:read"},
	}).Decode(t, &tok)
	env = append(s.cliEnviron(t, tok.Token), "GRAPHMILL_PROJECT="+project)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.md"), []byte("# B\n\nOther text.\n"), 0o600))
	r = runCLI(t, env, "ingest", "--wait", "--json", "--timeout", "5s", dir)
	require.Equal(t, exitError, r.code, "%v", r.err)
	require.ErrorContains(t, r.err, "context deadline exceeded")
	require.Contains(t, r.stderr, "waiting for the embeddings until the timeout")
	ingested = nil
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ingested), r.stdout)
	require.Len(t, ingested, 2)
	byPath := map[string]ingestResult{}
	for _, res := range ingested {
		byPath[filepath.Base(res.Path)] = res
	}
	require.Equal(t, ingestUnchanged, byPath["a.md"].Result)
	require.NotEmpty(t, byPath["b.md"].DocumentID)
	require.Equal(t, "parsed", byPath["b.md"].Status)
}

// TestSnippetText: a search snippet (escaped HTML with <b> around the
// matches) for a terminal: entities unescaped, markup gone, matches bold
// only at a terminal, control characters and line breaks blanked, cut to
// its width.
func TestSnippetText(t *testing.T) {
	t.Parallel()
	snippet := "Charles <b>Babbage</b> &amp; the &lt;b&gt;engine&lt;/b&gt;\n\x1b[31mred"
	require.Equal(t, "Charles Babbage & the <b>engine</b> [31mred", snippetText(snippet, 80, false))
	require.Equal(t, "Charles \x1b[1mBabbage\x1b[22m & the <b>engine</b> [31mred", snippetText(snippet, 80, true))
	require.Equal(t, "Charles Bab…", snippetText(snippet, 12, false))
	require.Equal(t, "Charles \x1b[1mBab\x1b[22m…", snippetText(snippet, 12, true))
	require.Empty(t, snippetText("", 80, true))
}

func TestCLIListUpTo(t *testing.T) {
	t.Parallel()
	// A route holding 7 items, answering the window asked for.
	var asked []int64
	page := func(limit, offset *int64) (*[]int, error) {
		asked = append(asked, *offset)
		var out []int
		for i := *offset; i < min(*offset+*limit, 7); i++ {
			out = append(out, int(i))
		}
		return &out, nil
	}
	got, err := listUpTo(3, 5, page)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2, 3, 4}, got)
	require.Equal(t, []int64{0, 3}, asked, "stops once it has most")

	asked = nil
	got, err = listAll(3, page)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6}, got)
	require.Equal(t, []int64{0, 3, 6}, asked, "stops at the first short page")

	asked = nil
	got, err = listUpTo(3, 6, page)
	require.NoError(t, err)
	require.Len(t, got, 6)
	require.Equal(t, []int64{0, 3}, asked, "a full last page ends it when most is reached")
}

func TestCLIPrintEvent(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s := &session{cli: &cli{stdout: &out}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	data := `{"type":"document.parsed","projectId":"6f1c2c1e-8a3b-4f43-9a55-0d7c1a2b3c4d","data":{"documentId":"d1"},"createdAt":"2026-01-02T03:04:05Z"}`
	require.NoError(t, s.printEvent(sseEvent{ID: "42", Data: data}))
	require.Equal(t, at.Local().Format(time.DateTime)+"  42       document.parsed              {\"documentId\":\"d1\"}\n", out.String())

	out.Reset()
	s.json = true
	require.NoError(t, s.printEvent(sseEvent{ID: "42", Data: data}))
	require.Equal(t, data+"\n", out.String())

	require.Error(t, (&session{cli: &cli{stdout: &out}}).printEvent(sseEvent{ID: "43", Data: "not json"}))
}
