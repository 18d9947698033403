package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// testSite is an httptest web site whose pages a test edits between
// syncs (paths ending in .xml are RSS feeds); it answers conditional
// GETs by ETag.
type testSite struct {
	srv   *httptest.Server
	mu    sync.Mutex
	pages map[string]string
}

func newTestSite(t testing.TB, pages map[string]string) *testSite {
	t.Helper()
	s := &testSite{pages: pages}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body, ok := s.pages[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		sum := sha256.Sum256([]byte(body))
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		ctype := "text/html; charset=utf-8"
		if strings.HasSuffix(r.URL.Path, ".xml") {
			ctype = "application/rss+xml"
		}
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *testSite) set(path, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[path] = body
}

// htmlPage is a page titled title with body text and links.
func htmlPage(title, text string, links ...string) string {
	out := "<html><head><title>" + title + "</title></head><body><h1>" + title + "</h1><p>" + text + "</p>"
	for _, l := range links {
		out += `<a href="` + l + `">` + l + `</a> `
	}
	return out + "</body></html>"
}

// TestIntegrationSyncWeb: a web site synced through the whole server
// becomes parsed, extracted, searchable documents; a re-sync of the
// unchanged site moves nothing; one edited page is updated and nothing
// else moves.
func TestIntegrationSyncWeb(t *testing.T) {
	t.Parallel()
	site := newTestSite(t, map[string]string{
		"/":        htmlPage("Orbit handbook", "Orbit is a job scheduler started by Maria Gonzalez at Northwind Labs in Berlin.", "/team", "/install"),
		"/team":    htmlPage("Orbit team", "David Chen works for Acme Corporation in Toronto and maintains the quasarine console.", "/"),
		"/install": htmlPage("Installing Orbit", "Priya Raman wrote the installer at Contoso Systems in Madrid.", "/"),
	})
	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	in := s.createIntegration(project, "site", "web", map[string]any{"start_urls": []string{site.srv.URL + "/"}})

	docs := in.firstSync(3, "quasarine")
	for _, d := range docs {
		require.Equal(t, d.ExternalID, d.SourceURL)
	}
	require.Equal(t, "Orbit team", docs[site.srv.URL+"/team"].SourceTitle)

	before := in.resyncUnchanged()

	site.set("/install", htmlPage("Installing Orbit", "Priya Raman rewrote the installer at Contoso Systems in Lisbon with the zirconflux tool.", "/"))
	require.Equal(t, syncCounts{Total: 3, Processed: 3, Updated: 1, Unchanged: 2}, in.sync(nil))
	in.waitExtractionIdle()
	in.requireOnlyMoved(before, []string{site.srv.URL + "/install"}, nil)
	in.requireFound("zirconflux", docs[site.srv.URL+"/install"].ID)
}
