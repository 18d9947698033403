package startstop_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graphmill/graphmill/internal/startstop"
)

// Every goroutine a test started through a Base has ended.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type ctxKey struct{}

func TestStopBeforeBegin(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	require.NoError(t, b.Stop(context.Background()))
	require.NoError(t, b.Stop(context.Background()))
	require.False(t, b.Go(func(context.Context) { t.Error("ran before Begin") }))
	require.False(t, b.Stopping(), "a Stop before Begin does nothing")
	// The part can still start.
	require.NoError(t, b.Begin(context.Background()))
	require.NoError(t, b.Stop(context.Background()))
}

func TestBeginTwice(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	require.NoError(t, b.Begin(context.Background()))
	require.ErrorIs(t, b.Begin(context.Background()), startstop.ErrStarted)
	require.NoError(t, b.Stop(context.Background()))
	require.ErrorIs(t, b.Begin(context.Background()), startstop.ErrStarted, "a stopped part does not start again")
}

// The goroutines' context keeps Begin's values but not its cancellation,
// and ends on Stop.
func TestGoContext(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	require.NoError(t, b.Begin(ctx))
	cancel()
	got := make(chan context.Context, 1)
	require.True(t, b.Go(func(ctx context.Context) { got <- ctx }))
	run := <-got
	require.Equal(t, "v", run.Value(ctxKey{}))
	require.NoError(t, run.Err(), "the start-up context's end does not stop the part")
	require.NoError(t, b.Stop(context.Background()))
	require.ErrorIs(t, run.Err(), context.Canceled)
}

// Stop waits for the goroutines until its context ends, then returns the
// context's error; a later Stop waits again, and returns nil once they
// have ended, even with an ended context.
func TestStopWaitsForGoroutines(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	require.NoError(t, b.Begin(context.Background()))
	release := make(chan struct{})
	ended := make(chan struct{})
	running := make(chan struct{})
	require.True(t, b.Go(func(context.Context) {
		defer close(ended)
		close(running)
		<-release // ignores its context, like a slow handler
	}))
	<-running
	done, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, b.Stop(done), context.Canceled)
	require.True(t, b.Stopping())
	require.False(t, b.Go(func(context.Context) { t.Error("ran after Stop") }))
	select {
	case <-ended:
		require.FailNow(t, "the goroutine ended before it was released")
	default:
	}
	close(release)
	require.NoError(t, b.Stop(context.Background()))
	select {
	case <-ended:
	default:
		require.FailNow(t, "Stop returned before the goroutine ended")
	}
	require.NoError(t, b.Stop(done), "double Stop after the goroutines ended")
}

// Stop cancels the goroutines' context, and they end.
func TestStopCancelsGoroutines(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	require.NoError(t, b.Begin(context.Background()))
	for range 3 {
		require.True(t, b.Go(func(ctx context.Context) { <-ctx.Done() }))
	}
	require.NoError(t, b.Stop(context.Background()))
}
