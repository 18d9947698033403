// Package metrics builds the Prometheus registry every component registers
// with, and the collectors of the platform itself (HTTP requests, the
// connection pool).
package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a registry with the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// HTTP holds the request metrics, labelled by route pattern (never the raw
// path, which would explode the label space), method and status.
type HTTP struct {
	Requests *prometheus.CounterVec
	Duration *prometheus.HistogramVec
	// StreamFailures counts the streamed responses that failed after
	// their status went out (their requests count under that status), by
	// route, method and error code.
	StreamFailures *prometheus.CounterVec
}

// NewHTTP registers the HTTP request metrics.
func NewHTTP(reg prometheus.Registerer) *HTTP {
	h := &HTTP{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphmill_http_requests_total", Help: "HTTP requests served, by route, method and status.",
		}, []string{"route", "method", "status"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "graphmill_http_request_duration_seconds", Help: "HTTP request latency, by route, method and status.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method", "status"}),
		StreamFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphmill_http_stream_failures_total",
			Help: "Streamed HTTP responses that failed after their status was sent (an error event), by route, method and error code.",
		}, []string{"route", "method", "code"}),
	}
	reg.MustRegister(h.Requests, h.Duration, h.StreamFailures)
	return h
}

type poolCollector struct {
	pool                                 *pgxpool.Pool
	total, idle, inUse, max, acquires    *prometheus.Desc
	acquireWait, emptyAcquire, cancelled *prometheus.Desc
}

// RegisterPool exports the connection pool's statistics.
func RegisterPool(reg prometheus.Registerer, pool *pgxpool.Pool) {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("graphmill_db_pool_"+name, help, nil, nil)
	}
	reg.MustRegister(&poolCollector{
		pool:         pool,
		total:        d("connections", "Open connections."),
		idle:         d("idle_connections", "Idle connections."),
		inUse:        d("in_use_connections", "Connections in use."),
		max:          d("max_connections", "Pool size limit."),
		acquires:     d("acquires_total", "Connections acquired."),
		acquireWait:  d("acquire_wait_seconds_total", "Time spent waiting for a connection."),
		emptyAcquire: d("empty_acquires_total", "Acquires that had to wait for a connection."),
		cancelled:    d("cancelled_acquires_total", "Acquires cancelled by their context."),
	})
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.idle, c.inUse, c.max, c.acquires, c.acquireWait, c.emptyAcquire, c.cancelled} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(c.acquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.acquireWait, prometheus.CounterValue, s.AcquireDuration().Seconds())
	ch <- prometheus.MustNewConstMetric(c.emptyAcquire, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.cancelled, prometheus.CounterValue, float64(s.CanceledAcquireCount()))
}
