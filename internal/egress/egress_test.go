package egress_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

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
