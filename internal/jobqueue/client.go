package jobqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/startstop"
)

// Config configures a Client.
type Config struct {
	Logger *slog.Logger
	// Now is the clock; every time written to the database comes from it.
	Now func() time.Time
	// Notifier delivers wake-ups, cancellations and settings changes. When
	// nil the client only polls (and cannot cancel running jobs within a
	// second: heartbeats notice a cancel within a third of the lease).
	Notifier *events.Notifier
	// Metrics registers the engine's collectors; nil registers nothing.
	Metrics prometheus.Registerer
	// Tracer traces every batch a handler works (a span continuing the
	// trace of the span that queued its jobs: TraceParent); nil is the
	// no-op provider.
	Tracer trace.TracerProvider
	// WorkerID names this client in locked_by; default host-pid-random.
	WorkerID string
	// PollInterval is the fallback poll (PollIntervalDefault).
	PollInterval time.Duration
	// ReapInterval is how often expired leases are looked for
	// (ReapIntervalDefault).
	ReapInterval time.Duration
	// DepthInterval is how often the queue depth gauge is refreshed
	// (DepthIntervalDefault).
	DepthInterval time.Duration
	// SettingsInterval is the fallback reload of runtime settings
	// (SettingsIntervalDefault).
	SettingsInterval time.Duration
}

// QueueConfig declares one queue: the table holding its jobs and the
// handler working them.
type QueueConfig struct {
	// Name is the queue's name ([a-z][a-z0-9_]*, at most 40 characters).
	Name string
	// Table is the job table (CommonColumns plus domain columns).
	Table string
	// Concurrency is the number of batches in flight in this process
	// (default 1); BatchSize the jobs claimed per batch (default 1). Both
	// can be overridden at runtime with SetConcurrency and SetBatchSize.
	Concurrency int
	BatchSize   int
	// ConcurrencyFunc, when set, derives the batches in flight from the
	// work's needs (for example a provider's rate × observed latency): the
	// queue runs the larger of Concurrency and its answer, at most
	// AutoConcurrencyMax. A concurrency set with SetConcurrency is kept
	// as it is.
	ConcurrencyFunc func() int
	// Lease is how long a claimed job stays owned without a heartbeat
	// (LeaseDefault).
	Lease time.Duration
	// ProjectMax caps the running jobs of one project in this queue across
	// all processes; 0 means no cap.
	ProjectMax int
	// Handler works the queue's jobs. A queue without one is declared
	// only: this process reports, cancels and retries its jobs but never
	// claims them (its workers run elsewhere).
	Handler Handler
	// BackoffFunc gives the delay before retry number n (1-based);
	// BackoffDefault when nil.
	BackoffFunc func(retry int) time.Duration
	// ClearOnFinal names nullable domain columns of Table that the
	// statement making a job final (the handler's outcome, FinishInTx, the
	// reaper, Cancel) sets to NULL: values needed only while the job may
	// still run (an email's sealed secret template values) go with the
	// status change, in its transaction.
	ClearOnFinal []string
	// QueuedKey names a column of Table that a unique index limits to one
	// queued job per value (graph_embedding: object_id, the domain queuing
	// a job only when none of the object is queued). A job of such a queue
	// that would go back to queued (a retry, a reaped lease, a release on
	// stop) while another job of its value is queued is cancelled instead,
	// "superseded": the queued job does the same work.
	QueuedKey string
	// QueuedKeyNoun is what a QueuedKey value stands for, in words
	// ("object"): the superseded job's error message speaks of it, not of
	// the column. Required with QueuedKey: one to four lower-case words.
	QueuedKeyNoun string
	// OutcomeFunc, when set, is called in the transaction that records the
	// outcomes of a batch (or of reaped jobs), so that a domain can write
	// job log entries or events atomically with the status change. It runs
	// in a savepoint: an error loses its writes only, the outcomes are
	// written without them; but a deadlock or serialization failure
	// (postgres.IsTxConflict) rolls the whole transaction back, and it runs
	// again (the engine's own; a handler's, which FinishInTx is part of,
	// runs in postgres.WithTxRetryDeadlock), so that it cannot be lost.
	OutcomeFunc OutcomeFunc
	// AnnounceStarted publishes job.started for every claimed batch (see
	// PublishStarted). Set it only on a queue whose OutcomeFunc publishes
	// job.completed (Outcome.PublishCompleted): a job's start is shown to
	// no one its end is not shown to.
	AnnounceStarted bool
}

var (
	queueNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	columnRE    = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
	// nounRE is a QueuedKeyNoun: words, written into the SQL's message.
	nounRE = regexp.MustCompile(`^[a-z]+( [a-z]+){0,3}$`)
)

// Client runs the queues added to it: claims, heartbeats, reaping and
// cancellation. Cancel, Retry, the settings operations and Stats work
// without Start, so API-only processes can use an unstarted Client.
type Client struct {
	pool     *pgxpool.Pool
	cfg      Config
	logger   *slog.Logger
	now      func() time.Time
	workerID string
	metrics  *metrics
	tracer   trace.Tracer

	queues    map[string]*queue
	order     []*queue
	observers []OutcomeFunc // set before Start, read-only after

	mu       sync.Mutex
	started  bool
	stopped  bool
	stopDone chan struct{}       // closed once the first Stop has ended every goroutine
	inflight map[uuid.UUID]entry // running jobs of this client

	stopClaim  chan struct{}   // closed by Stop: producers stop claiming
	stopBg     chan struct{}   // closed by Stop after batches ended: heartbeats and maintenance stop
	workCtx    context.Context //nolint:containedctx // parent of batch contexts, owned by the client
	cancelWork context.CancelCauseFunc
	producers  sync.WaitGroup
	batches    sync.WaitGroup
	background sync.WaitGroup
	unlisten   []func()
}

// NewClient returns a client on pool. Add queues, then Start it.
func NewClient(pool *pgxpool.Pool, cfg Config) (*Client, error) {
	if pool == nil {
		return nil, errors.New("jobqueue: nil pool")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WorkerID == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		cfg.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider()
	}
	cfg.PollInterval = orDefault(cfg.PollInterval, PollIntervalDefault)
	cfg.ReapInterval = orDefault(cfg.ReapInterval, ReapIntervalDefault)
	cfg.DepthInterval = orDefault(cfg.DepthInterval, DepthIntervalDefault)
	cfg.SettingsInterval = orDefault(cfg.SettingsInterval, SettingsIntervalDefault)
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	return &Client{
		pool:     pool,
		cfg:      cfg,
		logger:   cfg.Logger,
		now:      cfg.Now,
		workerID: cfg.WorkerID,
		metrics:  m,
		tracer:   cfg.Tracer.Tracer(tracerName),
		queues:   map[string]*queue{},
		inflight: map[uuid.UUID]entry{},
	}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// WorkerID returns the name this client writes into locked_by.
func (c *Client) WorkerID() string { return c.workerID }

// AddQueue registers a queue. It must be called before Start.
func (c *Client) AddQueue(qc QueueConfig) error {
	if !queueNameRE.MatchString(qc.Name) {
		return fmt.Errorf("jobqueue: bad queue name %q", qc.Name)
	}
	if qc.Table == "" {
		return fmt.Errorf("jobqueue: queue %s has no table", qc.Name)
	}
	if qc.Concurrency == 0 {
		qc.Concurrency = 1
	}
	if qc.BatchSize == 0 {
		qc.BatchSize = 1
	}
	if qc.Concurrency < 1 || qc.Concurrency > MaxBatch || qc.BatchSize < 1 || qc.BatchSize > MaxBatch {
		return fmt.Errorf("jobqueue: queue %s: concurrency and batch size must be within 1..%d", qc.Name, MaxBatch)
	}
	for _, col := range qc.ClearOnFinal {
		if !columnRE.MatchString(col) {
			return fmt.Errorf("jobqueue: queue %s: bad column %q to clear", qc.Name, col)
		}
	}
	if qc.QueuedKey != "" && !columnRE.MatchString(qc.QueuedKey) {
		return fmt.Errorf("jobqueue: queue %s: bad queued key column %q", qc.Name, qc.QueuedKey)
	}
	if qc.QueuedKey != "" && !nounRE.MatchString(qc.QueuedKeyNoun) {
		return fmt.Errorf("jobqueue: queue %s: queued key %s needs a noun of lower-case words (QueuedKeyNoun), not %q", qc.Name, qc.QueuedKey, qc.QueuedKeyNoun)
	}
	if qc.ProjectMax < 0 {
		return fmt.Errorf("jobqueue: queue %s: negative project max", qc.Name)
	}
	qc.Lease = orDefault(qc.Lease, LeaseDefault)
	if qc.BackoffFunc == nil {
		qc.BackoffFunc = BackoffDefault
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("jobqueue: AddQueue after Start")
	}
	if _, dup := c.queues[qc.Name]; dup {
		return fmt.Errorf("jobqueue: queue %s added twice", qc.Name)
	}
	q := newQueue(c, qc)
	c.queues[qc.Name] = q
	c.order = append(c.order, q)
	return nil
}

// Observe registers fn to be called with the outcomes of every queue of
// the client, in the transaction that records them, after the queue's own
// OutcomeFunc. Each observer runs in its own savepoint: an error loses only
// that observer's writes, never the status changes or the other hooks'
// writes (but a deadlock runs the whole transaction again, as for
// OutcomeFunc). It must be called before Start.
func (c *Client) Observe(fn OutcomeFunc) error {
	if fn == nil {
		return errors.New("jobqueue: nil observer")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("jobqueue: Observe after Start")
	}
	c.observers = append(c.observers, fn)
	return nil
}

func (c *Client) queue(name string) (*queue, error) {
	q, ok := c.queues[name]
	if !ok {
		return nil, fmt.Errorf("jobqueue: unknown queue %q", name)
	}
	return q, nil
}

// Start loads the runtime settings, subscribes to notifications and starts
// working every queue. ctx bounds only the start-up; Stop ends the client.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return fmt.Errorf("jobqueue: %w", startstop.ErrStarted)
	}
	c.started = true
	c.mu.Unlock()
	for _, q := range c.order {
		if err := q.reloadSettings(ctx); err != nil {
			c.mu.Lock()
			c.started = false
			c.mu.Unlock()
			return err
		}
	}
	c.stopClaim = make(chan struct{})
	c.stopBg = make(chan struct{})
	c.workCtx, c.cancelWork = context.WithCancelCause(context.WithoutCancel(ctx))
	if n := c.cfg.Notifier; n != nil {
		c.listen(ctx, n)
	}
	for _, q := range c.order {
		if q.cfg.Handler == nil {
			continue // declared only: another process (or a later feature) works it
		}
		c.producers.Add(1)
		go func() {
			defer c.producers.Done()
			q.produce()
		}()
	}
	c.background.Add(2)
	go func() {
		defer c.background.Done()
		c.heartbeatLoop()
	}()
	go func() {
		defer c.background.Done()
		c.maintenanceLoop()
	}()
	return nil
}

// listen subscribes to the client's channels and waits (bounded by ctx and
// listenWait) until the notifier listens to all of them, so that a job
// inserted or cancelled after Start returns is heard at once.
func (c *Client) listen(ctx context.Context, n *events.Notifier) {
	subs := map[string]func(events.Notification){
		channelCancel:   c.onCancel,
		channelSettings: c.onSettings,
	}
	for _, q := range c.order {
		subs[ChannelPrefix+q.cfg.Name] = func(events.Notification) { q.wakeUp(true) }
	}
	heard := make(chan struct{}, len(subs)) // one first Resync per channel
	for ch, fn := range subs {
		var once sync.Once
		c.unlisten = append(c.unlisten, n.Listen(ch, func(msg events.Notification) {
			if msg.Resync {
				once.Do(func() { heard <- struct{}{} })
			}
			fn(msg)
		}))
	}
	timer := time.NewTimer(listenWait)
	defer timer.Stop()
	for range len(subs) {
		select {
		case <-heard:
		case <-ctx.Done():
			return
		case <-timer.C:
			c.logger.Warn("job engine: notifier not listening yet; relying on polling until it does")
			return
		}
	}
}

// listenWait bounds how long Start waits for the notifier.
const listenWait = 5 * time.Second

// Stop stops claiming, lets the batches in flight finish until ctx ends,
// then cancels them (context cause ErrShutdown) and puts their jobs back in
// the queue without counting a failure. It returns once every goroutine of
// the client has ended; handlers must honour their context. It does
// nothing before Start; a later call waits, until its ctx ends, for the
// first one to finish.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	if !c.started {
		c.mu.Unlock()
		return nil
	}
	if c.stopped {
		done := c.stopDone
		c.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("stop jobqueue: %w", ctx.Err())
		}
	}
	c.stopped = true
	c.stopDone = make(chan struct{})
	defer close(c.stopDone)
	c.mu.Unlock()
	for _, un := range c.unlisten {
		un()
	}
	close(c.stopClaim)
	c.producers.Wait()
	drained := make(chan struct{})
	go func() {
		c.batches.Wait()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		c.logger.Warn("job engine stopping: cancelling batches in flight", "worker", c.workerID)
		c.cancelWork(ErrShutdown)
		<-drained
		err = fmt.Errorf("stop jobqueue: %w", ctx.Err())
	}
	c.cancelWork(ErrShutdown)
	close(c.stopBg)
	c.background.Wait()
	return err
}

// onCancel runs on the notifier's goroutine: it cancels the batch of a
// running job that was cancelled.
func (c *Client) onCancel(n events.Notification) {
	if n.Resync {
		return // the heartbeat catches cancels sent while we were deaf
	}
	id, err := uuid.Parse(n.Payload)
	if err != nil {
		return
	}
	c.cancelJobs(id)
}

func (c *Client) cancelJobs(ids ...uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if e, ok := c.inflight[id]; ok {
			e.b.cancelled[id] = true
			e.b.cancel(ErrCancelled)
		}
	}
}

// cancelLost cancels the batches of jobs a heartbeat found no longer ours,
// unless the job finished meanwhile and was claimed again (a new attempt).
func (c *Client) cancelLost(jobs []Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, j := range jobs {
		if e, ok := c.inflight[j.ID]; ok && e.job.Attempt == j.Attempt {
			e.b.cancelled[j.ID] = true
			e.b.cancel(ErrCancelled)
		}
	}
}

func (c *Client) onSettings(n events.Notification) {
	for _, q := range c.order {
		if n.Resync || n.Payload == q.cfg.Name {
			q.settingsChanged()
		}
	}
}

// heartbeatLoop extends the leases of running jobs every third of the
// shortest lease, and cancels the batches of jobs no longer ours (cancelled,
// or reaped after a missed heartbeat).
func (c *Client) heartbeatLoop() {
	every := time.Hour
	for _, q := range c.order {
		every = min(every, q.cfg.Lease/3)
	}
	every = max(every, 10*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-c.stopBg:
			return
		case <-tick.C:
		}
		c.renewHeld(c.beat(), every)
	}
}

// heldJob is a running job of queue q whose row a heartbeat found held.
type heldJob struct {
	q   *queue
	job Job
}

// beat extends the leases of every queue's running jobs without waiting
// for a row, cancels the batches of jobs no longer ours and returns the
// jobs whose rows another transaction holds (not renewed).
func (c *Client) beat() []heldJob {
	var held []heldJob
	for _, q := range c.order {
		jobs := c.running(q.cfg.Name)
		if len(jobs) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(q.cfg.Lease/3, time.Second))
		owned, h, err := q.jobHeartbeat(ctx, c.pool, c.now(), c.workerID, jobs)
		cancel()
		if err != nil {
			c.logger.Warn("job heartbeat failed", "queue", q.cfg.Name, "err", err)
			continue
		}
		keep := make(map[uuid.UUID]bool, len(owned))
		for _, id := range owned {
			keep[id] = true
		}
		var lost []Job
		for _, j := range jobs {
			if !keep[j.ID] {
				lost = append(lost, j)
			}
		}
		c.cancelLost(lost)
		for _, j := range h {
			held = append(held, heldJob{q: q, job: j})
		}
	}
	return held
}

// renewHeld extends the leases of the held jobs a beat left, waiting for
// their rows one at a time (a statement that holds no other row cannot
// deadlock), for at most within in all: when the holder lets a row go
// unchanged (it rolled back, or only read it), the lease is renewed before
// the reaper, which skips held rows, can take the job back from its
// running handler. A job the holder changed (cancelled, finished) is not
// renewed; the next beat sees it. A row still held when time is up waits
// for the next beat.
func (c *Client) renewHeld(held []heldJob, within time.Duration) {
	if len(held) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(within, time.Second))
	defer cancel()
	go func() { // Stop does not wait for a held row
		select {
		case <-c.stopBg:
			cancel()
		case <-ctx.Done():
		}
	}()
	for _, h := range held {
		if err := h.q.jobRenewHeld(ctx, c.pool, c.now(), c.workerID, h.job); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.logger.Warn("renewing a held job's lease failed", "queue", h.q.cfg.Name, "job", h.job.ID, "err", err)
		}
	}
}

func (c *Client) running(queue string) []Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	var jobs []Job
	for id, e := range c.inflight {
		if e.b.queue == queue && !e.b.cancelled[id] {
			jobs = append(jobs, e.job)
		}
	}
	return jobs
}

// maintenanceLoop reaps expired leases and refreshes the depth gauge.
func (c *Client) maintenanceLoop() {
	reap := time.NewTicker(c.cfg.ReapInterval)
	defer reap.Stop()
	depth := time.NewTicker(c.cfg.DepthInterval)
	defer depth.Stop()
	c.refreshDepth()
	for {
		select {
		case <-c.stopBg:
			return
		case <-reap.C:
			for _, q := range c.order {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if _, err := q.reap(ctx); err != nil {
					c.logger.Warn("reaping expired jobs failed", "queue", q.cfg.Name, "err", err)
				}
				cancel()
			}
		case <-depth.C:
			c.refreshDepth()
		}
	}
}

func (c *Client) refreshDepth() {
	for _, q := range c.order {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var n int64
		err := c.pool.QueryRow(ctx, q.sql.depth).Scan(&n)
		cancel()
		if err != nil {
			c.logger.Warn("queue depth query failed", "queue", q.cfg.Name, "err", err)
			continue
		}
		c.metrics.depth.WithLabelValues(q.cfg.Name).Set(float64(n))
	}
}
