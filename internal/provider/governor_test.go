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

func TestGovernorWindowNeverAdmitsMoreThanTheLimitInAMinute(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var l limits
	l.requests.perMinute = 60
	// The bucket lets 60 go at once; the window keeps the 61st until the
	// first has left the minute (plus the slack), not the bucket's 1 s.
	for i := range 60 {
		require.Zero(t, l.window(60, now, l.requests.take(1, now)), "request %d", i)
	}
	d := l.window(60, now, l.requests.take(1, now))
	require.Equal(t, time.Minute+windowSlack, d)
	// The next queues behind it at the same instant (the bucket's refill
	// alone would have let it go after 2 s).
	require.Equal(t, time.Minute+windowSlack, l.window(60, now, l.requests.take(1, now)))
	// Whatever the arrival times, no minute holds more than 60 admissions.
	for i := range 200 {
		at := now.Add(time.Duration(i) * 700 * time.Millisecond)
		l.window(60, at, l.requests.take(1, at))
	}
	for i, a := range l.sent {
		n := 0
		for _, b := range l.sent[i:] {
			if b.Sub(a) < time.Minute+windowSlack {
				n++
			}
		}
		require.LessOrEqual(t, n, 60, "minute from %s", a)
	}
	// No limit: no waiting, nothing recorded.
	var free limits
	require.Zero(t, free.window(0, now, 0))
	require.Empty(t, free.sent)
}

func TestGovernorInFlightIsRateTimesLatency(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := newGovernor(func() time.Time { return now })
	ctx := context.Background()
	require.Zero(t, g.inFlight(), "nothing observed")

	// 60 rpm at 2 s: 1/s × 2 s = 2 calls, × 1.25 headroom = 2.5 → 3.
	require.NoError(t, g.wait(ctx, "a", 60, 0, 1))
	require.Zero(t, g.inFlight(), "no latency yet")
	g.observe("a", 2*time.Second)
	require.Equal(t, 3, g.inFlight())

	// The latency is a moving average: one 12 s call moves it to 4 s,
	// 1/s × 4 s × 1.25 = 5.
	g.observe("a", 12*time.Second)
	require.Equal(t, 5, g.inFlight())

	// A second key adds its own: 600 rpm at 1 s = 10 × 1.25 → 13.
	require.NoError(t, g.wait(ctx, "b", 600, 0, 1))
	g.observe("b", time.Second)
	require.Equal(t, 18, g.inFlight())

	// Unlimited keys and unknown keys count nothing.
	require.NoError(t, g.wait(ctx, "free", 0, 0, 1))
	g.observe("free", time.Minute)
	g.observe("unknown", time.Minute)
	require.Equal(t, 18, g.inFlight())

	// A key idle for longer than idleAfter drops out.
	now = now.Add(idleAfter + time.Second)
	require.Zero(t, g.inFlight())
}
