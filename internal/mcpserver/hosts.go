package mcpserver

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// DNS-rebinding protection (DESIGN 8a). Under DNS rebinding an attacker's
// page reaches this server under the attacker's name: the browser sends
// that name as Host (and as Origin). So the Host must be a name this
// server is known by; once it is, an Origin naming that same host and port
// is the server's own page and safe.
//
// Ports are not compared for the Host: a rebinding attack changes the
// name, not the port, and a reverse proxy commonly listens on another port
// than the server. The Origin must name the Host's port, as the browser
// sends both from one URL.

// hostPolicy holds the Host names and Origins allowed besides the loopback
// names and the address a connection arrived on.
type hostPolicy struct {
	// names are canonical host names (CanonicalHost): the listen address's
	// host and GRAPHMILL_PUBLIC_HOSTS.
	names map[string]bool
	// origins are normalised origins (NormalizeOrigin) of
	// GRAPHMILL_MCP_ALLOWED_ORIGINS.
	origins map[string]bool
}

func newHostPolicy(listenAddr string, public, origins []string) (hostPolicy, error) {
	p := hostPolicy{names: map[string]bool{}, origins: map[string]bool{}}
	if listenAddr != "" {
		if h, _, err := net.SplitHostPort(listenAddr); err == nil && h != "" {
			if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
				if n, ok := CanonicalHost(h); ok {
					p.names[n] = true
				}
			}
		}
	}
	for _, h := range public {
		n, ok := CanonicalHost(h)
		if !ok {
			return p, fmt.Errorf("mcpserver: %q is not a host name (a name or IP address, without scheme or port)", h)
		}
		p.names[n] = true
	}
	for _, o := range origins {
		n, err := NormalizeOrigin(o)
		if err != nil {
			return p, fmt.Errorf("mcpserver: %w", err)
		}
		p.origins[n] = true
	}
	return p, nil
}

// CanonicalHost lower-cases a host name, drops surrounding spaces, a
// trailing dot and IPv6 brackets, and spells IP addresses canonically; ok
// is false for anything that is not a plain name or IP address.
// GRAPHMILL_PUBLIC_HOSTS is validated with it (config.Validate).
func CanonicalHost(h string) (string, bool) {
	h = strings.ToLower(strings.TrimSpace(h))
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return "", false
		}
		inner := h[1 : len(h)-1]
		ip := net.ParseIP(inner)
		if ip == nil || !strings.Contains(inner, ":") {
			return "", false
		}
		return ip.String(), true
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.String(), true
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return "", false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for _, r := range label {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_' {
				return "", false
			}
		}
	}
	return h, true
}

// splitHost splits a Host header (host, host:port, [v6] or [v6]:port) into
// its canonical name and its port ("" when absent).
func splitHost(hostport string) (name, port string, ok bool) {
	host := hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		if strings.Count(hostport, ":") > 1 && !strings.HasPrefix(hostport, "[") {
			return "", "", false // a bare IPv6 address is not a Host header
		}
		host, port = hostport[:i], hostport[i+1:]
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return "", "", false
		}
	}
	name, ok = CanonicalHost(host)
	return name, port, ok
}

// hostAllowed reports whether name (canonical) is a loopback name, the
// address the connection of r arrived on, or a configured name.
func (p hostPolicy) hostAllowed(r *http.Request, name string) bool {
	if name == "localhost" || p.names[name] {
		return true
	}
	ip := net.ParseIP(name)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	// An IP address cannot be rebound: it is the address the client
	// dialled. The one the connection arrived on is this server's.
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		return a.IP.Equal(ip)
	}
	return false
}

// defaultPort is the port a browser leaves out of Host and Origin.
func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// admit applies the DNS-rebinding protection to r: ErrHost for a Host this
// server is not known by, ErrOrigin for an Origin that is neither that
// Host nor listed, nil otherwise.
func (s *Server) admit(r *http.Request) error {
	name, port, ok := splitHost(r.Host)
	if !ok || !s.hosts.hostAllowed(r, name) {
		return ErrHost
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return nil // not a browser
	}
	n, err := NormalizeOrigin(o)
	if err != nil {
		return ErrOrigin
	}
	if s.hosts.origins[n] {
		return nil
	}
	u, err := url.Parse(n)
	if err != nil {
		return ErrOrigin
	}
	oname, ok := CanonicalHost(u.Hostname())
	if !ok {
		return ErrOrigin
	}
	oport := u.Port()
	if oport == "" {
		oport = defaultPort(u.Scheme)
	}
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	if oname != name || oport != port {
		return ErrOrigin
	}
	return nil
}

// NormalizeOrigin checks that o is a browser origin as the Origin header
// carries it (scheme://host[:port]: an http(s) scheme and a host, no path
// but "/", no query, fragment or user) and returns it lower-cased, without
// the trailing slash or surrounding spaces. GRAPHMILL_MCP_ALLOWED_ORIGINS
// is validated with it (config.Validate) and both its entries and the
// Origin header are compared in this form.
func NormalizeOrigin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q is not an origin (scheme://host[:port])", o)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}
