package main

import (
	"context"
	"html"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/email"
)

// TestConsoleQueueJobPages: the job links of the failure notifications of
// the queues without a page of their own (document parsing, chunk and
// graph embedding, an invitation's email) open the project's page of that
// job for a project admin with the scope of what it works on: its status,
// attempts, error and subject (the document's file name linking to the
// document, the object, the recipient), no action (the API has none for
// project callers), nothing of the email's data or secrets. Another
// project's job is 404, signed out is the sign-in page, a member without
// the scope (or the role, for email) is 403; a superadmin gets the page
// with a link to the queue's administration page.
func TestConsoleQueueJobPages(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	scopes := []string{"documents:read", "graph:read", "admin:read", "notifications:read"}
	_, admin := s.newMember("padmin@example.com", scopes, project, "admin")
	ctx := context.Background()

	// Parsing: a corrupt PDF fails for real.
	r := s.uploadFile(s.admin, project, "broken.pdf", "application/pdf", []byte("%PDF-1.4\nthis is not really a pdf"))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	var broken docBody
	r.Decode(t, &broken)
	require.Equal(t, "failed", s.waitDocument(project, broken.ID).Status)
	var parsing string
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT id FROM document_parsing_jobs WHERE document_id = $1`, broken.ID).Scan(&parsing))

	// Chunk embedding, graph embedding, email: crashed on their last attempt.
	r = s.uploadFile(s.admin, project, "loom-notes.md", "text/markdown", []byte("# Loom\n\nThe Jacquard loom reads punched cards.\n"))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	var loom docBody
	r.Decode(t, &loom)
	require.Equal(t, "parsed", s.waitDocument(project, loom.ID).Status)
	var chunk string
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT id FROM document_chunks WHERE document_id = $1 LIMIT 1`, loom.ID).Scan(&chunk))
	object := s.insertObject(project, "Analytical Engine")
	jobs := map[string]string{
		"document_parsing": parsing,
		"chunk_embedding":  s.insertCrashedJob("chunk_embedding_jobs", project, map[string]any{"chunk_id": chunk}),
		"graph_embedding":  s.insertCrashedJob("graph_embedding_jobs", project, map[string]any{"object_id": object}),
		"email": s.insertCrashedJob("email_jobs", project, map[string]any{
			"template_name": email.TemplateInvitation, "to_email": "grace@example.com", "subject": "Join the project",
			"data": `{"inviterName": "data-marker-7731"}`, "secret_keys": []string{"link"}, "secrets": "sealed-marker-7731",
		}),
	}
	for queue, id := range jobs {
		if queue != "document_parsing" {
			s.waitJobsFailed(queue+"_jobs", []string{id})
		}
	}
	shows := map[string][]string{
		"document_parsing": {`href="/projects/` + project + `/documents/` + broken.ID + `">broken.pdf</a>`},
		"chunk_embedding": {
			`href="/projects/` + project + `/documents/` + loom.ID + `">loom-notes.md</a>`,
			`href="/projects/` + project + `/documents/` + loom.ID + `/chunks/` + chunk + `"`,
		},
		"graph_embedding": {`href="/projects/` + project + `/graph/objects/` + object + `">Analytical Engine</a> (Concept)`},
		"email":           {"grace@example.com", "Join the project"},
	}

	// The notifications' links, one per queue.
	links := map[string]string{}
	require.Eventually(t, func() bool {
		for _, n := range s.notifications(admin, "").Data {
			if q, ok := n.Details["queue"].(string); ok && n.Type == "job_failed" {
				links[q] = n.ActionURL
			}
		}
		return len(links) == len(jobs)
	}, 30*time.Second, 50*time.Millisecond, "%v", links)

	b := newConsoleBrowser(t, s)
	b.signIn(admin)
	for queue, id := range jobs {
		require.Equal(t, "/projects/"+project+"/jobs/"+queue+"/"+id, links[queue])
		status, _, page := b.do("GET", links[queue], nil)
		require.Equal(t, http.StatusOK, status, "%s: %s", queue, page)
		require.Contains(t, page, id[len(id)-8:], queue)
		require.Contains(t, page, `data-status="failed"`, queue)
		attempts := "4" // crashed on the last of 1 + 3 retries
		if queue == "document_parsing" {
			attempts = "1" // a corrupt file fails at once
		}
		require.Contains(t, page, `class="job-attempts">`+attempts+`</dd>`, queue)
		var msg string
		require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT error_msg FROM `+queue+`_jobs WHERE id = $1`, id).Scan(&msg)) //nolint:gosec // G202: the test's queue names
		require.NotEmpty(t, msg)
		require.Contains(t, page, `<dd class="error">`+html.EscapeString(msg)+`</dd>`, queue)
		for _, want := range shows[queue] {
			require.Contains(t, page, want, queue)
		}
		require.NotContains(t, page, `class="retry"`, queue)
		require.NotContains(t, page, `class="cancel"`, queue)
		require.NotContains(t, page, `id="queue-admin"`, "%s: the admin page is for superadmins", queue)
		require.NotContains(t, page, "marker-7731", queue)
	}

	// Another project's job: not found, by its path in this project and
	// by this project's job in the other's path (a superadmin sees both).
	elsewhere := s.insertCrashedJob("graph_embedding_jobs", other, map[string]any{"object_id": s.insertObject(other, "Difference Engine")})
	status, _, page := b.do("GET", "/projects/"+project+"/jobs/graph_embedding/"+elsewhere, nil)
	require.Equal(t, http.StatusNotFound, status, page)
	require.NotContains(t, page, "Difference Engine")
	super := newConsoleBrowser(t, s)
	super.signIn(s.admin)
	for queue, id := range jobs {
		status, _, page := super.do("GET", "/projects/"+other+"/jobs/"+queue+"/"+id, nil)
		require.Equal(t, http.StatusNotFound, status, "%s: %s", queue, page)
		status, _, _ = b.do("GET", "/projects/"+other+"/jobs/"+queue+"/"+id, nil)
		require.Equal(t, http.StatusNotFound, status, "%s: a project the member cannot see", queue)
	}
	status, _, _ = b.do("GET", "/projects/"+project+"/jobs/chunk_embedding/not-a-uuid", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = b.do("GET", "/projects/"+project+"/jobs/chunk_embedding/"+jobs["graph_embedding"], nil)
	require.Equal(t, http.StatusNotFound, status, "a job is found in its own queue only")

	// A superadmin: the same page, linked from the queue's administration
	// page, which it links to.
	for queue, id := range jobs {
		status, _, page := super.do("GET", links[queue], nil)
		require.Equal(t, http.StatusOK, status, "%s: %s", queue, page)
		adminPage := `/admin/queues/` + queue + `?projectId=` + project
		require.Contains(t, page, `id="queue-admin" href="`+adminPage+`"`, queue)
		status, _, page = super.do("GET", adminPage, nil)
		require.Equal(t, http.StatusOK, status, "%s: %s", queue, page)
		require.Contains(t, page, `<a href="`+links[queue]+`"><code>`+id[len(id)-8:]+`</code></a>`, queue)
	}

	// Signed out: the sign-in page.
	out := newConsoleBrowser(t, s)
	for queue := range jobs {
		status, h, _ := out.do("GET", links[queue], nil)
		require.Equal(t, http.StatusSeeOther, status, queue)
		require.Equal(t, "/signin", h.Get("Location"), queue)
	}

	// Without the scope of what the job works on, or (email: the
	// invitations') the role: refused, nothing shown.
	_, narrow := s.newMember("narrow@example.com", []string{"notifications:read", "admin:read"}, project, "admin")
	_, viewer := s.newMember("viewer@example.com", scopes, project, "viewer")
	nb, vb := newConsoleBrowser(t, s), newConsoleBrowser(t, s)
	nb.signIn(narrow)
	vb.signIn(viewer)
	for queue := range jobs {
		status, _, page := nb.do("GET", links[queue], nil)
		want := http.StatusForbidden
		if queue == "email" {
			want = http.StatusOK // admin:read, project admin: the invitations' rule
		}
		require.Equal(t, want, status, "%s: %s", queue, page)
		if want == http.StatusForbidden {
			for _, s := range shows[queue] {
				require.NotContains(t, page, s, queue)
			}
		}
		status, _, page = vb.do("GET", links[queue], nil)
		want = http.StatusOK
		if queue == "email" {
			want = http.StatusForbidden // a viewer does not read the invitations
		}
		require.Equal(t, want, status, "%s: %s", queue, page)
	}
}
