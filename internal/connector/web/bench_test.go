package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/connector/web"
)

// benchSite serves pages /p/0 .. /p/n-1; page i links pages 10i+1 ..
// 10i+10 (a tree of depth 4 for 2,000 pages), each about 2 KiB, with an
// ETag, answering If-None-Match with 304.
func benchSite(b *testing.B, n int) *httptest.Server {
	b.Helper()
	filler := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 30)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || id < 0 || id >= n {
			http.NotFound(w, r)
			return
		}
		tag := fmt.Sprintf(`"v1-%d"`, id)
		w.Header().Set("ETag", tag)
		if r.Header.Get("If-None-Match") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var sb strings.Builder
		fmt.Fprintf(&sb, "<!DOCTYPE html><html><head><title>Page %d</title></head><body><h1>Page %d</h1><p>%s</p><ul>", id, id, filler)
		for c := 10*id + 1; c <= 10*id+10 && c < n; c++ {
			fmt.Fprintf(&sb, `<li><a href="/p/%d">page %d</a></li>`, c, c)
		}
		sb.WriteString(`</ul><a href="/p/0">home</a></body></html>`)
		_, _ = w.Write([]byte(sb.String()))
	}))
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
	env := connector.Env{HTTP: &http.Client{}}
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
