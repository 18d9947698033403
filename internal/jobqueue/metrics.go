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
	var err error
	m.claimed, err = register(reg, m.claimed)
	if err == nil {
		m.completed, err = register(reg, m.completed)
	}
	if err == nil {
		m.failed, err = register(reg, m.failed)
	}
	if err == nil {
		m.retried, err = register(reg, m.retried)
	}
	if err == nil {
		m.released, err = register(reg, m.released)
	}
	if err == nil {
		m.cancelled, err = register(reg, m.cancelled)
	}
	if err == nil {
		m.duration, err = register(reg, m.duration)
	}
	if err == nil {
		m.depth, err = register(reg, m.depth)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("register jobqueue metrics: %w", err)
	}
	return c, nil
}
