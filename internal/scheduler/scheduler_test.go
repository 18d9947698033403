package scheduler_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/scheduler"
	"github.com/graphmill/graphmill/internal/startstop"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func stopOnCleanup(t *testing.T, s *scheduler.Scheduler) {
	t.Helper()
	t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
}

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
	stopOnCleanup(t, b)
	require.Eventually(t, func() bool { return runsA.Load() >= 3 }, 5*time.Second, 5*time.Millisecond)
	require.False(t, b.Leader())
	require.Zero(t, runsB.Load(), "only the leader runs tasks")

	require.NoError(t, a.Stop(ctx))
	require.False(t, a.Leader())
	require.Eventually(t, b.Leader, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return runsB.Load() >= 2 }, 5*time.Second, 5*time.Millisecond)

	states, err := scheduler.States(ctx, pool)
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.Equal(t, "tick", states[0].Name)
	require.Equal(t, "b", states[0].Leader)
	require.NotNil(t, states[0].LastRunAt)
	require.True(t, states[0].NextRunAt.After(*states[0].LastRunAt))
	// Every run is recorded: compared once b has stopped (a run under way
	// has counted itself but is recorded only when it ends).
	require.NoError(t, b.Stop(ctx))
	states, err = scheduler.States(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, runsA.Load()+runsB.Load(), states[0].Runs)
}

func TestTaskFailureIsRecorded(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	var calls atomic.Int64
	s := scheduler.New(scheduler.Config{Pool: pool, Logger: slog.New(slog.DiscardHandler), WorkerID: "w", Poll: 10 * time.Millisecond},
		scheduler.Task{Name: "broken", Interval: time.Hour, Run: func(context.Context) error {
			calls.Add(1)
			// As a provider's error body may say it.
			return errors.New("disk\x00 on fire \xff")
		}})
	require.NoError(t, s.Start(ctx))
	stopOnCleanup(t, s)
	require.Eventually(t, func() bool {
		st, err := scheduler.States(ctx, pool)
		return err == nil && len(st) == 1 && st[0].Failures == 1
	}, 5*time.Second, 10*time.Millisecond)
	st, err := scheduler.States(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, "disk on fire \uFFFD", st[0].LastError, "recorded as the database holds it")
	// Not due again for an hour: it ran once.
	require.EqualValues(t, 1, calls.Load())
	require.WithinDuration(t, time.Now().Add(time.Hour), st[0].NextRunAt, time.Minute)

	bad := scheduler.New(scheduler.Config{Pool: pool, Logger: slog.New(slog.DiscardHandler)}, scheduler.Task{Name: "x"})
	require.ErrorContains(t, bad.Start(ctx), "required")
}

// TestDatabaseTaskCommitsWithItsRun: a database task's results and its
// recorded run commit together. When recording the run fails (as a crash
// right after the task's work would), the work is rolled back with it and
// the task runs again: its effect exists once, and one run is recorded.
func TestDatabaseTaskCommitsWithItsRun(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		CREATE TABLE effects (at timestamptz NOT NULL);
		CREATE SEQUENCE records; -- not rolled back with the failed record
		CREATE FUNCTION fail_record() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('records') = 1 THEN
				RAISE EXCEPTION 'connection lost while recording the run';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER fail_record BEFORE UPDATE ON scheduler_tasks FOR EACH ROW WHEN (NEW.runs > OLD.runs) EXECUTE FUNCTION fail_record();`)
	require.NoError(t, err)
	var calls atomic.Int64
	s := scheduler.New(scheduler.Config{Pool: pool, Logger: slog.New(slog.DiscardHandler), WorkerID: "w", Poll: 10 * time.Millisecond},
		scheduler.Task{Name: "sweep", Interval: time.Hour, RunInTx: func(ctx context.Context, tx pgx.Tx) error {
			calls.Add(1)
			_, err := tx.Exec(ctx, `INSERT INTO effects VALUES (now())`)
			return err
		}})
	require.NoError(t, s.Start(ctx))
	stopOnCleanup(t, s)
	require.Eventually(t, func() bool {
		st, err := scheduler.States(ctx, pool)
		return err == nil && len(st) == 1 && st[0].Runs == 1
	}, 5*time.Second, 10*time.Millisecond)
	var effects, records int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM effects), (SELECT last_value FROM records)`).Scan(&effects, &records))
	require.Equal(t, 2, records, "the first record failed")
	require.EqualValues(t, 2, calls.Load(), "the task ran again after its unrecorded run")
	require.Equal(t, 1, effects, "the unrecorded run's work was rolled back with it")
	st, err := scheduler.States(ctx, pool)
	require.NoError(t, err)
	require.Zero(t, st[0].Failures)
	require.WithinDuration(t, time.Now().Add(time.Hour), st[0].NextRunAt, time.Minute)
}

// TestNetworkTaskHoldsNoTransaction: a task that calls the network runs
// with no transaction of the scheduler open, and its run is claimed
// first: it is not due while it runs.
func TestNetworkTaskHoldsNoTransaction(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	type seen struct {
		open int
		due  bool
	}
	got := make(chan seen, 1)
	s := scheduler.New(scheduler.Config{Pool: pool, Logger: slog.New(slog.DiscardHandler), WorkerID: "w", Poll: 10 * time.Millisecond},
		scheduler.Task{Name: "sync", Interval: time.Hour, Run: func(ctx context.Context) error {
			var v seen
			err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'),
				(SELECT next_run_at <= now() FROM scheduler_tasks WHERE name = 'sync')`).Scan(&v.open, &v.due)
			select {
			case got <- v:
			default:
			}
			return err
		}})
	require.NoError(t, s.Start(ctx))
	stopOnCleanup(t, s)
	select {
	case v := <-got:
		require.Zero(t, v.open, "no transaction open across the call")
		require.False(t, v.due, "claimed before the call")
	case <-time.After(5 * time.Second):
		t.Fatal("the task never ran")
	}
	require.Eventually(t, func() bool {
		st, err := scheduler.States(ctx, pool)
		return err == nil && len(st) == 1 && st[0].Runs == 1 && st[0].LastError == ""
	}, 5*time.Second, 10*time.Millisecond)
}

// The scheduler has the start/stop shape of every long-running part: Stop
// before Start does nothing, a second Start is refused, and Stop waits for
// a task in progress until its context ends, however often it is called.
func TestSchedulerStartStop(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	running := make(chan struct{})
	release := make(chan struct{})
	var finished atomic.Bool
	s := scheduler.New(scheduler.Config{Pool: pool, Logger: slog.New(slog.DiscardHandler), WorkerID: "w", Poll: 10 * time.Millisecond},
		scheduler.Task{Name: "slow", Interval: time.Hour, Run: func(context.Context) error {
			close(running)
			<-release // a task that ignores its context
			finished.Store(true)
			return nil
		}})
	require.NoError(t, s.Stop(ctx), "Stop before Start")
	require.NoError(t, s.Start(ctx))
	require.ErrorIs(t, s.Start(ctx), startstop.ErrStarted)
	<-running

	ended, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, s.Stop(ended), context.Canceled, "the task is still running")
	close(release)
	require.NoError(t, s.Stop(ctx))
	require.True(t, finished.Load(), "Stop returned before the task ended")
	require.False(t, s.Leader(), "the leader let go")
	require.NoError(t, s.Stop(ended), "a second Stop after the loop ended")
}
