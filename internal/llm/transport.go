package llm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/graphmill/graphmill/internal/egress"
)

// genai reports an HTTP error as a genai.APIError built from the response
// body alone: the response headers, Retry-After among them, are dropped.
// The clients therefore install captureTransport as the outermost
// RoundTripper of the http.Client they hand to genai. Each provider call
// puts a fresh callCapture into the context of its requests (genai passes
// the caller's context on to every request it makes), and the transport
// records there whether a request went out, the status of the last
// response and its Retry-After. The capture lives only for one call and
// never leaves the package.
type callCapture struct {
	mu         sync.Mutex
	sent       bool
	status     int
	retryAfter time.Duration
}

type captureKey struct{}

// withCapture returns a context whose requests record into the returned
// capture.
func withCapture(ctx context.Context) (context.Context, *callCapture) {
	c := &callCapture{}
	return context.WithValue(ctx, captureKey{}, c), c
}

// snapshot returns what was recorded.
func (c *callCapture) snapshot() (sent bool, status int, retryAfter time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent, c.status, c.retryAfter
}

// captureTransport records into the request context's callCapture, if
// any, and otherwise passes requests through untouched.
type captureTransport struct {
	base http.RoundTripper
	now  func() time.Time
}

// RoundTrip implements http.RoundTripper.
func (t captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, _ := req.Context().Value(captureKey{}).(*callCapture)
	if c != nil {
		c.mu.Lock()
		c.sent = true
		c.mu.Unlock()
	}
	resp, err := t.base.RoundTrip(req)
	if c != nil && resp != nil {
		ra := parseRetryAfter(resp.Header.Get("Retry-After"), t.now())
		c.mu.Lock()
		c.status = resp.StatusCode
		c.retryAfter = ra
		c.mu.Unlock()
	}
	return resp, err
}

// withCaptureTransport returns a copy of hc (a default client when nil)
// whose transport is wrapped by wrap (when not nil) and then by the
// capture transport, and whose redirects follow egress.CheckRedirect
// (then hc's own policy): a redirect to another origin carries no API key
// and no Referer, whatever client the caller gave. The caller's client is
// never modified.
func withCaptureTransport(hc *http.Client, wrap func(http.RoundTripper) http.RoundTripper, now func() time.Time) *http.Client {
	out := &http.Client{}
	if hc != nil {
		*out = *hc
	}
	out.CheckRedirect = chainRedirect(egress.CheckRedirect, out.CheckRedirect)
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if wrap != nil {
		base = wrap(base)
	}
	out.Transport = captureTransport{base: base, now: now}
	return out
}

// embedInputProblem checks an Embed call's input: it returns the call's
// name for messages and what is wrong ("" when nothing is).
func embedInputProblem(model string, texts []string, dimension int) (op, problem string) {
	if model == "" {
		return "embed", "no model given"
	}
	op = "embed " + model
	if dimension < 0 {
		return op, fmt.Sprintf("negative dimension %d", dimension)
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return op, fmt.Sprintf("text %d is empty", i)
		}
	}
	return op, ""
}

// EstimateTokens estimates the token count of s as one token per four
// characters (runes), rounded up: the usual rule of thumb for English text
// with Gemini-family tokenizers. It is used where a provider reports no
// count (Gemini batchEmbedContents, the local provider).
func EstimateTokens(s string) int64 {
	n := int64(0)
	for range s {
		n++
	}
	return (n + 3) / 4
}

// chainRedirect runs the redirect policies in order (nil ones skipped);
// the first error stops the redirect.
func chainRedirect(policies ...func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		for _, p := range policies {
			if p == nil {
				continue
			}
			if err := p(req, via); err != nil {
				return err
			}
		}
		return nil
	}
}
