package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/postgres"
)

// sseFrame is one event or comment read from a stream.
type sseFrame struct {
	ID      int64
	Data    map[string]any
	Comment string
}

// openStream connects to the event stream (replaying after lastID when
// it is positive) and returns its frames.
func (s *testServer) openStream(token string, lastID int64) (<-chan sseFrame, func()) {
	s.t.Helper()
	last := ""
	if lastID > 0 {
		last = strconv.FormatInt(lastID, 10)
	}
	return s.openStreamAfter(token, last)
}

// openStreamAfter connects to the event stream with Last-Event-ID last
// (none when empty) and returns its frames.
func (s *testServer) openStreamAfter(token, last string) (<-chan sseFrame, func()) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", s.base+"/api/events/stream", nil)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	require.Equal(s.t, 200, res.StatusCode)
	require.Equal(s.t, "text/event-stream", res.Header.Get("Content-Type"))
	frames := make(chan sseFrame, 100)
	go func() {
		defer close(frames)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.ID != 0 || f.Comment != "" {
					frames <- f
				}
				f = sseFrame{}
			case strings.HasPrefix(line, ":"):
				f.Comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				f.ID, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &f.Data)
			}
		}
	}()
	s.t.Cleanup(cancel)
	return frames, cancel
}

// nextEvent returns the next event frame (skipping comments).
func nextEvent(t *testing.T, frames <-chan sseFrame) sseFrame {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case f, ok := <-frames:
			require.True(t, ok, "stream ended")
			if f.ID != 0 {
				return f
			}
		case <-timeout:
			t.Fatal("no event within 5s")
		}
	}
}

// publish commits an event directly, as a domain would.
func (s *testServer) publish(typ string, project, user *uuid.UUID, data any) int64 {
	s.t.Helper()
	var id int64
	err := postgres.WithTx(context.Background(), s.m.db.pool, func(tx pgx.Tx) error {
		var err error
		id, err = events.Publish(context.Background(), tx, typ, project, user, data, time.Now())
		return err
	})
	require.NoError(s.t, err)
	return id
}

func TestEventStreamAuth(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, noScope := s.newUser("n@example.com", []string{"admin:read"}, "")
	s.must(401, "GET", "/api/events/stream", "", nil)
	s.must(401, "GET", "/api/events/stream", "gm_nope", nil)
	require.Contains(t, s.must(403, "GET", "/api/events/stream", noScope, nil).Detail(t), "notifications:read")
	r := s.must(400, "GET", "/api/events/stream", s.admin, nil, header{"Last-Event-ID", "abc"})
	require.Equal(t, "invalid_argument", r.JSON(t)["code"])
}

func TestEventStreamDeliveryAndVisibility(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	projectID, _ := s.defaultProject()
	project := uuid.MustParse(projectID)
	outsiderID, outsider := s.newUser("o@example.com", []string{"notifications:read"}, "")
	outsiderUUID := uuid.MustParse(outsiderID)

	adminFrames, _ := s.openStream(s.admin, 0)
	outFrames, _ := s.openStream(outsider, 0)
	require.Eventually(t, func() bool { return s.m.hub.Clients() == 2 }, 5*time.Second, 10*time.Millisecond)

	id1 := s.publish(events.TypeDocumentConverted, &project, nil, map[string]any{"documentId": "d1"})
	id2 := s.publish(events.TypeNotification, nil, &outsiderUUID, map[string]any{"title": "hello"})

	f := nextEvent(t, adminFrames)
	require.Equal(t, id1, f.ID)
	require.Equal(t, "document.converted", f.Data["type"])
	require.Equal(t, projectID, f.Data["projectId"])
	require.Equal(t, map[string]any{"documentId": "d1"}, f.Data["data"])

	// The outsider sees its own notification but not the project's event.
	f = nextEvent(t, outFrames)
	require.Equal(t, id2, f.ID)
	require.Equal(t, "notification", f.Data["type"])

	// The admin does not see another user's notification: the next thing it
	// gets is the next project event.
	id3 := s.publish(events.TypeJobCompleted, &project, nil, map[string]any{"jobId": "j"})
	require.Equal(t, id3, nextEvent(t, adminFrames).ID)
}

func TestEventStreamReplay(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	projectID, _ := s.defaultProject()
	project := uuid.MustParse(projectID)

	frames, stop := s.openStream(s.admin, 0)
	require.Eventually(t, func() bool { return s.m.hub.Clients() == 1 }, 5*time.Second, 10*time.Millisecond)
	first := s.publish(events.TypeDocumentConverted, &project, nil, map[string]any{"n": 1})
	require.Equal(t, first, nextEvent(t, frames).ID)
	stop()
	require.Eventually(t, func() bool { return s.m.hub.Clients() == 0 }, 5*time.Second, 10*time.Millisecond)

	// Missed while disconnected.
	missed := []int64{
		s.publish(events.TypeDocumentConverted, &project, nil, map[string]any{"n": 2}),
		s.publish(events.TypeJobCompleted, &project, nil, map[string]any{"n": 3}),
	}
	frames, _ = s.openStream(s.admin, first)
	require.Equal(t, missed[0], nextEvent(t, frames).ID)
	require.Equal(t, missed[1], nextEvent(t, frames).ID)
	// And live events follow the replay without duplicates.
	live := s.publish(events.TypeJobCompleted, &project, nil, map[string]any{"n": 4})
	require.Equal(t, live, nextEvent(t, frames).ID)
}

// TestEventStreamReplayFromZero: Last-Event-ID 0 (graphmill events tail
// --since 0) replays every stored event the caller may see, from the
// first; it replayed none.
func TestEventStreamReplayFromZero(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	projectID, _ := s.defaultProject()
	project := uuid.MustParse(projectID)
	live, stop := s.openStream(s.admin, 0)
	require.Eventually(t, func() bool { return s.m.hub.Clients() == 1 }, 5*time.Second, 10*time.Millisecond)
	first := s.publish(events.TypeDocumentConverted, &project, nil, map[string]any{"n": 1})
	second := s.publish(events.TypeJobCompleted, &project, nil, map[string]any{"n": 2})
	for nextEvent(t, live).ID != second { // delivered live: past, for the stream opened next
	}
	stop()
	frames, _ := s.openStreamAfter(s.admin, "0")
	var replayed []int64
	for len(replayed) == 0 || replayed[len(replayed)-1] != second {
		replayed = append(replayed, nextEvent(t, frames).ID)
	}
	require.Contains(t, replayed, first)
}

func TestEventStreamHeartbeatAndOtherProcess(t *testing.T) {
	t.Parallel()
	a := newServer(t, func(c *config.Config) { c.EventHeartbeat = 50 * time.Millisecond })
	b := startServer(t, a.dbURL, func(c *config.Config) { c.EventHeartbeat = 50 * time.Millisecond })
	projectID, _ := a.defaultProject()
	project := uuid.MustParse(projectID)

	frames, _ := b.openStream(a.admin, 0)
	beats := 0
	timeout := time.After(5 * time.Second)
	for beats < 2 {
		select {
		case f := <-frames:
			if f.Comment == "heartbeat" {
				beats++
			}
		case <-timeout:
			t.Fatal("no heartbeats")
		}
	}
	// Published through server a's database connection, delivered by b.
	id := a.publish(events.TypeDocumentConverted, &project, nil, map[string]any{})
	require.Equal(t, id, nextEvent(t, frames).ID)
}

// TestEventStreamReplayBeyondOnePage: a client further behind than one
// replay page gets every missed event, in order, then the live ones; none
// is skipped because a live event moved its position past the rest.
func TestEventStreamReplayBeyondOnePage(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	projectID, _ := s.defaultProject()
	project := uuid.MustParse(projectID)

	first := s.publish(events.TypeDocumentConverted, &project, nil, map[string]any{"n": 0})
	// Written without a notification, as by a process whose listener this
	// one never heard: only the replay can deliver them.
	missed := events.ReplayPage*2 + events.ReplayPage/2
	rows, err := s.m.db.pool.Query(context.Background(), `INSERT INTO events (project_id, type, payload, created_at)
		SELECT $1, $2, jsonb_build_object('n', n), now() FROM generate_series(1, $3) n RETURNING id`,
		project, events.TypeJobCompleted, missed)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, ids, missed)

	frames, _ := s.openStream(s.admin, first)
	for i, want := range ids {
		got := nextEvent(t, frames)
		require.Equal(t, want, got.ID, "missed event %d of %d", i+1, missed)
	}
	live := s.publish(events.TypeJobCompleted, &project, nil, map[string]any{"n": "live"})
	require.Equal(t, live, nextEvent(t, frames).ID)
}
