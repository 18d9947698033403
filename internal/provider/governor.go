package provider

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// governor paces provider calls per credential and model: a token bucket
// on requests per minute and one on tokens per minute, shared by every
// worker of the process, so that a burst of jobs waits its turn instead of
// drawing 429s. A 429 that gets through anyway (another process, another
// application on the same key) holds the whole key and model back for the
// provider's Retry-After. On top of the request bucket, no more than the
// requests-per-minute limit are admitted within any minute (plus
// windowSlack), so that a provider counting a sliding window never sees
// the bucket's burst and its refill in the same minute. The governor also
// keeps each key's observed call latency, from which inFlight derives how
// many calls must be under way to use the rate (Little's law).
type governor struct {
	mu      sync.Mutex
	now     func() time.Time
	buckets map[string]*limits
}

type limits struct {
	requests, tokens bucket
	holdUntil        time.Time
	// sent holds the admission times of the last requests, ascending
	// (only the last rpm matter).
	sent []time.Time
	// latency is the moving average of the call durations (0: none yet);
	// usedAt is the last admission.
	latency time.Duration
	usedAt  time.Time
}

const (
	// windowSlack widens the sliding minute, so that requests admitted a
	// minute apart cannot arrive less than a minute apart.
	windowSlack = time.Second
	// latencyWeight is the weight of the newest call in the latency average.
	latencyWeight = 0.2
	// idleAfter drops a key from inFlight when it sent nothing that long.
	idleAfter = 2 * time.Minute
	// inFlightHeadroom scales the derived in-flight count, for the time a
	// job spends outside the provider call.
	inFlightHeadroom = 1.25
)

// window returns how long a request at now must wait so that no more than
// rpm fall within one minute (plus windowSlack), and records it at its
// admission time.
func (l *limits) window(rpm int, now time.Time, d time.Duration) time.Duration {
	if rpm <= 0 {
		return d
	}
	cut := now.Add(-time.Minute - windowSlack)
	i := 0
	for i < len(l.sent) && !l.sent[i].After(cut) {
		i++
	}
	l.sent = l.sent[i:]
	if n := len(l.sent); n >= rpm {
		if w := l.sent[n-rpm].Add(time.Minute + windowSlack).Sub(now); w > d {
			d = w
		}
	}
	at := now.Add(d)
	j := len(l.sent)
	for j > 0 && l.sent[j-1].After(at) {
		j--
	}
	l.sent = slices.Insert(l.sent, j, at)
	return d
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
	l := g.limitsOf(key)
	l.requests.perMinute, l.tokens.perMinute = float64(rpm), float64(tpm)
	now := g.now()
	d := max(l.requests.take(1, now), l.tokens.take(float64(tokens), now))
	if hold := l.holdUntil.Sub(now); hold > d {
		d = hold
	}
	d = l.window(rpm, now, d)
	l.usedAt = now
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

// limitsOf returns key's limits, created empty on first use (g.mu held).
func (g *governor) limitsOf(key string) *limits {
	l, ok := g.buckets[key]
	if !ok {
		l = &limits{}
		g.buckets[key] = l
	}
	return l
}

// hold keeps key back for d after the provider rate-limited it.
func (g *governor) hold(key string, d time.Duration) {
	if d <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.limitsOf(key)
	if until := g.now().Add(d); until.After(l.holdUntil) {
		l.holdUntil = until
	}
}

// observe records how long a call of key took.
func (g *governor) observe(key string, d time.Duration) {
	if d <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.limitsOf(key)
	if l.latency == 0 {
		l.latency = d
		return
	}
	l.latency = time.Duration(latencyWeight*float64(d) + (1-latencyWeight)*float64(l.latency))
}

// inFlight is the number of calls that must be under way to use the
// request rate of every key active in the last idleAfter at its observed
// latency: rate × latency (Little's law), with inFlightHeadroom, rounded
// up. Keys without a limit or without an observed call count nothing.
func (g *governor) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	n := 0
	for _, l := range g.buckets {
		if l.requests.perMinute <= 0 || l.latency <= 0 || now.Sub(l.usedAt) > idleAfter {
			continue
		}
		n += int(math.Ceil(l.requests.perMinute / 60 * l.latency.Seconds() * inFlightHeadroom))
	}
	return n
}
