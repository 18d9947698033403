package web_test

import (
	"net/http/httptest"
	"testing"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/connector/web"
)

// benchSite serves connectortest.TreeSite(n) on loopback.
func benchSite(b *testing.B, n int) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(connectortest.TreeSite(n))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkWalk2000Pages walks a 2,000-page loopback site: "first" with
// nothing known (every page fetched and reported), "unchanged" after a
// complete walk (every page a 304 from the links kept in the state).
func BenchmarkWalk2000Pages(b *testing.B) {
	const n = 2000
	srv := benchSite(b, n)
	cfg := connectortest.Config(map[string]any{"start_urls": []string{srv.URL + "/p/0"}, "max_pages": n, "max_depth": 10})
	env := connector.Env{HTTP: connectortest.Client()}
	c := web.New()
	run := func(b *testing.B, w *connectortest.Walker) *connectortest.Walker {
		b.Helper()
		if err := c.Walk(b.Context(), env, cfg, connector.Options{}, w); err != nil {
			b.Fatal(err)
		}
		if got := len(w.Reported()); got != n {
			b.Fatalf("reported %d pages, want %d", got, n)
		}
		return w
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			if w := run(b, connectortest.NewWalker(nil)); len(w.ItemIDs()) != n {
				b.Fatalf("first walk fetched %d pages", len(w.ItemIDs()))
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pages/s")
	})
	b.Run("unchanged", func(b *testing.B) {
		prev := run(b, connectortest.NewWalker(nil))
		for b.Loop() {
			if w := run(b, prev.Next()); len(w.ItemIDs()) != 0 {
				b.Fatalf("unchanged walk fetched %d pages", len(w.ItemIDs()))
			}
		}
		b.ReportMetric(float64(len(prev.State())), "state-bytes")
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pages/s")
	})
}
