package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Response is a fetched resource.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header is the response's header.
	Header http.Header
	// Body is the body, at most the limit given to Get.
	Body []byte
	// URL is the URL the response came from (after redirects the client
	// followed).
	URL *url.URL
}

// ErrTooLarge is returned by Get when a body exceeds its limit.
var ErrTooLarge = errors.New("response body exceeds the size limit")

// Get fetches rawURL with client as the user agent "Graphmill". A
// non-empty version (an ETag or a Last-Modified value, as Version returns)
// makes the request conditional, so an unchanged resource answers 304.
// The body of a 2xx response is read up to limit bytes (ErrTooLarge
// beyond); other bodies are discarded.
func Get(ctx context.Context, client *http.Client, rawURL, version string, limit int64) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return Response{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", UserAgent)
	switch {
	case strings.HasPrefix(version, `"`) || strings.HasPrefix(version, `W/"`):
		req.Header.Set("If-None-Match", version)
	case version != "":
		if _, err := http.ParseTime(version); err == nil {
			req.Header.Set("If-Modified-Since", version)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, err //nolint:wrapcheck // the client's error names the method and URL
	}
	defer func() { _ = resp.Body.Close() }()
	out := Response{Status: resp.StatusCode, Header: resp.Header, URL: resp.Request.URL}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return out, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return out, fmt.Errorf("read %s: %w", rawURL, err)
	}
	if int64(len(body)) > limit {
		return out, fmt.Errorf("%s: %w (%d bytes)", rawURL, ErrTooLarge, limit)
	}
	out.Body = body
	return out, nil
}

// Version is the version of a response: its ETag, else its Last-Modified
// value, else "".
func Version(h http.Header) string {
	if v := strings.TrimSpace(h.Get("ETag")); v != "" {
		return v
	}
	return strings.TrimSpace(h.Get("Last-Modified"))
}

// IsHTML says whether a Content-Type is an HTML page.
func IsHTML(contentType string) bool {
	ct := strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	return ct == "text/html" || ct == "application/xhtml+xml"
}

// page is what the crawl reads from an HTML page: its title and links.
type page struct {
	title string
	links []*url.URL
}

// parsePage reads the title and the href of every <a> and <area> (resolved
// against the page URL or its <base>) of an HTML page. Links of a page
// marked <meta name="robots" content="nofollow"> are not returned.
func parsePage(base *url.URL, body []byte) page {
	var p page
	var hrefs []string
	nofollow := false
	z := html.NewTokenizer(bytes.NewReader(body))
	inTitle := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if nofollow {
				p.links = nil
				return p
			}
			for _, h := range hrefs {
				if u, err := base.Parse(strings.TrimSpace(h)); err == nil {
					p.links = append(p.links, u)
				}
			}
			return p
		case html.TextToken:
			if inTitle && p.title == "" {
				p.title = strings.Join(strings.Fields(string(z.Text())), " ")
			}
		case html.EndTagToken:
			inTitle = false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			inTitle = a == atom.Title && tt == html.StartTagToken
			if !hasAttr {
				continue
			}
			attrs := map[string]string{}
			for {
				k, v, more := z.TagAttr()
				attrs[string(k)] = string(v)
				if !more {
					break
				}
			}
			switch a {
			case atom.A, atom.Area:
				if h, ok := attrs["href"]; ok && !strings.Contains(strings.ToLower(attrs["rel"]), "nofollow") {
					hrefs = append(hrefs, h)
				}
			case atom.Base:
				if h, ok := attrs["href"]; ok {
					if u, err := base.Parse(strings.TrimSpace(h)); err == nil {
						base = u
					}
				}
			case atom.Meta:
				if strings.EqualFold(attrs["name"], "robots") && strings.Contains(strings.ToLower(attrs["content"]), "nofollow") {
					nofollow = true
				}
			}
		}
	}
}

// sitemapDoc is a sitemap (<urlset>) or a sitemap index (<sitemapindex>).
type sitemapDoc struct {
	XMLName  xml.Name
	URLs     []sitemapLoc `xml:"url"`
	Sitemaps []sitemapLoc `xml:"sitemap"`
}

type sitemapLoc struct {
	Loc string `xml:"loc"`
}

// readSitemaps fetches a sitemap and the same-origin sitemaps its index
// lists (at most maxSitemaps) and returns the page URLs in order.
func (c *crawl) readSitemaps(ctx context.Context, root string) ([]*url.URL, error) {
	var pages []*url.URL
	queue := []string{root}
	seen := map[string]bool{root: true}
	for n := 0; len(queue) > 0; n++ {
		if n == maxSitemaps {
			return nil, fmt.Errorf("sitemap index lists more than %d sitemaps", maxSitemaps)
		}
		loc := queue[0]
		queue = queue[1:]
		resp, err := Get(ctx, c.env.HTTP, loc, "", maxSitemapBytes)
		if err != nil {
			return nil, fmt.Errorf("fetch sitemap: %w", err)
		}
		if resp.Status != http.StatusOK {
			return nil, fmt.Errorf("fetch sitemap %s: HTTP %d", loc, resp.Status)
		}
		body := resp.Body
		if len(body) > 2 && body[0] == 0x1f && body[1] == 0x8b {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				return nil, fmt.Errorf("sitemap %s: %w", loc, err)
			}
			body, err = io.ReadAll(io.LimitReader(zr, maxSitemapBytes+1))
			if err != nil {
				return nil, fmt.Errorf("sitemap %s: %w", loc, err)
			}
			if len(body) > maxSitemapBytes {
				return nil, fmt.Errorf("sitemap %s: %w", loc, ErrTooLarge)
			}
		}
		var doc sitemapDoc
		if err := xml.Unmarshal(body, &doc); err != nil {
			return nil, fmt.Errorf("sitemap %s is not valid XML: %w", loc, err)
		}
		if doc.XMLName.Local != "urlset" && doc.XMLName.Local != "sitemapindex" {
			return nil, fmt.Errorf("sitemap %s is neither a urlset nor a sitemapindex", loc)
		}
		for _, s := range doc.Sitemaps {
			u, err := url.Parse(strings.TrimSpace(s.Loc))
			if err != nil {
				continue
			}
			u = normalize(u)
			if u.Scheme == c.s.origin.Scheme && u.Host == c.s.origin.Host && !seen[u.String()] {
				seen[u.String()] = true
				queue = append(queue, u.String())
			}
		}
		for _, e := range doc.URLs {
			if u, err := url.Parse(strings.TrimSpace(e.Loc)); err == nil {
				pages = append(pages, normalize(u))
			}
		}
	}
	return pages, nil
}
