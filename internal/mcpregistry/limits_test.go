package mcpregistry_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

// A server that answers with a body without end fails the operation once
// the limit is read; the client hangs up, so the server stops sending.
func TestResponseBodyBounded(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	for _, typ := range []string{mcpregistry.TypeHTTP, mcpregistry.TypeSSE} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *mcpregistry.Config) { c.MaxResponseBytes = limit })
			ctx := context.Background()
			flood := mcptest.NewFlood(t, typ)
			srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "flood", Type: typ, URL: flood.URL + "/mcp"}, superadmin)
			require.NoError(t, err)
			_, err = b.svc.Inspect(ctx, b.project, srv.ID)
			require.Equal(t, errs.BadGateway, errs.CodeOf(err), "%v", err)
			require.Contains(t, err.Error(), "larger than 1048576 bytes")
			select {
			case <-flood.Done():
			case <-time.After(time.Minute):
				t.Fatal("the flooding response never ended: the client kept reading")
			}
			// What was sent beyond the limit sits in socket buffers, never
			// in the client's memory; a client without a limit reads until
			// the server's cap.
			require.Less(t, flood.Written(), int64(limit+64<<20))
		})
	}
}

// Calls beyond the per-server limit are refused at once with rate_limited
// while the others run; a freed slot is used again.
func TestConcurrentCallsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *mcpregistry.Config) { c.MaxConcurrentCalls = 2 })
	ctx := context.Background()
	server := mcptest.NewServer("echo")
	gate := mcptest.NewGate()
	gate.Add(server)
	ts := mcptest.Streamable(t, server, "", "")
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "busy", Type: mcpregistry.TypeHTTP, URL: ts.URL}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)

	var wg sync.WaitGroup
	results := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			_, err := b.svc.CallTool(ctx, b.project, "busy", "gate", nil)
			results <- err
		})
	}
	<-gate.Entered
	<-gate.Entered
	for _, call := range []func() error{
		func() error {
			_, err := b.svc.CallTool(ctx, b.project, "busy", "echo", map[string]any{"text": "x"})
			return err
		},
		func() error { _, err := b.svc.Inspect(ctx, b.project, srv.ID); return err },
	} {
		err := call()
		require.Equal(t, errs.RateLimited, errs.CodeOf(err), "%v", err)
		require.Contains(t, err.Error(), "2 concurrent calls")
	}
	gate.Release()
	wg.Wait()
	close(results)
	for err := range results {
		require.NoError(t, err)
	}
	require.Equal(t, 2, gate.Most())
	r, err := b.svc.CallTool(ctx, b.project, "busy", "echo", map[string]any{"text": "again"})
	require.NoError(t, err)
	require.Equal(t, "echo: again", resultText(t, r))
}

// Calls to remote servers beyond the process-wide limit are refused at
// once with rate_limited, whichever server they go to, while each server
// is below its own limit; stdio calls read no remote body and are not
// counted; a freed slot is used again.
func TestConcurrentCallsBoundedTotal(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *mcpregistry.Config) { c.MaxConcurrentCalls, c.MaxConcurrentCallsTotal = 2, 2 })
	ctx := context.Background()
	gate := mcptest.NewGate()
	for _, name := range []string{"one", "two", "three"} {
		server := mcptest.NewServer("echo")
		gate.Add(server)
		ts := mcptest.Streamable(t, server, "", "")
		srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: name, Type: mcpregistry.TypeHTTP, URL: ts.URL}, superadmin)
		require.NoError(t, err)
		_, err = b.svc.Sync(ctx, b.project, srv.ID)
		require.NoError(t, err)
	}
	local, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{Name: "local", Type: mcpregistry.TypeStdio, Command: stdioBin}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Sync(ctx, b.project, local.ID)
	require.NoError(t, err)

	var wg sync.WaitGroup
	results := make(chan error, 2)
	for _, name := range []string{"one", "two"} {
		wg.Go(func() {
			_, err := b.svc.CallTool(ctx, b.project, name, "gate", nil)
			results <- err
		})
	}
	<-gate.Entered
	<-gate.Entered
	for _, name := range []string{"one", "three"} {
		_, err := b.svc.CallTool(ctx, b.project, name, "echo", map[string]any{"text": "x"})
		require.Equal(t, errs.RateLimited, errs.CodeOf(err), "%s: %v", name, err)
		require.Contains(t, err.Error(), "2 calls to remote MCP servers")
		require.Contains(t, err.Error(), "GRAPHMILL_MCP_MAX_CONCURRENT_CALLS_TOTAL")
	}
	r, err := b.svc.CallTool(ctx, b.project, "local", "echo", map[string]any{"text": "stdio"})
	require.NoError(t, err, "stdio calls are not counted")
	require.Equal(t, "echo: stdio", resultText(t, r))

	gate.Release()
	wg.Wait()
	close(results)
	for err := range results {
		require.NoError(t, err)
	}
	require.Equal(t, 2, gate.Most())
	r, err = b.svc.CallTool(ctx, b.project, "three", "echo", map[string]any{"text": "again"})
	require.NoError(t, err)
	require.Equal(t, "echo: again", resultText(t, r))
}
