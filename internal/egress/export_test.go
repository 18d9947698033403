package egress

import (
	"net"
	"net/netip"
)

// WithTestHooks makes g's dialer resolve names with r and run beforeCheck
// in each address check, before the verdict.
func WithTestHooks(g *Guard, r *net.Resolver, beforeCheck func(netip.Addr)) {
	g.resolver, g.beforeCheck = r, beforeCheck
}
