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

	"github.com/jackc/pgx/v5/pgxpool"
)

// leaderLock is the advisory lock key of the scheduler leader.
const leaderLock = 0x67726d73 // "grms"

// PollDefault is how often a follower tries to become leader, and how often
// the leader checks for due tasks.
const PollDefault = time.Second

// Task is one periodic job. Run gets a context that ends when leadership is
// lost or the scheduler stops.
type Task struct {
	Name     string
	Interval time.Duration
	Run      func(ctx context.Context) error
}

// Config configures a Scheduler.
type Config struct {
	Pool     *pgxpool.Pool
	Logger   *slog.Logger
	Now      func() time.Time
	WorkerID string
	Poll     time.Duration
}

// Scheduler elects a leader and runs due tasks on it.
type Scheduler struct {
	cfg   Config
	tasks []Task

	mu     sync.Mutex
	leader bool

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a scheduler for tasks.
func New(cfg Config, tasks ...Task) *Scheduler {
	if cfg.Poll <= 0 {
		cfg.Poll = PollDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Scheduler{cfg: cfg, tasks: tasks}
}

// Leader reports whether this process leads now.
func (s *Scheduler) Leader() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leader
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
		if t.Interval <= 0 || t.Name == "" || t.Run == nil {
			return fmt.Errorf("scheduler task %q: name, interval and run are required", t.Name)
		}
		if err := taskRegister(ctx, s.cfg.Pool, t, now); err != nil {
			return err
		}
	}
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.loop(ctx)
	}()
	return nil
}

// Stop ends the loop; a leader releases the lock, so another process takes
// over within its poll interval.
func (s *Scheduler) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
}

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

func (s *Scheduler) run(ctx context.Context, t Task) {
	start := s.cfg.Now()
	err := t.Run(ctx)
	dur := s.cfg.Now().Sub(start)
	if err != nil {
		s.cfg.Logger.Error("scheduled task failed", "task", t.Name, "err", err)
	}
	if rerr := taskRecord(context.WithoutCancel(ctx), s.cfg.Pool, t, start, dur, err, s.cfg.WorkerID); rerr != nil {
		s.cfg.Logger.Error("record scheduled task", "task", t.Name, "err", rerr)
	}
}
