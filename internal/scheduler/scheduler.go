// Package scheduler runs periodic platform work (expiry of old events,
// later scheduled re-extraction and integration syncs) on exactly one
// process at a time: the holder of a PostgreSQL advisory lock. Task state
// lives in the database, so any process can report it.
package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/startstop"
)

// leaderLock is the advisory lock key of the scheduler leader.
const leaderLock = 0x67726d73 // "grms"

// PollDefault is how often a follower tries to become leader, and how often
// the leader checks for due tasks.
const PollDefault = time.Second

// Task is one periodic job; exactly one of Run and RunInTx is set. Both
// get a context that ends when leadership is lost or the scheduler stops.
type Task struct {
	Name     string
	Interval time.Duration
	// RunInTx does a task's database work in tx, the transaction that also
	// records the run: its results and its run state commit together, so a
	// crash can never leave results whose run is not recorded (and would be
	// repeated), and two leaders overlapping for a moment cannot both run it
	// for the same due time (the task's row is locked and checked due).
	RunInTx func(ctx context.Context, tx pgx.Tx) error
	// Run does work that calls the network, across which no transaction may
	// be held. The run is claimed first (the task is not due again for
	// ClaimLease, so a crash retries it then), then run, then recorded.
	Run func(ctx context.Context) error
}

// ClaimLease bounds how long a claimed Run task stays not due: a leader
// that crashed during the run leaves it to the next leader after that.
const ClaimLease = 10 * time.Minute

// Config configures a Scheduler.
type Config struct {
	Pool     *pgxpool.Pool
	Logger   *slog.Logger
	Now      func() time.Time
	WorkerID string
	Poll     time.Duration
	// TracerProvider traces each task's run as the root span of its own
	// trace, so that the jobs it queues (their stored traceparent) and
	// their work are one trace (nil: not traced).
	TracerProvider trace.TracerProvider
}

// Scheduler elects a leader and runs due tasks on it.
type Scheduler struct {
	cfg    Config
	tasks  []Task
	tracer trace.Tracer

	mu     sync.Mutex
	leader bool

	life startstop.Base
}

// New returns a scheduler for tasks.
func New(cfg Config, tasks ...Task) *Scheduler {
	if cfg.Poll <= 0 {
		cfg.Poll = PollDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = noop.NewTracerProvider()
	}
	return &Scheduler{cfg: cfg, tasks: tasks, tracer: cfg.TracerProvider.Tracer("github.com/graphmill/graphmill/internal/scheduler")}
}

func (s *Scheduler) setLeader(v bool) {
	s.mu.Lock()
	s.leader = v
	s.mu.Unlock()
}

// Start registers the tasks and runs the election loop until Stop.
func (s *Scheduler) Start(ctx context.Context) error {
	now := s.cfg.Now()
	for _, t := range s.tasks {
		if t.Interval <= 0 || t.Name == "" || (t.Run == nil) == (t.RunInTx == nil) {
			return fmt.Errorf("scheduler task %q: name, interval and one of run and runInTx are required", t.Name)
		}
	}
	if err := s.life.Begin(ctx); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	for _, t := range s.tasks {
		if err := taskRegister(ctx, s.cfg.Pool, t, now); err != nil {
			return err
		}
	}
	s.life.Go(s.loop)
	return nil
}

// Stop ends the loop and waits for it (and a task it runs) until ctx
// ends; a leader releases the lock, so another process takes over within
// its poll interval.
func (s *Scheduler) Stop(ctx context.Context) error { return s.life.Stop(ctx) }

func (s *Scheduler) loop(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.lead(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("scheduler leadership ended", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.Poll):
		}
	}
}

// lead holds a connection with the leader lock and runs due tasks until
// the connection fails or ctx ends. It returns nil at once when another
// process leads.
func (s *Scheduler) lead(ctx context.Context) error {
	conn, err := s.cfg.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, leaderLock).Scan(&got); err != nil {
		conn.Release()
		return fmt.Errorf("try lock: %w", err)
	}
	if !got {
		conn.Release()
		return nil
	}
	// A session lock lives with its connection: never return it to the
	// pool holding the lock.
	defer func() {
		_ = conn.Conn().Close(context.WithoutCancel(ctx))
		conn.Release()
	}()
	s.setLeader(true)
	defer s.setLeader(false)
	s.cfg.Logger.Info("scheduler leader", "worker", s.cfg.WorkerID)
	for {
		if err := conn.Ping(ctx); err != nil {
			return fmt.Errorf("leader connection: %w", err)
		}
		due, err := tasksDue(ctx, s.cfg.Pool, s.cfg.Now())
		if err != nil {
			return err
		}
		for _, t := range s.tasks {
			if due[t.Name] {
				s.run(ctx, t)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.cfg.Poll):
		}
	}
}

// AttrTask names the scheduled task of a span.
const AttrTask = attribute.Key("graphmill.scheduler.task")

// run runs a due task under a new root span, "scheduler <task>" (no
// request started it): its queries, and the jobs it queues, are its
// trace.
func (s *Scheduler) run(ctx context.Context, t Task) {
	ctx, span := s.tracer.Start(ctx, "scheduler "+t.Name, trace.WithNewRoot(), trace.WithAttributes(AttrTask.String(t.Name)))
	defer span.End()
	var err error
	if t.RunInTx != nil {
		err = s.runInTx(ctx, t)
	} else {
		err = s.runClaimed(ctx, t)
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
}

// runClaimed claims a network task's run, runs it and records it.
func (s *Scheduler) runClaimed(ctx context.Context, t Task) error {
	start := s.cfg.Now()
	claimed, err := taskClaim(ctx, s.cfg.Pool, t.Name, start, start.Add(min(t.Interval, ClaimLease)))
	if err != nil || !claimed {
		if err != nil {
			s.cfg.Logger.Warn("claim scheduled task", "task", t.Name, "err", err)
		}
		return err
	}
	err = t.Run(ctx)
	s.record(ctx, t, start, err)
	return err
}

// runInTx runs a database task and records its run in one transaction;
// it returns the task's error (or the transaction's).
func (s *Scheduler) runInTx(ctx context.Context, t Task) error {
	start := s.cfg.Now()
	var runErr error
	due := false
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var err error
		if due, err = taskLockDue(ctx, tx, t.Name, start); err != nil || !due {
			return err
		}
		if runErr = t.RunInTx(ctx, tx); runErr != nil {
			return runErr
		}
		return taskRecord(ctx, tx, t, start, s.cfg.Now().Sub(start), nil, s.cfg.WorkerID)
	})
	switch {
	case err == nil:
	case runErr != nil:
		// Its writes rolled back: record the failure alone.
		s.record(ctx, t, start, runErr)
	case due:
		s.cfg.Logger.Error("scheduled task not recorded; it runs again", "task", t.Name, "err", err)
	default:
		s.cfg.Logger.Warn("scheduled task", "task", t.Name, "err", err)
	}
	return err
}

func (s *Scheduler) record(ctx context.Context, t Task, start time.Time, err error) {
	dur := s.cfg.Now().Sub(start)
	if err != nil {
		s.cfg.Logger.Error("scheduled task failed", "task", t.Name, "err", err)
	}
	if rerr := taskRecord(context.WithoutCancel(ctx), s.cfg.Pool, t, start, dur, err, s.cfg.WorkerID); rerr != nil {
		s.cfg.Logger.Error("record scheduled task", "task", t.Name, "err", rerr)
	}
}
