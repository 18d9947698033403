package jobqueue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlotsFollowDerivedConcurrency(t *testing.T) {
	t.Parallel()
	derived := func(n int) func() int { return func() int { return n } }
	// No function: the configured concurrency.
	require.Equal(t, 2, slots(2, false, nil))
	// The derived count raises it, never lowers it.
	require.Equal(t, 7, slots(2, false, derived(7)))
	require.Equal(t, 2, slots(2, false, derived(0)))
	// Bounded.
	require.Equal(t, AutoConcurrencyMax, slots(2, false, derived(10_000)))
	// A concurrency set at runtime is kept as it is.
	require.Equal(t, 3, slots(3, true, derived(7)))
}
