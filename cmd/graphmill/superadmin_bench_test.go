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

// BenchmarkSuperadminExtractionJobs100k measures GET
// /api/superadmin/extraction-jobs?limit=100 end to end (HTTP, auth, list and
// stats queries) over 100,000 extraction jobs in 10 projects, a quarter of
// them with a document, and reports the latency percentiles of the
// unfiltered list and of a status-filtered one. The jobs are written
// directly (COPY).
//
//	go test ./cmd/graphmill -run '^$' -bench SuperadminExtractionJobs100k -benchtime 200x
func BenchmarkSuperadminExtractionJobs100k(b *testing.B) {
	const jobs = 100_000
	ctx := context.Background()
	s := newServer(b)
	require.NoError(b, s.m.jobs.Pause(ctx, "object_extraction"))
	project, org := s.defaultProject()
	projects := []string{project}
	for i := range 9 {
		projects = append(projects, s.newProject(org, fmt.Sprintf("p%d", i)))
	}
	doc := s.extractionUpload(project, "seed.md", "# Seed\n\nseed")
	s.waitDocument(project, doc)
	statuses := []string{"completed", "completed", "completed", "failed", "cancelled", "queued", "running", "requires_review"}
	now := time.Now().UTC()
	rows := make([][]any, jobs)
	for i := range rows {
		p, st := projects[i%len(projects)], statuses[i%len(statuses)]
		var d, errMsg any
		if i%4 == 0 {
			p, d = project, doc
		}
		if st == "failed" {
			errMsg = "provider said no"
		}
		at := now.Add(-time.Duration(jobs-i) * time.Second)
		rows[i] = []any{uuid.Must(uuid.NewV7()), p, st, at, errMsg, at, at, d, "full_extraction", "manual"}
	}
	_, err := s.m.db.pool.CopyFrom(ctx, pgx.Identifier{"object_extraction_jobs"},
		[]string{"id", "project_id", "status", "run_at", "error_msg", "created_at", "updated_at", "document_id", "job_type", "trigger_type"},
		pgx.CopyFromRows(rows))
	require.NoError(b, err)
	_, err = s.m.db.pool.Exec(ctx, `ANALYZE object_extraction_jobs`)
	require.NoError(b, err)

	paths := []string{"/api/superadmin/extraction-jobs?limit=100", "/api/superadmin/extraction-jobs?limit=100&status=failed"}
	for _, path := range paths {
		var l superadminJobList
		s.must(200, "GET", path, s.admin, nil).Decode(b, &l)
		require.Len(b, l.Data, 100)
		require.Equal(b, jobs+1, l.Stats.Total) // the seed document's own job too
	}
	benchLatencies(b, s, paths, []string{"all", "failed"})
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
