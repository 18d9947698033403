package clickup_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const testKey = "pk_4242_SECRETKEYVALUE"

// fakeClickUp speaks the paths, parameters, shapes and pagination of the
// ClickUp API v2 (hierarchy, tasks) and v3 (docs) that the connector uses.
type fakeClickUp struct {
	mu       sync.Mutex
	srv      *httptest.Server
	taskPage int // tasks per page; ClickUp's is 100
	teams    []node
	spaces   map[string][]node // team id -> spaces
	folders  map[string][]node // space id -> folders
	lists    map[string][]node // folder or space (folderless) id -> lists
	tasks    map[string][]*fakeTask
	docs     map[string][]*fakeDoc // team id -> docs
	requests []string              // path?query of every authorised request
	status   map[string]int        // path -> status to answer instead
	// intercept, when set, may answer a request itself (true).
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

type node struct {
	ID, Name string
	Archived bool
}

type fakeTask struct {
	ID, Name, Desc, Status, Assignee string
	Updated                          int64
	Archived                         bool
}

type fakeDoc struct {
	ID, Name, ParentID string
	ParentType         int
	Archived, Deleted  bool
	Pages              []*fakePage
}

type fakePage struct {
	ID, Name, Content string
	Updated           int64
	Archived          bool
	Pages             []*fakePage
}

// newFakeClickUp starts the fake with two workspaces:
//
//	9001 Acme: space s1 (folder f1: list l1 with t1 t2 t3; folderless l2: t4),
//	           space s2 (folderless l3: t5);
//	           docs d1 (in s1; pages p1 > p2) and d2 (in list l3; page p3)
//	9002 Other: space s9 (l9: t9); doc d9 (page p9)
func newFakeClickUp(t *testing.T) *fakeClickUp {
	t.Helper()
	f := &fakeClickUp{
		taskPage: 2,
		teams:    []node{{ID: "9001", Name: "Acme"}, {ID: "9002", Name: "Other"}},
		spaces: map[string][]node{
			"9001": {{ID: "s1", Name: "Engineering"}, {ID: "s2", Name: "Marketing"}},
			"9002": {{ID: "s9", Name: "Elsewhere"}},
		},
		folders: map[string][]node{"s1": {{ID: "f1", Name: "Backend"}}},
		lists: map[string][]node{
			"f1": {{ID: "l1", Name: "Sprint"}},
			"s1": {{ID: "l2", Name: "Ideas"}},
			"s2": {{ID: "l3", Name: "Campaigns"}},
			"s9": {{ID: "l9", Name: "Misc"}},
		},
		tasks: map[string][]*fakeTask{
			"l1": {
				{ID: "t1", Name: "Fix login", Desc: "The **login** form fails.", Status: "in progress", Assignee: "ana", Updated: 1700000001000},
				{ID: "t2", Name: "Add search", Desc: "Full-text search.", Status: "to do", Assignee: "bo", Updated: 1700000002000},
				{ID: "t3", Name: "Write tests", Desc: "Cover the API.", Status: "complete", Updated: 1700000003000},
			},
			"l2": {{ID: "t4", Name: "Dark mode", Desc: "Maybe later.", Status: "open", Updated: 1700000004000}},
			"l3": {{ID: "t5", Name: "Spring launch", Desc: "Launch in March.", Status: "open", Assignee: "cy", Updated: 1700000005000}},
			"l9": {{ID: "t9", Name: "Other task", Status: "open", Updated: 1700000009000}},
		},
		docs: map[string][]*fakeDoc{
			"9001": {
				{ID: "d1", Name: "Handbook", ParentID: "s1", ParentType: 4, Pages: []*fakePage{
					{ID: "p1", Name: "Handbook", Content: "Welcome to Acme.", Updated: 1700000100000, Pages: []*fakePage{
						{ID: "p2", Name: "Onboarding", Content: "## First day\n\nMeet the team.", Updated: 1700000200000},
					}},
				}},
				{ID: "d2", Name: "Launch plan", ParentID: "l3", ParentType: 6, Pages: []*fakePage{
					{ID: "p3", Name: "Launch plan", Content: "Timeline and budget.", Updated: 1700000300000},
				}},
			},
			"9002": {{ID: "d9", Name: "Other doc", ParentID: "s9", ParentType: 4, Pages: []*fakePage{
				{ID: "p9", Name: "Other doc", Content: "Elsewhere.", Updated: 1700000900000},
			}}},
		},
		status: map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/team", func(w http.ResponseWriter, _ *http.Request) {
		teams := []map[string]any{}
		for _, tm := range f.teams {
			teams = append(teams, map[string]any{"id": tm.ID, "name": tm.Name, "color": "#000", "members": []any{}})
		}
		writeJSON(w, map[string]any{"teams": teams})
	})
	mux.HandleFunc("GET /api/v2/team/{id}/space", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"spaces": nodes(f.spaces[r.PathValue("id")], r)})
	})
	mux.HandleFunc("GET /api/v2/space/{id}/folder", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"folders": nodes(f.folders[r.PathValue("id")], r)})
	})
	mux.HandleFunc("GET /api/v2/folder/{id}/list", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"lists": nodes(f.lists[r.PathValue("id")], r)})
	})
	mux.HandleFunc("GET /api/v2/space/{id}/list", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"lists": nodes(f.lists[r.PathValue("id")], r)})
	})
	mux.HandleFunc("GET /api/v2/list/{id}/task", f.serveTasks)
	mux.HandleFunc("GET /api/v3/workspaces/{ws}/docs", f.serveDocs)
	mux.HandleFunc("GET /api/v3/workspaces/{ws}/docs/{doc}/pages", f.servePages)

	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != testKey {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"err":"Token invalid","ECODE":"OAUTH_025"}`))
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests = append(f.requests, r.URL.Path+"?"+r.URL.RawQuery)
		if f.intercept != nil && f.intercept(w, r) {
			return
		}
		if code, ok := f.status[r.URL.Path]; ok {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"err":"failed","ECODE":"X"}`))
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// archivedFilter is ClickUp's "archived" parameter: true lists only the
// archived ones, false (the default) only the others.
func archivedFilter(r *http.Request) bool { return r.URL.Query().Get("archived") == "true" }

func nodes(in []node, r *http.Request) []map[string]any {
	out := []map[string]any{}
	for _, n := range in {
		if n.Archived == archivedFilter(r) {
			out = append(out, map[string]any{"id": n.ID, "name": n.Name, "archived": n.Archived, "orderindex": 0})
		}
	}
	return out
}

func (f *fakeClickUp) serveTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("include_closed") != "true" || q.Get("include_markdown_description") != "true" {
		http.Error(w, `{"err":"the connector must ask for closed tasks and Markdown"}`, http.StatusBadRequest)
		return
	}
	listID := r.PathValue("id")
	listName := ""
	for _, ls := range f.lists {
		for _, l := range ls {
			if l.ID == listID {
				listName = l.Name
			}
		}
	}
	var match []*fakeTask
	for _, t := range f.tasks[listID] {
		if t.Archived == archivedFilter(r) {
			match = append(match, t)
		}
	}
	pageNo, _ := strconv.Atoi(q.Get("page"))
	from := min(pageNo*f.taskPage, len(match))
	to := min(from+f.taskPage, len(match))
	tasks := []map[string]any{}
	for _, t := range match[from:to] {
		assignees := []map[string]any{}
		if t.Assignee != "" {
			assignees = append(assignees, map[string]any{"id": 7, "username": t.Assignee, "email": t.Assignee + "@acme.test"})
		}
		tasks = append(tasks, map[string]any{
			"id": t.ID, "custom_id": nil, "name": t.Name,
			"text_content": t.Desc, "description": t.Desc, "markdown_description": t.Desc,
			"status":       map[string]any{"status": t.Status, "color": "#d3d3d3", "type": "open"},
			"date_created": "1690000000000", "date_updated": strconv.FormatInt(t.Updated, 10),
			"archived": t.Archived, "assignees": assignees, "tags": []any{},
			"list": map[string]any{"id": listID, "name": listName},
			"url":  "https://app.clickup.com/t/" + t.ID,
		})
	}
	writeJSON(w, map[string]any{"tasks": tasks, "last_page": to >= len(match)})
}

func (f *fakeClickUp) serveDocs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit < 1 || limit > 100 {
		limit = 50
	}
	var match []*fakeDoc
	for _, d := range f.docs[r.PathValue("ws")] {
		if d.Archived == archivedFilter(r) && (q.Get("deleted") == "true") == d.Deleted {
			match = append(match, d)
		}
	}
	from, _ := strconv.Atoi(q.Get("cursor"))
	from = min(from, len(match))
	to := min(from+limit, len(match))
	docs := []map[string]any{}
	for _, d := range match[from:to] {
		docs = append(docs, map[string]any{
			"id": d.ID, "name": d.Name, "type": 1, "date_created": 1690000000000,
			"parent": map[string]any{"id": d.ParentID, "type": d.ParentType},
			"public": false, "workspace_id": r.PathValue("ws"), "creator": 7,
			"deleted": d.Deleted, "archived": d.Archived,
		})
	}
	ans := map[string]any{"docs": docs}
	if to < len(match) {
		ans["next_cursor"] = strconv.Itoa(to)
	}
	writeJSON(w, ans)
}

func (f *fakeClickUp) servePages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("content_format") != "text/md" || q.Get("max_page_depth") != "-1" {
		http.Error(w, `{"err":"the connector must ask for every page in Markdown"}`, http.StatusBadRequest)
		return
	}
	for _, d := range f.docs[r.PathValue("ws")] {
		if d.ID == r.PathValue("doc") {
			writeJSON(w, pagesJSON(d.ID, r.PathValue("ws"), d.Pages))
			return
		}
	}
	http.Error(w, `{"err":"Doc not found"}`, http.StatusNotFound)
}

func pagesJSON(docID, ws string, pages []*fakePage) []map[string]any {
	out := []map[string]any{}
	for _, p := range pages {
		out = append(out, map[string]any{
			"id": p.ID, "doc_id": docID, "workspace_id": ws, "name": p.Name, "content": p.Content,
			"date_created": 1690000000000, "date_updated": p.Updated, "archived": p.Archived,
			"deleted": false, "protected": false, "pages": pagesJSON(docID, ws, p.Pages),
		})
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// edit changes the fake's data under its lock.
func (f *fakeClickUp) edit(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func (f *fakeClickUp) task(id string) *fakeTask {
	for _, ts := range f.tasks {
		for _, t := range ts {
			if t.ID == id {
				return t
			}
		}
	}
	return nil
}

// requested returns the requests made since the last call.
func (f *fakeClickUp) requested() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.requests
	f.requests = nil
	return out
}

func countPrefix(reqs []string, prefix string) int {
	n := 0
	for _, r := range reqs {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}
