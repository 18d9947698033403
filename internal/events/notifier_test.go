package events_test

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/startstop"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// waitFor bounds every wait for a delivery.
const waitFor = 10 * time.Second

// recorder is a subscriber that queues what it is given.
type recorder struct {
	ch chan events.Notification
}

func newRecorder() *recorder { return &recorder{ch: make(chan events.Notification, 256)} }

func (r *recorder) fn(n events.Notification) { r.ch <- n }

// next returns the next delivery, failing after waitFor.
func (r *recorder) next(t *testing.T) events.Notification {
	t.Helper()
	select {
	case n := <-r.ch:
		return n
	case <-time.After(waitFor):
		require.FailNow(t, "no notification delivered")
		return events.Notification{}
	}
}

// requireResync waits for the Resync of channel.
func (r *recorder) requireResync(t *testing.T, channel string) {
	t.Helper()
	require.Equal(t, events.Notification{Channel: channel, Resync: true}, r.next(t))
}

// requirePayload waits for a payload on channel.
func (r *recorder) requirePayload(t *testing.T, channel, payload string) {
	t.Helper()
	require.Equal(t, events.Notification{Channel: channel, Payload: payload}, r.next(t))
}

// eventually polls cond (on the test's goroutine, so cond may use t) until
// it holds or waitFor has passed; the caller then asserts the outcome.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// testBundle is a notifier on a fresh database. Its connection carries a
// unique application_name, so tests can find (and kill) its backend.
type testBundle struct {
	pool     *pgxpool.Pool // the test's own connections (notify, inspect)
	notifier *events.Notifier
	appName  string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	url := pgtest.NewURL(t)
	appName := "notifier_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["application_name"] = appName
	// The notifier only copies this pool's connection settings; the pool
	// itself never connects.
	npool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(npool.Close)

	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	n := events.NewNotifier(npool, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { require.NoError(t, n.Stop(context.Background())) })
	return &testBundle{pool: pool, notifier: n, appName: appName}
}

func (b *testBundle) start(t *testing.T) {
	t.Helper()
	require.NoError(t, b.notifier.Start(context.Background()))
}

func (b *testBundle) notify(t *testing.T, channel, payload string) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `SELECT pg_notify($1, $2)`, channel, payload)
	require.NoError(t, err)
}

// listenerPIDs returns the backends of the notifier's connections.
func (b *testBundle) listenerPIDs(t *testing.T) []int32 {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()
		ORDER BY pid`, b.appName)
	require.NoError(t, err)
	var pids []int32
	for rows.Next() {
		var pid int32
		require.NoError(t, rows.Scan(&pid))
		pids = append(pids, pid)
	}
	require.NoError(t, rows.Err())
	return pids
}

func TestNotifierDeliversInOrderToItsChannel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec, other := newRecorder(), newRecorder()
	b.notifier.Listen("chan", rec.fn)
	b.notifier.Listen("other", other.fn)
	b.start(t)
	rec.requireResync(t, "chan")
	other.requireResync(t, "other")

	payloads := []string{"hello", "world", "3", "", "last"}
	for _, p := range payloads {
		b.notify(t, "chan", p)
	}
	for _, p := range payloads {
		rec.requirePayload(t, "chan", p)
	}

	// Deliveries happen in order on one goroutine: once the other channel's
	// sentinel arrives, anything misrouted to it would already be queued.
	b.notify(t, "other", "sentinel")
	other.requirePayload(t, "other", "sentinel")
	require.Empty(t, other.ch)
	require.Empty(t, rec.ch)
}

func TestNotifierListenAfterStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := newRecorder()
	b.notifier.Listen("first", first.fn)
	b.start(t)
	first.requireResync(t, "first")
	pids := b.listenerPIDs(t)
	require.Len(t, pids, 1)

	// A name that needs quoting: LISTEN must keep its case and dot.
	late := newRecorder()
	b.notifier.Listen("Late.Channel", late.fn)
	late.requireResync(t, "Late.Channel")
	b.notify(t, "Late.Channel", "x")
	late.requirePayload(t, "Late.Channel", "x")

	// The running connection took the new LISTEN: same backend, and the
	// first channel was not resynced.
	require.Equal(t, pids, b.listenerPIDs(t))
	b.notify(t, "first", "still")
	first.requirePayload(t, "first", "still")
	require.Empty(t, first.ch)

	// A second subscriber of a channel already listened to shares it.
	again := newRecorder()
	b.notifier.Listen("first", again.fn)
	b.notify(t, "first", "both")
	first.requirePayload(t, "first", "both")
	again.requirePayload(t, "first", "both")
}

func TestNotifierResyncsAfterConnectionLoss(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := newRecorder()
	b.notifier.Listen("chan", rec.fn)
	b.start(t)
	rec.requireResync(t, "chan")
	b.notify(t, "chan", "before")
	rec.requirePayload(t, "chan", "before")

	pids := b.listenerPIDs(t)
	require.Len(t, pids, 1)
	var killed bool
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, pids[0]).Scan(&killed))
	require.True(t, killed)

	// The notifier reconnects, listens again and tells the subscriber that
	// it may have missed something.
	rec.requireResync(t, "chan")
	b.notify(t, "chan", "after")
	rec.requirePayload(t, "chan", "after")
	now := b.listenerPIDs(t)
	require.Len(t, now, 1)
	require.NotEqual(t, pids[0], now[0])
}

func TestNotifierUnlistenStopsDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gone, kept := newRecorder(), newRecorder()
	unlisten := b.notifier.Listen("chan", gone.fn)
	b.notifier.Listen("chan", kept.fn)
	b.start(t)
	gone.requireResync(t, "chan")
	kept.requireResync(t, "chan")
	b.notify(t, "chan", "one")
	gone.requirePayload(t, "chan", "one")
	kept.requirePayload(t, "chan", "one")

	unlisten()
	b.notify(t, "chan", "two")
	b.notify(t, "chan", "three")
	kept.requirePayload(t, "chan", "two")
	// "three" is dispatched after "two" has been handed to every
	// subscriber it was going to reach.
	kept.requirePayload(t, "chan", "three")
	require.Empty(t, gone.ch)

	unlisten() // a second call is harmless
	b.notify(t, "chan", "four")
	kept.requirePayload(t, "chan", "four")
	require.Empty(t, gone.ch)
}

// The notifier has the start/stop shape of every long-running part: Stop
// before Start does nothing (the notifier can start afterwards), a second
// Start is refused, and Stop may be called again.
func TestNotifierStopBeforeStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, b.notifier.Stop(ctx))
	require.NoError(t, b.notifier.Stop(ctx))
	rec := newRecorder()
	b.notifier.Listen("chan", rec.fn)
	b.start(t)
	require.ErrorIs(t, b.notifier.Start(ctx), startstop.ErrStarted)
	rec.requireResync(t, "chan")
	b.notify(t, "chan", "x")
	rec.requirePayload(t, "chan", "x")
	require.Len(t, b.listenerPIDs(t), 1, "one listening connection, not one per Start")
}

// notifierGoroutines returns the stacks of goroutines running code of the
// events package.
func notifierGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		// Tests of this package paused in t.Parallel are not leaks.
		if strings.Contains(g, "graphmill/internal/events.") && !strings.Contains(g, "testing.(*T).Parallel") {
			out = append(out, g)
		}
	}
	return out
}

// TestNotifierStopLeavesNoGoroutines is not parallel: it counts the
// goroutines of the whole package, so it runs while the parallel tests
// are still paused and own none.
func TestNotifierStopLeavesNoGoroutines(t *testing.T) {
	require.Empty(t, notifierGoroutines(), "goroutines left by an earlier test")
	b := setup(t)
	rec := newRecorder()
	b.notifier.Listen("chan", rec.fn)
	b.start(t)
	rec.requireResync(t, "chan")
	// Exercise the wake-up path and a delivery.
	late := newRecorder()
	b.notifier.Listen("late", late.fn)
	late.requireResync(t, "late")
	b.notify(t, "chan", "x")
	rec.requirePayload(t, "chan", "x")
	require.NotEmpty(t, notifierGoroutines())
	require.Len(t, b.listenerPIDs(t), 1)

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.notifier.Stop(ctx))
	// The loop goroutine may still be returning from its deferred exit.
	var left []string
	eventually(t, func() bool { left = notifierGoroutines(); return len(left) == 0 })
	require.Empty(t, left, "goroutines left after Stop")
	require.NoError(t, b.notifier.Stop(ctx), "a second call is harmless")

	// Stop closed the connection (the backend exits after the client
	// says goodbye, so this may take a moment).
	eventually(t, func() bool { return len(b.listenerPIDs(t)) == 0 })
	require.Empty(t, b.listenerPIDs(t))
}
