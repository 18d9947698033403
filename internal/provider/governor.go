package provider

import (
	"context"
	"sync"
	"time"
)

// governor paces provider calls per credential and model: a token bucket
// on requests per minute and one on tokens per minute, shared by every
// worker of the process, so that a burst of jobs waits its turn instead of
// drawing 429s. A 429 that gets through anyway (another process, another
// application on the same key) holds the whole key and model back for the
// provider's Retry-After.
type governor struct {
	mu      sync.Mutex
	now     func() time.Time
	buckets map[string]*limits
}

type limits struct {
	requests, tokens bucket
	holdUntil        time.Time
}

// bucket is a token bucket refilled continuously at rate per minute up to
// its capacity (one minute's worth). A zero rate means unlimited.
type bucket struct {
	perMinute float64
	level     float64
	at        time.Time
}

func newGovernor(now func() time.Time) *governor {
	return &governor{now: now, buckets: map[string]*limits{}}
}

// take reserves n from b at now and returns how long the caller must wait
// before the reservation is good (the bucket may go negative: later callers
// queue behind it).
func (b *bucket) take(n float64, now time.Time) time.Duration {
	if b.perMinute <= 0 {
		return 0
	}
	if b.at.IsZero() {
		b.level, b.at = b.perMinute, now
	}
	if el := now.Sub(b.at); el > 0 {
		b.level = min(b.perMinute, b.level+el.Minutes()*b.perMinute)
		b.at = now
	}
	n = min(n, b.perMinute) // a request larger than a minute's budget waits for a full bucket, not forever
	b.level -= n
	if b.level >= 0 {
		return 0
	}
	return time.Duration(-b.level / b.perMinute * float64(time.Minute))
}

// wait blocks until key may send a request of about tokens tokens, with
// rpm and tpm as its limits (0: unlimited).
func (g *governor) wait(ctx context.Context, key string, rpm, tpm int, tokens int64) error {
	g.mu.Lock()
	l, ok := g.buckets[key]
	if !ok {
		l = &limits{}
		g.buckets[key] = l
	}
	l.requests.perMinute, l.tokens.perMinute = float64(rpm), float64(tpm)
	now := g.now()
	d := max(l.requests.take(1, now), l.tokens.take(float64(tokens), now))
	if hold := l.holdUntil.Sub(now); hold > d {
		d = hold
	}
	g.mu.Unlock()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// hold keeps key back for d after the provider rate-limited it.
func (g *governor) hold(key string, d time.Duration) {
	if d <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l, ok := g.buckets[key]
	if !ok {
		l = &limits{}
		g.buckets[key] = l
	}
	if until := g.now().Add(d); until.After(l.holdUntil) {
		l.holdUntil = until
	}
}
