package scheduler_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/scheduler"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestOneLeaderRunsTasksAndHandsOver(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	var runsA, runsB atomic.Int64
	mk := func(id string, runs *atomic.Int64) *scheduler.Scheduler {
		return scheduler.New(scheduler.Config{Pool: pool, Logger: slog.New(slog.DiscardHandler), WorkerID: id, Poll: 20 * time.Millisecond},
			scheduler.Task{Name: "tick", Interval: 30 * time.Millisecond, Run: func(context.Context) error {
				runs.Add(1)
				return nil
			}})
	}
	a, b := mk("a", &runsA), mk("b", &runsB)
	require.NoError(t, a.Start(ctx))
	require.Eventually(t, a.Leader, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, b.Start(ctx))
	t.Cleanup(b.Stop)
	require.Eventually(t, func() bool { return runsA.Load() >= 3 }, 5*time.Second, 5*time.Millisecond)
	require.False(t, b.Leader())
	require.Zero(t, runsB.Load(), "only the leader runs tasks")

	a.Stop()
	require.False(t, a.Leader())
	require.Eventually(t, b.Leader, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return runsB.Load() >= 2 }, 5*time.Second, 5*time.Millisecond)

	states, err := scheduler.States(ctx, pool)
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.Equal(t, "tick", states[0].Name)
	require.Equal(t, runsA.Load()+runsB.Load(), states[0].Runs)
	require.Equal(t, "b", states[0].Leader)
	require.NotNil(t, states[0].LastRunAt)
	require.True(t, states[0].NextRunAt.After(*states[0].LastRunAt))
}

func TestTaskFailureIsRecorded(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	var calls atomic.Int64
	s := scheduler.New(scheduler.Config{Pool: pool, Logger: slog.New(slog.DiscardHandler), WorkerID: "w", Poll: 10 * time.Millisecond},
		scheduler.Task{Name: "broken", Interval: time.Hour, Run: func(context.Context) error {
			calls.Add(1)
			return errors.New("disk on fire")
		}})
	require.NoError(t, s.Start(ctx))
	t.Cleanup(s.Stop)
	require.Eventually(t, func() bool {
		st, err := scheduler.States(ctx, pool)
		return err == nil && len(st) == 1 && st[0].Failures == 1
	}, 5*time.Second, 10*time.Millisecond)
	st, err := scheduler.States(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, "disk on fire", st[0].LastError)
	// Not due again for an hour: it ran once.
	require.EqualValues(t, 1, calls.Load())
	require.WithinDuration(t, time.Now().Add(time.Hour), st[0].NextRunAt, time.Minute)

	bad := scheduler.New(scheduler.Config{Pool: pool, Logger: slog.New(slog.DiscardHandler)}, scheduler.Task{Name: "x"})
	require.ErrorContains(t, bad.Start(ctx), "required")
}
