package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// superadminBulkRefusals: every malformed body of a bulk action answers
// 400 with a detail (no ids, too many, a malformed id, an unknown field,
// each of badTypes), and 1,000 ids are accepted.
func (s *testServer) superadminBulkRefusals(path string, badTypes ...string) {
	s.t.Helper()
	many := make([]string, 1001)
	for i := range many {
		many[i] = uuid.NewString()
	}
	bodies := []any{
		map[string]any{"ids": []string{}},
		map[string]any{"ids": many},
		map[string]any{"ids": []string{"not-a-uuid"}},
		map[string]any{"ids": []string{many[0]}, "extra": 1},
		map[string]any{},
	}
	for _, typ := range badTypes {
		bodies = append(bodies, map[string]any{"ids": []string{many[0]}, "type": typ})
	}
	for _, body := range bodies {
		require.NotEmpty(s.t, s.must(400, "POST", path, s.admin, body).Detail(s.t), "%s %v", path, body)
	}
	r := s.must(200, "POST", path, s.admin, map[string]any{"ids": many[:1000]}).JSON(s.t)
	require.Equal(s.t, true, r["success"])
}

// superadminRefuseOthers: each route answers 401 without a token, and 403
// to a project admin who is no superadmin and to the superadmin's token
// bound to project.
func (s *testServer) superadminRefuseOthers(project string, body any, routes ...string) {
	s.t.Helper()
	_, member := s.newMember("member-"+uuid.NewString()[:8]+"@example.com", allScopes, project, "admin")
	var bound map[string]any
	s.must(201, "POST", "/api/projects/"+project+"/tokens", s.admin, map[string]any{"name": "b", "scopes": allScopes}).Decode(s.t, &bound)
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt, " ")
		s.must(401, method, path, "", body)
		require.Contains(s.t, s.must(403, method, path, member, body).Detail(s.t), "superadmin")
		s.must(403, method, path, bound["token"].(string), body)
	}
}

// superadminListCase is a query of a superadmin job list and its answer:
// the page's ids in order, the list's total and the stats' total.
type superadminListCase struct {
	query             string
	ids               []string
	total, statsTotal int
}

// superadminListCases checks each case of the job list at path, then that
// each bad query (those every list refuses, and extraBad) answers 400 with
// a detail.
func (s *testServer) superadminListCases(path string, cases []superadminListCase, extraBad ...string) {
	s.t.Helper()
	for _, c := range cases {
		var l superadminJobList
		s.must(200, "GET", path+"?"+c.query, s.admin, nil).Decode(s.t, &l)
		require.NotNil(s.t, l.Data, c.query)
		ids := []string{}
		for _, item := range l.Data {
			ids = append(ids, item["id"].(string))
		}
		require.Equal(s.t, c.ids, ids, c.query)
		require.Equal(s.t, c.total, l.Meta.Total, c.query)
		require.Equal(s.t, c.statsTotal, l.Stats.Total, c.query)
	}
	bad := []string{"status=bogus", "status=pending", "projectId=nope", "hasError=maybe", "limit=0", "limit=101", "page=0"}
	for _, q := range append(bad, extraBad...) {
		require.NotEmpty(s.t, s.must(400, "GET", path+"?"+q, s.admin, nil).Detail(s.t), q)
	}
}

// superadminThreeJobs reads the unfiltered job list at path, which holds
// the three jobs of a fixture (one queued, one completed, one failed with
// an error) in the order ids gives, and checks its page and stats.
func (s *testServer) superadminThreeJobs(path string, ids ...string) superadminJobList {
	s.t.Helper()
	var l superadminJobList
	s.must(200, "GET", path, s.admin, nil).Decode(s.t, &l)
	require.Len(s.t, l.Data, 3)
	require.Equal(s.t, ids, []string{l.Data[0]["id"].(string), l.Data[1]["id"].(string), l.Data[2]["id"].(string)})
	require.Equal(s.t, [4]int{1, 20, 3, 1}, [4]int{l.Meta.Page, l.Meta.Limit, l.Meta.Total, l.Meta.TotalPages})
	require.False(s.t, l.Meta.HasNext || l.Meta.HasPrev)
	require.Equal(s.t, [3]int{3, 1, 1}, [3]int{l.Stats.Total, l.Stats.Failed, l.Stats.WithErrors})
	require.Equal(s.t, map[string]int{"queued": 1, "running": 0, "completed": 1, "failed": 1, "cancelled": 0, "requires_review": 0}, l.Stats.ByStatus)
	return l
}

// requireFields checks the fields of a job list item: each of want (JSON
// numbers as float64), present is "any value".
func requireFields(t *testing.T, item map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		require.Contains(t, item, k)
		if v != present {
			require.Equal(t, v, item[k], k)
		}
	}
}

// present stands for a field's presence in requireFields.
const present = "(present)"

// requireNotStarted checks that a job list item of a queued job carries
// no start, end, duration or error.
func requireNotStarted(t *testing.T, item map[string]any) {
	t.Helper()
	for _, field := range []string{"startedAt", "completedAt", "durationMs", "errorMessage"} {
		require.NotContains(t, item, field)
	}
}

// superadminWaitParsed waits until a document is parsed (its chunks need
// not be embedded).
func (s *testServer) superadminWaitParsed(project, doc string) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		var d docBody
		s.must(200, "GET", "/api/documents/"+doc, s.admin, nil, header{"X-Project-ID", project}).Decode(s.t, &d)
		return d.Status == "parsed"
	}, 20*time.Second, 20*time.Millisecond)
}

// superadminParsingJobs makes three parsing jobs in two projects: a
// failed one (a corrupt PDF) and a completed one in project, and one that
// stays queued (the queue is paused) in other. It returns the projects,
// the jobs and the failed job's document.
func (s *testServer) superadminParsingJobs() (project, other, failed, completed, queued, broken string) {
	s.t.Helper()
	ctx := context.Background()
	project, org := s.defaultProject()
	other = s.newProject(org, "other")
	require.NoError(s.t, s.m.jobs.Pause(ctx, "object_extraction"))
	jobOf := func(doc string) string {
		var id string
		require.NoError(s.t, s.m.db.pool.QueryRow(ctx, `SELECT id::text FROM document_parsing_jobs WHERE document_id = $1`, doc).Scan(&id))
		return id
	}
	r := s.uploadFile(s.admin, project, "broken.pdf", "application/pdf", []byte("%PDF-1.4\nthis is not really a pdf"))
	require.Equal(s.t, 201, r.Status, "%s", r.Body)
	var d docBody
	r.Decode(s.t, &d)
	broken = d.ID
	require.Equal(s.t, "failed", s.waitDocument(project, broken).Status)
	good := s.extractionUpload(project, "good.md", "# Good\n\nThis one parses.")
	s.waitDocument(project, good)
	require.NoError(s.t, s.m.jobs.Pause(ctx, "document_parsing"))
	waiting := s.extractionUpload(other, "later.md", "# Later\n\nThis one waits.")
	return project, other, jobOf(broken), jobOf(good), jobOf(waiting), broken
}

func TestSuperadminParsingJobList(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, other, failed, completed, queued, broken := s.superadminParsingJobs()
	path := "/api/superadmin/document-parsing-jobs"

	l := s.superadminThreeJobs(path, queued, completed, failed)
	requireFields(t, l.Data[2], map[string]any{
		"projectId": project, "projectName": "default", "organizationName": "default", "documentId": broken, "fileName": "broken.pdf",
		"status": "failed", "errorMessage": present, "attempt": 1.0, "retryCount": 0.0, "maxRetries": 3.0, "priority": 0.0,
		"createdAt": present, "startedAt": present, "completedAt": present, "durationMs": present,
	})
	c := l.Data[1]
	require.Equal(t, "good.md", c["fileName"])
	require.Equal(t, "completed", c["status"])
	require.NotContains(t, c, "errorMessage")
	q := l.Data[0]
	require.Equal(t, [2]any{other, "other"}, [2]any{q["projectId"], q["projectName"]})
	requireNotStarted(t, q)

	// A status filter narrows the list, not the stats; the others narrow both.
	s.superadminListCases(path, []superadminListCase{
		{"status=failed", []string{failed}, 1, 3},
		{"projectId=" + project, []string{completed, failed}, 2, 2},
		{"hasError=true", []string{failed}, 1, 1},
		{"hasError=false&status=queued", []string{queued}, 1, 2},
		{"status=cancelled", []string{}, 0, 3},
		{"limit=2&page=2", []string{failed}, 3, 3},
	})
}

// TestSuperadminParsingJobRetry: a retry re-queues only failed parsing
// jobs, in one statement, and they really parse again: the corrupt file,
// repaired meanwhile, parses into chunks.
func TestSuperadminParsingJobRetry(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _, failed, completed, queued, broken := s.superadminParsingJobs()
	ctx := context.Background()
	require.NoError(t, s.m.jobs.Resume(ctx, "document_parsing"))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE document_id = $1`, broken))

	// The cause is fixed: the stored file is a real PDF now.
	pdf, err := os.ReadFile("../../internal/document/testdata/hello.pdf")
	require.NoError(t, err)
	_, err = s.m.db.pool.Exec(ctx, `UPDATE documents SET content = $2 WHERE id = $1`, broken, pdf)
	require.NoError(t, err)

	unknown := uuid.NewString()
	r := s.must(200, "POST", "/api/superadmin/document-parsing-jobs/retry", s.admin,
		map[string]any{"ids": []string{failed, completed, queued, unknown}}).JSON(t)
	require.Equal(t, map[string]any{
		"success": true, "retriedCount": float64(1),
		"message": "retried 1 of 4 document parsing jobs (only failed jobs can be retried)",
	}, r)
	d := s.waitDocument(project, broken)
	require.Equal(t, "parsed", d.Status)
	require.Positive(t, d.ChunkCount)
	require.Positive(t, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE document_id = $1 AND text LIKE '%quick brown fox%'`, broken))
	var status string
	var attempt, retries int
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT status, attempt, retry_count FROM document_parsing_jobs WHERE id = $1`, failed).
		Scan(&status, &attempt, &retries))
	require.Equal(t, "completed", status)
	require.Equal(t, 2, attempt)
	require.Zero(t, retries)
	// The other jobs were not run again.
	require.Equal(t, 1, s.extractionCount(`SELECT attempt FROM document_parsing_jobs WHERE id = $1`, completed))

	// Completed now, it is not retried again.
	r = s.must(200, "POST", "/api/superadmin/document-parsing-jobs/retry", s.admin, map[string]any{"ids": []string{failed}}).JSON(t)
	require.InDelta(t, 0, r["retriedCount"], 0)

	s.superadminBulkRefusals("/api/superadmin/document-parsing-jobs/retry", "full_extraction", "chunk")
}

func TestSuperadminParsingJobDelete(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, _, failed, completed, queued, broken := s.superadminParsingJobs()
	count := func(id string) int {
		return s.extractionCount(`SELECT count(*) FROM document_parsing_jobs WHERE id = $1`, id)
	}

	r := s.must(200, "POST", "/api/superadmin/document-parsing-jobs/delete", s.admin,
		map[string]any{"ids": []string{failed, completed, queued, uuid.NewString()}}).JSON(t)
	require.Equal(t, map[string]any{
		"success": true, "deletedCount": float64(2),
		"message": "deleted 2 of 4 document parsing jobs; skipped 1 queued or running",
	}, r)
	require.Zero(t, count(failed)+count(completed))
	require.Equal(t, 1, count(queued))
	// The documents stay.
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM documents WHERE id = $1`, broken))

	s.superadminBulkRefusals("/api/superadmin/document-parsing-jobs/delete", "full_extraction", "graph")
	require.Equal(t, 1, count(queued))
}

func TestSuperadminParsingJobRoutesRefuseOthers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _, failed, _, _, _ := s.superadminParsingJobs()
	s.superadminRefuseOthers(project, map[string]any{"ids": []string{failed}},
		"GET /api/superadmin/document-parsing-jobs",
		"POST /api/superadmin/document-parsing-jobs/delete",
		"POST /api/superadmin/document-parsing-jobs/retry")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM document_parsing_jobs WHERE id = $1 AND status = 'failed'`, failed))
}

// superadminEmbeddingJobs makes three embedding jobs that stay where the
// test puts them (the queues are paused), created in this order: a
// completed graph job in project, a failed chunk job with an error in
// project, a queued graph job in other. It returns the projects, the jobs,
// the first object and the document.
func (s *testServer) superadminEmbeddingJobs() (project, other, graphDone, chunkFailed, graphQueued, object, doc string) {
	s.t.Helper()
	ctx := context.Background()
	project, org := s.defaultProject()
	other = s.newProject(org, "other")
	for _, q := range []string{"object_extraction", "graph_embedding", "chunk_embedding"} {
		require.NoError(s.t, s.m.jobs.Pause(ctx, q))
	}
	jobOf := func(sql, id string) string {
		var job string
		require.NoError(s.t, s.m.db.pool.QueryRow(ctx, sql, id).Scan(&job))
		return job
	}
	object = s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Ada Lovelace"})
	graphDone = jobOf(`SELECT id::text FROM graph_embedding_jobs WHERE object_id = $1`, object)
	doc = s.extractionUpload(project, "notes.md", "# Notes\n\nShort enough for one chunk.")
	s.superadminWaitParsed(project, doc)
	chunkFailed = jobOf(`SELECT j.id::text FROM chunk_embedding_jobs j JOIN document_chunks c ON c.id = j.chunk_id WHERE c.document_id = $1`, doc)
	elsewhere := s.graphCreateObject(s.admin, other, map[string]any{"type": "Person", "name": "Grace Hopper"})
	graphQueued = jobOf(`SELECT id::text FROM graph_embedding_jobs WHERE object_id = $1`, elsewhere)
	_, err := s.m.db.pool.Exec(ctx, `UPDATE graph_embedding_jobs SET status = 'completed', attempt = 1,
		started_at = created_at, completed_at = created_at + interval '250 ms' WHERE id = $1`, graphDone)
	require.NoError(s.t, err)
	_, err = s.m.db.pool.Exec(ctx, `UPDATE chunk_embedding_jobs SET status = 'failed', error_msg = 'provider said no', attempt = 4, retry_count = 3,
		started_at = created_at, completed_at = created_at + interval '1 s' WHERE id = $1`, chunkFailed)
	require.NoError(s.t, err)
	return project, other, graphDone, chunkFailed, graphQueued, object, doc
}

// TestSuperadminEmbeddingJobList: graph and chunk embedding jobs are one
// list, newest first, paged as one; each item says its type and what it
// embeds; the stats count both tables.
func TestSuperadminEmbeddingJobList(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, other, graphDone, chunkFailed, graphQueued, object, doc := s.superadminEmbeddingJobs()
	path := "/api/superadmin/embedding-jobs"

	l := s.superadminThreeJobs(path, graphQueued, chunkFailed, graphDone)
	c, g := l.Data[1], l.Data[2]
	requireFields(t, c, map[string]any{
		"type": "chunk", "projectId": project, "projectName": "default", "organizationName": "default",
		"documentId": doc, "fileName": "notes.md", "chunkId": present, "status": "failed", "errorMessage": "provider said no",
		"attempt": 4.0, "retryCount": 3.0, "maxRetries": 3.0, "durationMs": 1000.0,
	})
	require.NotContains(t, c, "objectId")
	requireFields(t, g, map[string]any{
		"type": "graph", "objectId": object, "objectType": "Person", "objectName": "Ada Lovelace", "durationMs": 250.0,
	})
	require.NotContains(t, g, "chunkId")
	require.NotContains(t, g, "fileName")
	q := l.Data[0]
	require.Equal(t, [3]any{other, "other", "queued"}, [3]any{q["projectId"], q["projectName"], q["status"]})
	requireNotStarted(t, q)

	// One page at a time across both tables: the merge order, not a page
	// of each. type narrows to one table, list and stats; status narrows
	// the list, not the stats; the others narrow both.
	s.superadminListCases(path, []superadminListCase{
		{"limit=1&page=1", []string{graphQueued}, 3, 3},
		{"limit=1&page=2", []string{chunkFailed}, 3, 3},
		{"limit=1&page=3", []string{graphDone}, 3, 3},
		{"type=chunk", []string{chunkFailed}, 1, 1},
		{"type=graph", []string{graphQueued, graphDone}, 2, 2},
		{"status=completed", []string{graphDone}, 1, 3},
		{"projectId=" + other, []string{graphQueued}, 1, 1},
		{"hasError=true", []string{chunkFailed}, 1, 1},
		{"hasError=false&type=graph&projectId=" + project, []string{graphDone}, 1, 1},
	}, "type=bogus", "type=Graph")
}

func TestSuperadminEmbeddingJobDelete(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, _, graphDone, chunkFailed, graphQueued, _, _ := s.superadminEmbeddingJobs()
	count := func(id string) int {
		return s.extractionCount(`SELECT (SELECT count(*) FROM graph_embedding_jobs WHERE id = $1) + (SELECT count(*) FROM chunk_embedding_jobs WHERE id = $1)`, id)
	}
	path := "/api/superadmin/embedding-jobs/delete"
	deleteOneOfThree := func(body map[string]any) {
		require.Equal(t, map[string]any{
			"success": true, "deletedCount": float64(1),
			"message": "deleted 1 of 3 embedding jobs; skipped 1 queued or running",
		}, s.must(200, "POST", path, s.admin, body).JSON(t))
	}

	// type narrows the delete to one table: the chunk job stays.
	deleteOneOfThree(map[string]any{"ids": []string{graphDone, chunkFailed, graphQueued}, "type": "graph"})
	require.Zero(t, count(graphDone))
	require.Equal(t, 1, count(chunkFailed))
	require.Equal(t, 1, count(graphQueued))
	// Without a type, both tables: the final chunk job goes, the queued graph job stays.
	deleteOneOfThree(map[string]any{"ids": []string{chunkFailed, graphQueued, uuid.NewString()}})
	require.Zero(t, count(chunkFailed))
	require.Equal(t, 1, count(graphQueued))
	// type chunk leaves graph jobs alone, even final ones.
	_, err := s.m.db.pool.Exec(context.Background(), `UPDATE graph_embedding_jobs SET status = 'cancelled' WHERE id = $1`, graphQueued)
	require.NoError(t, err)
	r := s.must(200, "POST", path, s.admin, map[string]any{"ids": []string{graphQueued}, "type": "chunk"}).JSON(t)
	require.InDelta(t, 0, r["deletedCount"], 0)
	require.Equal(t, 1, count(graphQueued))

	s.superadminBulkRefusals(path, "bogus", "full_extraction", "GRAPH")
}

// TestSuperadminEmbeddingCleanupOrphans: the jobs of soft-deleted objects
// that have run, and the jobs of a soft-deleted project that are not
// running, are deleted; live objects' and chunks' jobs, a deleted object's
// queued job (it drops the object's vectors) and running jobs stay.
func TestSuperadminEmbeddingCleanupOrphans(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	project, org := s.defaultProject()
	gone := s.newProject(org, "gone")
	for _, q := range []string{"object_extraction", "graph_embedding", "chunk_embedding"} {
		require.NoError(t, s.m.jobs.Pause(ctx, q))
	}
	hp := header{"X-Project-ID", project}
	person := func(p, name string) string {
		return s.graphCreateObject(s.admin, p, map[string]any{"type": "Person", "name": name})
	}
	jobs := func(sql string, args ...any) []string { return s.extractionIDs(sql, args...) }
	graphJobs := func(object string) []string {
		return jobs(`SELECT id::text FROM graph_embedding_jobs WHERE object_id = $1 ORDER BY created_at`, object)
	}
	exec := func(sql string, args ...any) {
		_, err := s.m.db.pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}

	live := person(project, "Live")
	deletedQueued := person(project, "Deleted while queued")
	s.must(204, "DELETE", "/api/graph/objects/"+deletedQueued, s.admin, nil, hp)
	deletedDone := person(project, "Deleted after its run")
	exec(`UPDATE graph_embedding_jobs SET status = 'completed' WHERE object_id = $1`, deletedDone)
	s.must(204, "DELETE", "/api/graph/objects/"+deletedDone, s.admin, nil, hp)
	require.Len(t, graphJobs(deletedDone), 2, "the completed job and the one that drops the vectors")
	doc := s.extractionUpload(project, "kept.md", "# Kept\n\nA live chunk.")
	s.superadminWaitParsed(project, doc)

	inGone := person(gone, "In a deleted project")
	runningInGone := person(gone, "Running in a deleted project")
	exec(`UPDATE graph_embedding_jobs SET status = 'running', started_at = now() WHERE object_id = $1`, runningInGone)
	goneDoc := s.extractionUpload(gone, "gone.md", "# Gone\n\nA chunk of a deleted project.")
	s.superadminWaitParsed(gone, goneDoc)
	s.must(200, "DELETE", "/api/superadmin/projects/"+gone, s.admin, nil)

	keptGraph := append(append(graphJobs(live), graphJobs(deletedQueued)...), graphJobs(deletedDone)[1], graphJobs(runningInGone)[0])
	keptChunks := jobs(`SELECT j.id::text FROM chunk_embedding_jobs j JOIN document_chunks c ON c.id = j.chunk_id WHERE c.document_id = $1`, doc)
	require.NotEmpty(t, keptChunks)
	goneChunks := jobs(`SELECT j.id::text FROM chunk_embedding_jobs j JOIN document_chunks c ON c.id = j.chunk_id WHERE c.document_id = $1`, goneDoc)
	require.NotEmpty(t, goneChunks)
	orphans := append([]string{graphJobs(deletedDone)[0], graphJobs(inGone)[0]}, goneChunks...)

	r := s.must(200, "POST", "/api/superadmin/embedding-jobs/cleanup-orphans", s.admin, nil).JSON(t)
	require.Equal(t, true, r["success"])
	require.InDelta(t, len(orphans), r["deletedCount"], 0)
	require.Contains(t, r["message"], "(2 graph, ")
	require.Len(t, r, 3)
	all := func(ids []string) int {
		return s.extractionCount(`SELECT (SELECT count(*) FROM graph_embedding_jobs WHERE id::text = ANY($1)) +
			(SELECT count(*) FROM chunk_embedding_jobs WHERE id::text = ANY($1))`, ids)
	}
	require.Zero(t, all(orphans))
	require.Equal(t, len(keptGraph)+len(keptChunks), all(append(keptGraph, keptChunks...)))

	// Nothing is left to clean up.
	r = s.must(200, "POST", "/api/superadmin/embedding-jobs/cleanup-orphans", s.admin, nil).JSON(t)
	require.InDelta(t, 0, r["deletedCount"], 0)
}

func TestSuperadminEmbeddingJobRoutesRefuseOthers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _, graphDone, _, _, _, _ := s.superadminEmbeddingJobs()
	s.superadminRefuseOthers(project, map[string]any{"ids": []string{graphDone}},
		"GET /api/superadmin/embedding-jobs",
		"POST /api/superadmin/embedding-jobs/delete",
		"POST /api/superadmin/embedding-jobs/cleanup-orphans")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM graph_embedding_jobs WHERE id = $1`, graphDone))
}

// TestSuperadminAuditRecordsParsingJobActions: parsing job retries and
// deletes write their audit row in their transaction; a refused call
// writes none, and a row that cannot be written undoes the retry.
func TestSuperadminAuditRecordsParsingJobActions(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, _, failed, completed, queued, broken := s.superadminParsingJobs()
	status := func(id string) string {
		var st string
		require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT status FROM document_parsing_jobs WHERE id = $1`, id).Scan(&st))
		return st
	}

	undo := s.failOn("audit_events", "INSERT")
	s.must(500, "POST", "/api/superadmin/document-parsing-jobs/retry", s.admin, map[string]any{"ids": []string{failed}})
	undo()
	require.Equal(t, "failed", status(failed))
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM documents WHERE id = $1 AND status = 'failed'`, broken))

	r := s.must(200, "POST", "/api/superadmin/document-parsing-jobs/retry", s.admin, map[string]any{"ids": []string{failed, completed}})
	s.requireAudit(r, "document_parsing_jobs.retry", []string{failed, completed}, 2, 1)
	require.Equal(t, "queued", status(failed)) // the queue is paused
	r = s.must(200, "POST", "/api/superadmin/document-parsing-jobs/delete", s.admin, map[string]any{"ids": []string{completed, queued}})
	s.requireAudit(r, "document_parsing_jobs.delete", []string{completed, queued}, 2, 1)

	s.must(400, "POST", "/api/superadmin/document-parsing-jobs/delete", s.admin, map[string]any{"ids": []string{queued}, "type": "chunk"})
	s.must(400, "POST", "/api/superadmin/document-parsing-jobs/retry", s.admin, map[string]any{"ids": []string{queued}, "type": "chunk"})
	require.Equal(t, 2, s.auditCount())
}

// TestSuperadminAuditRecordsEmbeddingJobActions: embedding job deletes and
// orphan clean-ups write their audit row; a refused call writes none.
func TestSuperadminAuditRecordsEmbeddingJobActions(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, _, graphDone, chunkFailed, graphQueued, _, _ := s.superadminEmbeddingJobs()

	r := s.must(200, "POST", "/api/superadmin/embedding-jobs/delete", s.admin,
		map[string]any{"ids": []string{graphDone, graphQueued, chunkFailed}, "type": "graph"})
	s.requireAudit(r, "embedding_jobs.delete", []string{graphDone, graphQueued, chunkFailed}, 3, 1)
	r = s.must(200, "POST", "/api/superadmin/embedding-jobs/cleanup-orphans", s.admin, nil)
	s.requireAudit(r, "embedding_jobs.cleanup_orphans", []string{}, 0, 0)

	s.must(400, "POST", "/api/superadmin/embedding-jobs/delete", s.admin, map[string]any{"ids": []string{chunkFailed}, "type": "bogus"})
	require.Equal(t, 2, s.auditCount())
}
