package jobqueue

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's collectors, labelled by queue.
type metrics struct {
	claimed, completed, failed, retried, released, cancelled *prometheus.CounterVec
	duration                                                 *prometheus.HistogramVec
	depth                                                    *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "graphmill", Subsystem: "jobqueue", Name: name, Help: help,
		}, []string{"queue"})
	}
	m := &metrics{
		claimed:   counter("jobs_claimed_total", "Jobs claimed by this process."),
		completed: counter("jobs_completed_total", "Jobs that ended completed or requires_review."),
		failed:    counter("jobs_failed_total", "Jobs that ended failed (retries exhausted, permanent error or rate limited too long)."),
		retried:   counter("jobs_retried_total", "Failed attempts put back in the queue (errors, rate limits, expired leases)."),
		released:  counter("jobs_released_total", "Jobs put back in the queue at shutdown or when a batch sibling was cancelled."),
		cancelled: counter("jobs_cancelled_total", "Running jobs of this process that were cancelled or lost their lease."),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "graphmill", Subsystem: "jobqueue", Name: "batch_duration_seconds",
			Help:    "Time a handler took to work one batch.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 11), // 1 ms .. ~17 min
		}, []string{"queue"}),
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "graphmill", Subsystem: "jobqueue", Name: "jobs_queued",
			Help: "Jobs in status queued (due or not), refreshed periodically.",
		}, []string{"queue"}),
	}
	if reg == nil {
		return m, nil
	}
	// Several clients in one process share the collectors.
	for _, c := range []**prometheus.CounterVec{&m.claimed, &m.completed, &m.failed, &m.retried, &m.released, &m.cancelled} {
		if err := register(reg, c); err != nil {
			return nil, err
		}
	}
	if err := register(reg, &m.duration); err != nil {
		return nil, err
	}
	if err := register(reg, &m.depth); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers *c with reg, or replaces *c with the collector of
// the same name another client registered already.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	if err := reg.Register(*c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				*c = existing
				return nil
			}
		}
		return fmt.Errorf("register jobqueue metrics: %w", err)
	}
	return nil
}
