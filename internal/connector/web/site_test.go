package web_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
)

// site is an httptest web site whose pages a test edits between walks. It
// answers conditional GETs like a real server and counts what it serves.
type site struct {
	srv    *httptest.Server
	mu     sync.Mutex
	pages  map[string]sitePage
	robots string
	// robotsStatus, when set, is robots.txt's status instead of 200/404.
	robotsStatus int
	hits         map[string]int // requests by path
	full         map[string]int // 200 responses by path
	notModified  int
}

// sitePage is one path of a site.
type sitePage struct {
	body string
	// ctype defaults to text/html.
	ctype string
	// validator: "etag" (default; an ETag from the body), "lastmod" (a
	// Last-Modified date) or "none".
	validator string
	lastMod   string
	// status, when set, answers it (with location for a redirect).
	status   int
	location string
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{pages: map[string]sitePage{}, hits: map[string]int{}, full: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) url(path string) string { return s.srv.URL + path }

func (s *site) set(path string, p sitePage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[path] = p
}

func (s *site) remove(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pages, path)
}

func (s *site) html(path, title, body string) {
	s.set(path, sitePage{body: "<!DOCTYPE html><html><head><title>" + title + "</title></head><body>" + body + "</body></html>"})
}

func (s *site) resetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits, s.full, s.notModified = map[string]int{}, map[string]int{}, 0
}

func (s *site) counts() (hits, full map[string]int, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hits, full = map[string]int{}, map[string]int{}
	for k, v := range s.hits {
		hits[k] = v
	}
	for k, v := range s.full {
		full[k] = v
	}
	return hits, full, s.notModified
}

func etagOf(body string) string {
	sum := sha256.Sum256([]byte(body))
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[r.URL.Path]++
	if r.Header.Get("User-Agent") != "Graphmill" {
		http.Error(w, "unexpected user agent", http.StatusBadRequest)
		return
	}
	if r.URL.Path == "/robots.txt" {
		switch {
		case s.robotsStatus != 0:
			w.WriteHeader(s.robotsStatus)
		case s.robots == "":
			http.NotFound(w, r)
		default:
			_, _ = w.Write([]byte(s.robots))
		}
		return
	}
	p, ok := s.pages[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if p.status != 0 {
		if p.location != "" {
			w.Header().Set("Location", p.location)
		}
		w.WriteHeader(p.status)
		return
	}
	ctype := p.ctype
	if ctype == "" {
		ctype = "text/html; charset=utf-8"
	}
	w.Header().Set("Content-Type", ctype)
	switch p.validator {
	case "", "etag":
		tag := etagOf(p.body)
		w.Header().Set("ETag", tag)
		if r.Header.Get("If-None-Match") == tag {
			s.notModified++
			w.WriteHeader(http.StatusNotModified)
			return
		}
	case "lastmod":
		w.Header().Set("Last-Modified", p.lastMod)
		if r.Header.Get("If-Modified-Since") == p.lastMod {
			s.notModified++
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	s.full[r.URL.Path]++
	_, _ = w.Write([]byte(p.body))
}

func plainEnv() connector.Env { return connector.Env{HTTP: connectortest.Client()} }
