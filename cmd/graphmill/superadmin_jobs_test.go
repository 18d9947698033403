package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// superadminJobList is a superadmin job list: the paged envelope and stats.
type superadminJobList struct {
	pagedBody
	Stats struct {
		Total      int            `json:"total"`
		Failed     int            `json:"failed"`
		WithErrors int            `json:"withErrors"`
		ByStatus   map[string]int `json:"byStatus"`
	} `json:"stats"`
}

// superadminExtractionJobs makes three extraction jobs, in two projects,
// that stay where the test puts them (the worker is paused): a queued one
// in project, a failed one with an error in project, a completed one with
// counts in other. It returns the projects and the jobs' ids.
func (s *testServer) superadminExtractionJobs() (project, other, queued, failed, completed string) {
	s.t.Helper()
	ctx := context.Background()
	project, org := s.defaultProject()
	other = s.newProject(org, "other")
	require.NoError(s.t, s.m.jobs.Pause(ctx, "object_extraction"))
	ids := make([]string, 3)
	for i, p := range []string{project, project, other} {
		doc := s.extractionUpload(p, []string{"a.md", "b.md", "c.md"}[i], "# Title\n\nSome text number "+string(rune('a'+i))+".")
		s.waitDocument(p, doc)
		ids[i] = s.extractionJobOf(doc)
	}
	_, err := s.m.db.pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'failed', error_msg = 'provider said no', attempt = 4, retry_count = 3,
		started_at = created_at, completed_at = created_at + interval '1500 ms' WHERE id = $1`, ids[1])
	require.NoError(s.t, err)
	_, err = s.m.db.pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'completed', objects_created = 7, relationships_created = 5,
		attempt = 1, started_at = created_at, completed_at = created_at + interval '2 s' WHERE id = $1`, ids[2])
	require.NoError(s.t, err)
	return project, other, ids[0], ids[1], ids[2]
}

func TestSuperadminExtractionJobList(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, other, queued, failed, completed := s.superadminExtractionJobs()
	path := "/api/superadmin/extraction-jobs"

	// Newest first; the items carry what an operator needs.
	l := s.superadminThreeJobs(path, completed, failed, queued)
	requireFields(t, l.Data[0], map[string]any{
		"projectId": other, "projectName": "other", "organizationName": "default", "fileName": "c.md", "documentId": present,
		"jobType": "full_extraction", "status": "completed", "objectsCreated": 7.0, "relationshipsCreated": 5.0,
		"durationMs": 2000.0, "attempt": 1.0, "maxRetries": 3.0, "startedAt": present, "completedAt": present,
	})
	requireFields(t, l.Data[1], map[string]any{"errorMessage": "provider said no", "retryCount": 3.0, "attempt": 4.0, "projectName": "default"})
	requireNotStarted(t, l.Data[2])

	// A status filter narrows the list, not the stats; the others narrow both.
	s.superadminListCases(path, []superadminListCase{
		{"status=failed", []string{failed}, 1, 3},
		{"projectId=" + project, []string{failed, queued}, 2, 2},
		{"hasError=true", []string{failed}, 1, 1},
		{"hasError=false&status=queued", []string{queued}, 1, 2},
		{"jobType=reextraction", []string{}, 0, 0},
		{"limit=2&page=2", []string{queued}, 3, 3},
	}, "jobType=bogus")
	s.must(200, "GET", path+"?limit=2&page=2", s.admin, nil).Decode(t, &l)
	require.Equal(t, 2, l.Meta.TotalPages)
	require.False(t, l.Meta.HasNext)
	require.True(t, l.Meta.HasPrev)
}

func TestSuperadminExtractionJobBulk(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, _, queued, failed, completed := s.superadminExtractionJobs()
	unknown := uuid.NewString()
	count := func(id string) int {
		return s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE id = $1`, id)
	}

	// type narrows to one job type: these are full extractions.
	r := s.must(200, "POST", "/api/superadmin/extraction-jobs/delete", s.admin, map[string]any{"ids": []string{failed, completed}, "type": "reextraction"}).JSON(t)
	require.InDelta(t, 0, r["deletedCount"], 0)
	r = s.must(200, "POST", "/api/superadmin/extraction-jobs/cancel", s.admin, map[string]any{"ids": []string{queued}, "type": "incremental"}).JSON(t)
	require.InDelta(t, 0, r["cancelledCount"], 0)
	require.Equal(t, 2, count(failed)+count(completed))
	require.Equal(t, "queued", s.extractionGetJob(queued).Status)

	// Delete removes only final jobs; the queued one is skipped and counted.
	r = s.must(200, "POST", "/api/superadmin/extraction-jobs/delete", s.admin, map[string]any{"ids": []string{queued, failed, unknown}, "type": "full_extraction"}).JSON(t)
	require.Equal(t, true, r["success"])
	require.InDelta(t, 1, r["deletedCount"], 0)
	require.Contains(t, r["message"], "skipped 1 queued or running")
	require.Len(t, r, 3)
	require.Equal(t, 0, count(failed))
	require.Equal(t, 1, count(queued))
	require.Equal(t, 1, count(completed))

	// Cancel cancels queued and running jobs only.
	r = s.must(200, "POST", "/api/superadmin/extraction-jobs/cancel", s.admin, map[string]any{"ids": []string{queued, completed, unknown}}).JSON(t)
	require.Equal(t, true, r["success"])
	require.InDelta(t, 1, r["cancelledCount"], 0)
	require.NotEmpty(t, r["message"])
	require.Len(t, r, 3)
	require.Equal(t, "cancelled", s.extractionGetJob(queued).Status)
	require.Equal(t, "completed", s.extractionGetJob(completed).Status)
	require.Contains(t, extractionOps(s.extractionLogs(queued)), "error")

	// Now final, the cancelled job can be deleted.
	r = s.must(200, "POST", "/api/superadmin/extraction-jobs/delete", s.admin, map[string]any{"ids": []string{queued, completed}}).JSON(t)
	require.InDelta(t, 2, r["deletedCount"], 0)
	require.Equal(t, 0, count(queued)+count(completed))

	for _, p := range []string{"/api/superadmin/extraction-jobs/delete", "/api/superadmin/extraction-jobs/cancel"} {
		s.superadminBulkRefusals(p, "bogus", "graph", "FULL_EXTRACTION")
	}
}

// TestSuperadminBulkDuplicateIDs: an id given twice (in either case) is
// one job: the messages' "of M" and the audit row's requested and target
// ids count it once.
func TestSuperadminBulkDuplicateIDs(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, _, queued, failed, _ := s.superadminExtractionJobs()
	ids := []string{queued, strings.ToUpper(queued), queued}
	r := s.must(200, "POST", "/api/superadmin/extraction-jobs/cancel", s.admin, map[string]any{"ids": ids})
	require.Equal(t, "cancelled 1 of 1 extraction jobs (only queued and running jobs can be cancelled)", r.JSON(t)["message"])
	s.requireAudit(r, "extraction_jobs.cancel", []string{queued}, 1, 1)
	r = s.must(200, "POST", "/api/superadmin/extraction-jobs/delete", s.admin, map[string]any{"ids": []string{failed, queued, failed}})
	require.Equal(t, "deleted 2 of 2 extraction jobs; skipped 0 queued or running", r.JSON(t)["message"])
	s.requireAudit(r, "extraction_jobs.delete", []string{failed, queued}, 2, 2)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE id = ANY($1::uuid[])`, []string{failed, queued}))
}

// TestSuperadminBulkNullIDsTouchNothing: "ids": null is refused with a
// 400 naming the field by every bulk route, and no job moves. It was
// read as "no id filter": delete removed every finished job of every
// project ("deleted 2 of 0"), cancel would have cancelled every queued one.
func TestSuperadminBulkNullIDsTouchNothing(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, _, queued, failed, completed := s.superadminExtractionJobs()
	for _, p := range []string{
		"/api/superadmin/extraction-jobs/delete", "/api/superadmin/extraction-jobs/cancel",
		"/api/superadmin/document-parsing-jobs/delete", "/api/superadmin/document-parsing-jobs/retry",
		"/api/superadmin/embedding-jobs/delete", "/api/superadmin/sync-jobs/delete", "/api/superadmin/sync-jobs/cancel",
	} {
		detail := s.must(400, "POST", p, s.admin, map[string]any{"ids": nil}).Detail(t)
		require.Contains(t, detail, "body.ids", p)
	}
	require.Equal(t, 3, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE id = ANY($1::uuid[])`, []string{queued, failed, completed}))
	require.Equal(t, "queued", s.extractionGetJob(queued).Status)
	require.Equal(t, 3, s.extractionCount(`SELECT count(*) FROM document_parsing_jobs`))
}

func TestSuperadminExtractionJobRoutesRefuseOthers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _, queued, _, _ := s.superadminExtractionJobs()
	s.superadminRefuseOthers(project, map[string]any{"ids": []string{queued}},
		"GET /api/superadmin/extraction-jobs",
		"POST /api/superadmin/extraction-jobs/cancel",
		"POST /api/superadmin/extraction-jobs/delete")
	// Nothing changed.
	require.Equal(t, "queued", s.extractionGetJob(queued).Status)
}

// TestSuperadminExtractionCancelStopsRunning: a running job cancelled in
// bulk stops: its in-flight call fails and nothing reaches the graph.
func TestSuperadminExtractionCancelStopsRunning(t *testing.T) {
	t.Parallel()
	s, project, _, id := extractionBlockedCall(t, 1)
	require.Equal(t, "running", s.extractionGetJob(id).Status)

	r := s.must(200, "POST", "/api/superadmin/extraction-jobs/cancel", s.admin, map[string]any{"ids": []string{id}}).JSON(t)
	require.InDelta(t, 1, r["cancelledCount"], 0)
	require.Eventually(t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1 AND status = 'error'`, id) == 1
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "cancelled", s.extractionGetJob(id).Status)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1`, project))
	// Cancelled, it is final: delete removes it.
	s.must(200, "POST", "/api/superadmin/extraction-jobs/delete", s.admin, map[string]any{"ids": []string{id}})
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE id = $1`, id))
}

// TestSuperadminExtractionCancelRolledBackKeepsRunning: a bulk cancel
// whose transaction rolls back (its audit row cannot be written: 500)
// leaves the running job running, in the database and in its worker:
// its in-flight call goes on (nothing cancels it before the commit).
func TestSuperadminExtractionCancelRolledBackKeepsRunning(t *testing.T) {
	t.Parallel()
	s, _, _, id := extractionBlockedCall(t, 1)
	require.Equal(t, "running", s.extractionGetJob(id).Status)
	undo := s.failOn("audit_events", "INSERT")
	s.must(500, "POST", "/api/superadmin/extraction-jobs/cancel", s.admin, map[string]any{"ids": []string{id}})
	undo()
	require.Equal(t, "running", s.extractionGetJob(id).Status, "the cancel was rolled back")
	require.Never(t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1 AND status = 'error'`, id) > 0
	}, 3*time.Second, 50*time.Millisecond, "the running job was stopped although the cancel was rolled back")
	require.Equal(t, "running", s.extractionGetJob(id).Status)
}
