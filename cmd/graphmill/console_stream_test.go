package main

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/console"
)

// consoleStream opens a console stream (path) as b, with lastEventID
// (header) when not empty, and returns its frames (without the blank
// line) until the stream or the test ends; stop closes it.
func (b *consoleBrowser) stream(path, lastEventID string) (frames <-chan string, stop func()) {
	b.t.Helper()
	ctx, cancel := context.WithCancel(b.t.Context())
	req, err := http.NewRequestWithContext(ctx, "GET", b.s.base+path, nil)
	require.NoError(b.t, err)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	require.Equal(b.t, 200, resp.StatusCode)
	require.Equal(b.t, "text/event-stream", resp.Header.Get("Content-Type"))
	out := make(chan string, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		var acc string
		for {
			n, err := resp.Body.Read(buf)
			acc += string(buf[:n])
			for {
				i := strings.Index(acc, "\n\n")
				if i < 0 {
					break
				}
				select {
				case out <- acc[:i]:
				case <-ctx.Done():
					return
				}
				acc = acc[i+2:]
			}
			if err != nil {
				return
			}
		}
	}()
	return out, cancel
}

var (
	eventFrame  = regexp.MustCompile(`^id: (\d+)\nevent: (\w+)\ndata: ([\w.]+)$`)
	idOnlyFrame = regexp.MustCompile(`^id: \d+$`)
)

// nextConsoleEvent is the next named event of frames (skipping comments and the
// id-only frames of events the page does not want): its id, name, data.
func nextConsoleEvent(t *testing.T, frames <-chan string) (int64, string, string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case f, ok := <-frames:
			require.True(t, ok, "stream ended")
			if strings.HasPrefix(f, ":") || idOnlyFrame.MatchString(f) {
				continue
			}
			m := eventFrame.FindStringSubmatch(f)
			require.NotNil(t, m, "frame %q", f)
			id, err := strconv.ParseInt(m[1], 10, 64)
			require.NoError(t, err)
			return id, m[2], m[3]
		case <-deadline:
			t.Fatal("no event")
		}
	}
}

// TestConsoleStreamReplay: a console stream's events carry their ids, so
// a reconnecting browser (Last-Event-ID, or the lastEventId parameter)
// gets the events it missed, replayed by the API's stream and translated
// like live ones; a reconnect from the latest id replays nothing.
func TestConsoleStreamReplay(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	path := console.StreamPrefix + "projects/" + project + "/documents"

	frames, stop := b.stream(path, "")
	require.Equal(t, ": connected", <-frames)
	s.waitDocument(project, consoleUpload(t, s, project, "a.md", "# A\n\nFirst."))
	first, name, data := nextConsoleEvent(t, frames)
	require.Equal(t, console.DocumentsEvent, name)
	require.Equal(t, "document.converted", data)
	stop()

	// Missed while disconnected: one document of this project, one of
	// another project (not the page's: its id only).
	s.waitDocument(other, consoleUpload(t, s, other, "b.md", "# B\n\nOther project."))
	s.waitDocument(project, consoleUpload(t, s, project, "c.md", "# C\n\nMissed."))

	frames, stop = b.stream(path, strconv.FormatInt(first, 10))
	require.Equal(t, ": connected", <-frames)
	missed, name, data := nextConsoleEvent(t, frames)
	require.Greater(t, missed, first)
	require.Equal(t, console.DocumentsEvent, name)
	require.Equal(t, "document.converted", data)
	stop()

	// The same replay through the query parameter (a new EventSource
	// cannot set the header).
	frames, stop = b.stream(path+"?lastEventId="+strconv.FormatInt(first, 10), "")
	require.Equal(t, ": connected", <-frames)
	again, _, _ := nextConsoleEvent(t, frames)
	require.Equal(t, missed, again)
	stop()

	// From the latest id nothing is replayed: the first event is the
	// next document's.
	frames, stop = b.stream(path, strconv.FormatInt(missed, 10))
	defer stop()
	require.Equal(t, ": connected", <-frames)
	s.waitDocument(project, consoleUpload(t, s, project, "d.md", "# D\n\nLive."))
	live, _, _ := nextConsoleEvent(t, frames)
	require.Greater(t, live, missed)

	// A Last-Event-ID that is not an event id is the API's 400.
	req, err := http.NewRequestWithContext(t.Context(), "GET", s.base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Last-Event-ID", "yesterday")
	resp, err := b.c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
