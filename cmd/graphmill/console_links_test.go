package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConsoleNotificationLinks: the links notifications carry (and their
// emails) open a console page: an extraction's review notification its
// task (accept and reject offered), a failed sync's its sync job page, a
// failed graph embedding's the job's project page at the link itself
// (TestConsoleQueueJobPages has every such queue). A task of another
// project, and a queue the console does not know, are 404.
func TestConsoleNotificationLinks(t *testing.T) {
	t.Parallel()
	s := integrationServer(t, refusedSource())
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	inProject := header{"X-Project-ID", project}

	s.extractionSetThreshold(project, 1) // every object is a suggestion
	r := s.uploadFile(s.admin, project, "ada.md", "text/markdown", []byte("# Ada\n\nAda Lovelace worked with Charles Babbage in London.\n"))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	s.must(201, "POST", "/api/integrations", s.admin, map[string]any{
		"name": "r", "display_name": "R", "provider_type": "refused",
		"config": map[string]any{"endpoint": "https://notes.test", "api_key": "key-0001"},
	}, inProject)
	sync := s.must(200, "POST", "/api/integrations/r/sync", s.admin, nil, inProject).JSON(t)["job_id"].(string)
	embedding := s.failEmbeddingJobs(project, 1)[0]

	links := map[string]string{}
	require.Eventually(t, func() bool {
		for _, n := range s.notifications(s.admin, "").Data {
			key := n.Type
			if q, ok := n.Details["queue"].(string); ok {
				key += ":" + q
			}
			links[key] = n.ActionURL
		}
		return len(links) == 3
	}, 30*time.Second, 50*time.Millisecond, "%v", links)

	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	tasks := s.must(200, "GET", "/api/tasks?type=suggestion", s.admin, nil, inProject).JSON(t)["data"].([]any)
	require.Len(t, tasks, 1)
	taskID := tasks[0].(map[string]any)["id"].(string)
	require.Equal(t, "/projects/"+project+"/tasks/"+taskID, links["extraction_review"])
	status, _, page := b.do("GET", links["extraction_review"], nil)
	require.Equal(t, http.StatusOK, status, page)
	require.Contains(t, page, `id="task-`+taskID+`"`)
	require.Contains(t, page, "ada.md")
	require.Contains(t, page, `class="accept"`)

	want := "/projects/" + project + "/integrations/r/syncs/" + sync
	status, h, page := b.do("GET", links["job_failed:integration_sync"], nil)
	require.Equal(t, http.StatusSeeOther, status, page)
	require.Equal(t, want, h.Get("Location"))
	status, _, page = b.do("GET", want, nil)
	require.Equal(t, http.StatusOK, status, page)
	require.Equal(t, "/projects/"+project+"/jobs/graph_embedding/"+embedding, links["job_failed:graph_embedding"])
	status, _, page = b.do("GET", links["job_failed:graph_embedding"], nil)
	require.Equal(t, http.StatusOK, status, page)
	require.Contains(t, page, "<h1>Graph embedding job <code>"+embedding[len(embedding)-8:]+"</code></h1>")
	status, h, _ = b.do("GET", "/projects/"+project+"/jobs/object_extraction/"+sync, nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/projects/"+project+"/jobs/"+sync, h.Get("Location"))

	status, _, _ = b.do("GET", "/projects/"+other+"/tasks/"+taskID, nil)
	require.Equal(t, http.StatusNotFound, status, "a task is found in its own project only")
	status, _, _ = b.do("GET", "/projects/"+project+"/jobs/no_such_queue/"+sync, nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = b.do("GET", "/projects/"+other+"/jobs/integration_sync/"+sync, nil)
	require.Equal(t, http.StatusNotFound, status, "a sync job is found in its own project only")

	// Bad ids: not found, as the API answers a malformed path id.
	for _, p := range []string{"/projects/" + project + "/tasks/not-a-uuid", "/projects/" + project + "/jobs/integration_sync/not-a-uuid"} {
		status, _, page = b.do("GET", p, nil)
		require.Equal(t, http.StatusNotFound, status, "%s: %s", p, page)
	}

	// Signed out: the sign-in page, nothing shown.
	out := newConsoleBrowser(t, s)
	for _, p := range []string{links["extraction_review"], links["job_failed:integration_sync"]} {
		status, h, _ = out.do("GET", p, nil)
		require.Equal(t, http.StatusSeeOther, status, "signed out: %s", p)
		require.Equal(t, "/signin", h.Get("Location"), p)
	}

	// A member without the pages' scopes: refused, not redirected to the
	// job or shown the task.
	_, narrow := s.newMember("narrow@example.com", []string{"documents:read"}, project, "admin")
	nb := newConsoleBrowser(t, s)
	nb.signIn(narrow)
	for _, p := range []string{links["extraction_review"], links["job_failed:integration_sync"]} {
		status, _, page = nb.do("GET", p, nil)
		require.Equal(t, http.StatusForbidden, status, "%s: %s", p, page)
		require.NotContains(t, page, "ada.md")
	}
}

// TestConsoleJobsNameDocuments: the extraction jobs page, its live rows
// and a job's page name each job's document by its file name (the column
// said "document" on every row, the job page its id).
func TestConsoleJobsNameDocuments(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	var d struct {
		ID string `json:"id"`
	}
	s.uploadFile(s.admin, project, "babbage-notes.md", "text/markdown", []byte("# Engine\n\nCharles Babbage designed the Analytical Engine in London.\n")).Decode(t, &d)
	job := s.extractionJobOf(d.ID)
	s.extractionWaitJob(job, "completed", "requires_review", "failed")
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	link := `href="/projects/` + project + `/documents/` + d.ID + `">babbage-notes.md</a>`
	for _, path := range []string{"/projects/" + project + "/jobs", "/projects/" + project + "/jobs/rows", "/projects/" + project + "/jobs/" + job} {
		status, _, page := b.do("GET", path, nil)
		require.Equal(t, http.StatusOK, status, path)
		require.Contains(t, page, link, path)
	}
}

// TestExtractionReviewOneObject: a review of one suggested object says
// "object" and "is" (the task and notification said "1 objects ... are").
func TestExtractionReviewOneObject(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	r := s.uploadFile(s.admin, project, "grace.html", "text/html",
		[]byte("<html><body><p>Grace Hopper worked for Remington Rand and built the first compiler, A-0, in Philadelphia.</p></body></html>"))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	var tasks []map[string]any
	require.Eventually(t, func() bool {
		var tl struct {
			Data []map[string]any `json:"data"`
		}
		s.must(200, "GET", "/api/tasks?type=suggestion", s.admin, nil, hp).Decode(t, &tl)
		tasks = tl.Data
		return len(tasks) == 1
	}, 30*time.Second, 50*time.Millisecond)
	require.Len(t, tasks[0]["metadata"].(map[string]any)["objectIds"], 1, "the fixture has one object under the default threshold")
	require.Equal(t, "Review 1 suggested object from grace.html", tasks[0]["title"])
	require.Contains(t, tasks[0]["description"], " found 1 object with a confidence under the review threshold 0.70.")
	n := s.notifications(s.admin, "category=extraction").Data
	require.Len(t, n, 1)
	require.Equal(t, "1 object extracted from grace.html is below the review threshold and waits for review.", n[0].Message)
}
