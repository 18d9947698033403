package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/temoto/robotstxt"

	"github.com/graphmill/graphmill/internal/connector"
)

// state is the connector's state: the in-scope links of each page at the
// version they were read at, so that a page answering 304 still leads the
// crawl on. URLs are stored once and referenced by index.
type state struct {
	// Scope is the include/exclude the links were filtered with: a state
	// of another scope is dropped (its link lists would miss pages).
	Scope string      `json:"scope"`
	URLs  []string    `json:"urls"`
	Pages []pageLinks `json:"pages"`
}

type pageLinks struct {
	URL     int    `json:"u"`
	Version string `json:"v"`
	Links   []int  `json:"l"`
}

// knownPage is a page of the previous state.
type knownPage struct {
	version string
	links   []string
}

// stateBuilder collects the new state as the crawl goes.
type stateBuilder struct {
	index map[string]int
	st    state
	links int
	pages map[string]bool // the pages added
}

func (b *stateBuilder) ref(u string) int {
	if i, ok := b.index[u]; ok {
		return i
	}
	b.index[u] = len(b.st.URLs)
	b.st.URLs = append(b.st.URLs, u)
	return b.index[u]
}

// add records a page's links unless the state's link budget is spent (the
// page is then fetched in full next time).
func (b *stateBuilder) add(u, version string, links []string) {
	if version == "" || b.pages[u] || b.links+len(links) > maxStateLinks {
		return
	}
	b.pages[u] = true
	b.links += len(links)
	p := pageLinks{URL: b.ref(u), Version: version, Links: make([]int, 0, len(links))}
	for _, l := range links {
		p.Links = append(p.Links, b.ref(l))
	}
	b.st.Pages = append(b.st.Pages, p)
}

func loadState(raw json.RawMessage, scope string) map[string]knownPage {
	var st state
	if len(raw) == 0 || json.Unmarshal(raw, &st) != nil || st.Scope != scope {
		return nil
	}
	out := make(map[string]knownPage, len(st.Pages))
	for _, p := range st.Pages {
		if p.URL < 0 || p.URL >= len(st.URLs) {
			continue
		}
		kp := knownPage{version: p.Version, links: make([]string, 0, len(p.Links))}
		ok := true
		for _, l := range p.Links {
			if l < 0 || l >= len(st.URLs) {
				ok = false
				break
			}
			kp.links = append(kp.links, st.URLs[l])
		}
		if ok {
			out[st.URLs[p.URL]] = kp
		}
	}
	return out
}

// checkpoint is the state to resume an interrupted walk from: the pages
// this walk read so far, then the previous state's pages it has not
// reached yet (within the same link budget), so that a retry sends
// conditional GETs for both.
func (b *stateBuilder) checkpoint(old map[string]knownPage) state {
	cp := stateBuilder{
		index: maps.Clone(b.index), links: b.links, pages: maps.Clone(b.pages),
		st: state{Scope: b.st.Scope, URLs: slices.Clone(b.st.URLs), Pages: slices.Clone(b.st.Pages)},
	}
	for _, u := range slices.Sorted(maps.Keys(old)) {
		cp.add(u, old[u].version, old[u].links)
	}
	return cp.st
}

// crawl is one walk of a site.
type crawl struct {
	env    connector.Env
	client *http.Client // env.HTTP without following redirects
	s      settings
	w      connector.Walker
	robots *robotstxt.Group
	old    map[string]knownPage
	next   stateBuilder
	seen   map[string]bool
	seeds  map[string]bool
	pages  int
	// saved is the page count at the last checkpoint.
	saved int
	// skipped counts the URLs passed over, logged once at the end (one
	// log entry per URL would flood the sync log).
	skipped skips
}

// skips counts the URLs passed over, by reason, with a few examples.
type skips struct {
	robots, gone, notHTML skipCount
}

type skipCount struct {
	n        int
	examples []string
}

func (c *skipCount) add(u string) {
	c.n++
	if len(c.examples) < 10 {
		c.examples = append(c.examples, u)
	}
}

func (sk *skips) log(ctx context.Context, w connector.Walker) {
	for _, r := range []struct {
		c       *skipCount
		message string
	}{
		{&sk.robots, "pages disallowed by robots.txt were skipped"},
		{&sk.gone, "linked pages answered 404 or 410 (gone)"},
		{&sk.notHTML, "linked URLs are not HTML pages and were skipped"},
	} {
		if r.c.n > 0 {
			w.Log(ctx, connector.LevelInfo, fmt.Sprintf("%d %s", r.c.n, r.message), map[string]any{"examples": r.c.examples})
		}
	}
}

// fetched is the outcome of fetching a task.
type fetched struct {
	url     string
	version string // the conditional GET's version, "" for a full fetch
	resp    Response
	err     error
}

// Walk crawls the site and reports its pages (see the package doc).
func (c *Connector) Walk(ctx context.Context, env connector.Env, cfg connector.Config, _ connector.Options, w connector.Walker) error {
	s, err := parseSettings(cfg)
	if err != nil {
		return err
	}
	cr := &crawl{
		env: env, client: noRedirect(env.HTTP), s: s, w: w,
		old:   loadState(w.State(), s.scope),
		next:  stateBuilder{index: map[string]int{}, pages: map[string]bool{}, st: state{Scope: s.scope}},
		seen:  map[string]bool{},
		seeds: map[string]bool{},
	}
	if cr.robots, err = fetchRobots(ctx, env.HTTP, s.origin); err != nil {
		return err
	}
	var level []string // the URLs of the current depth, in discovery order
	enqueue := func(dst *[]string, u *url.URL) {
		key := u.String()
		if cr.seen[key] || !s.inScope(u) {
			return
		}
		cr.seen[key] = true
		if !cr.robots.Test(u.RequestURI()) {
			cr.skipped.robots.add(key)
			return
		}
		*dst = append(*dst, key)
	}
	// A start URL that answers 404 is a failure (a site that vanished
	// must not look like an empty one); a sitemap entry that does is a
	// stale sitemap, gone like a page.
	for _, start := range s.starts {
		u, _ := url.Parse(start)
		cr.seeds[start] = true
		enqueue(&level, u)
	}
	if s.sitemap != "" {
		urls, err := cr.readSitemaps(ctx, s.sitemap)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("read sitemap: %w", context.Cause(ctx))
			}
			w.Failed(ctx, s.sitemap, err)
		}
		for _, u := range urls {
			enqueue(&level, u)
		}
	}
	// Breadth-first, level by level, in discovery order: the same pages
	// are chosen under the page cap on every walk.
	for depth := 0; len(level) > 0 && cr.pages < s.maxPages; depth++ {
		var children []string
		for i := 0; i < len(level) && cr.pages < s.maxPages; {
			batch := level[i:min(i+parallel, len(level))]
			i += len(batch)
			results := cr.fetch(ctx, batch)
			for j := range results {
				if cr.pages >= s.maxPages {
					break
				}
				links, redirect, err := cr.handle(ctx, &results[j])
				if err != nil {
					return err
				}
				if err := cr.checkpoint(false); err != nil {
					return err
				}
				for _, l := range links {
					u, _ := url.Parse(l)
					switch {
					case redirect: // a redirect target is crawled at the redirect's depth
						enqueue(&level, u)
					case depth < s.maxDepth:
						enqueue(&children, u)
					}
				}
			}
		}
		level = children
		if err := cr.checkpoint(true); err != nil {
			return err
		}
	}
	cr.skipped.log(ctx, w)
	if cr.pages >= s.maxPages {
		w.Log(ctx, connector.LevelWarn, fmt.Sprintf("the page cap (max_pages %d) is reached: further pages are not synced", s.maxPages), nil)
	}
	return connector.SaveState(w, cr.next.st)
}

// checkpoint records the state to resume from (Walker.SetState) at the
// end of a depth level and every checkpointPages pages: a walk
// interrupted midway is retried with conditional GETs for the pages it
// read. The final state (at the end of Walk) keeps only the pages read.
func (cr *crawl) checkpoint(levelEnd bool) error {
	if cr.pages == cr.saved || (!levelEnd && cr.pages-cr.saved < checkpointPages) {
		return nil
	}
	if err := connector.SaveState(cr.w, cr.next.checkpoint(cr.old)); err != nil {
		return err
	}
	cr.saved = cr.pages
	return nil
}

// fetch fetches a batch concurrently, results in the batch's order. Known
// is asked here, on the walker's goroutine; a conditional GET is sent only
// when the state has the page's links at that version.
func (cr *crawl) fetch(ctx context.Context, batch []string) []fetched {
	out := make([]fetched, len(batch))
	for i, u := range batch {
		out[i].url = u
		if v, ok := cr.w.Known(u); ok && v != "" {
			if kp, ok := cr.old[u]; ok && kp.version == v {
				out[i].version = v
			}
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			out[i].resp, out[i].err = Get(ctx, cr.client, out[i].url, out[i].version, MaxPageBytes)
		})
	}
	wg.Wait()
	return out
}

// handle reports one fetched URL and returns the links to follow (for a
// redirect, its target). Only the walker's errors stop the crawl.
func (cr *crawl) handle(ctx context.Context, t *fetched) (links []string, redirect bool, err error) {
	if ctx.Err() != nil {
		return nil, false, fmt.Errorf("crawl: %w", context.Cause(ctx))
	}
	if errors.Is(t.err, ErrTooLarge) {
		// Not a failure: it would block every deletion of the integration
		// for good. Not reported, so its earlier document is deleted.
		cr.w.Log(ctx, connector.LevelWarn, "page larger than the size limit: skipped", map[string]any{"url": t.url, "limit": MaxPageBytes})
		return nil, false, nil
	}
	if t.err != nil {
		cr.w.Failed(ctx, t.url, t.err)
		return nil, false, nil
	}
	r := t.resp
	switch {
	case r.Status == http.StatusNotModified && t.version != "":
		kp := cr.old[t.url]
		cr.pages++
		if err := cr.w.Unchanged(ctx, t.url); err != nil {
			return nil, false, fmt.Errorf("report unchanged page: %w", err)
		}
		cr.next.add(t.url, t.version, kp.links)
		return kp.links, false, nil
	case r.Status == http.StatusOK:
		if !IsHTML(r.Header.Get("Content-Type")) {
			cr.skipped.notHTML.add(t.url)
			return nil, false, nil
		}
		base, _ := url.Parse(t.url)
		p := parsePage(base, r.Body)
		links := cr.scoped(p.links)
		version := Version(r.Header)
		cr.pages++
		err := cr.w.Item(ctx, connector.Item{
			ExternalID: t.url,
			Version:    version,
			Title:      titleOf(p.title, base),
			URL:        t.url,
			Filename:   filenameOf(base),
			MimeType:   "text/html",
			Content:    r.Body,
			Modified:   lastModified(r.Header),
		})
		if err != nil && !errors.Is(err, connector.ErrSkipItem) {
			return nil, false, fmt.Errorf("report page: %w", err)
		}
		cr.next.add(t.url, version, links)
		return links, false, nil
	case r.Status >= 300 && r.Status < 400 && r.Header.Get("Location") != "":
		base, _ := url.Parse(t.url)
		target, err := base.Parse(r.Header.Get("Location"))
		if err != nil {
			cr.w.Failed(ctx, t.url, fmt.Errorf("redirect to an invalid URL: %w", err))
			return nil, false, nil
		}
		return []string{normalize(target).String()}, true, nil
	case (r.Status == http.StatusNotFound || r.Status == http.StatusGone) && !cr.seeds[t.url]:
		cr.skipped.gone.add(t.url)
		return nil, false, nil
	default:
		cr.w.Failed(ctx, t.url, fmt.Errorf("fetch %s: HTTP %d", t.url, r.Status))
		return nil, false, nil
	}
}

// scoped returns the distinct in-scope links, normalized, in page order.
func (cr *crawl) scoped(links []*url.URL) []string {
	out := make([]string, 0, len(links))
	seen := map[string]bool{}
	for _, l := range links {
		n := normalize(l)
		key := n.String()
		if !seen[key] && cr.s.inScope(n) {
			seen[key] = true
			out = append(out, key)
		}
	}
	return out
}

// fetchRobots reads the origin's robots.txt: a missing one (4xx) allows
// everything; a server error or an unreachable site fails the walk (a
// crawl that cannot know the rules must not report an empty site).
func fetchRobots(ctx context.Context, client *http.Client, origin *url.URL) (*robotstxt.Group, error) {
	loc := origin.String() + "/robots.txt"
	resp, err := Get(ctx, client, loc, "", 1<<20)
	if err != nil {
		return nil, fmt.Errorf("fetch robots.txt: %w", err)
	}
	if resp.Status >= 500 || resp.Status == http.StatusTooManyRequests {
		return nil, fmt.Errorf("fetch %s: HTTP %d", loc, resp.Status)
	}
	data, err := robotstxt.FromStatusAndBytes(resp.Status, resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", loc, err)
	}
	return data.FindGroup(UserAgent), nil
}

// noRedirect returns a copy of client (same transport, so the same egress
// guard) that returns redirects instead of following them.
func noRedirect(client *http.Client) *http.Client {
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func titleOf(title string, u *url.URL) string {
	if title != "" {
		return title
	}
	return u.Host + u.Path
}

func filenameOf(u *url.URL) string {
	name := path.Base(u.Path)
	if name == "/" || name == "." || name == "" {
		name = "index"
	}
	if ext := path.Ext(name); ext != ".html" && ext != ".htm" {
		name = strings.TrimSuffix(name, ext) + ".html"
	}
	return name
}

func lastModified(h http.Header) time.Time {
	t, err := http.ParseTime(h.Get("Last-Modified"))
	if err != nil {
		return time.Time{}
	}
	return t
}

// Test fetches robots.txt and the first start URL (or the sitemap) and
// checks that it answers with a page the crawl may read.
func (c *Connector) Test(ctx context.Context, env connector.Env, cfg connector.Config) error {
	s, err := parseSettings(cfg)
	if err != nil {
		return err
	}
	robots, err := fetchRobots(ctx, env.HTTP, s.origin)
	if err != nil {
		return fmt.Errorf("the site cannot be reached: %w", err)
	}
	if len(s.starts) == 0 {
		cr := &crawl{env: env, s: s}
		urls, err := cr.readSitemaps(ctx, s.sitemap)
		if err != nil {
			return fmt.Errorf("the sitemap cannot be read: %w", err)
		}
		if len(urls) == 0 {
			return fmt.Errorf("the sitemap %s lists no page", s.sitemap)
		}
		return nil
	}
	start := s.starts[0]
	u, _ := url.Parse(start)
	if !robots.Test(u.RequestURI()) {
		return fmt.Errorf("robots.txt of %s disallows %s for the user agent %s", s.origin, start, UserAgent)
	}
	resp, err := Get(ctx, env.HTTP, start, "", MaxPageBytes)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", start, err)
	}
	if resp.Status != http.StatusOK {
		return fmt.Errorf("fetch %s: HTTP %d %s", start, resp.Status, http.StatusText(resp.Status))
	}
	if !IsHTML(resp.Header.Get("Content-Type")) {
		return fmt.Errorf("%s is not an HTML page (Content-Type %q)", start, resp.Header.Get("Content-Type"))
	}
	return nil
}
