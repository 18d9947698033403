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
		name := []string{"all", "failed"}[k]
		b.ReportMetric(pct(0.50), name+"-p50-ms")
		b.ReportMetric(pct(0.95), name+"-p95-ms")
		b.Logf("%s: p50 %.1f ms, p95 %.1f ms (%d requests)", paths[k], pct(0.5), pct(0.95), len(l))
	}
}
