// Package startstop gives Graphmill's long-running parts (the job queue,
// the notifier, the event hub, the scheduler, the HTTP servers, ...) one
// start/stop shape, after river's startstop:
//
//   - Start(ctx) error returns once the part runs. ctx bounds the start-up
//     only: the part's goroutines run under a context of its own, which
//     keeps ctx's values but not its cancellation. A second Start is an
//     error (ErrStarted).
//   - Stop(ctx) error ends the part's goroutines and waits for them until
//     ctx ends, then returns ctx's error. It is idempotent (a later call
//     waits again) and safe before Start (it does nothing).
//
// A part holds a Base, calls Begin from its Start and Go for each goroutine
// it owns, and Stop from its Stop.
package startstop

import (
	"context"
	"errors"
	"sync"
)

// ErrStarted is what Start returns for a part that was started before:
// a part runs once.
var ErrStarted = errors.New("already started")

// Base tracks one part's life and the goroutines it owns. The zero Base is
// ready to use; it must not be copied.
type Base struct {
	mu       sync.Mutex
	started  bool
	stopping bool
	// run is the parent of the goroutines' contexts, owned by the part
	// (not a caller's context): Stop cancels it.
	run     context.Context //nolint:containedctx // the part's own, see above
	cancel  context.CancelFunc
	running int
	idle    chan struct{} // closed once stopping and running is 0
}

// Begin marks the part started. Its goroutines (Go) get a context with
// ctx's values and without its cancellation, cancelled by Stop. A second
// Begin returns ErrStarted.
func (b *Base) Begin(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return ErrStarted
	}
	b.started = true
	b.run, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	b.idle = make(chan struct{})
	return nil
}

// Go runs f on a goroutine the part owns, with the part's context, which
// ends when Stop is called. It reports false, not running f, before Begin
// and once Stop was called.
func (b *Base) Go(f func(ctx context.Context)) bool {
	b.mu.Lock()
	if !b.started || b.stopping {
		b.mu.Unlock()
		return false
	}
	b.running++
	ctx := b.run
	b.mu.Unlock()
	go func() {
		defer b.exited()
		f(ctx)
	}()
	return true
}

func (b *Base) exited() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running--
	if b.running == 0 && b.stopping {
		close(b.idle)
	}
}

// Stopping reports whether Stop was called: a part refuses new work then.
func (b *Base) Stopping() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopping
}

// Stop cancels the part's context and waits until every goroutine started
// by Go has returned, or until ctx ends: then it returns ctx's error. It
// does nothing before Begin, and a later call waits again.
func (b *Base) Stop(ctx context.Context) error {
	b.mu.Lock()
	if !b.started {
		b.mu.Unlock()
		return nil
	}
	if !b.stopping {
		b.stopping = true
		b.cancel()
		if b.running == 0 {
			close(b.idle)
		}
	}
	idle := b.idle
	b.mu.Unlock()
	select {
	case <-idle: // ended already: ctx's state does not matter
		return nil
	default:
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
