package egress_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
)

func TestGuard(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	t.Cleanup(ts.Close)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	for _, tt := range []struct {
		name  string
		allow []string
		addr  string
		ok    bool
	}{
		{"loopback refused", nil, "127.0.0.1:" + port, false},
		{"localhost name refused after resolution", nil, "localhost:" + port, false},
		{"cidr allowed", []string{"127.0.0.0/8"}, "127.0.0.1:" + port, true},
		{"single address allowed", []string{"127.0.0.1"}, "127.0.0.1:" + port, true},
		{"host:port allowed", []string{"localhost:" + port}, "localhost:" + port, true},
		{"other port of an allowed host:port refused", []string{"localhost:1"}, "localhost:" + port, false},
	} {
		g, err := egress.New(tt.allow)
		require.NoError(t, err)
		c, err := g.DialContext(context.Background(), "tcp", tt.addr)
		if tt.ok {
			require.NoError(t, err, tt.name)
			_ = c.Close()
			continue
		}
		require.Error(t, err, tt.name)
		require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err), tt.name)
		require.Contains(t, err.Error(), "GRAPHMILL_EGRESS_ALLOW", tt.name)
	}
	for _, ip := range []string{"169.254.169.254:80", "10.1.2.3:80", "192.168.1.1:80", "[::1]:80", "[fe80::1]:80", "100.64.0.1:80", "0.0.0.0:80"} {
		g, _ := egress.New(nil)
		_, err := g.DialContext(context.Background(), "tcp", ip)
		require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err), ip)
	}
	_, err := egress.New([]string{"bad entry/x y"})
	require.Error(t, err)

	g, _ := egress.New([]string{"127.0.0.0/8"})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, ts.URL, nil)
	res, err := g.Client(0).Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 204, res.StatusCode)
}

// TestAllowsAddr: the special-purpose ranges, and IPv4 addresses embedded
// in IPv6 ones (mapped, compatible, NAT64, 6to4), are judged by what they
// reach.
func TestAllowsAddr(t *testing.T) {
	t.Parallel()
	g, err := egress.New(nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"8.8.8.8", true},
		{"2606:4700:4700::1111", true},
		{"127.0.0.1", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"::1", false},
		{"fe80::1", false},
		{"fc00::1", false},
		{"fd00:ec2::254", false},
		{"ff02::1", false},
		{"2001:db8::1", false},
		// IPv4-mapped: the IPv4 address decides.
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:8.8.8.8", true},
		// SIIT-translated (::ffff:0:a.b.c.d).
		{"::ffff:0:127.0.0.1", false},
		// IPv4-compatible (deprecated): refused whatever they embed.
		{"::127.0.0.1", false},
		{"::10.0.0.1", false},
		{"::8.8.8.8", false},
		// NAT64 well-known prefix: the embedded IPv4 address decides.
		{"64:ff9b::127.0.0.1", false},
		{"64:ff9b::10.0.0.1", false},
		{"64:ff9b::169.254.169.254", false},
		{"64:ff9b::8.8.8.8", true},
		// NAT64 local-use prefix: its mapping is the network's own.
		{"64:ff9b:1::a00:1", false},
		// 6to4 embeds an IPv4 address in bits 16-48; refused outright.
		{"2002:7f00:1::1", false},
		{"2002:808:808::1", false},
		// Teredo and site-local (deprecated).
		{"2001::1", false},
		{"fec0::1", false},
		{"feff::1", false},
		// Discard-only.
		{"100::1", false},
	} {
		require.Equal(t, tc.ok, g.AllowsAddr(netip.MustParseAddr(tc.addr)), tc.addr)
	}

	// The allow list lets through what it names.
	g, err = egress.New([]string{"127.0.0.0/8", "fec0::/10"})
	require.NoError(t, err)
	require.True(t, g.AllowsAddr(netip.MustParseAddr("127.0.0.1")))
	require.True(t, g.AllowsAddr(netip.MustParseAddr("::ffff:127.0.0.1")))
	require.True(t, g.AllowsAddr(netip.MustParseAddr("fec0::1")))
	require.False(t, g.AllowsAddr(netip.MustParseAddr("10.0.0.1")))
}

// TestNames: whether the allow list names a destination itself (a host,
// host:port, or an address in an allowed range), as the checks of
// tenant-given URLs need, before any DNS.
func TestNames(t *testing.T) {
	t.Parallel()
	g, err := egress.New([]string{"127.0.0.0/8", "Token.Example.com", "proxy.internal:8443", "::1"})
	require.NoError(t, err)
	for _, tc := range []struct {
		host, port string
		ok         bool
	}{
		{"127.0.0.1", "8080", true},
		{"127.9.9.9", "", true},
		{"::1", "443", true},
		{"token.example.com", "443", true},
		{"TOKEN.example.com", "", true},
		{"proxy.internal", "8443", true},
		{"proxy.internal", "443", false},
		{"localhost", "80", false},
		{"10.0.0.1", "80", false},
		{"example.com", "", false},
	} {
		require.Equal(t, tc.ok, g.Names(tc.host, tc.port), "%s %s", tc.host, tc.port)
	}
	var none *egress.Guard
	require.False(t, none.Names("127.0.0.1", "80"), "a nil guard names nothing")
}

// headerLog records the headers of every request a test server received,
// by path.
type headerLog struct {
	mu   sync.Mutex
	seen map[string]http.Header
}

func (l *headerLog) wrap(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		if l.seen == nil {
			l.seen = map[string]http.Header{}
		}
		l.seen[r.URL.Path] = r.Header.Clone()
		l.mu.Unlock()
		h(w, r)
	})
}

func (l *headerLog) get(path string) http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[path]
}

// TestRedirectPolicy: a redirect to another origin (scheme, host, port)
// carries only the safe headers, whatever the caller set (API keys,
// Authorization, cookies); no redirect sets a Referer (it would carry the
// previous URL's query); hops stay bounded.
func TestRedirectPolicy(t *testing.T) {
	t.Parallel()
	logB := &headerLog{}
	var a *httptest.Server
	b := httptest.NewServer(logB.wrap(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bounce" {
			http.Redirect(w, r, a.URL+"/back", http.StatusFound)
			return
		}
		w.WriteHeader(204)
	}))
	t.Cleanup(b.Close)
	logA := &headerLog{}
	a = httptest.NewServer(logA.wrap(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-b":
			http.Redirect(w, r, b.URL+"/landing", http.StatusTemporaryRedirect)
		case "/to-a":
			http.Redirect(w, r, "/same", http.StatusFound)
		case "/via-b":
			http.Redirect(w, r, b.URL+"/bounce", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			w.WriteHeader(204)
		}
	}))
	t.Cleanup(a.Close)

	g, err := egress.New([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	client := g.Client(0)
	secretHeaders := map[string]string{
		"Authorization":        "Bearer auth-secret-1",
		"X-Subscription-Token": "search-secret-2",
		"X-Goog-Api-Key":       "goog-secret-3",
		"Cookie":               "session=cookie-secret-4",
		"X-Custom":             "custom-secret-5",
	}
	safeHeaders := map[string]string{
		"Accept": "application/json, text/event-stream", "Accept-Encoding": "gzip", "Accept-Language": "en",
		"Content-Type": "application/json", "User-Agent": "graphmill-test",
		"Mcp-Protocol-Version": "2025-06-18", "Mcp-Session-Id": "issued-by-the-target",
	}
	get := func(target string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
		require.NoError(t, err)
		for k, v := range secretHeaders {
			req.Header.Set(k, v)
		}
		for k, v := range safeHeaders {
			req.Header.Set(k, v)
		}
		res, err := client.Do(req)
		if err == nil {
			res.Body.Close()
		}
		return res, err
	}

	// Another origin (another port): only the safe headers arrive, and no
	// Referer with the first URL's query.
	res, err := get(a.URL + "/to-b?key=url-secret-6")
	require.NoError(t, err)
	require.Equal(t, 204, res.StatusCode)
	landed := logB.get("/landing")
	require.NotNil(t, landed)
	for k, v := range safeHeaders {
		require.Equal(t, v, landed.Get(k), k)
	}
	for k := range secretHeaders {
		require.Empty(t, landed.Values(k), k)
	}
	require.Empty(t, landed.Values("Referer"))
	for k, vs := range landed {
		for _, v := range vs {
			require.NotContains(t, v, "secret", k)
		}
	}

	// The same origin: the caller's headers stay, still no Referer.
	res, err = get(a.URL + "/to-a?key=url-secret-6")
	require.NoError(t, err)
	require.Equal(t, 204, res.StatusCode)
	same := logA.get("/same")
	for k, v := range secretHeaders {
		require.Equal(t, v, same.Get(k), k)
	}
	require.Empty(t, same.Values("Referer"))

	// Once a hop left the origin, coming back does not restore them: the
	// other host chose where the request goes.
	res, err = get(a.URL + "/via-b")
	require.NoError(t, err)
	require.Equal(t, 204, res.StatusCode)
	returned := logA.get("/back")
	require.NotNil(t, returned)
	for k := range secretHeaders {
		require.Empty(t, returned.Values(k), k)
	}

	// The hops stay bounded.
	_, err = get(a.URL + "/loop")
	require.Error(t, err)
	require.Contains(t, err.Error(), "stopped after 10 redirects")
}

// fakeResolver answers every A query with v4 and every AAAA query with v6,
// speaking DNS over an in-memory stream.
func fakeResolver(t *testing.T, v4, v6 netip.Addr) *net.Resolver {
	t.Helper()
	serve := func(c net.Conn) {
		defer c.Close()
		var size [2]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(msg)
		if err != nil {
			return
		}
		q, err := p.Question()
		if err != nil {
			return
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true})
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
		switch q.Type {
		case dnsmessage.TypeA:
			_ = b.AResource(rh, dnsmessage.AResource{A: v4.As4()})
		case dnsmessage.TypeAAAA:
			_ = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: v6.As16()})
		}
		out, err := b.Finish()
		if err != nil {
			return
		}
		binary.BigEndian.PutUint16(size[:], uint16(len(out)))
		_, _ = c.Write(append(size[:], out...))
	}
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serve(server)
		return client, nil
	}}
}

// TestDualStackDialChecksConcurrently: a name with an IPv4 and an IPv6
// address is dialled by two racers at once (happy eyeballs), each
// refused in its own address check. The hook holds the first racer in
// its check until the second (started after the fallback delay) is in
// its own, so that both verdicts are written concurrently: run with
// -race, an unsynchronised verdict is reported every time.
func TestDualStackDialChecksConcurrently(t *testing.T) {
	t.Parallel()
	g, err := egress.New(nil)
	require.NoError(t, err)
	arrived := make(chan netip.Addr, 2)
	release := make(chan struct{})
	egress.WithTestHooks(g, fakeResolver(t, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")), func(ip netip.Addr) {
		arrived <- ip
		<-release
	})
	done := make(chan error, 1)
	go func() {
		c, err := g.DialContext(context.Background(), "tcp", "dual.test:80")
		if c != nil {
			_ = c.Close()
		}
		done <- err
	}()
	var racers []netip.Addr
	for range 2 {
		select {
		case ip := <-arrived:
			racers = append(racers, ip)
		case err := <-done:
			t.Fatalf("the dial ended before both address families were checked: %v", err)
		}
	}
	close(release)
	err = <-done
	require.ElementsMatch(t, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, racers)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "refusing to connect to dual.test")
}
