package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
)

type activityItem struct {
	ID              string    `json:"id"`
	ResourceType    string    `json:"resourceType"`
	ResourceID      string    `json:"resourceId"`
	ResourceName    string    `json:"resourceName"`
	ResourceSubtype string    `json:"resourceSubtype"`
	ActionType      string    `json:"actionType"`
	AccessedAt      time.Time `json:"accessedAt"`
	ProjectID       string    `json:"projectId"`
}

type activityList struct {
	Data []activityItem `json:"data"`
}

func (s *testServer) record(token, project string, body map[string]any, headers ...header) activityItem {
	s.t.Helper()
	var it activityItem
	s.must(200, "POST", "/api/user-activity/record?projectId="+project, token, body, headers...).Decode(s.t, &it)
	return it
}

func (s *testServer) recent(token, path string, headers ...header) []activityItem {
	s.t.Helper()
	var l activityList
	s.must(200, "GET", path, token, nil, headers...).Decode(s.t, &l)
	require.NotNil(s.t, l.Data)
	return l.Data
}

// viewerOfTwoProjects adds a viewer with scopes to the default project and
// to a second one of its organization.
func (s *testServer) viewerOfTwoProjects(scopes ...string) (project, second, userID, token string) {
	s.t.Helper()
	project, org := s.defaultProject()
	second = s.newProject(org, "second")
	userID, token = s.newMember("u@example.com", scopes, project, "viewer")
	s.addMember(second, userID, "viewer")
	return project, second, userID, token
}

func resources(items []activityItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.ResourceType+"/"+it.ResourceID)
	}
	return out
}

func TestActivityAuth(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	_, user := s.newMember("u@example.com", []string{"user-activity:read", "user-activity:write"}, project, "viewer")
	_, reader := s.newMember("r@example.com", []string{"user-activity:read"}, project, "viewer")
	_, noScope := s.newMember("n@example.com", []string{"documents:read"}, project, "viewer")
	_, outsider := s.newUser("o@example.com", []string{"user-activity:read", "user-activity:write"}, "")
	body := map[string]any{"resourceType": "report", "resourceId": "d1", "actionType": "view"}
	s.record(user, project, body)

	routes := []struct {
		method, path string
		body         any
		write        bool
	}{
		{"POST", "/api/user-activity/record?projectId=" + project, body, true},
		{"GET", "/api/user-activity/recent", nil, false},
		{"GET", "/api/user-activity/recent/report", nil, false},
		{"DELETE", "/api/user-activity/recent", nil, true},
		{"DELETE", "/api/user-activity/recent/report/d1", nil, true},
	}
	for _, r := range routes {
		s.must(401, r.method, r.path, "", r.body)
		require.Contains(t, s.must(403, r.method, r.path, noScope, r.body).Detail(t), "user-activity:")
		if r.write {
			require.Contains(t, s.must(403, r.method, r.path, reader, r.body).Detail(t), "user-activity:write")
		}
		// A project the caller cannot see, or a foreign organization.
		s.must(404, r.method, r.path, outsider, r.body, header{"X-Project-ID", project})
		s.must(404, r.method, r.path, outsider, r.body, header{"X-Org-ID", org})
	}
	s.must(404, "POST", "/api/user-activity/record?projectId="+project, outsider, body)
	s.must(404, "POST", "/api/user-activity/record?projectId="+uuid.NewString(), user, body)
	s.must(404, "GET", "/api/user-activity/recent", user, nil, header{"X-Project-ID", project}, header{"X-Org-ID", uuid.NewString()})
	// Another user's item cannot be removed; it is not theirs.
	s.must(404, "DELETE", "/api/user-activity/recent/report/d1", s.admin, nil)
	require.Len(t, s.recent(user, "/api/user-activity/recent"), 1, "nothing above removed it")
}

func TestActivityRecordAndList(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, second, _, user := s.viewerOfTwoProjects("user-activity:read", "user-activity:write")
	_, other := s.newMember("o@example.com", []string{"user-activity:read", "user-activity:write"}, project, "viewer")

	first := s.record(user, project, map[string]any{"resourceType": "report", "resourceId": "d1", "actionType": "view", "resourceName": "Report"})
	require.Equal(t, project, first.ProjectID)
	require.Equal(t, "Report", first.ResourceName)
	s.record(user, project, map[string]any{"resourceType": "query", "resourceId": "o1", "actionType": "edit", "resourceSubtype": "Person"})
	s.record(user, second, map[string]any{"resourceType": "report", "resourceId": "d2", "actionType": "view"})
	s.record(other, project, map[string]any{"resourceType": "report", "resourceId": "d9", "actionType": "view"})
	require.Equal(t, []string{"report/d2", "query/o1", "report/d1"}, resources(s.recent(user, "/api/user-activity/recent")))

	// Recording the same resource again moves it to the top, no duplicate,
	// with the new action; the name is kept when not given again.
	again := s.record(user, project, map[string]any{"resourceType": "report", "resourceId": "d1", "actionType": "edit"})
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, "edit", again.ActionType)
	require.Equal(t, "Report", again.ResourceName)
	require.True(t, again.AccessedAt.After(first.AccessedAt))
	items := s.recent(user, "/api/user-activity/recent")
	require.Equal(t, []string{"report/d1", "report/d2", "query/o1"}, resources(items))
	require.Equal(t, "Person", items[2].ResourceSubtype)

	// Per type, per project in context, limits.
	require.Equal(t, []string{"report/d1", "report/d2"}, resources(s.recent(user, "/api/user-activity/recent/report")))
	require.Equal(t, []string{"query/o1"}, resources(s.recent(user, "/api/user-activity/recent/query")))
	require.Empty(t, s.recent(user, "/api/user-activity/recent/dashboard"))
	require.Equal(t, []string{"report/d1", "query/o1"}, resources(s.recent(user, "/api/user-activity/recent", header{"X-Project-ID", project})))
	require.Equal(t, []string{"report/d1"}, resources(s.recent(user, "/api/user-activity/recent?limit=1")))
	require.Equal(t, []string{"report/d1"}, resources(s.recent(user, "/api/user-activity/recent/report?limit=1")))
	for i := range 25 {
		s.record(user, project, map[string]any{"resourceType": "dashboard", "resourceId": fmt.Sprintf("a%02d", i), "actionType": "view"})
	}
	require.Len(t, s.recent(user, "/api/user-activity/recent"), 20, "limit defaults to 20")
	require.Len(t, s.recent(user, "/api/user-activity/recent?limit=100"), 28)
	require.Equal(t, "dashboard/a24", resources(s.recent(user, "/api/user-activity/recent/dashboard"))[0])

	// Bad input.
	for _, q := range []string{"limit=101", "limit=0", "limit=x"} {
		require.Contains(t, s.must(400, "GET", "/api/user-activity/recent?"+q, user, nil).Detail(t), "limit")
		require.Contains(t, s.must(400, "GET", "/api/user-activity/recent/report?"+q, user, nil).Detail(t), "limit")
	}
	require.Contains(t, s.must(400, "GET", "/api/user-activity/recent/bad%20type", user, nil).Detail(t), "resourceType")
	ok := map[string]any{"resourceType": "report", "resourceId": "d1", "actionType": "view"}
	require.Contains(t, s.must(400, "POST", "/api/user-activity/record", user, ok).Detail(t), "projectId")
	require.Contains(t, s.must(400, "POST", "/api/user-activity/record", user, ok, header{"X-Project-ID", project}).Detail(t), "projectId")
	for _, missing := range []string{"resourceType", "resourceId", "actionType"} {
		b := map[string]any{}
		for k, v := range ok {
			if k != missing {
				b[k] = v
			}
		}
		require.Contains(t, s.must(400, "POST", "/api/user-activity/record?projectId="+project, user, b).Detail(t), missing)
	}
	for field, value := range map[string]string{
		"resourceType": "a b", "actionType": "", "resourceId": "  ", "resourceName": strings.Repeat("n", 501), "resourceSubtype": strings.Repeat("s", 201),
	} {
		b := map[string]any{"resourceType": "report", "resourceId": "d1", "actionType": "view"}
		b[field] = value
		require.Contains(t, s.must(400, "POST", "/api/user-activity/record?projectId="+project, user, b).Detail(t), field)
	}
	s.must(400, "POST", "/api/user-activity/record?projectId="+project, user, map[string]any{"resourceType": "report", "resourceId": "d1", "actionType": "view", "extra": true})

	// Remove one item (in the right project), then 404.
	s.must(404, "DELETE", "/api/user-activity/recent/report/d2", user, nil, header{"X-Project-ID", project})
	s.must(204, "DELETE", "/api/user-activity/recent/report/d2", user, nil)
	s.must(404, "DELETE", "/api/user-activity/recent/report/d2", user, nil)
	require.Equal(t, []string{"report/d1"}, resources(s.recent(user, "/api/user-activity/recent/report")))

	// Clearing in a project context clears that project's items; without
	// one, the caller's whole history, never another user's.
	s.record(user, second, map[string]any{"resourceType": "report", "resourceId": "d3", "actionType": "view"})
	s.must(204, "DELETE", "/api/user-activity/recent", user, nil, header{"X-Project-ID", project})
	require.Equal(t, []string{"report/d3"}, resources(s.recent(user, "/api/user-activity/recent")))
	s.must(204, "DELETE", "/api/user-activity/recent", user, nil)
	require.Empty(t, s.recent(user, "/api/user-activity/recent"))
	require.Equal(t, []string{"report/d9"}, resources(s.recent(other, "/api/user-activity/recent")))
}

// A user keeps the 500 most recent items; recording more trims the oldest.
func TestActivityRetention(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	userID, user := s.newMember("u@example.com", []string{"user-activity:read", "user-activity:write"}, project, "viewer")
	otherID, other := s.newMember("o@example.com", []string{"user-activity:read", "user-activity:write"}, project, "viewer")
	s.record(other, project, map[string]any{"resourceType": "report", "resourceId": "theirs", "actionType": "view"})
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	_, err := s.m.db.pool.Exec(ctx, `INSERT INTO user_activity (id, user_id, project_id, resource_type, resource_id, action_type, accessed_at)
		SELECT gen_random_uuid(), $1, $2, 'report', 'd' || i, 'view', $3::timestamptz + i * interval '1 second'
		FROM generate_series(1, 500) AS i`, userID, project, base)
	require.NoError(t, err)
	count := func(user string) int {
		var n int
		require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT count(*) FROM user_activity WHERE user_id = $1`, user).Scan(&n))
		return n
	}
	require.Equal(t, 500, count(userID))

	s.record(user, project, map[string]any{"resourceType": "report", "resourceId": "new", "actionType": "view"})
	require.Equal(t, 500, count(userID))
	var oldest int
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT count(*) FROM user_activity WHERE user_id = $1 AND resource_id = 'd1'`, userID).Scan(&oldest))
	require.Zero(t, oldest, "the oldest item was trimmed")
	// Re-recording an item adds nothing, so nothing is trimmed.
	s.record(user, project, map[string]any{"resourceType": "report", "resourceId": "d2", "actionType": "view"})
	require.Equal(t, 500, count(userID))
	require.Equal(t, []string{"report/d2", "report/new", "report/d500"}, resources(s.recent(user, "/api/user-activity/recent?limit=3")))
	require.Equal(t, 1, count(otherID), "another user's history is untouched")
}

// TestActivityOfDeletedDocument: recording the use of a document that
// does not exist (deleted, another project's, never there) is a 404 and
// records nothing; a recording racing the document's deletion either
// commits before it or sees it gone, in its own transaction.
func TestActivityOfDeletedDocument(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, second, _, user := s.viewerOfTwoProjects("user-activity:read", "user-activity:write")
	hp := header{"X-Project-ID", project}
	upload := func(name string) string {
		var d docBody
		s.uploadFile(s.admin, project, name, "text/markdown", []byte("# "+name+"\n\nSome text about "+name+".\n")).Decode(t, &d)
		require.NotEmpty(t, d.ID)
		return d.ID
	}
	doc := upload("kept.md")
	rec := func(project, id string) response {
		return s.do("POST", "/api/user-activity/record?projectId="+project, user, map[string]any{"resourceType": "document", "resourceId": id, "actionType": "view"})
	}
	require.Equal(t, 200, rec(project, doc).Status)

	gone := upload("gone.md")
	s.must(204, "DELETE", "/api/documents/"+gone, s.admin, nil, hp)
	for _, r := range []struct{ project, id string }{{project, gone}, {second, doc}, {project, uuid.NewString()}, {project, "not-an-id"}} {
		res := rec(r.project, r.id)
		require.Equal(t, 404, res.Status, r.id)
		require.Equal(t, "resourceId: no document with this id in the project", res.Detail(t))
	}
	require.Equal(t, []string{"document/" + doc}, resources(s.recent(user, "/api/user-activity/recent")))

	// The deletion commits while the recording waits on the document.
	late := upload("late.md")
	s.waitDocument(project, late) // its jobs are done: nothing else waits on it
	ctx := context.Background()
	del := pgtest.Hold(t, s.pool(), `DELETE FROM documents WHERE id = $1`, late)
	done := make(chan response, 1)
	go func() { done <- rec(project, late) }()
	require.Eventually(t, func() bool {
		var n int
		err := s.pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%FROM documents%FOR KEY SHARE%'`).Scan(&n)
		return err == nil && n == 1
	}, 30*time.Second, 10*time.Millisecond, "the recording waits on the document")
	require.NoError(t, del.Commit(ctx))
	require.Equal(t, 404, (<-done).Status)
	require.Equal(t, []string{"document/" + doc}, resources(s.recent(user, "/api/user-activity/recent")))

	// Free resource types are not checked.
	s.record(user, project, map[string]any{"resourceType": "report", "resourceId": uuid.NewString(), "actionType": "view"})
}

// TestActivityDocumentIDSpelling: a document's id is recorded in its
// canonical spelling, and the item is removed by any spelling the
// recording accepted (the one the client recorded it with, say).
func TestActivityDocumentIDSpelling(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _, _, user := s.viewerOfTwoProjects("user-activity:read", "user-activity:write")
	var d docBody
	s.uploadFile(s.admin, project, "spelt.md", "text/markdown", []byte("# spelt\n\nSome text.\n")).Decode(t, &d)
	upper := strings.ToUpper(d.ID)
	it := s.record(user, project, map[string]any{"resourceType": "document", "resourceId": upper, "actionType": "view"})
	require.Equal(t, d.ID, it.ResourceID)
	s.must(204, "DELETE", "/api/user-activity/recent/document/"+upper, user, nil)
	require.Empty(t, s.recent(user, "/api/user-activity/recent"))

	s.record(user, project, map[string]any{"resourceType": "document", "resourceId": "urn:uuid:" + d.ID, "actionType": "view"})
	s.must(204, "DELETE", "/api/user-activity/recent/document/"+d.ID, user, nil)
	require.Empty(t, s.recent(user, "/api/user-activity/recent"))
}

// TestActivityOfDeletedResources: the resources Graphmill owns (documents,
// graph objects, agents, chat sessions) are recorded only while they
// exist, in the recorder's project (a chat session: the recorder's own),
// and deleting one removes every user's item of it in the deletion's
// transaction; free resource types are neither checked nor touched.
func TestActivityOfDeletedResources(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, second, _, user := s.viewerOfTwoProjects("user-activity:read", "user-activity:write", "chat:use")
	_, other := s.newMember("o@example.com", []string{"user-activity:read", "user-activity:write", "chat:use"}, project, "viewer")
	hp := header{"X-Project-ID", project}
	rec := func(token, project, typ, id string) response {
		return s.do("POST", "/api/user-activity/record?projectId="+project, token, map[string]any{"resourceType": typ, "resourceId": id, "actionType": "view"})
	}

	var d docBody
	s.uploadFile(s.admin, project, "doc.md", "text/markdown", []byte("# doc\n\nSome text.\n")).Decode(t, &d)
	object := s.embObject(project, "Person", "Ada", map[string]any{})
	agent := s.agentCreate(s.admin, project, map[string]any{"name": "a", "instructions": "i", "tools": []string{}})
	session := s.chatSession(user, project)
	otherSession := s.chatSession(other, project)
	kept := s.embObject(project, "Person", "Kept", map[string]any{})

	// Unknown, another project's, another user's session, not an id: 404.
	foreignObject := s.embObject(second, "Person", "Far", map[string]any{})
	for _, c := range []struct{ project, typ, id, detail string }{
		{project, "graph-object", uuid.NewString(), "resourceId: no graph object with this id in the project"},
		{project, "graph-object", foreignObject, "resourceId: no graph object with this id in the project"},
		{second, "graph-object", object, "resourceId: no graph object with this id in the project"},
		{project, "graph-object", "o1", "resourceId: no graph object with this id in the project"},
		{project, "agent", uuid.NewString(), "resourceId: no agent with this id in the project"},
		{second, "agent", agent, "resourceId: no agent with this id in the project"},
		{project, "chat-session", uuid.NewString(), "resourceId: no chat session of yours with this id in the project"},
		{project, "chat-session", otherSession, "resourceId: no chat session of yours with this id in the project"},
		{second, "chat-session", session, "resourceId: no chat session of yours with this id in the project"},
	} {
		res := rec(user, c.project, c.typ, c.id)
		require.Equal(t, 404, res.Status, c)
		require.Equal(t, c.detail, res.Detail(t), c)
	}
	require.Empty(t, s.recent(user, "/api/user-activity/recent"))

	// Both users record each resource (the other user their own session);
	// an upper-case id is stored canonically.
	for _, token := range []string{user, other} {
		require.Equal(t, 200, rec(token, project, "document", d.ID).Status)
		require.Equal(t, 200, rec(token, project, "graph-object", strings.ToUpper(object)).Status)
		require.Equal(t, 200, rec(token, project, "graph-object", kept).Status)
		require.Equal(t, 200, rec(token, project, "agent", agent).Status)
		require.Equal(t, 200, rec(token, project, "report", object).Status) // free type, same id
	}
	require.Equal(t, 200, rec(user, project, "chat-session", session).Status)
	require.Equal(t, 200, rec(other, project, "chat-session", otherSession).Status)
	require.Len(t, s.recent(user, "/api/user-activity/recent"), 6)

	s.must(204, "DELETE", "/api/documents/"+d.ID, s.admin, nil, hp)
	s.must(204, "DELETE", "/api/graph/objects/"+object, s.admin, nil, hp)
	s.must(204, "DELETE", "/api/agents/"+agent, s.admin, nil, hp)
	s.must(204, "DELETE", "/api/chat/sessions/"+session, user, nil, hp)
	require.Equal(t, []string{"report/" + object, "graph-object/" + kept}, resources(s.recent(user, "/api/user-activity/recent")))
	require.Equal(t, []string{"chat-session/" + otherSession, "report/" + object, "graph-object/" + kept},
		resources(s.recent(other, "/api/user-activity/recent")))

	// A deleted object is not recorded again.
	require.Equal(t, 404, rec(user, project, "graph-object", object).Status)
	require.Equal(t, 404, rec(user, project, "agent", agent).Status)
	require.Equal(t, 404, rec(user, project, "chat-session", session).Status)
}

// TestActivityRacesObjectDeletion: a graph object's deletion is an update
// (deleted_at), so the recording's hold is a share lock, not a key-share
// one: a recording waits for a deletion in progress and then finds the
// object gone; a deletion waits for a recording in progress and then
// removes its item.
func TestActivityRacesObjectDeletion(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _, userID, user := s.viewerOfTwoProjects("user-activity:read", "user-activity:write")
	hp := header{"X-Project-ID", project}
	ctx := context.Background()
	pool := s.pool()
	waiting := func() bool { return pgtest.LockWaits(t, pool) == 1 }
	rec := func(id string) response {
		return s.do("POST", "/api/user-activity/record?projectId="+project, user, map[string]any{"resourceType": "graph-object", "resourceId": id, "actionType": "view"})
	}

	// The deletion first: the recording waits, then 404.
	first := s.embObject(project, "Person", "First", map[string]any{})
	del := pgtest.Hold(t, pool, `UPDATE graph_objects SET deleted_at = now() WHERE id = $1`, first)
	done := make(chan response, 1)
	go func() { done <- rec(first) }()
	require.Eventually(t, waiting, 30*time.Second, 10*time.Millisecond, "the recording waits on the object")
	require.NoError(t, del.Commit(ctx))
	require.Equal(t, 404, (<-done).Status)

	// The recording first: the deletion waits, then removes the item.
	second := s.embObject(project, "Person", "Second", map[string]any{})
	recording := pgtest.Hold(t, pool, `SELECT 1 FROM graph_objects WHERE id = $1 FOR SHARE`, second)
	_, err := recording.Exec(ctx, `INSERT INTO user_activity (id, user_id, project_id, resource_type, resource_id, action_type, accessed_at)
		VALUES (gen_random_uuid(), $1, $2, 'graph-object', $3, 'view', now())`, userID, project, second)
	require.NoError(t, err)
	deleted := make(chan response, 1)
	go func() { deleted <- s.do("DELETE", "/api/graph/objects/"+second, s.admin, nil, hp) }()
	require.Eventually(t, waiting, 30*time.Second, 10*time.Millisecond, "the deletion waits on the recording")
	require.NoError(t, recording.Commit(ctx))
	require.Equal(t, 204, (<-deleted).Status)
	require.Empty(t, s.recent(user, "/api/user-activity/recent"))
}
