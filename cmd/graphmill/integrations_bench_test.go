package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/connector/web"
)

// benchSitePages is the size of the benchmark's site.
const benchSitePages = 2000

// BenchmarkWebSync2000 syncs a 2,000-page loopback site through the whole
// server (POST .../sync to the job completed), then re-syncs it unchanged
// once every document is parsed and extracted. It reports pages per second
// of the first sync, the re-sync's time as a share of the first's
// (resync-%), and where the first sync's time goes: fetch-% is a walk of
// the same site by the web connector alone (fetching and reading pages,
// no database) as a share of the sync, db-% the rest (the integration
// domain storing documents, counters, log and parse jobs, sharing the
// cores with the parse jobs that run meanwhile); parse-s is the
// parse jobs' summed run time, parse-tail-s how long after the sync
// completed the last document was parsed.
func BenchmarkWebSync2000(b *testing.B) {
	var first, again, walk, parse, tail time.Duration
	for range b.N {
		b.StopTimer()
		srv := httptest.NewServer(connectortest.TreeSite(benchSitePages))
		b.Cleanup(srv.Close)
		cfg := map[string]any{"start_urls": []string{srv.URL + "/p/0"}, "max_pages": benchSitePages, "max_depth": 10}
		start := time.Now()
		w := connectortest.NewWalker(nil)
		require.NoError(b, web.New().Walk(b.Context(), connector.Env{HTTP: connectortest.Client()}, connectortest.Config(cfg), connector.Options{}, w))
		walk += time.Since(start)
		require.Len(b, w.ItemIDs(), benchSitePages)

		s := newServer(b, withEgressAllow("127.0.0.0/8"))
		project, _ := s.defaultProject()
		in := s.createIntegration(project, "site", "web", cfg)
		b.StartTimer()
		start = time.Now()
		require.Equal(b, syncCounts{Total: benchSitePages, Processed: benchSitePages, Created: benchSitePages}, in.sync(nil))
		first += time.Since(start)
		b.StopTimer()
		done := time.Now()
		require.Eventually(b, func() bool {
			return s.extractionCount(`SELECT count(*) FROM documents WHERE project_id = $1 AND status = 'parsing'`, project) == 0
		}, 10*time.Minute, 50*time.Millisecond)
		tail += time.Since(done)
		var sum float64
		require.NoError(b, s.m.db.pool.QueryRow(b.Context(),
			`SELECT coalesce(sum(extract(epoch FROM completed_at - started_at)), 0) FROM document_parsing_jobs WHERE project_id = $1`, project).Scan(&sum))
		parse += time.Duration(sum * float64(time.Second))
		require.Equal(b, benchSitePages, s.extractionCount(`SELECT count(*) FROM documents WHERE project_id = $1 AND status = 'parsed'`, project))
		in.waitExtractionIdle()
		b.StartTimer()
		start = time.Now()
		require.Equal(b, syncCounts{Total: benchSitePages, Processed: benchSitePages, Unchanged: benchSitePages}, in.sync(nil))
		again += time.Since(start)
	}
	b.ReportMetric(float64(benchSitePages*b.N)/first.Seconds(), "pages/s")
	b.ReportMetric(100*again.Seconds()/first.Seconds(), "resync-%")
	b.ReportMetric(100*walk.Seconds()/first.Seconds(), "fetch-%")
	b.ReportMetric(100-100*walk.Seconds()/first.Seconds(), "db-%")
	b.ReportMetric(parse.Seconds()/float64(b.N), "parse-s")
	b.ReportMetric(tail.Seconds()/float64(b.N), "parse-tail-s")
}
