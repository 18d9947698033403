// Package events carries change notifications between Graphmill processes:
// one LISTEN connection per process fans PostgreSQL notifications out to
// in-process subscribers.
package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/startstop"
)

// Notification is one message delivered to a subscriber. Resync is set
// (with no payload) after the listening connection was (re)established:
// anything sent while it was down is lost, so subscribers that cache state
// must drop it.
type Notification struct {
	Channel string
	Payload string
	Resync  bool
}

type subscription struct {
	channel string
	fn      func(Notification)
}

// Notifier owns one dedicated connection that LISTENs to every channel with
// a subscriber and calls the subscribers of each notification in order.
// Subscriber functions must be quick; they run on the notifier's goroutine.
type Notifier struct {
	pool   *pgxpool.Pool
	logger *slog.Logger

	mu        sync.Mutex
	subs      map[*subscription]struct{}
	listening map[string]bool
	wake      chan struct{}

	life startstop.Base
}

// NewNotifier returns a notifier using connections configured like pool's.
func NewNotifier(pool *pgxpool.Pool, logger *slog.Logger) *Notifier {
	return &Notifier{
		pool:      pool,
		logger:    logger,
		subs:      map[*subscription]struct{}{},
		listening: map[string]bool{},
		wake:      make(chan struct{}, 1),
	}
}

// Listen subscribes fn to channel and returns the function that ends the
// subscription. Notifications sent before the LISTEN took effect are not
// seen; the subscribers of a channel are called with Resync each time the
// connection starts listening to it.
func (n *Notifier) Listen(channel string, fn func(Notification)) (unlisten func()) {
	s := &subscription{channel: channel, fn: fn}
	n.mu.Lock()
	n.subs[s] = struct{}{}
	n.mu.Unlock()
	n.poke()
	return func() {
		n.mu.Lock()
		delete(n.subs, s)
		n.mu.Unlock()
	}
}

func (n *Notifier) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Start runs the listening loop until Stop. It returns at once: the
// subscribers of each channel get a Resync when the connection listens.
func (n *Notifier) Start(ctx context.Context) error {
	if err := n.life.Begin(ctx); err != nil {
		return fmt.Errorf("notifier: %w", err)
	}
	n.life.Go(n.loop)
	return nil
}

// Stop ends the loop, closing the connection, and waits for it until ctx
// ends.
func (n *Notifier) Stop(ctx context.Context) error { return n.life.Stop(ctx) }

func (n *Notifier) loop(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		connected, err := n.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			backoff = 100 * time.Millisecond
		}
		n.logger.Warn("notification listener lost its connection; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// ApplicationName names the listening connection in pg_stat_activity.
const ApplicationName = "graphmill-notifier"

// session connects, listens and dispatches until the connection fails. It
// reports whether it got connected at all.
func (n *Notifier) session(ctx context.Context) (bool, error) {
	cfg := n.pool.Config().ConnConfig.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = ApplicationName
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	n.mu.Lock()
	n.listening = map[string]bool{}
	n.mu.Unlock()
	for {
		added, err := n.listenNew(ctx, conn)
		if err != nil {
			return true, err
		}
		for _, ch := range added {
			n.dispatch(Notification{Channel: ch, Resync: true})
		}
		wctx, cancel := context.WithCancel(ctx)
		stop := make(chan struct{})
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			select {
			case <-n.wake:
				cancel()
			case <-stop:
			}
		}()
		pn, err := conn.WaitForNotification(wctx)
		close(stop)
		// Wait for the waker: left running, it could take a wake meant for
		// the next wait (which would then never add the new channel), and
		// it would outlive Stop.
		<-exited
		woken := wctx.Err() != nil && ctx.Err() == nil
		cancel()
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		if err != nil {
			if woken && !conn.IsClosed() {
				continue
			}
			if woken {
				return true, errors.New("connection closed while adding a channel")
			}
			return true, err
		}
		n.dispatch(Notification{Channel: pn.Channel, Payload: pn.Payload})
	}
}

func (n *Notifier) listenNew(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	n.mu.Lock()
	var want []string
	for s := range n.subs {
		if !n.listening[s.channel] {
			want = append(want, s.channel)
			n.listening[s.channel] = true
		}
	}
	n.mu.Unlock()
	var added []string
	for _, ch := range want {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			n.mu.Lock()
			delete(n.listening, ch)
			n.mu.Unlock()
			return nil, fmt.Errorf("listen %s: %w", ch, err)
		}
		if !slices.Contains(added, ch) {
			added = append(added, ch)
		}
	}
	return added, nil
}

func (n *Notifier) dispatch(msg Notification) {
	n.mu.Lock()
	var fns []func(Notification)
	for s := range n.subs {
		if s.channel == msg.Channel {
			fns = append(fns, s.fn)
		}
	}
	n.mu.Unlock()
	for _, fn := range fns {
		fn(msg)
	}
}
