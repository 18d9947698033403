package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// clickUpFakeKey is the API key the ClickUp fake accepts.
const clickUpFakeKey = "pk_77_CLICKUPSECRET"

// clickUpTask is a task of the ClickUp fake.
type clickUpTask struct {
	ID, Name, Desc string
	Updated        int64
	Archived       bool
}

// clickUpFake speaks the ClickUp API v2 (hierarchy, tasks, two per page)
// and v3 (docs) paths the connector uses, for one workspace 9001 with a
// space s1 holding a folderless list l1 of tasks, and a doc d1 of one
// page p1.
type clickUpFake struct {
	srv   *httptest.Server
	mu    sync.Mutex
	tasks []*clickUpTask
	page  string // content of the doc's page
}

func newClickUpFake(t testing.TB, tasks ...*clickUpTask) *clickUpFake {
	t.Helper()
	f := &clickUpFake{tasks: tasks, page: "The handbook of Acme Corporation, written by Ana Lima in Lisbon, describes the saffronite review."}
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	archived := func(r *http.Request) bool { return r.URL.Query().Get("archived") == "true" }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/team", func(w http.ResponseWriter, _ *http.Request) {
		write(w, map[string]any{"teams": []any{map[string]any{"id": "9001", "name": "Acme", "color": "#000", "members": []any{}}}})
	})
	// one answers a hierarchy level of one unarchived node.
	one := func(key, id, name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			nodes := []any{}
			if !archived(r) {
				nodes = append(nodes, map[string]any{"id": id, "name": name, "archived": false})
			}
			write(w, map[string]any{key: nodes})
		}
	}
	mux.HandleFunc("GET /api/v2/team/9001/space", one("spaces", "s1", "Engineering"))
	mux.HandleFunc("GET /api/v2/space/s1/folder", func(w http.ResponseWriter, _ *http.Request) {
		write(w, map[string]any{"folders": []any{}})
	})
	mux.HandleFunc("GET /api/v2/space/s1/list", one("lists", "l1", "Sprint"))
	mux.HandleFunc("GET /api/v2/list/l1/task", func(w http.ResponseWriter, r *http.Request) {
		var match []*clickUpTask
		for _, t := range f.tasks {
			if t.Archived == archived(r) {
				match = append(match, t)
			}
		}
		n, _ := strconv.Atoi(r.URL.Query().Get("page"))
		from := min(2*n, len(match))
		to := min(from+2, len(match))
		out := []any{}
		for _, t := range match[from:to] {
			out = append(out, map[string]any{
				"id": t.ID, "name": t.Name, "text_content": t.Desc, "description": t.Desc, "markdown_description": t.Desc,
				"status":       map[string]any{"status": "open", "color": "#d3d3d3", "type": "open"},
				"date_created": "1690000000000", "date_updated": strconv.FormatInt(t.Updated, 10),
				"archived": t.Archived, "assignees": []any{}, "tags": []any{},
				"list": map[string]any{"id": "l1", "name": "Sprint"}, "url": "https://app.clickup.com/t/" + t.ID,
			})
		}
		write(w, map[string]any{"tasks": out, "last_page": to >= len(match)})
	})
	mux.HandleFunc("GET /api/v3/workspaces/9001/docs", func(w http.ResponseWriter, r *http.Request) {
		docs := []any{}
		if !archived(r) && r.URL.Query().Get("deleted") != "true" {
			docs = append(docs, map[string]any{
				"id": "d1", "name": "Handbook", "type": 1, "date_created": 1690000000000,
				"parent": map[string]any{"id": "s1", "type": 4}, "workspace_id": "9001", "deleted": false, "archived": false,
			})
		}
		write(w, map[string]any{"docs": docs})
	})
	mux.HandleFunc("GET /api/v3/workspaces/9001/docs/d1/pages", func(w http.ResponseWriter, _ *http.Request) {
		write(w, []any{map[string]any{
			"id": "p1", "doc_id": "d1", "workspace_id": "9001", "name": "Handbook", "content": f.page,
			"date_created": 1690000000000, "date_updated": 1700000100000, "archived": false, "deleted": false, "pages": []any{},
		}})
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != clickUpFakeKey {
			w.WriteHeader(http.StatusUnauthorized)
			write(w, map[string]any{"err": "Token invalid", "ECODE": "OAUTH_025"})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// clickUpWorkspace starts the ClickUp fake with three tasks and a server
// reaching it, and creates the integration "cu" of its workspace in the
// default project (extraction threshold 0).
func clickUpWorkspace(t *testing.T) (*clickUpFake, *testServer, string, *syncIntegration) {
	t.Helper()
	return clickUpWorkspaceOf(t,
		&clickUpTask{ID: "t1", Name: "Fix login", Desc: "Maria Gonzalez of Northwind Labs in Berlin reported the cobaltine login failure.", Updated: 1700000001000},
		&clickUpTask{ID: "t2", Name: "Add search", Desc: "David Chen of Acme Corporation in Toronto asked for search.", Updated: 1700000002000},
		&clickUpTask{ID: "t3", Name: "Write tests", Desc: "Priya Raman of Contoso Systems in Madrid covers the API.", Updated: 1700000003000},
	)
}

// clickUpWorkspaceOf is clickUpWorkspace with the fake's tasks.
func clickUpWorkspaceOf(t *testing.T, tasks ...*clickUpTask) (*clickUpFake, *testServer, string, *syncIntegration) {
	t.Helper()
	fake := newClickUpFake(t, tasks...)
	s := mainServer(t, func(m *Main) {
		m.ClickUpBaseURL = fake.srv.URL
		m.Config.EgressAllow = []string{"127.0.0.0/8"}
	})
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	return fake, s, project, s.createIntegration(project, "cu", "clickup", map[string]any{"api_key": clickUpFakeKey, "workspace_id": "9001"})
}

// TestIntegrationSyncClickUp: the tasks and docs of a ClickUp workspace
// (a fake speaking its API), synced through the whole server, become
// parsed, extracted, searchable documents; a re-sync of the unchanged
// workspace moves nothing; one archived task deletes its document and
// nothing else moves.
func TestIntegrationSyncClickUp(t *testing.T) {
	t.Parallel()
	fake, s, _, in := clickUpWorkspace(t)

	docs := in.firstSync(4, "cobaltine")
	require.Equal(t, "Fix login", docs["task/t1"].SourceTitle)
	require.Contains(t, docs, "doc/d1/p1")
	in.requireFound("saffronite", docs["doc/d1/p1"].ID)

	before := in.resyncUnchanged()

	fake.mu.Lock()
	fake.tasks[2].Archived = true
	fake.mu.Unlock()
	require.Equal(t, syncCounts{Total: 3, Processed: 3, Unchanged: 3, Deleted: 1}, in.sync(nil))
	in.requireOnlyMoved(before, nil, []string{"task/t3"})
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM documents WHERE id = $1`, docs["task/t3"].ID))
}

// TestIntegrationSyncClickUpNarrowedKeepsOthers: a sync narrowed with
// source_types [tasks] lists no docs; it deletes none of the doc pages
// still at the source.
func TestIntegrationSyncClickUpNarrowedKeepsOthers(t *testing.T) {
	t.Parallel()
	_, _, _, in := clickUpWorkspace(t)
	docs := in.firstSync(4, "cobaltine")
	require.Contains(t, docs, "doc/d1/p1")
	c := in.sync(map[string]any{"source_types": []string{"tasks"}})
	require.Zero(t, c.Deleted, "a tasks-only sync deleted the doc pages still at the source: %+v", c)
}

// TestIntegrationSyncClickUpBadSourceType: an unknown source_types value
// is refused at the API (400 naming the allowed values); no sync is
// queued and the integration's status stays active.
func TestIntegrationSyncClickUpBadSourceType(t *testing.T) {
	t.Parallel()
	_, s, project, in := clickUpWorkspace(t)
	r := s.must(400, "POST", "/api/integrations/"+in.name+"/sync", s.admin, map[string]any{"source_types": []string{"tasks", "bogus"}}, header{"X-Project-ID", project})
	require.Contains(t, r.Detail(t), `"bogus"`)
	require.Contains(t, r.Detail(t), "docs, tasks")
	var list struct {
		Stats struct {
			Total int `json:"total"`
		} `json:"stats"`
	}
	s.must(200, "GET", "/api/superadmin/sync-jobs?projectId="+project, s.admin, nil).Decode(t, &list)
	require.Zero(t, list.Stats.Total, "a refused sync queued a job")
	g := s.must(200, "GET", "/api/integrations/cu", s.admin, nil, header{"X-Project-ID", project}).JSON(t)
	require.Equal(t, "active", g["status"])
}
