package integration_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/integration"
)

// benchItems is the size of the benchmark's source.
const benchItems = 2000

// BenchmarkSync2000: the domain's side of a sync (items stored as
// documents with their counters and log, parses queued) of a 2,000-item
// source held in memory, then a re-sync of the unchanged source (each item
// reported unchanged through Known, as the connectors do with ETags and
// commit diffs). Reports items per second of the first sync and the
// re-sync's share of its time.
func BenchmarkSync2000(b *testing.B) {
	body := strings.Repeat("A paragraph of the page, long enough to look like a real one. ", 30)
	var first, again time.Duration
	for range b.N {
		b.StopTimer()
		bb := setup(b, setupOpts{start: true})
		for i := range benchItems {
			bb.src.put(fmt.Sprintf("page-%04d", i), fmt.Sprintf("# Page %d\n\n%s", i, body))
		}
		bb.create(b, "site", nil)
		b.StartTimer()
		start := time.Now()
		r := bb.syncAndWait(b, "site", integration.SyncOptions{})
		first += time.Since(start)
		require.Equal(b, benchItems, r.Created)
		start = time.Now()
		r = bb.syncAndWait(b, "site", integration.SyncOptions{})
		again += time.Since(start)
		require.Equal(b, benchItems, r.Unchanged)
		b.StopTimer()
	}
	b.ReportMetric(float64(benchItems*b.N)/first.Seconds(), "items/s")
	b.ReportMetric(100*again.Seconds()/first.Seconds(), "resync%")
}
