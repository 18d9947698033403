package rss_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/connector/rss"
	"github.com/graphmill/graphmill/internal/errs"
)

// feedServer serves feeds and linked pages a test edits between walks,
// answering If-None-Match with 304, and counts full responses by path.
type feedServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	docs  map[string]doc
	full  map[string]int
	notMo int
}

type doc struct {
	body, ctype string
	status      int
}

func newFeedServer(t *testing.T) *feedServer {
	t.Helper()
	f := &feedServer{docs: map[string]doc{}, full: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		d, ok := f.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if d.status != 0 {
			w.WriteHeader(d.status)
			return
		}
		sum := sha256.Sum256([]byte(d.body))
		tag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", tag)
		if r.Header.Get("If-None-Match") == tag {
			f.notMo++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", d.ctype)
		f.full[r.URL.Path]++
		_, _ = w.Write([]byte(d.body))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *feedServer) set(path string, d doc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.docs[path] = d
}

func (f *feedServer) counts() (map[string]int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	full := map[string]int{}
	for k, v := range f.full {
		full[k] = v
	}
	n := f.notMo
	f.full, f.notMo = map[string]int{}, 0
	return full, n
}

func (f *feedServer) url(path string) string { return f.srv.URL + path }

// rssItem is one <item> of an RSS 2.0 feed.
type rssItem struct{ guid, title, link, pubDate, description, encoded string }

func rss2(items ...rssItem) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>Blog</title><link>https://blog.test/</link><description>d</description>`)
	for _, it := range items {
		b.WriteString("<item><title>" + it.title + "</title>")
		if it.guid != "" {
			b.WriteString(`<guid isPermaLink="false">` + it.guid + "</guid>")
		}
		if it.link != "" {
			b.WriteString("<link>" + it.link + "</link>")
		}
		if it.pubDate != "" {
			b.WriteString("<pubDate>" + it.pubDate + "</pubDate>")
		}
		b.WriteString("<description><![CDATA[" + it.description + "]]></description>")
		if it.encoded != "" {
			b.WriteString("<content:encoded><![CDATA[" + it.encoded + "]]></content:encoded>")
		}
		b.WriteString("</item>")
	}
	b.WriteString("</channel></rss>")
	return b.String()
}

func cfg(fields map[string]any) connector.Config { return connectortest.Config(fields) }

func walk(t *testing.T, c connector.Config, w *connectortest.Walker) *connectortest.Walker {
	t.Helper()
	require.NoError(t, rss.New().Validate(c))
	require.NoError(t, rss.New().Walk(t.Context(), env(), c, connector.Options{}, w))
	return w
}

func env() connector.Env { return connector.Env{HTTP: connectortest.Client()} }

func blogFeed(f *feedServer) []rssItem {
	return []rssItem{
		{guid: "post-1", title: "First post", link: "/posts/1", pubDate: "Mon, 02 Nov 2026 10:00:00 +0100", description: "<p>Summary one</p>", encoded: "<p>Full <b>one</b></p>"},
		{title: "Second & last", link: f.url("/posts/2"), pubDate: "Tue, 03 Nov 2026 10:00:00 GMT", description: "<p>Body two</p>"},
		{guid: "post-3", title: "No date", description: "<p>three</p>"},
	}
}

func TestWalkRSS(t *testing.T) {
	t.Parallel()
	f := newFeedServer(t)
	f.set("/rss.xml", doc{body: rss2(blogFeed(f)...), ctype: "application/rss+xml"})
	w := walk(t, cfg(map[string]any{"feed_url": f.url("/rss.xml")}), connectortest.NewWalker(nil))

	require.Equal(t, []string{f.url("/posts/2"), "post-1", "post-3"}, w.ItemIDs())
	items := w.Items()
	one := items["post-1"]
	require.Equal(t, "First post", one.Title)
	require.Equal(t, f.url("/posts/1"), one.URL, "a relative link is resolved against the feed URL")
	require.Equal(t, "2026-11-02T09:00:00Z", one.Version)
	require.Equal(t, "text/html", one.MimeType)
	require.Equal(t, "first-post.html", one.Filename)
	require.Contains(t, string(one.Content), "<p>Full <b>one</b></p>", "content:encoded wins over the description")
	require.NotContains(t, string(one.Content), "Summary one")
	require.Contains(t, string(one.Content), "<title>First post</title>")
	two := items[f.url("/posts/2")]
	require.Contains(t, string(two.Content), "<h1>Second &amp; last</h1>")
	require.Contains(t, string(two.Content), "<p>Body two</p>")
	require.Equal(t, "2026-11-03T10:00:00Z", two.Version)
	three := items["post-3"]
	require.True(t, strings.HasPrefix(three.Version, "sha256:"), three.Version)
	require.True(t, three.Modified.IsZero())
	require.Empty(t, w.FailedItems())
	full, _ := f.counts()
	require.Equal(t, map[string]int{"/rss.xml": 1}, full, "linked pages are not fetched by default")
}

func TestWalkAtom(t *testing.T) {
	t.Parallel()
	f := newFeedServer(t)
	f.set("/atom.xml", doc{ctype: "application/atom+xml", body: `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Notes</title><id>urn:feed</id><updated>2026-11-05T00:00:00Z</updated>
<entry><id>urn:note:1</id><title>Note one</title><link href="https://notes.test/1"/><updated>2026-11-04T08:30:00Z</updated>
<author><name>Ada</name></author><content type="html">&lt;p&gt;Atom &lt;i&gt;body&lt;/i&gt;&lt;/p&gt;</content></entry>
<entry><id>urn:note:2</id><title>Note two</title><updated>2026-11-05T00:00:00Z</updated><summary>Just a summary</summary></entry>
</feed>`})
	w := walk(t, cfg(map[string]any{"feed_url": f.url("/atom.xml")}), connectortest.NewWalker(nil))
	require.Equal(t, []string{"urn:note:1", "urn:note:2"}, w.ItemIDs())
	one := w.Items()["urn:note:1"]
	require.Equal(t, "2026-11-04T08:30:00Z", one.Version)
	require.Equal(t, "https://notes.test/1", one.URL)
	require.Contains(t, string(one.Content), "<p>Atom <i>body</i></p>")
	require.Contains(t, string(one.Content), "Ada")
	require.Contains(t, string(w.Items()["urn:note:2"].Content), "Just a summary")
}

func TestWalkUnchangedAndChangedItems(t *testing.T) {
	t.Parallel()
	f := newFeedServer(t)
	items := blogFeed(f)
	f.set("/rss.xml", doc{body: rss2(items...), ctype: "application/rss+xml"})
	c := cfg(map[string]any{"feed_url": f.url("/rss.xml")})
	first := walk(t, c, connectortest.NewWalker(nil))
	_, _ = f.counts()

	// The same feed: a 304, every item Unchanged.
	second := walk(t, c, first.Next())
	require.Empty(t, second.ItemIDs())
	require.Equal(t, []string{f.url("/posts/2"), "post-1", "post-3"}, second.UnchangedIDs())
	full, notModified := f.counts()
	require.Empty(t, full)
	require.Equal(t, 1, notModified)

	// A new item on top, one item updated, the oldest dropped: the new and
	// the updated one come with content, the other is Unchanged, the
	// dropped one is not reported (and, Append, not deleted).
	items[0].pubDate = "Wed, 04 Nov 2026 10:00:00 GMT"
	items[0].encoded = "<p>Full one, edited</p>"
	feed := append([]rssItem{{guid: "post-4", title: "Fourth", description: "<p>four</p>", pubDate: "Thu, 05 Nov 2026 10:00:00 GMT"}}, items[:2]...)
	f.set("/rss.xml", doc{body: rss2(feed...), ctype: "application/rss+xml"})
	third := walk(t, c, second.Next())
	require.Equal(t, []string{"post-1", "post-4"}, third.ItemIDs())
	require.Contains(t, string(third.Items()["post-1"].Content), "edited")
	require.Equal(t, []string{f.url("/posts/2")}, third.UnchangedIDs())
	require.True(t, rss.New().Descriptor().Append, "an item leaving the feed must not be deleted")
}

func TestWalkMaxItems(t *testing.T) {
	t.Parallel()
	f := newFeedServer(t)
	f.set("/rss.xml", doc{body: rss2(blogFeed(f)...), ctype: "application/rss+xml"})
	w := walk(t, cfg(map[string]any{"feed_url": f.url("/rss.xml"), "max_items": 2}), connectortest.NewWalker(nil))
	require.Equal(t, []string{f.url("/posts/2"), "post-1"}, w.ItemIDs())

	// Raising max_items reads the (unchanged) feed in full again.
	more := walk(t, cfg(map[string]any{"feed_url": f.url("/rss.xml"), "max_items": 3}), w.Next())
	require.Equal(t, []string{"post-3"}, more.ItemIDs())
	require.Equal(t, []string{f.url("/posts/2"), "post-1"}, more.UnchangedIDs())
}

func TestWalkFetchLinkedPages(t *testing.T) {
	t.Parallel()
	f := newFeedServer(t)
	f.set("/rss.xml", doc{body: rss2(blogFeed(f)...), ctype: "application/rss+xml"})
	f.set("/posts/1", doc{body: "<html><body><article>The whole first post</article></body></html>", ctype: "text/html"})
	f.set("/posts/2", doc{status: http.StatusInternalServerError})
	c := cfg(map[string]any{"feed_url": f.url("/rss.xml"), "fetch_linked_pages": true})
	w := walk(t, c, connectortest.NewWalker(nil))

	require.Equal(t, []string{"post-1", "post-3"}, w.ItemIDs())
	require.Equal(t, "<html><body><article>The whole first post</article></body></html>", string(w.Items()["post-1"].Content))
	require.Contains(t, string(w.Items()["post-3"].Content), "<p>three</p>", "an item without a link keeps its content")
	require.ErrorContains(t, w.FailedItems()[f.url("/posts/2")], "HTTP 500")
	full, _ := f.counts()
	require.Equal(t, 1, full["/posts/1"])

	// Fixed page, unchanged feed (but the failed item makes it read in
	// full): only the failed item is fetched again.
	f.set("/posts/2", doc{body: "<html><body>second page</body></html>", ctype: "text/html; charset=utf-8"})
	second := walk(t, c, w.Next())
	require.Equal(t, []string{f.url("/posts/2")}, second.ItemIDs())
	require.Equal(t, []string{"post-1", "post-3"}, second.UnchangedIDs())
	full, _ = f.counts()
	require.Zero(t, full["/posts/1"])
}

func TestWalkErrors(t *testing.T) {
	t.Parallel()
	f := newFeedServer(t)
	f.set("/down.xml", doc{status: http.StatusBadGateway})
	f.set("/page.html", doc{body: "<html>not a feed</html>", ctype: "text/html"})
	for path, want := range map[string]string{
		"/down.xml":  "HTTP 502",
		"/page.html": "is not an RSS or Atom feed",
		"/none.xml":  "HTTP 404",
	} {
		w := connectortest.NewWalker(nil)
		err := rss.New().Walk(t.Context(), env(), cfg(map[string]any{"feed_url": f.url(path)}), connector.Options{}, w)
		require.ErrorContains(t, err, want)
		require.Empty(t, w.Reported())
	}
	f.set("/rss.xml", doc{body: rss2(blogFeed(f)...), ctype: "application/rss+xml"})
	boom := errors.New("database gone")
	w := connectortest.NewWalker(nil)
	w.ItemFunc = func(connector.Item) error { return boom }
	require.ErrorIs(t, rss.New().Walk(t.Context(), env(), cfg(map[string]any{"feed_url": f.url("/rss.xml")}), connector.Options{}, w), boom)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{}, "feed_url must be a URL"},
		{map[string]any{"feed_url": "file:///etc/passwd"}, "feed_url must be an http or https URL"},
		{map[string]any{"feed_url": "https://u:p@x.test/feed"}, "feed_url must not contain credentials"},
		{map[string]any{"feed_url": "https://x.test/feed", "max_items": 0}, "max_items must be an integer from 1 to 10000"},
		{map[string]any{"feed_url": "https://x.test/feed", "max_items": 10001}, "max_items must be an integer from 1 to 10000"},
	} {
		err := rss.New().Validate(cfg(tc.cfg))
		require.Equal(t, errs.Invalid, errs.CodeOf(err), "%v", tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
	require.NoError(t, rss.New().Validate(cfg(map[string]any{"feed_url": "https://x.test/feed", "max_items": 5, "fetch_linked_pages": true})))
}

func TestTestConnection(t *testing.T) {
	t.Parallel()
	f := newFeedServer(t)
	f.set("/rss.xml", doc{body: rss2(blogFeed(f)...), ctype: "application/rss+xml"})
	f.set("/empty.xml", doc{body: rss2(), ctype: "application/rss+xml"})
	f.set("/page.html", doc{body: "<html>x</html>", ctype: "text/html"})
	test := func(path string) error {
		return rss.New().Test(t.Context(), env(), cfg(map[string]any{"feed_url": f.url(path)}))
	}
	require.NoError(t, test("/rss.xml"))
	require.EqualError(t, test("/missing.xml"), "fetch feed "+f.url("/missing.xml")+": HTTP 404 Not Found")
	require.ErrorContains(t, test("/page.html"), f.url("/page.html")+" is not an RSS or Atom feed")
	require.EqualError(t, test("/empty.xml"), "the feed "+f.url("/empty.xml")+" has no items")
	f.srv.Close()
	require.ErrorContains(t, test("/rss.xml"), "fetch feed: ")
}

type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

func TestWalkFetchesThroughTheEnvClient(t *testing.T) {
	t.Parallel()
	f := newFeedServer(t)
	f.set("/rss.xml", doc{body: rss2(blogFeed(f)...), ctype: "application/rss+xml"})
	f.set("/posts/1", doc{body: "<html>1</html>", ctype: "text/html"})
	f.set("/posts/2", doc{body: "<html>2</html>", ctype: "text/html"})
	ct := &countingTransport{next: connectortest.Transport()}
	w := connectortest.NewWalker(nil)
	c := cfg(map[string]any{"feed_url": f.url("/rss.xml"), "fetch_linked_pages": true})
	require.NoError(t, rss.New().Walk(t.Context(), connector.Env{HTTP: &http.Client{Transport: ct}}, c, connector.Options{}, w))
	require.Len(t, w.ItemIDs(), 3)
	full, _ := f.counts()
	require.Equal(t, map[string]int{"/rss.xml": 1, "/posts/1": 1, "/posts/2": 1}, full)
	require.Equal(t, int64(3), ct.n.Load(), "a request bypassed Env.HTTP")
}

// lastModifiedFeed serves body with Last-Modified lm and honours
// If-Modified-Since.
func lastModifiedFeed(t *testing.T, body string, lm time.Time) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !lm.After(ims) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Last-Modified", lm.UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWalkFeedURLChangeReadsNewFeed: after feed_url changes, the old
// feed's validator is not sent to the new feed (whose older
// Last-Modified would answer 304): the new feed is read in full.
func TestWalkFeedURLChangeReadsNewFeed(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second)
	a := lastModifiedFeed(t, rss2(rssItem{guid: "a1", title: "A1", description: "first feed item"}), now)
	b := lastModifiedFeed(t, rss2(rssItem{guid: "b1", title: "B1", description: "second feed item"}), now.Add(-time.Hour))
	w1 := walk(t, cfg(map[string]any{"feed_url": a.URL}), connectortest.NewWalker(nil))
	require.Equal(t, []string{"a1"}, w1.ItemIDs())
	w2 := walk(t, cfg(map[string]any{"feed_url": b.URL}), w1.Next())
	require.Equal(t, []string{"b1"}, w2.ItemIDs(), "unchanged reported: %v", w2.UnchangedIDs())
	require.Empty(t, w2.UnchangedIDs())
	// The same feed again: its validator is sent, the item is unchanged.
	w3 := walk(t, cfg(map[string]any{"feed_url": b.URL}), w2.Next())
	require.Empty(t, w3.ItemIDs())
	require.Equal(t, []string{"b1"}, w3.UnchangedIDs())
}
