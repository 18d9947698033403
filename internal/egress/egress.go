// Package egress guards the outbound connections a tenant can point
// somewhere (MCP servers over SSE and HTTP, the MCP registry, web search,
// the model providers and the token endpoints of service-account files):
// after DNS resolution, a connection to a loopback, private, link-local,
// cloud-metadata or otherwise non-public address is refused unless the
// operator allowed it (GRAPHMILL_EGRESS_ALLOW).
//
// Rules for every outbound call whose destination a tenant can set or
// influence, integrations to come included:
//   - send it through Guard.Client or Guard.Transport (never
//     http.DefaultClient or a transport of its own), so that every
//     connection, redirects included, is checked after DNS resolution;
//   - when a tenant gives a URL that should only ever name the service's
//     own endpoints (a token endpoint, an API host), check it when it is
//     saved and again when it is used, accepting the service's documented
//     hosts over https or what Guard.Names says the operator listed;
//   - do not follow redirects that would carry a credential to another
//     origin: Guard.Client's CheckRedirect drops every header but a safe
//     few on such a hop and never sets Referer; a client of its own (or
//     one whose transport adds credentials below the redirect logic)
//     uses CheckRedirect too, or refuses cross-origin hops (CrossOrigin).
package egress

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/graphmill/graphmill/internal/errs"
)

// DialTimeout bounds connection set-up.
const DialTimeout = 10 * time.Second

// Guard dials only to public addresses, or to what its allow list names.
type Guard struct {
	prefixes []netip.Prefix
	hosts    map[string]bool // lower-case host or host:port

	resolver    *net.Resolver    // nil: the default; tests give their own
	beforeCheck func(netip.Addr) // tests: runs in each address check
}

// New reads an allow list: CIDRs (127.0.0.0/8), single addresses, host
// names and host:port pairs.
func New(allow []string) (*Guard, error) {
	g := &Guard{hosts: map[string]bool{}}
	for _, raw := range allow {
		a := strings.TrimSpace(raw)
		if a == "" {
			continue
		}
		if p, err := netip.ParsePrefix(a); err == nil {
			g.prefixes = append(g.prefixes, p.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(a); err == nil {
			g.prefixes = append(g.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		if strings.ContainsAny(a, "/ ") {
			return nil, fmt.Errorf("egress allow entry %q is neither a CIDR, an address, a host nor host:port", a)
		}
		g.hosts[strings.ToLower(a)] = true
	}
	return g, nil
}

// WithHosts returns a copy of g that also allows the given hosts or
// host:port pairs (empty ones are skipped): destinations the operator
// configured, such as a provider base URL.
func (g *Guard) WithHosts(hosts ...string) *Guard {
	out := &Guard{prefixes: g.prefixes, hosts: make(map[string]bool, len(g.hosts)+len(hosts)), resolver: g.resolver, beforeCheck: g.beforeCheck}
	for h := range g.hosts {
		out.hosts[h] = true
	}
	for _, h := range hosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			out.hosts[h] = true
		}
	}
	return out
}

// blocked are the ranges refused unless allowed: loopback, private,
// carrier-grade NAT, link-local (cloud metadata lives there), unique local,
// multicast, documentation and other special-purpose ranges, and the IPv6
// forms that embed an IPv4 address: IPv4-mapped and NAT64 addresses are
// judged by the IPv4 address they carry; IPv4-compatible, SIIT, 6to4,
// Teredo and local-use NAT64 addresses are refused outright.
func blocked(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is6() && netip.MustParsePrefix("64:ff9b::/96").Contains(ip) {
		b := ip.As16()
		return blocked(netip.AddrFrom4([4]byte(b[12:16])))
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
		"::/96",             // IPv4-compatible (deprecated), :: and ::1 included
		"::ffff:0:0:0/96",   // SIIT
		"64:ff9b:1::/48",    // NAT64, local use
		"100::/64",          // discard-only
		"2001::/32",         // Teredo
		"2001:db8::/32",     // documentation
		"2002::/16",         // 6to4
		"fec0::/10",         // site-local (deprecated)
		"fd00:ec2::254/128", // AWS metadata (inside fc00::/7 too)
	} {
		if netip.MustParsePrefix(p).Contains(ip) {
			return true
		}
	}
	return false
}

// allowedIP reports whether ip may be dialled.
func (g *Guard) allowedIP(ip netip.Addr) bool {
	return g.listed(ip) || !blocked(ip)
}

// listed reports whether ip is in an allowed range.
func (g *Guard) listed(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range g.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// AllowsAddr reports whether ip may be dialled: it is public, or in a range
// the allow list names.
func (g *Guard) AllowsAddr(ip netip.Addr) bool { return g.allowedIP(ip) }

// Names reports whether the allow list itself names a destination: host (or
// host:port) is listed, or host is an IP address in a listed range. Checks
// of URLs a tenant gives (a token endpoint outside the provider's own)
// use it: a public address is not enough there. A nil Guard names nothing.
func (g *Guard) Names(host, port string) bool {
	if g == nil {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if g.hosts[host] || (port != "" && g.hosts[net.JoinHostPort(host, port)]) {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && g.listed(ip)
}

// errRefused is the message of a refused destination.
const errRefused = "refusing to connect to %s: it resolves to a non-public address (%s); allow it with GRAPHMILL_EGRESS_ALLOW"

// DialContext connects like net.Dialer.DialContext, checking the address
// actually connected to (after DNS resolution, so a name cannot be
// re-pointed between check and use). Errors: failed_precondition for a
// refused destination.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second, Resolver: g.resolver}
	if g.hosts[strings.ToLower(host)] || g.hosts[strings.ToLower(addr)] {
		return d.DialContext(ctx, network, addr)
	}
	// Control runs in each racer of a dual-stack dial (happy eyeballs), at
	// the same time: the first refusal is kept atomically.
	var refused atomic.Pointer[errs.Error]
	d.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("egress: unexpected address %q", address)
		}
		if g.beforeCheck != nil {
			g.beforeCheck(ap.Addr())
		}
		if !g.allowedIP(ap.Addr()) {
			e := errs.Errorf(errs.FailedPrecondition, errRefused, host, ap.Addr())
			refused.CompareAndSwap(nil, e)
			return e
		}
		return nil
	}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		if r := refused.Load(); r != nil {
			return nil, r
		}
	}
	return c, err
}

// Transport returns an HTTP transport that dials through the guard and
// ignores proxy environment variables (a proxy would connect for us,
// unchecked).
func (g *Guard) Transport() *http.Transport { return DialTransport(g.DialContext) }

// DialTransport returns an HTTP transport that makes every connection
// with dial (a guard's DialContext) and ignores proxy environment
// variables.
func DialTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Client returns an HTTP client over Transport with an overall timeout
// (0: none, for long-lived streams) and CheckRedirect as its redirect
// policy.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	return &http.Client{Transport: g.Transport(), Timeout: timeout, CheckRedirect: CheckRedirect}
}

// MaxRedirects bounds the hops CheckRedirect follows (Go's default).
const MaxRedirects = 10

// safeHeaders are the request headers a redirect to another origin keeps:
// content negotiation, the client's name, and MCP's protocol state, which
// its streamable transport sends on every request: the protocol version
// and the session id. The session id was issued by the server that
// answered initialize (behind a redirect, the redirect's target), and
// the MCP specification forbids using it for authentication; dropping it
// would break every session through a redirect. Everything else (API
// keys, Authorization, cookies, any header a caller adds) may be a
// credential of the first origin.
var safeHeaders = map[string]bool{ //nolint:gochecknoglobals // constant set
	"Accept": true, "Accept-Encoding": true, "Accept-Language": true,
	"Content-Type": true, "User-Agent": true, "Mcp-Protocol-Version": true, "Mcp-Session-Id": true,
}

// CheckRedirect is the redirect policy of every client whose destination a
// tenant can set (http.Client.CheckRedirect): at most MaxRedirects hops;
// never a Referer (Go sets the previous URL, query included, which may
// hold a credential); and once a hop leaves the origin (scheme, host and
// port) of the first request, only the safe headers (Accept,
// Accept-Encoding, Accept-Language, Content-Type, User-Agent,
// Mcp-Protocol-Version, Mcp-Session-Id) go with it and the later hops, even back to the
// first origin. Go itself forwards custom headers to another host, and
// Authorization and cookies to another port of the same host.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	req.Header.Del("Referer")
	if CrossOrigin(req, via) {
		for k := range req.Header {
			if !safeHeaders[http.CanonicalHeaderKey(k)] {
				delete(req.Header, k)
			}
		}
	}
	return nil
}

// CrossOrigin reports whether a redirect hop req, or one before it, left
// the origin of the first request (via[0]). For http.Client.CheckRedirect
// functions.
func CrossOrigin(req *http.Request, via []*http.Request) bool {
	if len(via) == 0 {
		return false
	}
	first := Origin(via[0].URL)
	for _, r := range append(via[1:len(via):len(via)], req) {
		if Origin(r.URL) != first {
			return true
		}
	}
	return false
}

// Origin returns scheme://host:port of u, lower case, with the scheme's
// default port made explicit ("" for nil).
func Origin(u *url.URL) string {
	if u == nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
