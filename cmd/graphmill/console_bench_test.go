package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/extraction"
)

// BenchmarkConsolePages measures the console's pages end to end (HTTP,
// session, auth, services, templ rendering) on a project with 10,000
// documents, 100,000 extraction jobs and 100,000 graph objects, written
// directly (COPY), the superadmin pages included, and
// reports each page's p50 and p95.
//
//	go test ./cmd/graphmill -run '^$' -bench ConsolePages -benchtime 1700x
func BenchmarkConsolePages(b *testing.B) {
	ctx := context.Background()
	s := newServer(b)
	require.NoError(b, s.m.jobs.Pause(ctx, extraction.Queue))
	project, org := s.defaultProject()
	pid := uuid.MustParse(project)
	now := time.Now().UTC()
	const docs, jobs, graphObjects = 10_000, 100_000, 100_000
	docRows := make([][]any, docs)
	docIDs := make([]uuid.UUID, docs)
	for i := range docRows {
		content := fmt.Appendf(nil, "# Document %d\n\nText.", i)
		sum := sha256.Sum256(content)
		at := now.Add(-time.Duration(docs-i) * time.Second)
		docIDs[i] = uuid.Must(uuid.NewV7())
		docRows[i] = []any{docIDs[i], pid, fmt.Sprintf("doc-%05d.md", i), "text/markdown", int64(len(content)), sum[:], content, "parsed", "markdown", 1, at, at}
	}
	benchCopy(b, s, "documents", []string{"id", "project_id", "filename", "mime_type", "size_bytes", "sha256", "content", "status", "format", "chunk_count", "created_at", "updated_at"}, docRows)
	jobRows := make([][]any, jobs)
	var jobID uuid.UUID
	for i := range jobRows {
		st := benchStatuses[i%len(benchStatuses)]
		var errMsg any
		if st == "failed" {
			errMsg = "provider said no"
		}
		at := now.Add(-time.Duration(jobs-i) * time.Second)
		id := uuid.Must(uuid.NewV7())
		if i == jobs-1 {
			jobID = id
		}
		jobRows[i] = []any{id, pid, st, at, errMsg, at, at, docIDs[i%docs], "full_extraction", "manual"}
	}
	benchCopy(b, s, "object_extraction_jobs",
		[]string{"id", "project_id", "status", "run_at", "error_msg", "created_at", "updated_at", "document_id", "job_type", "trigger_type"}, jobRows)

	center := benchGraph(b, s, pid, docIDs, graphObjects)

	br := newConsoleBrowser(b, s)
	br.signIn(s.admin)
	base := "/projects/" + project
	pages := []string{
		"/", base, base + "/documents", base + "/documents?offset=5000", base + "/documents/" + docIDs[docs-1].String(),
		base + "/jobs", base + "/jobs?status=failed", base + "/jobs?offset=50000", base + "/jobs/" + jobID.String(),
		// The superadmin pages (the same 100,000 jobs).
		"/admin/queues", "/admin/queues/object_extraction", "/admin/queues/object_extraction?status=failed",
		"/admin/queues/object_extraction?offset=50000", "/admin/queues/object_extraction?projectId=" + project,
		"/admin/users", "/admin/organizations", "/admin/audit",
		base + "/graph", base + "/graph?q=object+09999", base + "/graph?type=Person", base + "/graph?offset=50000",
		base + "/graph/objects/" + center.String(),
	}
	chatPages, chatNames := benchChatPages(b, s, project)
	chatStart := len(pages)
	pages = append(pages, chatPages...)
	more, moreNames := benchIntegrationPages(b, s, project, docIDs, now)
	pages = append(pages, more...)
	pages = append(pages, benchProjectAdmin(b, s, pid, uuid.MustParse(org), jobID)...)
	for _, p := range pages {
		status, _, body := br.do("GET", p, nil)
		require.Equal(b, http.StatusOK, status, p)
		require.NotContains(b, body, "internal error", p)
	}
	_, _, body := br.do("GET", base+"/documents", nil)
	require.Contains(b, body, fmt.Sprintf("of %d", docs), "the documents page counts them all")
	_, _, body = br.do("GET", base+"/jobs", nil)
	require.Contains(b, body, fmt.Sprintf("of %d", jobs), "the jobs page counts them all")
	_, _, body = br.do("GET", "/admin/queues/object_extraction", nil)
	require.Contains(b, body, fmt.Sprintf("of %d", jobs), "the queue page counts them all")
	_, _, body = br.do("GET", base+"/graph", nil)
	require.Contains(b, body, fmt.Sprintf("of %d", graphObjects), "the graph page counts the objects")
	_, _, body = br.do("GET", base+"/graph/objects/"+center.String(), nil)
	require.Contains(b, body, "of 61", "the object's relationships")
	require.Contains(b, body, "and 10 more chunks.", "the object's provenance")

	lat := make([][]time.Duration, len(pages))
	b.ResetTimer()
	for i := range b.N {
		k := i % len(pages)
		t0 := time.Now()
		br.do("GET", pages[k], nil)
		lat[k] = append(lat[k], time.Since(t0))
	}
	b.StopTimer()
	names := make([]string, len(pages))
	for k, p := range pages {
		names[k] = strings.NewReplacer(append([]string{base, "P", "/" + docIDs[docs-1].String(), "/{doc}", "/" + jobID.String(), "/{job}", "/" + center.String(), "/{object}"}, moreNames...)...).Replace(p)
	}
	copy(names[chatStart:], chatNames)
	benchReport(b, lat, pages, names)
}
