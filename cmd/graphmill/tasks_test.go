package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/task"
)

// createTask creates a task through the Go service API, as another domain
// would.
func (s *testServer) createTask(project, title, typ, sourceType string, metadata any) string {
	s.t.Helper()
	var t task.Task
	err := postgres.WithTx(context.Background(), s.m.db.pool, func(tx pgx.Tx) error {
		var err error
		t, err = s.m.tasks.Create(context.Background(), tx, task.CreateParams{
			ProjectID: uuid.MustParse(project), Title: title, Type: typ, Description: "check " + title,
			SourceType: sourceType, SourceID: "src-" + title, Metadata: metadata,
		})
		return err
	})
	require.NoError(s.t, err)
	return t.ID.String()
}

// newProject creates a project in org as the admin.
func (s *testServer) newProject(org, name string) string {
	s.t.Helper()
	var p idBody
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": name, "orgId": org}).Decode(s.t, &p)
	return p.ID
}

type taskBody struct {
	ID              string          `json:"id"`
	ProjectID       string          `json:"projectId"`
	Title           string          `json:"title"`
	Description     string          `json:"description"`
	Type            string          `json:"type"`
	Status          string          `json:"status"`
	ResolvedAt      *time.Time      `json:"resolvedAt"`
	ResolvedBy      string          `json:"resolvedBy"`
	ResolutionNotes string          `json:"resolutionNotes"`
	SourceType      string          `json:"sourceType"`
	SourceID        string          `json:"sourceId"`
	Metadata        json.RawMessage `json:"metadata"`
	CreatedAt       time.Time       `json:"createdAt"`
	UpdatedAt       time.Time       `json:"updatedAt"`
}

type taskList struct {
	Data  []taskBody `json:"data"`
	Total int        `json:"total"`
}

type taskCounts struct {
	Pending   int64 `json:"pending"`
	Accepted  int64 `json:"accepted"`
	Rejected  int64 `json:"rejected"`
	Cancelled int64 `json:"cancelled"`
}

func taskIDs(l taskList) []string {
	out := []string{}
	for _, t := range l.Data {
		out = append(out, t.ID)
	}
	return out
}

func (s *testServer) taskCounts(path, token string, headers ...header) taskCounts {
	s.t.Helper()
	var c taskCounts
	s.must(200, "GET", path, token, nil, headers...).Decode(s.t, &c)
	return c
}

func TestTaskAuth(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	hp := header{"X-Project-ID", project}
	id := s.createTask(project, "a", "review", "", nil)
	foreign := s.createTask(other, "b", "review", "", nil)

	_, viewer := s.newMember("viewer@example.com", []string{"tasks:read", "tasks:write"}, project, "viewer")
	_, reader := s.newMember("reader@example.com", []string{"tasks:read"}, project, "editor")
	_, noScope := s.newMember("noscope@example.com", []string{"documents:read"}, project, "editor")
	_, outsider := s.newUser("outsider@example.com", []string{"tasks:read", "tasks:write"}, "")

	routes := []struct{ method, path string }{
		{"GET", "/api/tasks"},
		{"GET", "/api/tasks/counts"},
		{"GET", "/api/tasks/all"},
		{"GET", "/api/tasks/all/counts"},
		{"GET", "/api/tasks/" + id},
		{"POST", "/api/tasks/" + id + "/resolve"},
		{"POST", "/api/tasks/" + id + "/cancel"},
	}
	for _, r := range routes {
		var body any
		if strings.HasSuffix(r.path, "/resolve") {
			body = map[string]any{"resolution": "accepted"}
		}
		s.must(401, r.method, r.path, "", body, hp)
		s.must(401, r.method, r.path, "gm_notatoken", body, hp)
		require.Contains(t, s.must(403, r.method, r.path, noScope, body, hp).Detail(t), "tasks:")
	}
	// Another project's task, an invisible project, a malformed id.
	for _, r := range routes[4:] {
		var body any
		if strings.HasSuffix(r.path, "/resolve") {
			body = map[string]any{"resolution": "accepted"}
		}
		s.must(404, r.method, strings.Replace(r.path, id, foreign, 1), s.admin, body, hp)
		s.must(404, r.method, r.path, outsider, body, hp)
		s.must(404, r.method, strings.Replace(r.path, id, "not-a-uuid", 1), s.admin, body, hp)
	}
	s.must(404, "GET", "/api/tasks", outsider, nil, hp)
	s.must(404, "GET", "/api/tasks/counts", outsider, nil, hp)
	// A mismatched X-Org-ID hides the project.
	s.must(404, "GET", "/api/tasks", s.admin, nil, hp, header{"X-Org-ID", uuid.NewString()})
	s.must(200, "GET", "/api/tasks", s.admin, nil, hp, header{"X-Org-ID", org})
	// No project at all.
	require.Contains(t, s.must(400, "GET", "/api/tasks", s.admin, nil).Detail(t), "X-Project-ID")
	// Reading is for viewers; resolving and cancelling need tasks:write
	// and the editor role.
	s.must(200, "GET", "/api/tasks/"+id, viewer, nil, hp)
	require.Contains(t, s.must(403, "POST", "/api/tasks/"+id+"/cancel", viewer, nil, hp).Detail(t), "editor")
	require.Contains(t, s.must(403, "POST", "/api/tasks/"+id+"/resolve", reader, map[string]any{"resolution": "accepted"}, hp).Detail(t), "tasks:write")
	require.Equal(t, "pending", s.getTask(id, reader, hp).Status, "nothing above changed the task")
	require.Equal(t, taskCounts{Pending: 1}, s.taskCounts("/api/tasks/counts", s.admin, hp))
}

// getTask reads {data: Task}.
func (s *testServer) getTask(id, token string, headers ...header) taskBody {
	s.t.Helper()
	var env struct {
		Data taskBody `json:"data"`
	}
	s.must(200, "GET", "/api/tasks/"+id, token, nil, headers...).Decode(s.t, &env)
	return env.Data
}

// taskAction resolves or cancels a task and returns {data: Task}.
func (s *testServer) taskAction(status int, id, action, token string, body any, headers ...header) (taskBody, response) {
	s.t.Helper()
	r := s.must(status, "POST", "/api/tasks/"+id+"/"+action, token, body, headers...)
	var env struct {
		Data taskBody `json:"data"`
	}
	if status == 200 {
		r.Decode(s.t, &env)
	}
	return env.Data, r
}

func TestTaskListFiltersAndCounts(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	hp := header{"X-Project-ID", project}
	var ids []string
	for i, typ := range []string{"review", "suggestion", "review", "suggestion", "review"} {
		ids = append(ids, s.createTask(project, "t"+string(rune('0'+i)), typ, "", map[string]any{"n": i}))
	}
	otherID := s.createTask(other, "elsewhere", "review", "", nil)
	s.taskAction(200, ids[0], "resolve", s.admin, map[string]any{"resolution": "accepted"}, hp)
	s.taskAction(200, ids[1], "resolve", s.admin, map[string]any{"resolution": "rejected"}, hp)
	s.taskAction(200, ids[2], "cancel", s.admin, nil, hp)

	var l taskList
	s.must(200, "GET", "/api/tasks", s.admin, nil, hp).Decode(t, &l)
	require.Equal(t, 5, l.Total)
	require.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, taskIDs(l), "newest first")
	require.JSONEq(t, `{"n": 4}`, string(l.Data[0].Metadata))
	require.Equal(t, "src-t4", l.Data[0].SourceID)
	require.Equal(t, "check t4", l.Data[0].Description)
	// The body has exactly the spec's envelope.
	require.ElementsMatch(t, []string{"data", "total"}, keys(s.must(200, "GET", "/api/tasks", s.admin, nil, hp).JSON(t)))

	s.must(200, "GET", "/api/tasks?status=pending", s.admin, nil, hp).Decode(t, &l)
	require.Equal(t, []string{ids[4], ids[3]}, taskIDs(l))
	s.must(200, "GET", "/api/tasks?type=review", s.admin, nil, hp).Decode(t, &l)
	require.Equal(t, []string{ids[4], ids[2], ids[0]}, taskIDs(l))
	s.must(200, "GET", "/api/tasks?type=review&status=cancelled", s.admin, nil, hp).Decode(t, &l)
	require.Equal(t, []string{ids[2]}, taskIDs(l))
	s.must(200, "GET", "/api/tasks?limit=2&offset=1", s.admin, nil, hp).Decode(t, &l)
	require.Equal(t, []string{ids[3], ids[2]}, taskIDs(l))
	require.Equal(t, 5, l.Total)
	s.must(200, "GET", "/api/tasks?limit=100", s.admin, nil, hp)
	// The projectId query parameter overrides the header.
	s.must(200, "GET", "/api/tasks?projectId="+other, s.admin, nil, hp).Decode(t, &l)
	require.Equal(t, []string{otherID}, taskIDs(l))
	require.Equal(t, otherID, s.getTask(otherID+"?projectId="+other, s.admin, hp).ID)

	// Bad input.
	require.Contains(t, s.must(400, "GET", "/api/tasks?status=done", s.admin, nil, hp).Detail(t), "status")
	require.Contains(t, s.must(400, "GET", "/api/tasks?limit=0", s.admin, nil, hp).Detail(t), "limit")
	require.Contains(t, s.must(400, "GET", "/api/tasks?limit=101", s.admin, nil, hp).Detail(t), "limit")
	require.Contains(t, s.must(400, "GET", "/api/tasks?offset=-1", s.admin, nil, hp).Detail(t), "offset")
	s.must(404, "GET", "/api/tasks?projectId=nope", s.admin, nil)

	require.Equal(t, taskCounts{Pending: 2, Accepted: 1, Rejected: 1, Cancelled: 1}, s.taskCounts("/api/tasks/counts", s.admin, hp))
	require.Equal(t, taskCounts{Pending: 1}, s.taskCounts("/api/tasks/counts?projectId="+other, s.admin, hp))
}

func keys(m map[string]any) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestTaskResolveAndCancel(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	editorID, editor := s.newMember("editor@example.com", []string{"tasks:read", "tasks:write"}, project, "editor")
	a := s.createTask(project, "a", "review", "", nil)
	b := s.createTask(project, "b", "review", "", nil)
	c := s.createTask(project, "c", "review", "", nil)

	// Bad resolutions change nothing.
	require.Contains(t, s.must(400, "POST", "/api/tasks/"+a+"/resolve", editor, map[string]any{"resolution": "maybe"}, hp).Detail(t), "accepted")
	require.Contains(t, s.must(400, "POST", "/api/tasks/"+a+"/resolve", editor, map[string]any{}, hp).Detail(t), "resolution")
	require.Contains(t, s.must(400, "POST", "/api/tasks/"+a+"/resolve", editor, map[string]any{"resolution": "cancelled"}, hp).Detail(t), "accepted")
	require.Contains(t, s.must(400, "POST", "/api/tasks/"+a+"/resolve", editor,
		map[string]any{"resolution": "accepted", "resolutionNotes": strings.Repeat("x", 10001)}, hp).Detail(t), "resolutionNotes")
	s.must(400, "POST", "/api/tasks/"+a+"/resolve", editor, map[string]any{"resolution": "accepted", "extra": 1}, hp)
	require.Equal(t, taskCounts{Pending: 3}, s.taskCounts("/api/tasks/counts", s.admin, hp))

	before := time.Now().Add(-time.Second)
	got, _ := s.taskAction(200, a, "resolve", editor, map[string]any{"resolution": "accepted", "resolutionNotes": "looks right"}, hp)
	require.Equal(t, "accepted", got.Status)
	require.Equal(t, editorID, got.ResolvedBy)
	require.Equal(t, "looks right", got.ResolutionNotes)
	require.NotNil(t, got.ResolvedAt)
	require.True(t, got.ResolvedAt.After(before))
	require.Equal(t, got, s.getTask(a, s.admin, hp), "stored as answered")

	got, _ = s.taskAction(200, b, "resolve", s.admin, map[string]any{"resolution": "rejected"}, hp)
	require.Equal(t, "rejected", got.Status)
	require.Empty(t, got.ResolutionNotes)

	got, _ = s.taskAction(200, c, "cancel", editor, nil, hp)
	require.Equal(t, "cancelled", got.Status)
	require.Nil(t, got.ResolvedAt, "a cancelled task was not resolved")
	require.Empty(t, got.ResolvedBy)
	require.Equal(t, taskCounts{Accepted: 1, Rejected: 1, Cancelled: 1}, s.taskCounts("/api/tasks/counts", s.admin, hp))

	// Only pending tasks move.
	for _, id := range []string{a, b, c} {
		_, r := s.taskAction(409, id, "cancel", editor, nil, hp)
		require.Equal(t, "failed_precondition", r.JSON(t)["code"])
		require.Contains(t, r.Detail(t), "only pending tasks can be cancelled")
		_, r = s.taskAction(409, id, "resolve", editor, map[string]any{"resolution": "rejected"}, hp)
		require.Equal(t, "failed_precondition", r.JSON(t)["code"])
		require.Contains(t, r.Detail(t), "only pending tasks can be resolved")
	}
	require.Equal(t, "accepted", s.getTask(a, s.admin, hp).Status)
	require.Equal(t, "looks right", s.getTask(a, s.admin, hp).ResolutionNotes)
	require.Equal(t, taskCounts{Accepted: 1, Rejected: 1, Cancelled: 1}, s.taskCounts("/api/tasks/counts", s.admin, hp))
}

// try sends a request from any goroutine: it reports failures instead of
// stopping the test.
func (s *testServer) try(method, path, token string, body any, headers ...header) (int, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.base+path, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for _, h := range headers {
		req.Header.Set(h.k, h.v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

// Resolving and cancelling the same task at the same moment: exactly one
// wins, the other gets 409, and the task ends as the winner left it.
func TestTaskConcurrentResolveAndCancel(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.createTask(project, "race", "review", "", nil)
	}
	type result struct{ resolve, cancel int }
	results := make([]result, n)
	errc := make(chan error, 2*n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			code, err := s.try("POST", "/api/tasks/"+id+"/resolve", s.admin, map[string]any{"resolution": "accepted"}, hp)
			results[i].resolve = code
			errc <- err
		}()
		go func() {
			defer wg.Done()
			<-start
			code, err := s.try("POST", "/api/tasks/"+id+"/cancel", s.admin, map[string]any{}, hp)
			results[i].cancel = code
			errc <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	var accepted, cancelled int64
	for i, r := range results {
		status := s.getTask(ids[i], s.admin, hp).Status
		switch {
		case r.resolve == 200 && r.cancel == 409:
			require.Equal(t, "accepted", status)
			accepted++
		case r.resolve == 409 && r.cancel == 200:
			require.Equal(t, "cancelled", status)
			cancelled++
		default:
			t.Fatalf("task %d: resolve %d, cancel %d: exactly one must win", i, r.resolve, r.cancel)
		}
	}
	require.Equal(t, taskCounts{Accepted: accepted, Cancelled: cancelled}, s.taskCounts("/api/tasks/counts", s.admin, hp))
}

// A domain's resolver runs in the resolving transaction: what it writes
// commits with the resolution, and its error undoes the resolution.
func TestTaskResolver(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	_, editor := s.newMember("editor@example.com", []string{"tasks:read", "tasks:write", "notifications:read"}, project, "editor")
	type call struct {
		id, status, resolution string
	}
	var mu sync.Mutex
	var calls []call
	s.m.tasks.RegisterResolver("test-source", func(ctx context.Context, tx pgx.Tx, tk task.Task, resolution string) error {
		mu.Lock()
		calls = append(calls, call{tk.ID.String(), tk.Status, resolution})
		mu.Unlock()
		var meta struct {
			Refuse bool `json:"refuse"`
		}
		if err := json.Unmarshal(tk.Metadata, &meta); err != nil {
			return err
		}
		// A write of the resolver's own, in the same transaction.
		if _, err := s.m.notifs.Notify(ctx, tx, *tk.ResolvedBy, notification.Params{Title: "resolved " + tk.Title, Message: resolution}); err != nil {
			return err
		}
		if meta.Refuse {
			return errs.New(errs.Conflict, "the suggested objects changed meanwhile")
		}
		return nil
	})
	require.Panics(t, func() {
		s.m.tasks.RegisterResolver("test-source", func(context.Context, pgx.Tx, task.Task, string) error { return nil })
	})
	ok := s.createTask(project, "ok", "suggestion", "test-source", map[string]any{"refuse": false})
	refused := s.createTask(project, "refused", "suggestion", "test-source", map[string]any{"refuse": true})
	plain := s.createTask(project, "plain", "review", "other-source", map[string]any{})

	s.taskAction(200, ok, "resolve", editor, map[string]any{"resolution": "rejected"}, hp)
	_, r := s.taskAction(409, refused, "resolve", editor, map[string]any{"resolution": "accepted"}, hp)
	require.Equal(t, "conflict", r.JSON(t)["code"])
	require.Contains(t, r.Detail(t), "changed meanwhile")
	require.Equal(t, "pending", s.getTask(refused, s.admin, hp).Status, "the resolver's error undid the resolution")
	s.taskAction(200, plain, "resolve", editor, map[string]any{"resolution": "accepted"}, hp)
	s.taskAction(200, refused, "cancel", editor, nil, hp)

	mu.Lock()
	require.Equal(t, []call{{ok, "rejected", "rejected"}, {refused, "accepted", "accepted"}}, calls,
		"called with the resolved task, only for its source type, not on cancel")
	mu.Unlock()
	// Only the committed resolution's notification exists.
	var l listBody
	s.must(200, "GET", "/api/notifications", editor, nil).Decode(t, &l)
	require.Len(t, l.Data, 1)
	require.Equal(t, "resolved ok", l.Data[0]["title"])
}

func TestTasksAcrossProjects(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	p1, org1 := s.defaultProject()
	p2 := s.newProject(org1, "second")
	p3 := s.newProject(org1, "third")
	var org2 idBody
	s.must(201, "POST", "/api/orgs", s.admin, map[string]any{"name": "Beta"}).Decode(t, &org2)
	p4 := s.newProject(org2.ID, "beta-one")
	t1 := s.createTask(p1, "one", "review", "", nil)
	t2 := s.createTask(p2, "two", "suggestion", "", nil)
	t3 := s.createTask(p3, "three", "review", "", nil)
	t4 := s.createTask(p4, "four", "review", "", nil)
	s.taskAction(200, t2, "resolve", s.admin, map[string]any{"resolution": "accepted"}, header{"X-Project-ID", p2})

	// A user who belongs to projects 1 (viewer) and 4 (editor) only.
	userID, user := s.newMember("u@example.com", []string{"tasks:read"}, p1, "viewer")
	s.addMember(p4, userID, "editor")
	// A project-scoped token of a user who belongs to projects 1 and 2.
	boundID, bound := s.newUser("b@example.com", []string{"tasks:read"}, p1)
	s.addMember(p1, boundID, "viewer")
	s.addMember(p2, boundID, "viewer")
	_, stranger := s.newUser("s@example.com", []string{"tasks:read"}, "")
	_, noScope := s.newUser("n@example.com", []string{"documents:read"}, "")

	var l taskList
	s.must(200, "GET", "/api/tasks/all", user, nil).Decode(t, &l)
	require.ElementsMatch(t, []string{t1, t4}, taskIDs(l))
	require.Equal(t, 2, l.Total)
	require.Equal(t, taskCounts{Pending: 2}, s.taskCounts("/api/tasks/all/counts", user))
	// The header project does not narrow "all".
	s.must(200, "GET", "/api/tasks/all", user, nil, header{"X-Project-ID", p1}).Decode(t, &l)
	require.Len(t, l.Data, 2)

	// The superadmin (and organization owner) sees every project.
	s.must(200, "GET", "/api/tasks/all", s.admin, nil).Decode(t, &l)
	require.Equal(t, []string{t4, t3, t2, t1}, taskIDs(l))
	require.Equal(t, taskCounts{Pending: 3, Accepted: 1}, s.taskCounts("/api/tasks/all/counts", s.admin))
	s.must(200, "GET", "/api/tasks/all?status=pending&type=review&limit=1", s.admin, nil).Decode(t, &l)
	require.Equal(t, []string{t4}, taskIDs(l))
	require.Equal(t, 3, l.Total)

	// X-Org-ID narrows to one organization; a foreign one is 404.
	s.must(200, "GET", "/api/tasks/all", s.admin, nil, header{"X-Org-ID", org1}).Decode(t, &l)
	require.Equal(t, []string{t3, t2, t1}, taskIDs(l))
	require.Equal(t, taskCounts{Pending: 1}, s.taskCounts("/api/tasks/all/counts", user, header{"X-Org-ID", org2.ID}))
	s.must(404, "GET", "/api/tasks/all", user, nil, header{"X-Org-ID", uuid.NewString()})
	s.must(404, "GET", "/api/tasks/all/counts", stranger, nil, header{"X-Org-ID", org1})
	s.must(404, "GET", "/api/tasks/all", user, nil, header{"X-Org-ID", "nope"})

	// A project-scoped token sees its project only.
	s.must(200, "GET", "/api/tasks/all", bound, nil).Decode(t, &l)
	require.Equal(t, []string{t1}, taskIDs(l))
	s.must(404, "GET", "/api/tasks/all", bound, nil, header{"X-Org-ID", org2.ID})
	// Someone in no project sees nothing.
	s.must(200, "GET", "/api/tasks/all", stranger, nil).Decode(t, &l)
	require.Empty(t, l.Data)
	require.Equal(t, taskCounts{}, s.taskCounts("/api/tasks/all/counts", stranger))

	s.must(401, "GET", "/api/tasks/all", "", nil)
	s.must(403, "GET", "/api/tasks/all/counts", noScope, nil)
	require.Contains(t, s.must(400, "GET", "/api/tasks/all?limit=101", s.admin, nil).Detail(t), "limit")
	require.Contains(t, s.must(400, "GET", "/api/tasks/all?status=open", s.admin, nil).Detail(t), "status")
}
