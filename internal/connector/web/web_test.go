package web_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/connector/web"
	"github.com/graphmill/graphmill/internal/errs"
)

func cfgFor(fields map[string]any) connector.Config { return connectortest.Config(fields) }

func walk(t *testing.T, cfg connector.Config, w *connectortest.Walker) *connectortest.Walker {
	t.Helper()
	require.NoError(t, web.New().Validate(cfg))
	require.NoError(t, web.New().Walk(t.Context(), plainEnv(), cfg, connector.Options{}, w))
	return w
}

// offHost is a second server: the crawl must never reach it.
func offHost(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("<html><a href='/x'>x</a></html>"))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// smallSite: / links /a and /b (and things that are not same-origin
// pages); /a links /b; /b (Last-Modified validator) links back.
func smallSite(t *testing.T, other string) *site {
	t.Helper()
	s := newSite(t)
	s.html("/", "Home", `<a href="/a">A</a> <a href="b#frag">B</a> <a href="`+other+`/elsewhere">off</a>
		<a href="mailto:x@example.com">mail</a> <a href="/logo.png">logo</a> <a href="/a">A again</a>`)
	s.html("/a", "Page A", `<p>alpha</p><a href="/b">B</a>`)
	s.set("/b", sitePage{
		body:      `<html><head><title>Page B</title></head><body><p>beta</p><a href="/">home</a></body></html>`,
		validator: "lastmod", lastMod: "Mon, 02 Jan 2026 15:04:05 GMT",
	})
	s.set("/logo.png", sitePage{body: "png", ctype: "image/png"})
	return s
}

// walkedSmallSite is smallSite after a first walk from /, counts reset.
func walkedSmallSite(t *testing.T) (*site, connector.Config, *connectortest.Walker) {
	t.Helper()
	other, _ := offHost(t)
	s := smallSite(t, other.URL)
	cfg := cfgFor(map[string]any{"start_urls": []string{s.url("/")}})
	first := walk(t, cfg, connectortest.NewWalker(nil))
	s.resetCounts()
	return s, cfg, first
}

func TestWalkFirstSync(t *testing.T) {
	t.Parallel()
	other, otherHits := offHost(t)
	s := smallSite(t, other.URL)
	w := walk(t, cfgFor(map[string]any{"start_urls": []string{s.url("/")}}), connectortest.NewWalker(nil))

	require.Equal(t, []string{s.url("/"), s.url("/a"), s.url("/b")}, w.ItemIDs())
	items := w.Items()
	a := items[s.url("/a")]
	require.Equal(t, "Page A", a.Title)
	require.Equal(t, s.url("/a"), a.URL)
	require.Equal(t, "text/html", a.MimeType)
	require.Equal(t, "a.html", a.Filename)
	require.Contains(t, string(a.Content), "<p>alpha</p>")
	require.Equal(t, etagOf(`<!DOCTYPE html><html><head><title>Page A</title></head><body><p>alpha</p><a href="/b">B</a></body></html>`), a.Version)
	b := items[s.url("/b")]
	require.Equal(t, "Mon, 02 Jan 2026 15:04:05 GMT", b.Version)
	require.Equal(t, 2026, b.Modified.Year())
	require.Equal(t, "index.html", items[s.url("/")].Filename)
	require.Empty(t, w.FailedItems())
	require.Zero(t, otherHits.Load(), "an off-host link was fetched")
	hits, _, _ := s.counts()
	require.Zero(t, hits["/logo.png"], "a non-page link was fetched")
	require.Equal(t, 1, hits["/a"], "a page was fetched twice")
}

func TestWalkUnchangedFetchesNothingInFull(t *testing.T) {
	t.Parallel()
	s, cfg, first := walkedSmallSite(t)

	second := walk(t, cfg, first.Next())
	require.Empty(t, second.ItemIDs())
	require.Equal(t, []string{s.url("/"), s.url("/a"), s.url("/b")}, second.UnchangedIDs())
	_, full, notModified := s.counts()
	require.Empty(t, full, "an unchanged page was fetched in full")
	require.Equal(t, 3, notModified)
	require.Empty(t, second.FailedItems())

	// The state carries on: a third walk is still all 304s.
	requireAllNotModified(t, s, cfg, second, 3)
}

// requireAllNotModified walks again after prev: its n pages all answer
// 304.
func requireAllNotModified(t *testing.T, s *site, cfg connector.Config, prev *connectortest.Walker, n int) {
	t.Helper()
	s.resetCounts()
	next := walk(t, cfg, prev.Next())
	require.Len(t, next.UnchangedIDs(), n)
	_, full, _ := s.counts()
	require.Empty(t, full)
}

func TestWalkWithoutLinksInStateFetchesInFull(t *testing.T) {
	t.Parallel()
	s, cfg, first := walkedSmallSite(t)

	// Versions known, but no state (a lost or foreign state): a 304 would
	// leave the crawl without links, so every page is fetched in full.
	second := walk(t, cfg, connectortest.NewWalker(first.Versions()))
	require.Len(t, second.ItemIDs(), 3)
	_, full, notModified := s.counts()
	require.Len(t, full, 3)
	require.Zero(t, notModified)
}

func TestWalkChangedPage(t *testing.T) {
	t.Parallel()
	s, cfg, first := walkedSmallSite(t)
	s.html("/a", "Page A", `<p>alpha two</p><a href="/b">B</a><a href="/c">C</a>`)
	s.html("/c", "Page C", `<p>gamma</p>`)
	s.resetCounts()

	second := walk(t, cfg, first.Next())
	require.Equal(t, []string{s.url("/a"), s.url("/c")}, second.ItemIDs())
	require.Contains(t, string(second.Items()[s.url("/a")].Content), "alpha two")
	require.Equal(t, []string{s.url("/"), s.url("/b")}, second.UnchangedIDs())
	_, full, _ := s.counts()
	require.Equal(t, map[string]int{"/a": 1, "/c": 1}, full)
}

func TestWalkRemovedPageIsNotReported(t *testing.T) {
	t.Parallel()
	s, cfg, first := walkedSmallSite(t)

	// /b is gone but /a still links to it (a broken link): 404 is "gone",
	// not a failure, so the complete listing lets the domain delete it.
	s.remove("/b")
	second := walk(t, cfg, first.Next())
	require.Equal(t, []string{s.url("/"), s.url("/a")}, second.Reported())
	require.Empty(t, second.FailedItems())
	require.Contains(t, logMessages(second), "1 linked pages answered 404 or 410 (gone)")

	// /a unlinked and removed: not reported either.
	s.html("/", "Home", `<p>only home</p>`)
	s.remove("/a")
	third := walk(t, cfg, second.Next())
	require.Equal(t, []string{s.url("/")}, third.Reported())
	require.Empty(t, third.FailedItems())
}

func TestWalkHonoursRobots(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.robots = "User-agent: *\nDisallow: /\n\nUser-agent: Graphmill\nDisallow: /private\n"
	s.html("/", "Home", `<a href="/public">p</a><a href="/private/x">x</a><a href="/private">y</a>`)
	s.html("/public", "Public", `ok`)
	s.html("/private/x", "Secret", `no`)
	s.html("/private", "Secret", `no`)
	w := walk(t, cfgFor(map[string]any{"start_urls": []string{s.url("/")}}), connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/"), s.url("/public")}, w.ItemIDs())
	hits, _, _ := s.counts()
	require.Zero(t, hits["/private/x"])
	require.Zero(t, hits["/private"])
	require.Equal(t, 1, hits["/robots.txt"])
	require.Contains(t, logMessages(w), "2 pages disallowed by robots.txt were skipped")
}

func TestWalkDepthCap(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.html("/", "0", `<a href="/1">1</a>`)
	s.html("/1", "1", `<a href="/2">2</a>`)
	s.html("/2", "2", `<a href="/3">3</a>`)
	s.html("/3", "3", `end`)
	w := walk(t, cfgFor(map[string]any{"start_urls": []string{s.url("/")}, "max_depth": 2}), connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/"), s.url("/1"), s.url("/2")}, w.ItemIDs())
	hits, _, _ := s.counts()
	require.Zero(t, hits["/3"])

	w0 := walk(t, cfgFor(map[string]any{"start_urls": []string{s.url("/")}, "max_depth": 0}), connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/")}, w0.ItemIDs())
}

func TestWalkPageCapIsDeterministic(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	var links strings.Builder
	for _, p := range []string{"/p1", "/p2", "/p3", "/p4", "/p5", "/p6", "/p7", "/p8", "/p9"} {
		links.WriteString(`<a href="` + p + `">x</a>`)
		s.html(p, p, `leaf <a href="/deep`+p+`">d</a>`)
		s.html("/deep"+p, "deep", `deep`)
	}
	s.html("/", "Home", links.String())
	cfg := cfgFor(map[string]any{"start_urls": []string{s.url("/")}, "max_pages": 6})
	first := walk(t, cfg, connectortest.NewWalker(nil))
	want := []string{s.url("/"), s.url("/p1"), s.url("/p2"), s.url("/p3"), s.url("/p4"), s.url("/p5")}
	require.Equal(t, want, first.ItemIDs())
	require.Contains(t, logMessages(first), "the page cap (max_pages 6) is reached: further pages are not synced")

	second := walk(t, cfg, first.Next())
	require.Equal(t, want, second.UnchangedIDs())
	require.Empty(t, second.ItemIDs())
}

func TestWalkIncludeExclude(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.html("/docs", "Docs", `<a href="/docs/a">a</a><a href="/docs/drafts/b">b</a><a href="/blog/c">c</a>`)
	s.html("/docs/a", "A", `a`)
	s.html("/docs/drafts/b", "B", `b`)
	s.html("/blog/c", "C", `c`)
	cfg := cfgFor(map[string]any{
		"start_urls": []string{s.url("/docs")},
		"include":    []string{"/docs/**"}, "exclude": []string{"/docs/drafts/*"},
	})
	w := walk(t, cfg, connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/docs"), s.url("/docs/a")}, w.ItemIDs())
	hits, _, _ := s.counts()
	require.Zero(t, hits["/blog/c"])
	require.Zero(t, hits["/docs/drafts/b"])
}

func TestWalkSitemap(t *testing.T) {
	t.Parallel()
	other, otherHits := offHost(t)
	s := newSite(t)
	urlset := `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
		`<url><loc>` + s.url("/s1") + `</loc></url><url><loc>` + other.URL + `/off</loc></url></urlset>`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>` + s.url("/s2") + `</loc></url></urlset>`))
	require.NoError(t, zw.Close())
	s.set("/sitemap-1.xml", sitePage{body: urlset, ctype: "application/xml"})
	s.set("/sitemap-2.xml.gz", sitePage{body: gz.String(), ctype: "application/gzip"})
	s.set("/sitemap.xml", sitePage{ctype: "application/xml", body: `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
		`<sitemap><loc>` + s.url("/sitemap-1.xml") + `</loc></sitemap><sitemap><loc>` + s.url("/sitemap-2.xml.gz") + `</loc></sitemap>` +
		`<sitemap><loc>` + other.URL + `/sitemap.xml</loc></sitemap></sitemapindex>`})
	s.html("/s1", "S1", `<a href="/s1/child">child</a>`)
	s.html("/s2", "S2", `two`)
	s.html("/s1/child", "Child", `child`)

	cfg := cfgFor(map[string]any{"start_urls": []string{}, "sitemap_url": s.url("/sitemap.xml"), "max_depth": 0})
	w := walk(t, cfg, connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/s1"), s.url("/s2")}, w.ItemIDs())
	require.Zero(t, otherHits.Load())

	// Beside start URLs, with depth: the sitemap's pages are start pages.
	s.html("/", "Home", `home`)
	cfg = cfgFor(map[string]any{"start_urls": []string{s.url("/")}, "sitemap_url": s.url("/sitemap.xml"), "max_depth": 1})
	w = walk(t, cfg, connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/"), s.url("/s1"), s.url("/s1/child"), s.url("/s2")}, w.ItemIDs())
}

func TestWalkRedirects(t *testing.T) {
	t.Parallel()
	other, otherHits := offHost(t)
	s := newSite(t)
	s.html("/", "Home", `<a href="/old">old</a><a href="/away">away</a>`)
	s.set("/old", sitePage{status: http.StatusMovedPermanently, location: "/new"})
	s.set("/away", sitePage{status: http.StatusFound, location: other.URL + "/x"})
	s.html("/new", "New", `new`)
	w := walk(t, cfgFor(map[string]any{"start_urls": []string{s.url("/")}, "max_depth": 1}), connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/"), s.url("/new")}, w.ItemIDs())
	require.Zero(t, otherHits.Load())
	require.Empty(t, w.FailedItems())
}

func TestWalkPageErrorsMakeTheListingIncomplete(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.html("/", "Home", `<a href="/broken">b</a><a href="/ok">ok</a><a href="/limited">l</a>`)
	s.set("/broken", sitePage{status: http.StatusInternalServerError})
	s.set("/limited", sitePage{status: http.StatusTooManyRequests})
	s.html("/ok", "OK", `ok`)
	w := walk(t, cfgFor(map[string]any{"start_urls": []string{s.url("/")}}), connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/"), s.url("/ok")}, w.ItemIDs())
	failed := w.FailedItems()
	require.Len(t, failed, 2)
	require.ErrorContains(t, failed[s.url("/broken")], "HTTP 500")
	require.ErrorContains(t, failed[s.url("/limited")], "HTTP 429")

	// A start URL that is missing is a failure, not an empty site.
	w = walk(t, cfgFor(map[string]any{"start_urls": []string{s.url("/nothing")}}), connectortest.NewWalker(nil))
	require.Empty(t, w.Reported())
	require.ErrorContains(t, w.FailedItems()[s.url("/nothing")], "HTTP 404")

	// A sitemap that fails is a failure too.
	w = walk(t, cfgFor(map[string]any{"start_urls": []string{s.url("/")}, "sitemap_url": s.url("/missing.xml")}), connectortest.NewWalker(nil))
	require.ErrorContains(t, w.FailedItems()[s.url("/missing.xml")], "HTTP 404")
}

func TestWalkFailsWithoutRobotsOrSite(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.html("/", "Home", `home`)
	s.robotsStatus = http.StatusServiceUnavailable
	cfg := cfgFor(map[string]any{"start_urls": []string{s.url("/")}})
	w := connectortest.NewWalker(nil)
	err := web.New().Walk(t.Context(), plainEnv(), cfg, connector.Options{}, w)
	require.ErrorContains(t, err, "HTTP 503")
	require.Empty(t, w.Reported())

	s.srv.Close()
	w = connectortest.NewWalker(nil)
	err = web.New().Walk(t.Context(), plainEnv(), cfg, connector.Options{}, w)
	require.ErrorContains(t, err, "fetch robots.txt")
	require.Empty(t, w.Reported())
}

func TestWalkStopsOnWalkerErrorAndCancel(t *testing.T) {
	t.Parallel()
	s, cfg, _ := walkedSmallSite(t)
	boom := errors.New("database gone")
	w := connectortest.NewWalker(nil)
	w.ItemFunc = func(connector.Item) error { return boom }
	require.ErrorIs(t, web.New().Walk(t.Context(), plainEnv(), cfg, connector.Options{}, w), boom)

	skip := connectortest.NewWalker(nil)
	skip.ItemFunc = func(it connector.Item) error {
		if strings.HasSuffix(it.ExternalID, "/a") {
			return connector.ErrSkipItem
		}
		return nil
	}
	require.NoError(t, web.New().Walk(t.Context(), plainEnv(), cfg, connector.Options{}, skip))
	require.Equal(t, []string{s.url("/"), s.url("/b")}, skip.ItemIDs())

	ctx, cancel := context.WithCancel(t.Context())
	cancelled := connectortest.NewWalker(nil)
	cancelled.ItemFunc = func(connector.Item) error { cancel(); return nil }
	require.ErrorIs(t, web.New().Walk(ctx, plainEnv(), cfg, connector.Options{}, cancelled), context.Canceled)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"start_urls": []string{}}, "start_urls needs at least one URL"},
		{map[string]any{"start_urls": []string{"ftp://x.test/"}}, "start_urls[0] must be an http or https URL"},
		{map[string]any{"start_urls": []string{"https://u:p@x.test/"}}, "start_urls[0] must not contain credentials"},
		{map[string]any{"start_urls": []string{"https://x.test/", "https://y.test/"}}, "start_urls[1] https://y.test/ is not on the site's origin https://x.test"},
		{map[string]any{"start_urls": []string{"https://x.test/"}, "sitemap_url": "http://x.test/s.xml"}, "sitemap_url http://x.test/s.xml is not on the site's origin"},
		{map[string]any{"start_urls": []string{"https://x.test/"}, "max_pages": 0}, "max_pages must be an integer from 1 to 100000"},
		{map[string]any{"start_urls": []string{"https://x.test/"}, "max_depth": 51}, "max_depth must be an integer from 0 to 50"},
		{map[string]any{"start_urls": []string{"https://x.test/"}, "include": []string{"docs/*"}}, `include glob "docs/*" must start with /`},
		{map[string]any{"start_urls": []string{"https://x.test/"}, "include": []string{"/docs/**"}}, "start_urls[0] https://x.test/ is not selected by include/exclude"},
	}
	for _, tc := range cases {
		err := web.New().Validate(cfgFor(tc.cfg))
		require.Equal(t, errs.Invalid, errs.CodeOf(err), "%v", tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
	require.NoError(t, web.New().Validate(cfgFor(map[string]any{"start_urls": []string{"https://X.test:443/docs#top"}, "include": []string{"/docs/**"}})))
	require.NoError(t, web.New().Validate(cfgFor(map[string]any{"sitemap_url": "https://x.test/sitemap.xml"})))
}

func TestTestConnection(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.robots = "User-agent: Graphmill\nDisallow: /closed\n"
	s.html("/", "Home", `home`)
	s.set("/down", sitePage{status: http.StatusBadGateway})
	s.set("/file", sitePage{body: "x", ctype: "application/pdf"})
	c := web.New()
	test := func(path string) error {
		return c.Test(t.Context(), plainEnv(), cfgFor(map[string]any{"start_urls": []string{s.url(path)}}))
	}
	require.NoError(t, test("/"))
	require.EqualError(t, test("/down"), "fetch "+s.url("/down")+": HTTP 502 Bad Gateway")
	require.ErrorContains(t, test("/closed"), "robots.txt of "+s.srv.URL+" disallows "+s.url("/closed")+" for the user agent Graphmill")
	require.ErrorContains(t, test("/file"), "is not an HTML page")
	s.srv.Close()
	require.ErrorContains(t, test("/"), "the site cannot be reached: fetch robots.txt")
}

func logMessages(w *connectortest.Walker) []string {
	var out []string
	for _, l := range w.Logs() {
		out = append(out, l.Message)
	}
	return out
}

func TestWalkScopeChangeDropsTheLinkState(t *testing.T) {
	t.Parallel()
	other, _ := offHost(t)
	s := smallSite(t, other.URL)
	narrow := cfgFor(map[string]any{"start_urls": []string{s.url("/")}, "exclude": []string{"/b"}})
	first := walk(t, narrow, connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/"), s.url("/a")}, first.ItemIDs())

	// Widened: the unchanged pages' stored links were filtered by the old
	// exclude, so they are read again and /b is found.
	wide := cfgFor(map[string]any{"start_urls": []string{s.url("/")}})
	second := walk(t, wide, first.Next())
	require.Equal(t, []string{s.url("/"), s.url("/a"), s.url("/b")}, second.Reported())
	require.Contains(t, second.ItemIDs(), s.url("/b"))
}

func TestWalkStaleSitemapEntryIsGone(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.set("/sitemap.xml", sitePage{ctype: "application/xml", body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
		`<url><loc>` + s.url("/here") + `</loc></url><url><loc>` + s.url("/gone") + `</loc></url></urlset>`})
	s.html("/here", "Here", `here`)
	w := walk(t, cfgFor(map[string]any{"sitemap_url": s.url("/sitemap.xml")}), connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/here")}, w.Reported())
	require.Empty(t, w.FailedItems())
}

func TestWalkSkipsOversizedPages(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.html("/", "Home", `<a href="/huge">huge</a>`)
	s.html("/huge", "Huge", strings.Repeat("x", web.MaxPageBytes))
	w := walk(t, cfgFor(map[string]any{"start_urls": []string{s.url("/")}}), connectortest.NewWalker(nil))
	require.Equal(t, []string{s.url("/")}, w.Reported())
	require.Empty(t, w.FailedItems())
	require.Contains(t, logMessages(w), "page larger than the size limit: skipped")
}

// recordingTransport is an Env client's transport that records every
// request it carries.
type recordingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	urls []string
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.urls = append(rt.urls, r.URL.Path)
	rt.mu.Unlock()
	return rt.next.RoundTrip(r)
}

func TestWalkFetchesThroughTheEnvClient(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.set("/sitemap.xml", sitePage{ctype: "application/xml", body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>` + s.url("/s") + `</loc></url></urlset>`})
	s.html("/", "Home", `<a href="/old">old</a>`)
	s.set("/old", sitePage{status: http.StatusMovedPermanently, location: "/new"})
	s.html("/new", "New", `new`)
	s.html("/s", "S", `s`)
	rt := &recordingTransport{next: connectortest.Transport()}
	env := connector.Env{HTTP: &http.Client{Transport: rt}}
	w := connectortest.NewWalker(nil)
	cfg := cfgFor(map[string]any{"start_urls": []string{s.url("/")}, "sitemap_url": s.url("/sitemap.xml")})
	require.NoError(t, web.New().Walk(t.Context(), env, cfg, connector.Options{}, w))
	require.Equal(t, []string{s.url("/"), s.url("/new"), s.url("/s")}, w.ItemIDs())
	hits, _, _ := s.counts()
	served := 0
	for _, n := range hits {
		served += n
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	require.Len(t, rt.urls, served, "a request bypassed Env.HTTP")
	require.ElementsMatch(t, []string{"/robots.txt", "/sitemap.xml", "/", "/s", "/old", "/new"}, rt.urls)
}

func TestTestConnectionSitemapOnly(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.set("/sitemap.xml", sitePage{ctype: "application/xml", body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>` + s.url("/s") + `</loc></url></urlset>`})
	s.set("/empty.xml", sitePage{ctype: "application/xml", body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>`})
	s.set("/page", sitePage{body: "<html></html>"})
	test := func(path string) error {
		return web.New().Test(t.Context(), plainEnv(), cfgFor(map[string]any{"sitemap_url": s.url(path)}))
	}
	require.NoError(t, test("/sitemap.xml"))
	require.EqualError(t, test("/empty.xml"), "the sitemap "+s.url("/empty.xml")+" lists no page")
	require.ErrorContains(t, test("/page"), "the sitemap cannot be read: sitemap "+s.url("/page")+" is neither a urlset nor a sitemapindex")
	require.ErrorContains(t, test("/none.xml"), "the sitemap cannot be read: fetch sitemap "+s.url("/none.xml")+": HTTP 404")
}

func TestWalkInterruptedResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	// A chain / -> /p1 -> ... -> /p5: one page per depth level.
	s := newSite(t)
	s.html("/", "Home", `<a href="/p1">1</a>`)
	for i := 1; i <= 5; i++ {
		s.html(fmt.Sprintf("/p%d", i), fmt.Sprintf("P%d", i), fmt.Sprintf(`<a href="/p%d">next</a>`, i+1))
	}
	cfg := cfgFor(map[string]any{"start_urls": []string{s.url("/")}})

	// The first walk is interrupted after its third page.
	ctx, cancel := context.WithCancel(t.Context())
	first := connectortest.NewWalker(nil)
	n := 0
	first.ItemFunc = func(connector.Item) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	}
	require.ErrorIs(t, web.New().Walk(ctx, plainEnv(), cfg, connector.Options{}, first), context.Canceled)
	require.Equal(t, []string{s.url("/"), s.url("/p1"), s.url("/p2")}, first.ItemIDs())
	require.NotEmpty(t, first.State(), "no checkpoint before the interruption")

	// The retry starts from the checkpoint: the three pages read answer
	// 304, only the others are fetched in full.
	s.resetCounts()
	retry := walk(t, cfg, first.Next())
	require.Equal(t, []string{s.url("/"), s.url("/p1"), s.url("/p2")}, retry.UnchangedIDs())
	require.Equal(t, []string{s.url("/p3"), s.url("/p4"), s.url("/p5")}, retry.ItemIDs())
	_, full, notModified := s.counts()
	require.Equal(t, map[string]int{"/p3": 1, "/p4": 1, "/p5": 1}, full)
	require.Equal(t, 3, notModified)

	// The final state holds every page: a next walk is all 304s.
	requireAllNotModified(t, s, cfg, retry, 6)
}

func TestWalkCheckpointKeepsPagesNotReached(t *testing.T) {
	t.Parallel()
	s, cfg, first := walkedSmallSite(t)
	s.html("/a", "Page A", `<p>alpha changed</p><a href="/b">B</a>`)

	// An incremental walk interrupted at the changed /a (depth 1): its
	// checkpoint (level 0) still has /b from the previous state, so the
	// retry sends a conditional GET for /b too; /a, read after the
	// checkpoint, is fetched again.
	ctx, cancel := context.WithCancel(t.Context())
	second := first.Next()
	second.ItemFunc = func(connector.Item) error { cancel(); return nil }
	require.ErrorIs(t, web.New().Walk(ctx, plainEnv(), cfg, connector.Options{}, second), context.Canceled)
	require.NotEmpty(t, second.State())
	known := first.Versions()
	for id, v := range second.Versions() {
		known[id] = v
	}
	retry := connectortest.NewWalker(known)
	retry.SetState(second.State())
	s.resetCounts()
	walk(t, cfg, retry)
	_, full, notModified := s.counts()
	require.Equal(t, map[string]int{"/a": 1}, full)
	require.Equal(t, 2, notModified)
}
