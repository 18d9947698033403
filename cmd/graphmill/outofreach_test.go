package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/notification"
)

// reach is a user who is a viewer of three projects of the default
// organization (the default one, "second" and "third"), with scopes.
type reach struct {
	project, second, third string
	userID, token          string
}

func (s *testServer) reachOfThree(scopes ...string) reach {
	s.t.Helper()
	project, org := s.defaultProject()
	r := reach{project: project, second: s.newProject(org, "second"), third: s.newProject(org, "third")}
	r.userID, r.token = s.newMember("u@example.com", scopes, project, "viewer")
	s.addMember(r.second, r.userID, "viewer")
	s.addMember(r.third, r.userID, "viewer")
	return r
}

// leave removes the user from second; come back gives the membership back;
// deleteThird soft-deletes third (as the admin).
func (s *testServer) leave(r reach) {
	s.must(204, "DELETE", "/api/projects/"+r.second+"/members/"+r.userID, s.admin, nil)
}

func (s *testServer) comeBack(r reach) { s.addMember(r.second, r.userID, "viewer") }

func (s *testServer) deleteThird(r reach) {
	s.must(204, "DELETE", "/api/projects/"+r.third, s.admin, nil)
}

// TestActivityOfProjectsOutOfReach: the project-less recent list (and
// that of one type) shows no item of a project the user left or of a
// deleted one, nor removes one (404, as an unknown item); items come back
// with the membership. Clearing the history clears the hidden items too.
func TestActivityOfProjectsOutOfReach(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := s.reachOfThree("user-activity:read", "user-activity:write")
	for _, it := range []struct{ project, id string }{{r.project, "r1"}, {r.second, "r2"}, {r.third, "r3"}} {
		s.record(r.token, it.project, map[string]any{"resourceType": "report", "resourceId": it.id, "actionType": "view"})
	}
	s.record(s.admin, r.third, map[string]any{"resourceType": "report", "resourceId": "a3", "actionType": "view"})
	all := []string{"report/r3", "report/r2", "report/r1"}
	require.Equal(t, all, resources(s.recent(r.token, "/api/user-activity/recent")))

	s.leave(r)
	want := []string{"report/r3", "report/r1"}
	require.Equal(t, want, resources(s.recent(r.token, "/api/user-activity/recent")))
	require.Equal(t, want, resources(s.recent(r.token, "/api/user-activity/recent/report")))
	s.must(404, "DELETE", "/api/user-activity/recent/report/r2", r.token, nil)
	s.must(404, "GET", "/api/user-activity/recent", r.token, nil, header{"X-Project-ID", r.second})

	s.comeBack(r)
	require.Equal(t, all, resources(s.recent(r.token, "/api/user-activity/recent")), "the item stayed, hidden")

	s.deleteThird(r)
	require.Equal(t, []string{"report/r2", "report/r1"}, resources(s.recent(r.token, "/api/user-activity/recent/report")))
	// A superadmin sees every live project, not a deleted one.
	require.Empty(t, s.recent(s.admin, "/api/user-activity/recent"))

	s.must(204, "DELETE", "/api/user-activity/recent", r.token, nil)
	var left int
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT count(*) FROM user_activity WHERE user_id = $1`, r.userID).Scan(&left))
	require.Zero(t, left, "clearing removes the deleted project's item too")
}

// TestNotificationsOfProjectsOutOfReach: without a project, the list,
// stats, counts and bulk actions leave out the notifications of a project
// the user left or of a deleted one (those of no project stay), and one of
// them is not found by id; they come back with the membership, as they
// were.
func TestNotificationsOfProjectsOutOfReach(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := s.reachOfThree("notifications:read", "notifications:write")
	in := func(p string) *uuid.UUID { id := uuid.MustParse(p); return &id }
	n0 := s.notify(r.userID, notification.Params{Title: "account"})
	n1 := s.notify(r.userID, notification.Params{ProjectID: in(r.project), Title: "one"})
	n2 := s.notify(r.userID, notification.Params{ProjectID: in(r.second), Title: "two", Importance: notification.ImportanceImportant})
	n3 := s.notify(r.userID, notification.Params{ProjectID: in(r.third), Title: "three"})
	require.Equal(t, sortedIDs(n0.ID, n1.ID, n2.ID, n3.ID), notificationIDs(s.notifications(r.token, "")))

	s.leave(r)
	require.Equal(t, sortedIDs(n0.ID, n1.ID, n3.ID), notificationIDs(s.notifications(r.token, "")))
	require.Empty(t, s.notifications(r.token, "tab=important").Data)
	require.Equal(t, notificationStats{Unread: 3, Total: 3}, s.notificationStats(r.token))
	require.Equal(t, notificationCounts{All: 3, Other: 3}, s.notificationCounts(r.token))
	s.must(404, "PATCH", "/api/notifications/"+n2.ID+"/read", r.token, nil)
	s.must(404, "DELETE", "/api/notifications/"+n2.ID+"/dismiss", r.token, nil)
	s.must(404, "POST", "/api/notifications/"+n2.ID+"/snooze", r.token, map[string]any{"until": time.Now().Add(time.Hour)})
	var marked struct {
		Count int `json:"count"`
	}
	s.must(200, "POST", "/api/notifications/mark-all-read", r.token, nil).Decode(t, &marked)
	require.Equal(t, 3, marked.Count)

	s.comeBack(r)
	require.Equal(t, notificationStats{Unread: 1, Total: 4}, s.notificationStats(r.token), "the hidden one was left unread")
	require.Equal(t, []string{n2.ID}, notificationIDs(s.notifications(r.token, "tab=important")))

	s.deleteThird(r)
	require.Equal(t, sortedIDs(n0.ID, n1.ID, n2.ID), notificationIDs(s.notifications(r.token, "")))
	require.Equal(t, notificationCounts{All: 3, Important: 1, Other: 2}, s.notificationCounts(r.token))
	s.must(404, "PATCH", "/api/notifications/"+n3.ID+"/read", r.token, nil)
	s.must(200, "POST", "/api/notifications/clear-all", r.token, nil).Decode(t, &marked)
	require.Equal(t, 3, marked.Count)
	var dismissed bool
	require.NoError(t, s.pool().QueryRow(context.Background(), `SELECT dismissed_at IS NOT NULL FROM notifications WHERE id = $1`, n3.ID).Scan(&dismissed))
	require.False(t, dismissed, "the deleted project's notification is not touched")
}

func sortedIDs(ids ...string) []string {
	return notificationIDs(notificationList{Data: func() []notificationBody {
		out := make([]notificationBody, len(ids))
		for i, id := range ids {
			out[i].ID = id
		}
		return out
	}()})
}

// TestTasksAllOfProjectsOutOfReach: tasks across projects (and their
// counts) leave out a project the user left, until they are back, and a
// deleted one.
func TestTasksAllOfProjectsOutOfReach(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := s.reachOfThree("tasks:read")
	t1, t2, t3 := s.createTask(r.project, "one", "review", "", nil), s.createTask(r.second, "two", "review", "", nil), s.createTask(r.third, "three", "review", "", nil)
	all := func() []string {
		var l taskList
		s.must(200, "GET", "/api/tasks/all", r.token, nil).Decode(t, &l)
		require.Len(t, l.Data, l.Total)
		return taskIDs(l)
	}
	require.Equal(t, []string{t3, t2, t1}, all())

	s.leave(r)
	require.Equal(t, []string{t3, t1}, all())
	require.Equal(t, taskCounts{Pending: 2}, s.taskCounts("/api/tasks/all/counts", r.token))
	s.comeBack(r)
	require.Equal(t, []string{t3, t2, t1}, all())
	s.deleteThird(r)
	require.Equal(t, []string{t2, t1}, all())
	require.Equal(t, taskCounts{Pending: 2}, s.taskCounts("/api/tasks/all/counts", r.token))
}

// TestEventStreamOfProjectsOutOfReach: an open stream delivers no event
// of a project deleted meanwhile (it stays open for the others), and one
// the user left ends it; a new stream does not replay either project's
// events, and replays the left project's again once the membership is
// back.
func TestEventStreamOfProjectsOutOfReach(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := s.reachOfThree("notifications:read")
	project, second, third := uuid.MustParse(r.project), uuid.MustParse(r.second), uuid.MustParse(r.third)
	user := uuid.MustParse(r.userID)
	frames, _ := s.openStream(r.token, 0)
	require.Eventually(t, func() bool { return s.m.hub.Clients() == 1 }, 5*time.Second, 10*time.Millisecond)
	e1 := s.publish(events.TypeDocumentConverted, &third, nil, map[string]any{"n": 1})
	require.Equal(t, e1, nextEvent(t, frames).ID)

	s.deleteThird(r)
	s.publish(events.TypeDocumentConverted, &third, nil, map[string]any{"n": 2})
	s.publish(events.TypeNotification, &third, &user, map[string]any{"n": 3})
	e4 := s.publish(events.TypeDocumentConverted, &project, nil, map[string]any{"n": 4})
	require.Equal(t, e4, nextEvent(t, frames).ID, "the deleted project's events are skipped on the open stream")

	s.leave(r)
	requireStreamEnds(t, frames, "the stream of the user who left")
	e5 := s.publish(events.TypeDocumentConverted, &second, nil, map[string]any{"n": 5})
	e6 := s.publish(events.TypeNotification, &second, &user, map[string]any{"n": 6})
	e7 := s.publish(events.TypeDocumentConverted, &project, nil, map[string]any{"n": 7})
	replayed, stop := s.openStreamAfter(r.token, strconv.FormatInt(e1-1, 10)) // e1-1 may be 0
	require.Equal(t, e4, nextEvent(t, replayed).ID, "no event of the deleted project")
	require.Equal(t, e7, nextEvent(t, replayed).ID, "no event of the project left")
	stop()

	s.comeBack(r)
	replayed, _ = s.openStream(r.token, e4)
	require.Equal(t, e5, nextEvent(t, replayed).ID)
	require.Equal(t, e6, nextEvent(t, replayed).ID)
	require.Equal(t, e7, nextEvent(t, replayed).ID)
}

// TestConsoleNotificationsOfProjectsOutOfReach: the console's badge and
// inbox leave out the notifications of a project the user left or of a
// deleted one, which cannot be marked read there either; the left one is
// back with the membership.
func TestConsoleNotificationsOfProjectsOutOfReach(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := s.reachOfThree(allScopes...)
	in := func(p string) *uuid.UUID { id := uuid.MustParse(p); return &id }
	s.notify(r.userID, notification.Params{ProjectID: in(r.project), Title: "Kept news"})
	left := s.notify(r.userID, notification.Params{ProjectID: in(r.second), Title: "News of the project left"})
	gone := s.notify(r.userID, notification.Params{ProjectID: in(r.third), Title: "News of the deleted project"})
	b := newConsoleBrowser(t, s)
	b.signIn(r.token)
	badge := func(want string) {
		t.Helper()
		status, _, page := b.do("GET", "/notifications/badge", nil)
		require.Equal(t, 200, status, page)
		require.Contains(t, page, `data-unread="`+want+`"`)
	}
	badge("3")

	s.leave(r)
	s.deleteThird(r)
	badge("1")
	status, _, page := b.do("GET", "/notifications", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, "Kept news")
	require.NotContains(t, page, left.Title)
	require.NotContains(t, page, gone.Title)
	for _, n := range []notificationBody{left, gone} {
		status, _, _ = b.post("/notifications/"+n.ID+"/read", url.Values{})
		require.Equal(t, http.StatusNotFound, status)
	}

	s.comeBack(r)
	badge("2")
}

// TestCLIEventsTailOfProjectsOutOfReach: graphmill events tail, following
// a user's stream, prints no event of a project the user left: the server
// ends the stream, the tail opens it again, and only the events of the
// projects still in reach follow.
func TestCLIEventsTailOfProjectsOutOfReach(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := s.reachOfThree("notifications:read")
	project, second := uuid.MustParse(r.project), uuid.MustParse(r.second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, status, done := startTail(ctx, t, s.cliEnviron(t, r.token))
	lines := bufio.NewScanner(pr)
	next := func() float64 {
		t.Helper()
		require.True(t, lines.Scan(), "tail ended: %v", lines.Err())
		var e struct {
			Data struct {
				N float64 `json:"n"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &e), lines.Text())
		return e.Data.N
	}
	s.publish(events.TypeDocumentConverted, &second, nil, map[string]any{"n": 1})
	require.Equal(t, float64(1), next())

	s.leave(r)
	require.True(t, status.Scan(), "tail ended: %v", status.Err())
	require.Equal(t, "the server ended the event stream: opening it again", status.Text())
	go func() {
		for status.Scan() {
		}
	}()
	s.publish(events.TypeDocumentConverted, &second, nil, map[string]any{"n": 2})
	s.publish(events.TypeDocumentConverted, &project, nil, map[string]any{"n": 3})
	require.Equal(t, float64(3), next(), "nothing of the project left")
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.NoError(t, <-done)
}
