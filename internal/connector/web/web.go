// Package web is the web connector: it syncs the HTML pages of one site,
// crawled from start URLs and/or a sitemap.
//
// The crawl stays on the origin (scheme, host and port) of the start URLs,
// goes breadth-first to max_depth links from a start page (sitemap entries
// are start pages too) and stops after max_pages pages, in a deterministic
// order so that the same pages are chosen on every walk. robots.txt is
// respected for the user agent "Graphmill". Each page is fetched with a
// conditional GET (If-None-Match from an ETag version, If-Modified-Since
// from a Last-Modified version): a 304 is reported Unchanged without a
// body. Because a 304 carries no links, the connector's state keeps each
// page's in-scope links with the version they were read at; a page whose
// links are not in the state (the state is bounded, or the version
// differs) is fetched in full. Redirects are not followed blindly: a
// same-origin target is crawled at the same depth as the redirecting URL.
//
// Any failure to fetch a page (network error, 5xx, 429, an unexpected
// status, a failing sitemap) is reported with Walker.Failed, so the
// listing is incomplete and nothing is deleted. A 404 or 410 of a linked
// page or a sitemap entry means the page is gone (it is not reported and
// its document is deleted after a complete walk); a 404 of a start URL is
// a failure. A page over MaxPageBytes is skipped with a warning. A
// robots.txt answering 5xx or 429, or not reachable, fails the walk.
package web

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/errs"
)

// Name is the provider type of the web connector.
const Name = "web"

// UserAgent is the User-Agent the connector sends and the robots.txt group
// it obeys.
const UserAgent = "Graphmill"

// Config field names.
const (
	fieldStartURLs = "start_urls"
	fieldSitemap   = "sitemap_url"
	fieldMaxPages  = "max_pages"
	fieldMaxDepth  = "max_depth"
	fieldInclude   = "include"
	fieldExclude   = "exclude"
)

// Limits of the crawl.
const (
	// DefaultMaxPages is max_pages when the config has none.
	DefaultMaxPages = 1000
	// MaxMaxPages is the largest max_pages accepted.
	MaxMaxPages = 100000
	// DefaultMaxDepth is max_depth when the config has none.
	DefaultMaxDepth = 5
	// MaxMaxDepth is the largest max_depth accepted.
	MaxMaxDepth = 50
	// MaxPageBytes is the largest page read; a larger one is skipped with
	// a warning (not reported).
	MaxPageBytes = 10 << 20
	// maxSitemapBytes bounds one (uncompressed) sitemap document.
	maxSitemapBytes = 50 << 20
	// maxSitemaps bounds the sitemaps read through sitemap indexes.
	maxSitemaps = 50
	// maxStateLinks bounds the links kept in the state over all pages.
	maxStateLinks = 200000
	// checkpointPages is how many pages are read between two checkpoints
	// of the state within a depth level (each one encodes the whole
	// state).
	checkpointPages = 500
	// parallel is how many fetches run at once: polite to the site, and
	// net/http's default idle connections per host (more fetches at once
	// than kept connections dial anew; measured slower).
	parallel = 2
)

// Connector is the web connector. The zero value is ready to use.
type Connector struct{}

// New returns the web connector.
func New() *Connector { return &Connector{} }

var _ connector.Connector = (*Connector)(nil)

// Descriptor returns the available integration "web".
func (*Connector) Descriptor() connector.Descriptor {
	return connector.Descriptor{
		Name:        Name,
		DisplayName: "Website",
		Description: "HTML pages of one site, crawled from start URLs and/or a sitemap on the same origin, " +
			"respecting robots.txt, synced incrementally with conditional GET (ETag, Last-Modified).",
		Category: "web",
		AuthType: "none",
		RequiredFields: []connector.Field{{
			Name: fieldStartURLs,
			Type: connector.TypeArray,
			Description: "http(s) URLs the crawl starts from, all on one origin; may be empty when " +
				fieldSitemap + " is set.",
			Target: true,
		}},
		OptionalFields: []connector.Field{
			{
				Name:        fieldSitemap,
				Type:        connector.TypeURL,
				Description: "URL of a sitemap (or sitemap index, optionally gzipped) on the same origin; its pages are start pages.",
				Target:      true,
			},
			{
				Name:        fieldMaxPages,
				Type:        connector.TypeInteger,
				Description: fmt.Sprintf("Most pages synced (default %d, at most %d).", DefaultMaxPages, MaxMaxPages),
			},
			{
				Name: fieldMaxDepth,
				Type: connector.TypeInteger,
				Description: fmt.Sprintf("Most links followed from a start page (default %d, at most %d; 0 syncs the start pages only).",
					DefaultMaxDepth, MaxMaxDepth),
			},
			{
				Name: fieldInclude,
				Type: connector.TypeArray,
				Description: "URL path globs of the pages to sync (/docs/**, /blog/*.html): * stays within a path segment, " +
					"** crosses segments, a trailing /** also matches the directory itself; every page when empty.",
			},
			{
				Name:        fieldExclude,
				Type:        connector.TypeArray,
				Description: "URL path globs of the pages to skip, applied after include.",
			},
		},
		DocumentationURL: "https://www.sitemaps.org/protocol.html",
	}
}

// Validate checks the URLs (http or https, no credentials, one origin, the
// start URLs inside include/exclude), the caps and the globs. Errors are
// errs.Invalid naming the field.
func (*Connector) Validate(cfg connector.Config) error {
	_, err := parseSettings(cfg)
	return err
}

// settings is a validated config.
type settings struct {
	origin   *url.URL // scheme and host of the site
	starts   []string // normalized start URLs
	sitemap  string   // normalized sitemap URL, "" when none
	maxPages int
	maxDepth int
	include  []*regexp.Regexp
	exclude  []*regexp.Regexp
	scope    string // include and exclude as given, for the state
}

func parseSettings(cfg connector.Config) (settings, error) {
	var s settings
	for i, raw := range cfg.Strings(fieldStartURLs) {
		u, err := parseURL(fmt.Sprintf("%s[%d]", fieldStartURLs, i), raw)
		if err != nil {
			return s, err
		}
		if err := s.sameOrigin(fmt.Sprintf("%s[%d]", fieldStartURLs, i), u); err != nil {
			return s, err
		}
		s.starts = append(s.starts, u.String())
	}
	if raw := strings.TrimSpace(cfg.String(fieldSitemap)); raw != "" {
		u, err := parseURL(fieldSitemap, raw)
		if err != nil {
			return s, err
		}
		if err := s.sameOrigin(fieldSitemap, u); err != nil {
			return s, err
		}
		s.sitemap = u.String()
	}
	if len(s.starts) == 0 && s.sitemap == "" {
		return s, errs.Errorf(errs.Invalid, "%s needs at least one URL (or set %s)", fieldStartURLs, fieldSitemap)
	}
	var err error
	if s.maxPages, err = cfg.IntBetween(fieldMaxPages, DefaultMaxPages, 1, MaxMaxPages); err != nil {
		return s, err
	}
	if s.maxDepth, err = cfg.IntBetween(fieldMaxDepth, DefaultMaxDepth, 0, MaxMaxDepth); err != nil {
		return s, err
	}
	if s.include, err = parseGlobs(fieldInclude, cfg.Strings(fieldInclude)); err != nil {
		return s, err
	}
	if s.exclude, err = parseGlobs(fieldExclude, cfg.Strings(fieldExclude)); err != nil {
		return s, err
	}
	s.scope = fmt.Sprintf("include=%q exclude=%q", cfg.Strings(fieldInclude), cfg.Strings(fieldExclude))
	for i, start := range s.starts {
		u, _ := url.Parse(start)
		if !s.wanted(u) {
			return s, errs.Errorf(errs.Invalid, "%s[%d] %s is not selected by %s/%s", fieldStartURLs, i, start, fieldInclude, fieldExclude)
		}
	}
	return s, nil
}

// sameOrigin records the first URL's origin and refuses a URL on another.
func (s *settings) sameOrigin(field string, u *url.URL) error {
	if s.origin == nil {
		s.origin = &url.URL{Scheme: u.Scheme, Host: u.Host}
		return nil
	}
	if u.Scheme != s.origin.Scheme || u.Host != s.origin.Host {
		return errs.Errorf(errs.Invalid, "%s %s is not on the site's origin %s", field, u, s.origin)
	}
	return nil
}

// parseURL checks an http(s) URL without credentials and normalizes it.
func parseURL(field, raw string) (*url.URL, error) {
	u, err := connector.ParseHTTPURL(field, raw)
	if err != nil {
		return nil, err
	}
	return normalize(u), nil
}

// normalize returns the canonical form of a page URL: lower-case scheme
// and host, no default port, no fragment, "/" for an empty path.
func normalize(u *url.URL) *url.URL {
	n := *u
	n.Scheme = strings.ToLower(n.Scheme)
	n.Host = strings.ToLower(n.Host)
	if p := n.Port(); (p == "80" && n.Scheme == "http") || (p == "443" && n.Scheme == "https") {
		n.Host = n.Hostname()
		if strings.Contains(n.Host, ":") {
			n.Host = "[" + n.Host + "]"
		}
	}
	n.Fragment, n.RawFragment = "", ""
	n.User = nil
	if n.Path == "" {
		n.Path, n.RawPath = "/", ""
	}
	return &n
}

// wanted says whether a URL on the origin is selected by include/exclude.
func (s *settings) wanted(u *url.URL) bool {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if len(s.include) > 0 && !matchAny(s.include, p) {
		return false
	}
	return !matchAny(s.exclude, p)
}

// inScope says whether a URL may be crawled: same origin, selected, and
// not an obvious non-page (image, archive, ...).
func (s *settings) inScope(u *url.URL) bool {
	return u.Scheme == s.origin.Scheme && u.Host == s.origin.Host && s.wanted(u) && !notPage(u.Path)
}

func matchAny(res []*regexp.Regexp, p string) bool {
	for _, re := range res {
		if re.MatchString(p) {
			return true
		}
	}
	return false
}

// parseGlobs compiles URL path globs: each starts with "/"; "*" matches
// within a segment, "**" across segments, "?" one character of a
// segment; a trailing "/**" also matches the directory without a slash.
func parseGlobs(field string, globs []string) ([]*regexp.Regexp, error) {
	res := make([]*regexp.Regexp, 0, len(globs))
	for _, g := range globs {
		g = strings.TrimSpace(g)
		if !strings.HasPrefix(g, "/") {
			return nil, errs.Errorf(errs.Invalid, "%s glob %q must start with /", field, g)
		}
		var b strings.Builder
		b.WriteString("^")
		body, dirTail := g, false
		if strings.HasSuffix(g, "/**") {
			body, dirTail = strings.TrimSuffix(g, "/**"), true
		}
		for i := 0; i < len(body); i++ {
			switch c := body[i]; c {
			case '*':
				if i+1 < len(body) && body[i+1] == '*' {
					b.WriteString(".*")
					i++
				} else {
					b.WriteString("[^/]*")
				}
			case '?':
				b.WriteString("[^/]")
			default:
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		if dirTail {
			b.WriteString("(/.*)?")
		}
		b.WriteString("$")
		re, err := regexp.Compile(b.String())
		if err != nil {
			return nil, errs.Errorf(errs.Invalid, "%s glob %q is malformed", field, g)
		}
		res = append(res, re)
	}
	return res, nil
}

// notPage says whether a path names a file that is not an HTML page (an
// image, a script, an archive, a media or office file): links to it are
// not fetched.
func notPage(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".ico", ".bmp", ".tif", ".tiff",
		".css", ".js", ".mjs", ".json", ".map", ".woff", ".woff2", ".ttf", ".eot", ".otf",
		".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".tar", ".exe", ".dmg", ".iso", ".apk", ".deb", ".rpm",
		".mp3", ".mp4", ".m4a", ".wav", ".ogg", ".webm", ".avi", ".mov", ".mkv", ".flac",
		".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".csv":
		return true
	}
	return false
}
