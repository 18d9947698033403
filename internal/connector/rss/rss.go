// Package rss is the feed connector: it syncs the items of an RSS or Atom
// feed (parsed with github.com/mmcdole/gofeed), each as an HTML document
// made of the item's content (or description), or, with
// fetch_linked_pages, the page the item links to.
//
// A feed lists only its recent items, so an item that drops out of the
// feed still exists: the descriptor is Append, and the integration domain
// never deletes this integration's documents for being unlisted.
//
// The feed itself is fetched with a conditional GET (the validator is kept
// in the connector's state with the ids of the items it listed): a 304
// reports those items Unchanged. Otherwise an item whose version (its
// updated or published time, else a hash of its content) is the one stored
// by the last sync is Unchanged, and is not fetched again; the linked page
// of an item is fetched only when the item is new or changed.
package rss

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/mmcdole/gofeed"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/web"
	"github.com/graphmill/graphmill/internal/errs"
)

// Name is the provider type of the feed connector.
const Name = "rss"

// Config field names.
const (
	fieldFeedURL     = "feed_url"
	fieldFetchLinked = "fetch_linked_pages"
	fieldMaxItems    = "max_items"
)

// Limits.
const (
	// MaxMaxItems is the largest max_items accepted.
	MaxMaxItems = 10000
	// MaxFeedBytes is the largest feed read.
	MaxFeedBytes = 20 << 20
)

// Connector is the feed connector. The zero value is ready to use.
type Connector struct{}

// New returns the feed connector.
func New() *Connector { return &Connector{} }

var _ connector.Connector = (*Connector)(nil)

// Descriptor returns the available integration "rss".
func (*Connector) Descriptor() connector.Descriptor {
	return connector.Descriptor{
		Name:        Name,
		DisplayName: "RSS / Atom feed",
		Description: "Items of an RSS or Atom feed, each item's content (or its linked page) as a document. " +
			"Items that leave the feed are kept.",
		Category: "feeds",
		AuthType: "none",
		RequiredFields: []connector.Field{{
			Name:        fieldFeedURL,
			Type:        connector.TypeURL,
			Description: "http(s) URL of the RSS or Atom feed.",
			Target:      true,
		}},
		OptionalFields: []connector.Field{
			{
				Name: fieldFetchLinked,
				Type: connector.TypeBoolean,
				Description: "Sync the page each item links to instead of the item's content " +
					"(the content when the item has no link); default false.",
			},
			{
				Name:        fieldMaxItems,
				Type:        connector.TypeInteger,
				Description: fmt.Sprintf("Sync only the first max_items items of the feed (1 to %d); every item when absent.", MaxMaxItems),
			},
		},
		DocumentationURL: "https://www.rssboard.org/rss-specification",
		Append:           true,
	}
}

// settings is a validated config.
type settings struct {
	feedURL     string
	fetchLinked bool
	maxItems    int // 0: every item
}

// Validate checks the feed URL (http or https, no credentials) and
// max_items. Errors are errs.Invalid naming the field.
func (*Connector) Validate(cfg connector.Config) error {
	_, err := parseSettings(cfg)
	return err
}

func parseSettings(cfg connector.Config) (settings, error) {
	var s settings
	if cfg.String(fieldFeedURL) == "" {
		return s, errs.Errorf(errs.Invalid, "%s must be a URL", fieldFeedURL)
	}
	u, err := connector.ParseHTTPURL(fieldFeedURL, cfg.String(fieldFeedURL))
	if err != nil {
		return s, err
	}
	u.Fragment = ""
	s.feedURL = u.String()
	s.fetchLinked = cfg.Bool(fieldFetchLinked, false)
	s.maxItems, err = cfg.IntBetween(fieldMaxItems, 0, 1, MaxMaxItems)
	return s, err
}

// state is what the connector keeps between syncs: the feed's validator
// and the ids of the items the feed listed with it.
type state struct {
	Version string   `json:"version"`
	Items   []string `json:"items"`
	// Settings is the feed_url, max_items and fetch_linked_pages the items
	// were listed with: after a change, the feed is read in full again.
	Settings string `json:"settings"`
}

// key names the settings a feed's items were listed with: a validator is
// sent only to the feed (feed_url) that gave it, listed the same way.
func (s settings) key() string {
	return fmt.Sprintf("feed_url=%q max_items=%d fetch_linked_pages=%t", s.feedURL, s.maxItems, s.fetchLinked)
}

// fetchFeed fetches and parses the feed; a nil feed means 304 Not
// Modified.
func fetchFeed(ctx context.Context, client *http.Client, s settings, version string) (*gofeed.Feed, string, error) {
	resp, err := web.Get(ctx, client, s.feedURL, version, MaxFeedBytes)
	if err != nil {
		return nil, "", fmt.Errorf("fetch feed: %w", err)
	}
	if resp.Status == http.StatusNotModified && version != "" {
		return nil, version, nil
	}
	if resp.Status != http.StatusOK {
		return nil, "", fmt.Errorf("fetch feed %s: HTTP %d %s", s.feedURL, resp.Status, http.StatusText(resp.Status))
	}
	feed, err := gofeed.NewParser().Parse(bytes.NewReader(resp.Body))
	if err != nil {
		return nil, "", fmt.Errorf("%s is not an RSS or Atom feed: %w", s.feedURL, err)
	}
	return feed, web.Version(resp.Header), nil
}

// Test fetches and parses the feed.
func (*Connector) Test(ctx context.Context, env connector.Env, cfg connector.Config) error {
	s, err := parseSettings(cfg)
	if err != nil {
		return err
	}
	feed, _, err := fetchFeed(ctx, env.HTTP, s, "")
	if err != nil {
		return err
	}
	if len(feed.Items) == 0 {
		return fmt.Errorf("the feed %s has no items", s.feedURL)
	}
	return nil
}

// Walk reports the feed's items (see the package doc).
func (*Connector) Walk(ctx context.Context, env connector.Env, cfg connector.Config, _ connector.Options, w connector.Walker) error {
	s, err := parseSettings(cfg)
	if err != nil {
		return err
	}
	var old state
	if raw := w.State(); len(raw) > 0 {
		_ = json.Unmarshal(raw, &old) // a state that does not decode is a first sync
	}
	version := ""
	if old.Items != nil && old.Settings == s.key() {
		version = old.Version
	}
	feed, newVersion, err := fetchFeed(ctx, env.HTTP, s, version)
	if err != nil {
		return err
	}
	if feed == nil { // 304: the items of the last sync, unchanged
		for _, id := range old.Items {
			if err := w.Unchanged(ctx, id); err != nil {
				return fmt.Errorf("report unchanged item: %w", err)
			}
		}
		return connector.SaveState(w, old)
	}
	base, _ := url.Parse(s.feedURL)
	items := feed.Items
	if s.maxItems > 0 && len(items) > s.maxItems {
		items = items[:s.maxItems]
	}
	next := state{Version: newVersion, Items: make([]string, 0, len(items)), Settings: s.key()}
	seen := map[string]bool{}
	for _, fi := range items {
		if ctx.Err() != nil {
			return fmt.Errorf("walk feed: %w", context.Cause(ctx))
		}
		link := resolve(base, fi.Link)
		id := strings.TrimSpace(fi.GUID)
		if id == "" {
			id = link
		}
		if id == "" {
			w.Log(ctx, connector.LevelWarn, "a feed item has neither a guid nor a link: skipped", map[string]any{"title": fi.Title})
			continue
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		stored, err := report(ctx, env, s, w, fi, id, link)
		switch {
		case err != nil:
			return err
		case stored:
			next.Items = append(next.Items, id)
		default:
			// An item failed or was refused: the next walk reads the feed
			// in full, so that a 304 never vouches for it.
			next.Version = ""
		}
	}
	return connector.SaveState(w, next)
}

// report reports one item: Unchanged when its version is the stored one,
// else with its content (or its linked page). stored is false when the
// item failed or the walker refused it.
func report(ctx context.Context, env connector.Env, s settings, w connector.Walker, fi *gofeed.Item, id, link string) (stored bool, err error) {
	body := fi.Content
	if strings.TrimSpace(body) == "" {
		body = fi.Description
	}
	version, modified := itemVersion(fi, body)
	if s.fetchLinked && link != "" {
		version = "page " + version // the document is another one than the item's content
	}
	if known, ok := w.Known(id); ok && known == version {
		if err := w.Unchanged(ctx, id); err != nil {
			return false, fmt.Errorf("report unchanged item: %w", err)
		}
		return true, nil
	}
	title := strings.TrimSpace(fi.Title)
	it := connector.Item{
		ExternalID: id, Version: version, Title: title, URL: link,
		Filename: filename(title), MimeType: "text/html", Modified: modified,
	}
	if s.fetchLinked && link != "" {
		resp, err := web.Get(ctx, env.HTTP, link, "", web.MaxPageBytes)
		switch {
		case err != nil:
			w.Failed(ctx, id, fmt.Errorf("fetch the linked page: %w", err))
			return false, nil
		case resp.Status != http.StatusOK:
			w.Failed(ctx, id, fmt.Errorf("fetch the linked page %s: HTTP %d", link, resp.Status))
			return false, nil
		case !web.IsHTML(resp.Header.Get("Content-Type")):
			w.Failed(ctx, id, fmt.Errorf("the linked page %s is not HTML (Content-Type %q)", link, resp.Header.Get("Content-Type")))
			return false, nil
		}
		it.Content = resp.Body
	} else {
		it.Content = itemHTML(fi, title, link, body)
	}
	if err := w.Item(ctx, it); err != nil {
		if errors.Is(err, connector.ErrSkipItem) {
			return false, nil
		}
		return false, fmt.Errorf("report item: %w", err)
	}
	return true, nil
}

// itemVersion is the item's updated time, else its published time
// (RFC 3339, UTC), else a hash of its title, link and content.
func itemVersion(fi *gofeed.Item, body string) (string, time.Time) {
	for _, t := range []*time.Time{fi.UpdatedParsed, fi.PublishedParsed} {
		if t != nil && !t.IsZero() {
			return t.UTC().Format(time.RFC3339Nano), t.UTC()
		}
	}
	sum := sha256.Sum256([]byte(fi.Title + "\x00" + fi.Link + "\x00" + body))
	return "sha256:" + hex.EncodeToString(sum[:]), time.Time{}
}

// itemHTML is the document of an item: its title, date and link, then its
// content, which feeds carry as HTML.
func itemHTML(fi *gofeed.Item, title, link, body string) []byte {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + esc(title) + "</title></head><body>\n")
	b.WriteString("<h1>" + esc(title) + "</h1>\n")
	var meta []string
	for _, a := range fi.Authors {
		if a != nil && a.Name != "" {
			meta = append(meta, esc(a.Name))
		}
	}
	if fi.PublishedParsed != nil {
		meta = append(meta, fi.PublishedParsed.UTC().Format("2006-01-02"))
	}
	if link != "" {
		meta = append(meta, `<a href="`+esc(link)+`">`+esc(link)+`</a>`)
	}
	if len(meta) > 0 {
		b.WriteString("<p>" + strings.Join(meta, " · ") + "</p>\n")
	}
	b.WriteString(body)
	b.WriteString("\n</body></html>\n")
	return []byte(b.String())
}

// resolve makes an item link absolute against the feed URL; only http(s)
// links are kept.
func resolve(base *url.URL, link string) string {
	link = strings.TrimSpace(link)
	if link == "" {
		return ""
	}
	u, err := base.Parse(link)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	u.Fragment = ""
	return u.String()
}

// filename is a file name from an item's title.
func filename(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 80 {
			break
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "item"
	}
	return name + ".html"
}
