package main

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// benchJobs is how many jobs each superadmin list benchmark writes.
const benchJobs = 100_000

// benchStatuses is the mix of statuses of the benchmarks' jobs.
var benchStatuses = []string{"completed", "completed", "completed", "failed", "cancelled", "queued", "running", "requires_review"}

// superadminBenchSetup starts a server with nine projects besides the
// default one, the given queues paused, and a seed document in the
// default project (parsed; its chunks embedded unless chunk_embedding is
// paused). It returns the projects and the document.
func superadminBenchSetup(b *testing.B, paused ...string) (*testServer, []string, string) {
	ctx := context.Background()
	s := newServer(b)
	for _, q := range paused {
		require.NoError(b, s.m.jobs.Pause(ctx, q))
	}
	project, org := s.defaultProject()
	projects := []string{project}
	for i := range 9 {
		projects = append(projects, s.newProject(org, fmt.Sprintf("p%d", i)))
	}
	doc := s.extractionUpload(project, "seed.md", "# Seed\n\nseed")
	s.superadminWaitParsed(project, doc)
	return s, projects, doc
}

// benchJob is the i-th benchmark job's common columns: project (the
// default one every fourth job), status, error and time (one a second,
// oldest first).
func benchJob(projects []string, i int, now time.Time) (project, status string, errMsg any, at time.Time) {
	project, status = projects[i%len(projects)], benchStatuses[i%len(benchStatuses)]
	if i%4 == 0 {
		project = projects[0]
	}
	if status == "failed" {
		errMsg = "provider said no"
	}
	return project, status, errMsg, now.Add(-time.Duration(benchJobs-i) * time.Second)
}

// benchCopy writes rows into table and analyzes it.
func benchCopy(b *testing.B, s *testServer, table string, cols []string, rows [][]any) {
	ctx := context.Background()
	_, err := s.m.db.pool.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
	require.NoError(b, err)
	_, err = s.m.db.pool.Exec(ctx, `ANALYZE `+table)
	require.NoError(b, err)
}

// benchFullPages checks that each path (a superadmin job list) answers a
// full page of 100, and that the first, unfiltered, counts total jobs.
func benchFullPages(b *testing.B, s *testServer, total int, paths []string) {
	b.Helper()
	for i, path := range paths {
		var l superadminJobList
		s.must(200, "GET", path, s.admin, nil).Decode(b, &l)
		require.Len(b, l.Data, 100, path)
		if i == 0 {
			require.Equal(b, total, l.Stats.Total, path)
		}
	}
}

// BenchmarkSuperadminExtractionJobs100k measures GET
// /api/superadmin/extraction-jobs?limit=100 end to end (HTTP, auth, list and
// stats queries) over 100,000 extraction jobs in 10 projects, a quarter of
// them with a document, and reports the latency percentiles of the
// unfiltered list and of a status-filtered one. The jobs are written
// directly (COPY).
//
//	go test ./cmd/graphmill -run '^$' -bench SuperadminExtractionJobs100k -benchtime 200x
func BenchmarkSuperadminExtractionJobs100k(b *testing.B) {
	s, projects, doc := superadminBenchSetup(b, "object_extraction")
	now := time.Now().UTC()
	rows := make([][]any, benchJobs)
	for i := range rows {
		p, st, errMsg, at := benchJob(projects, i, now)
		var d any
		if i%4 == 0 {
			d = doc
		}
		rows[i] = []any{uuid.Must(uuid.NewV7()), p, st, at, errMsg, at, at, d, "full_extraction", "manual"}
	}
	benchCopy(b, s, "object_extraction_jobs",
		[]string{"id", "project_id", "status", "run_at", "error_msg", "created_at", "updated_at", "document_id", "job_type", "trigger_type"}, rows)
	paths := []string{"/api/superadmin/extraction-jobs?limit=100", "/api/superadmin/extraction-jobs?limit=100&status=failed"}
	benchFullPages(b, s, benchJobs+1, paths) // the seed document's own job too
	benchLatencies(b, s, paths, []string{"all", "failed"})
}

// BenchmarkSuperadminParsingJobs100k measures GET
// /api/superadmin/document-parsing-jobs?limit=100 as the extraction
// benchmark does, over 100,000 parsing jobs (of ten documents, one per
// project).
//
//	go test ./cmd/graphmill -run '^$' -bench SuperadminParsingJobs100k -benchtime 200x
func BenchmarkSuperadminParsingJobs100k(b *testing.B) {
	s, projects, doc := superadminBenchSetup(b, "object_extraction", "chunk_embedding")
	docs := map[string]string{projects[0]: doc}
	for _, p := range projects[1:] {
		docs[p] = s.extractionUpload(p, "seed-"+p[:8]+".md", "# Seed\n\n"+p)
		s.superadminWaitParsed(p, docs[p])
	}
	require.NoError(b, s.m.jobs.Pause(context.Background(), "document_parsing"))
	now := time.Now().UTC()
	rows := make([][]any, benchJobs)
	for i := range rows {
		p, st, errMsg, at := benchJob(projects, i, now)
		rows[i] = []any{uuid.Must(uuid.NewV7()), p, st, at, errMsg, at, at, docs[p]}
	}
	benchCopy(b, s, "document_parsing_jobs", []string{"id", "project_id", "status", "run_at", "error_msg", "created_at", "updated_at", "document_id"}, rows)
	paths := []string{"/api/superadmin/document-parsing-jobs?limit=100", "/api/superadmin/document-parsing-jobs?limit=100&status=failed"}
	benchFullPages(b, s, benchJobs+len(projects), paths) // the seed documents' own jobs too
	benchLatencies(b, s, paths, []string{"all", "failed"})
}

// BenchmarkSuperadminEmbeddingJobs100k measures GET
// /api/superadmin/embedding-jobs?limit=100 as the extraction benchmark
// does, over 100,000 embedding jobs, graph and chunk in turns of eight (50,000
// graph objects, the seed document's chunk), unfiltered, by status, and
// of one type.
//
//	go test ./cmd/graphmill -run '^$' -bench SuperadminEmbeddingJobs100k -benchtime 300x
func BenchmarkSuperadminEmbeddingJobs100k(b *testing.B) {
	s, projects, doc := superadminBenchSetup(b, "object_extraction", "chunk_embedding", "graph_embedding")
	ctx := context.Background()
	var chunk string
	require.NoError(b, s.m.db.pool.QueryRow(ctx, `SELECT id::text FROM document_chunks WHERE document_id = $1 LIMIT 1`, doc).Scan(&chunk))
	var seeded int // the seed document's own jobs
	require.NoError(b, s.m.db.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM chunk_embedding_jobs) + (SELECT count(*) FROM graph_embedding_jobs)`).Scan(&seeded))
	now := time.Now().UTC()
	var objects, graphs, chunks [][]any
	for i := range benchJobs {
		p, st, errMsg, at := benchJob(projects, i, now)
		if (i/len(benchStatuses))%2 == 1 { // every status in both tables
			chunks = append(chunks, []any{uuid.Must(uuid.NewV7()), p, st, at, errMsg, at, at, chunk})
			continue
		}
		object := uuid.Must(uuid.NewV7())
		objects = append(objects, []any{object, p, "Person", fmt.Sprintf("p%d", i), fmt.Sprintf("p%d", i), fmt.Sprintf("Person %d", i), "accepted", at, at})
		graphs = append(graphs, []any{uuid.Must(uuid.NewV7()), p, st, at, errMsg, at, at, object})
	}
	benchCopy(b, s, "graph_objects", []string{"id", "project_id", "type", "key", "normalized_key", "name", "status", "created_at", "updated_at"}, objects)
	cols := []string{"id", "project_id", "status", "run_at", "error_msg", "created_at", "updated_at"}
	benchCopy(b, s, "graph_embedding_jobs", append(cols, "object_id"), graphs)
	benchCopy(b, s, "chunk_embedding_jobs", append(cols, "chunk_id"), chunks)
	path := "/api/superadmin/embedding-jobs?limit=100"
	paths := []string{path, path + "&status=failed", path + "&type=chunk&hasError=false"}
	benchFullPages(b, s, benchJobs+seeded, paths)
	benchLatencies(b, s, paths, []string{"all", "failed", "chunk"})
}

// benchLatencies requests paths in turn b.N times in all and reports each
// one's p50 and p95 latency as NAME-p50-ms and NAME-p95-ms.
func benchLatencies(b *testing.B, s *testServer, paths, names []string) {
	b.Helper()
	lat := make([][]time.Duration, len(paths))
	b.ResetTimer()
	for i := range b.N {
		k := i % len(paths)
		t0 := time.Now()
		s.must(200, "GET", paths[k], s.admin, nil)
		lat[k] = append(lat[k], time.Since(t0))
	}
	b.StopTimer()
	benchReport(b, lat, paths, names)
}

// benchReport reports the p50 and p95 of each list of latencies (named
// names[k] in the metrics, paths[k] in the log).
func benchReport(b *testing.B, lat [][]time.Duration, paths, names []string) {
	b.Helper()
	for k, l := range lat {
		if len(l) == 0 {
			continue
		}
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		pct := func(p float64) float64 {
			return float64(l[min(len(l)-1, int(p*float64(len(l))))].Microseconds()) / 1000
		}
		b.ReportMetric(pct(0.50), names[k]+"-p50-ms")
		b.ReportMetric(pct(0.95), names[k]+"-p95-ms")
		b.Logf("%s: p50 %.1f ms, p95 %.1f ms (%d requests)", paths[k], pct(0.5), pct(0.95), len(l))
	}
}

// BenchmarkSuperadminEmailJobs100k measures GET
// /api/superadmin/email-jobs?limit=100 end to end over 100,000 email jobs
// (email off, so nothing sends them): the unfiltered list, a
// status-filtered one and one recipient's jobs. The jobs are written
// directly (COPY).
//
//	go test ./cmd/graphmill -run '^$' -bench SuperadminEmailJobs100k -benchtime 300x
func BenchmarkSuperadminEmailJobs100k(b *testing.B) {
	const jobs = 100_000
	ctx := context.Background()
	s := newServer(b)
	project, _ := s.defaultProject()
	statuses := []string{"completed", "completed", "completed", "completed", "failed", "cancelled", "queued", "running"}
	now := time.Now().UTC()
	rows := make([][]any, jobs)
	for i := range rows {
		st := statuses[i%len(statuses)]
		var p, errMsg any
		if i%3 == 0 {
			p = project
		}
		if st == "failed" {
			errMsg = "550 no such mailbox"
		}
		at := now.Add(-time.Duration(jobs-i) * time.Second)
		rows[i] = []any{
			uuid.Must(uuid.NewV7()), p, st, at, errMsg, at, at, "invitation", fmt.Sprintf("user%d@example.com", i%5000),
			"User", "Join the project",
			map[string]any{"inviterName": "Ada", "projectName": "P", "role": "project_user", "link": "https://x.test/a", "expiresAt": "2026-12-01"},
		}
	}
	_, err := s.m.db.pool.CopyFrom(ctx, pgx.Identifier{"email_jobs"},
		[]string{"id", "project_id", "status", "run_at", "error_msg", "created_at", "updated_at", "template_name", "to_email", "to_name", "subject", "data"},
		pgx.CopyFromRows(rows))
	require.NoError(b, err)
	_, err = s.m.db.pool.Exec(ctx, `ANALYZE email_jobs`)
	require.NoError(b, err)

	paths := []string{
		"/api/superadmin/email-jobs?limit=100", "/api/superadmin/email-jobs?limit=100&status=failed",
		"/api/superadmin/email-jobs?limit=100&recipient=USER42@example.com",
	}
	for k, path := range paths {
		var l superadminJobList
		s.must(200, "GET", path, s.admin, nil).Decode(b, &l)
		require.Len(b, l.Data, []int{100, 100, 20}[k])
		require.Equal(b, []int{jobs, jobs, 20}[k], l.Stats.Total)
	}
	benchLatencies(b, s, paths, []string{"all", "failed", "recipient"})
}
