package main

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
)

// TestStartFailureStopsStartedParts: the API server is the last part
// started; when its address is taken, Start fails naming it, and the parts
// started before it are stopped again (the ops server no longer listens).
func TestStartFailureStopsStartedParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	taken, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })

	cfg := testConfig(t, pgtest.NewURL(t))
	cfg.HTTPAddr = taken.Addr().String()
	m := &Main{Config: cfg, Logger: slog.New(slog.DiscardHandler)}
	err = m.Start(ctx)
	require.ErrorContains(t, err, "listen on "+cfg.HTTPAddr+" for api")

	ops := m.OpsAddr()
	require.NotEmpty(t, ops, "the ops server had started")
	_, err = (&net.Dialer{}).DialContext(ctx, "tcp", ops)
	require.ErrorContains(t, err, "connection refused", "the ops server was stopped")
}
