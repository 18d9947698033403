package integration_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/integration"
)

// spaceSource honours space_ids as clickup does: only the items of the
// given spaces (external id prefix "<space>/") are listed.
type spaceSource struct{ *memSource }

// Descriptor is mem's, with spaces: the domain accepts space_ids.
func (s spaceSource) Descriptor() connector.Descriptor {
	d := s.memSource.Descriptor()
	d.Spaces = true
	return d
}

func (s spaceSource) Walk(ctx context.Context, env connector.Env, cfg connector.Config, opts connector.Options, w connector.Walker) error {
	if len(opts.SpaceIDs) == 0 {
		return s.memSource.Walk(ctx, env, cfg, opts, w)
	}
	s.mu.Lock()
	saved := s.items
	keep := map[string]connector.Item{}
	for k, v := range saved {
		for _, sp := range opts.SpaceIDs {
			if strings.HasPrefix(k, sp+"/") {
				keep[k] = v
			}
		}
	}
	s.items = keep
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.items = saved; s.mu.Unlock() }()
	return s.memSource.Walk(ctx, env, cfg, opts, w)
}

// TestNarrowedSyncDeletesNothing: a sync narrowed by space_ids lists a
// subset of the source; it deletes nothing (the other spaces' documents
// stay) and its log says why. A source without spaces refuses space_ids.
func TestNarrowedSyncDeletesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	n := events.NewNotifier(b.pool, slog.New(slog.DiscardHandler))
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	var err error
	b.svc, b.docs, b.jobs, err = build(b.pool, n, spaceSource{b.src}, b.extract, []string{"127.0.0.0/8"}, 0, t.TempDir())
	require.NoError(t, err)
	b.startWorkers(t)
	for _, id := range []string{"s1/a", "s1/b", "s1/c", "s2/d"} {
		b.src.put(id, "# "+id+"\n\ntext "+id)
	}
	b.create(t, "docs", nil)
	require.Equal(t, "completed", b.syncAndWait(t, "docs", integration.SyncOptions{}).Status)
	require.Len(t, b.synced(t), 4)
	// Nothing was removed at the source; only space s1 is asked for, even
	// as a full sync.
	r := b.syncAndWait(t, "docs", integration.SyncOptions{SpaceIDs: []string{"s1"}, FullSync: true})
	require.Equal(t, "completed", r.Status)
	require.Zero(t, r.Deleted, "a sync narrowed to space s1 deleted s2's documents")
	require.Len(t, b.synced(t), 4)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'the sync is narrowed%'`))

	b.svc, _, _, err = build(b.pool, n, b.src, b.extract, []string{"127.0.0.0/8"}, 0, t.TempDir())
	require.NoError(t, err)
	_, err = b.svc.Sync(context.Background(), b.project, "docs", integration.TriggerManual, integration.SyncOptions{SpaceIDs: []string{"s1"}})
	require.ErrorContains(t, err, "space_ids: this integration has no spaces (provider mem)")
}
