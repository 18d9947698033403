package clickup_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/clickup"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/errs"
)

var (
	acmeTasks = []string{"task/t1", "task/t2", "task/t3", "task/t4", "task/t5"}
	acmePages = []string{"doc/d1/p1", "doc/d1/p2", "doc/d2/p3"}
	acmeAll   = []string{"doc/d1/p1", "doc/d1/p2", "doc/d2/p3", "task/t1", "task/t2", "task/t3", "task/t4", "task/t5"}
)

func acme() connector.Config {
	return connectortest.Config(map[string]any{"api_key": testKey, "workspace_id": "9001"})
}

func env() connector.Env { return connector.Env{HTTP: connectortest.Client()} }

func walk(t *testing.T, f *fakeClickUp, cfg connector.Config, opts connector.Options, known map[string]string) *connectortest.Walker {
	t.Helper()
	w := connectortest.NewWalker(known)
	require.NoError(t, clickup.New(f.srv.URL).Walk(t.Context(), env(), cfg, opts, w))
	require.Empty(t, w.FailedItems())
	return w
}

func TestWalkFirstSync(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	w := walk(t, f, acme(), connector.Options{}, nil)

	require.Equal(t, acmeAll, w.Reported(), "every task and doc page of workspace 9001, none of 9002")
	require.Empty(t, w.UnchangedIDs())

	t1 := w.Items()["task/t1"]
	require.Equal(t, "1700000001000", t1.Version, "a task's version is its date_updated")
	require.Equal(t, "Fix login", t1.Title)
	require.Equal(t, "https://app.clickup.com/t/t1", t1.URL)
	require.Equal(t, "text/markdown", t1.MimeType)
	require.Equal(t, time.UnixMilli(1700000001000).UTC(), t1.Modified)
	require.Equal(t, "# Fix login\n\n"+
		"- Status: in progress\n"+
		"- Assignees: ana <ana@acme.test>\n"+
		"- List: Sprint\n"+
		"- URL: https://app.clickup.com/t/t1\n"+
		"\nThe **login** form fails.\n", string(t1.Content))

	p2 := w.Items()["doc/d1/p2"]
	require.Equal(t, "Handbook / Onboarding", p2.Title, "nested pages are synced")
	require.Equal(t, "1700000200000", p2.Version)
	require.Equal(t, "https://app.clickup.com/9001/v/dc/d1/p2", p2.URL)
	require.Equal(t, "# Onboarding\n\n## First day\n\nMeet the team.\n", string(p2.Content))
	require.Equal(t, "Handbook", w.Items()["doc/d1/p1"].Title)

	reqs := f.requested()
	require.Contains(t, reqs, "/api/v2/list/l1/task?archived=false&include_closed=true&include_markdown_description=true&page=0&subtasks=true")
	require.Contains(t, reqs, "/api/v2/list/l1/task?archived=false&include_closed=true&include_markdown_description=true&page=1&subtasks=true",
		"three tasks at two a page: the second page is fetched because the first is not last_page")
	require.Equal(t, 2, countPrefix(reqs, "/api/v2/list/l1/task"), "no page after last_page")
	require.Contains(t, reqs, "/api/v2/space/s1/list?archived=false", "folderless lists are walked")
	require.Contains(t, reqs, "/api/v2/folder/f1/list?archived=false")
	require.Contains(t, reqs, "/api/v3/workspaces/9001/docs/d1/pages?content_format=text%2Fmd&max_page_depth=-1")
	require.Zero(t, countPrefix(reqs, "/api/v2/team/9002"), "another workspace is not touched")
}

func TestWalkEveryWorkspaceWithoutWorkspaceID(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	w := walk(t, f, connectortest.Config(map[string]any{"api_key": testKey}), connector.Options{}, nil)
	require.Equal(t, append(append([]string{}, acmeAll[:3]...), append([]string{"doc/d9/p9"}, append(acmeTasks, "task/t9")...)...), w.Reported())
}

func TestWalkUnchangedAndEditedTask(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	first := walk(t, f, acme(), connector.Options{}, nil)

	again := walk(t, f, acme(), connector.Options{}, first.Versions())
	require.Empty(t, again.Items(), "nothing changed: nothing to parse again")
	require.ElementsMatch(t, acmeAll, again.UnchangedIDs())

	f.edit(func() {
		t2 := f.task("t2")
		t2.Desc = "Full-text search with ranking."
		t2.Updated = 1700000999000
	})
	next := walk(t, f, acme(), connector.Options{}, again.Versions())
	require.Equal(t, acmeAll, next.Reported())
	require.Len(t, next.Items(), 1, "only the edited task is reported with content")
	t2 := next.Items()["task/t2"]
	require.Equal(t, "1700000999000", t2.Version)
	require.Contains(t, string(t2.Content), "Full-text search with ranking.")
}

func TestWalkArchivedTask(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	first := walk(t, f, acme(), connector.Options{}, nil)
	f.edit(func() { f.task("t3").Archived = true })

	next := walk(t, f, acme(), connector.Options{}, first.Versions())
	require.NotContains(t, next.Reported(), "task/t3", "an archived task is gone from the listing")
	require.Len(t, next.Reported(), len(acmeAll)-1)
	require.Empty(t, next.Items())

	with := walk(t, f, acme(), connector.Options{IncludeArchived: true}, next.Versions())
	require.Equal(t, acmeAll, with.Reported(), "includeArchived brings it back")
	require.Equal(t, []string{"task/t3"}, with.ItemIDs())
	require.Contains(t, f.requested(), "/api/v2/list/l1/task?archived=true&include_closed=true&include_markdown_description=true&page=0&subtasks=true")
}

func TestWalkArchivedContainersAndDocs(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	f.edit(func() {
		f.lists["s1"][0].Archived = true // l2 and its task t4
		f.docs["9001"][1].Archived = true
		f.docs["9001"][0].Pages[0].Pages[0].Archived = true // p2
	})
	w := walk(t, f, acme(), connector.Options{}, nil)
	require.Equal(t, []string{"doc/d1/p1", "task/t1", "task/t2", "task/t3", "task/t5"}, w.Reported())

	all := walk(t, f, acme(), connector.Options{IncludeArchived: true}, nil)
	require.Equal(t, acmeAll, all.Reported())
}

func TestWalkSpaceIDs(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	w := walk(t, f, acme(), connector.Options{SpaceIDs: []string{"s2"}}, nil)
	require.Equal(t, []string{"doc/d2/p3", "task/t5"}, w.Reported(),
		"tasks of space s2 and the docs whose parent is in it (d2 is in its list l3)")
	reqs := f.requested()
	require.Zero(t, countPrefix(reqs, "/api/v2/space/s1/"), "space s1 is not walked")
	require.Zero(t, countPrefix(reqs, "/api/v3/workspaces/9001/docs/d1/"), "the pages of a doc outside s2 are not fetched")
}

func TestWalkSourceTypes(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)

	tasks := walk(t, f, acme(), connector.Options{SourceTypes: []string{"tasks"}}, nil)
	require.Equal(t, acmeTasks, tasks.Reported())
	require.Zero(t, countPrefix(f.requested(), "/api/v3/"), "no docs request")

	docs := walk(t, f, acme(), connector.Options{SourceTypes: []string{"docs"}}, nil)
	require.Equal(t, acmePages, docs.Reported())
	reqs := f.requested()
	require.Equal(t, []string{
		"/api/v2/team?",
		"/api/v3/workspaces/9001/docs?archived=false&deleted=false&limit=50",
		"/api/v3/workspaces/9001/docs/d1/pages?content_format=text%2Fmd&max_page_depth=-1",
		"/api/v3/workspaces/9001/docs/d2/pages?content_format=text%2Fmd&max_page_depth=-1",
	}, reqs, "docs alone need no hierarchy")

	err := clickup.New(f.srv.URL).Walk(t.Context(), env(), acme(), connector.Options{SourceTypes: []string{"comments"}}, connectortest.NewWalker(nil))
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.ErrorContains(t, err, `unknown type "comments"`)
}

func TestWalkBatchSize(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	f.edit(func() {
		f.docs["9001"] = append(f.docs["9001"], &fakeDoc{ID: "d3", Name: "Notes", ParentID: "9001", ParentType: 12, Pages: []*fakePage{
			{ID: "p4", Name: "Notes", Content: "Misc.", Updated: 1700000400000},
		}})
	})
	w := walk(t, f, acme(), connector.Options{SourceTypes: []string{"docs"}, BatchSize: 2}, nil)
	require.Equal(t, append(append([]string{}, acmePages...), "doc/d3/p4"), w.Reported())
	reqs := f.requested()
	require.Contains(t, reqs, "/api/v3/workspaces/9001/docs?archived=false&deleted=false&limit=2")
	require.Contains(t, reqs, "/api/v3/workspaces/9001/docs?archived=false&cursor=2&deleted=false&limit=2",
		"three docs two at a time: the next_cursor is followed")
	require.Equal(t, 2, countPrefix(reqs, "/api/v3/workspaces/9001/docs?"))

	big := walk(t, f, acme(), connector.Options{SourceTypes: []string{"docs"}, BatchSize: 1000}, nil)
	require.Len(t, big.Items(), 4)
	require.Contains(t, f.requested(), "/api/v3/workspaces/9001/docs?archived=false&deleted=false&limit=100", "capped at ClickUp's maximum")
}

func TestWalkStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := connectortest.NewWalker(nil)
	w.ItemFunc = func(connector.Item) error {
		cancel()
		return nil
	}
	f.edit(func() { // the first list walked (l2) answers two tasks at once
		f.tasks["l2"] = append(f.tasks["l2"], &fakeTask{ID: "t6", Name: "Second", Status: "open", Updated: 1700000006000})
	})
	err := clickup.New(f.srv.URL).Walk(ctx, env(), acme(), connector.Options{SourceTypes: []string{"tasks"}}, w)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, w.Items(), 1, "the walk stops at the next item")
	require.Empty(t, w.UnchangedIDs())
}

func TestWalkFailsOnAnAPIError(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	f.edit(func() { f.status["/api/v2/list/l3/task"] = http.StatusInternalServerError })
	w := connectortest.NewWalker(nil)
	err := clickup.New(f.srv.URL).Walk(t.Context(), env(), acme(), connector.Options{}, w)
	require.ErrorContains(t, err, "ClickUp answered HTTP 500 for /api/v2/list/l3/task",
		"an incomplete listing is an error, so that nothing is deleted")
}

func TestWalkRateLimitRetried(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	limited := 0
	f.edit(func() {
		f.intercept = func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/api/v2/list/l2/task" || limited == 2 {
				return false
			}
			limited++
			w.Header().Set("X-RateLimit-Reset", "1") // in the past: no wait
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
	})
	w := walk(t, f, acme(), connector.Options{SourceTypes: []string{"tasks"}}, nil)
	f.edit(func() { require.Equal(t, 2, limited) })
	require.Equal(t, acmeTasks, w.Reported())
	require.Equal(t, 3, countPrefix(f.requested(), "/api/v2/list/l2/task"), "two answers 429, then the retry succeeds")

	f.edit(func() {
		f.intercept = func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("X-RateLimit-Reset", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
	})
	err := clickup.New(f.srv.URL).Walk(t.Context(), env(), acme(), connector.Options{}, connectortest.NewWalker(nil))
	require.EqualError(t, err, "ClickUp rate limit exceeded (HTTP 429)", "retries are bounded")
}

func TestTest(t *testing.T) {
	t.Parallel()
	f := newFakeClickUp(t)
	c := clickup.New(f.srv.URL)

	require.NoError(t, c.Test(t.Context(), env(), acme()))
	reqs := f.requested()
	require.Equal(t, []string{"/api/v2/team?", "/api/v2/team/9001/space?archived=false"}, reqs)

	bad := connectortest.Config(map[string]any{"api_key": "pk_wrong_" + testKey, "workspace_id": "9001"})
	err := c.Test(t.Context(), env(), bad)
	require.EqualError(t, err, "ClickUp rejected the API key (HTTP 401)")
	require.NotContains(t, err.Error(), testKey)

	err = c.Test(t.Context(), env(), connectortest.Config(map[string]any{"api_key": testKey, "workspace_id": "1234"}))
	require.EqualError(t, err, "workspace 1234 is not accessible with this API key")

	err = clickup.New(f.srv.URL).Walk(t.Context(), env(), bad, connector.Options{}, connectortest.NewWalker(nil))
	require.EqualError(t, err, "ClickUp rejected the API key (HTTP 401)")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	c := clickup.New("")
	require.NoError(t, c.Validate(acme()))
	require.NoError(t, c.Validate(connectortest.Config(map[string]any{"api_key": testKey})))
	for field, cfg := range map[string]connector.Config{
		"api_key":      connectortest.Config(map[string]any{"api_key": " "}),
		"workspace_id": connectortest.Config(map[string]any{"api_key": testKey, "workspace_id": "../v3/x"}),
	} {
		err := c.Validate(cfg)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), field)
		require.ErrorContains(t, err, field)
	}
}

func TestDescriptor(t *testing.T) {
	t.Parallel()
	d := clickup.New("").Descriptor()
	require.Equal(t, "clickup", d.Name)
	require.Equal(t, "productivity", d.Category)
	require.Len(t, d.RequiredFields, 1)
	require.Equal(t, "api_key", d.RequiredFields[0].Name)
	require.True(t, d.RequiredFields[0].Secret)
	require.Len(t, d.OptionalFields, 1)
	require.Equal(t, "workspace_id", d.OptionalFields[0].Name)
	require.Equal(t, []string{clickup.SourceDocs, clickup.SourceTasks}, d.SourceTypes)
	require.True(t, d.Spaces, "clickup honours space_ids")
}
