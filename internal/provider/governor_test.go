package provider

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBucket(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := bucket{perMinute: 60}
	// A full bucket: 60 requests go at once, the 61st waits a second.
	for i := range 60 {
		require.Zero(t, b.take(1, now), "request %d", i)
	}
	require.Equal(t, time.Second, b.take(1, now))
	// The next one queues behind it.
	require.Equal(t, 2*time.Second, b.take(1, now))
	// Half a minute later 30 have refilled, minus the two owed.
	require.Zero(t, b.take(28, now.Add(30*time.Second)))
	require.Equal(t, time.Second, b.take(1, now.Add(30*time.Second)))

	// A request bigger than a minute's budget waits for a full bucket.
	big := bucket{perMinute: 100}
	require.Zero(t, big.take(1000, now))
	require.Equal(t, time.Minute, big.take(100, now))

	// No limit.
	free := bucket{}
	require.Zero(t, free.take(1e9, now))
}

func TestGovernorWaitsAndHolds(t *testing.T) {
	t.Parallel()
	base := time.Now()
	g := newGovernor(func() time.Time { return base })
	ctx := context.Background()

	// 120 rpm: two requests a second of refill; a full bucket first.
	for range 120 {
		require.NoError(t, g.wait(ctx, "k", 120, 0, 10))
	}
	// The 121st must wait half a second; a short deadline gives up.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, g.wait(short, "k", 120, 0, 10), context.DeadlineExceeded)

	// Another key is unaffected.
	require.NoError(t, g.wait(ctx, "other", 120, 0, 10))

	// A hold delays even an unlimited key.
	g.hold("free", time.Hour)
	short2, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	require.ErrorIs(t, g.wait(short2, "free", 0, 0, 1), context.DeadlineExceeded)
}
