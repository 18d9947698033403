package jobqueue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
)

// queuedKeySetup is the test table with graph_embedding_jobs' rule: at most
// one queued job per payload (object_id there).
func queuedKeySetup(t *testing.T) *testBundle {
	t.Helper()
	b := setup(t)
	_, err := b.pool.Exec(context.Background(), `CREATE UNIQUE INDEX jobs_one_queued ON jobs (payload) WHERE status = 'queued'`)
	require.NoError(t, err)
	return b
}

// TestQueuedKeyRetryIsSupersededByQueuedJob: a job that fails while a new
// job of its key was queued (an object changed again while its embedding
// failed) is cancelled as superseded instead of going back to queued. It
// used to break the unique index: the outcome was never recorded and the
// job stayed running, then wedged the reaper for the whole queue.
func TestQueuedKeyRetryIsSupersededByQueuedJob(t *testing.T) {
	t.Parallel()
	b := queuedKeySetup(t)
	first := b.insert(t, jobSpec{})[0]
	var mu sync.Mutex
	var next uuid.UUID
	outcomes := map[uuid.UUID]jobqueue.Status{}
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{
		QueuedKey: "payload", QueuedKeyNoun: "payload value",
		Handler: jobqueue.EachFunc(func(_ context.Context, j jobqueue.Job) error {
			if j.ID != first {
				return nil
			}
			// The next job of the same key, queued while this one runs.
			id := b.insert(t, jobSpec{runAt: time.Now().Add(time.Hour)})[0]
			mu.Lock()
			next = id
			mu.Unlock()
			return errors.New("provider unreachable")
		}),
		OutcomeFunc: func(_ context.Context, _ pgx.Tx, outs []jobqueue.Outcome) error {
			mu.Lock()
			defer mu.Unlock()
			for _, o := range outs {
				outcomes[o.Job.ID] = o.Status
			}
			return nil
		},
	}})
	r := b.requireStatus(t, first, jobqueue.StatusCancelled)
	require.Equal(t, "superseded by a queued job for the same payload value", *r.ErrorMsg, "the noun, not the column")
	require.Nil(t, r.LockedBy)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, jobqueue.StatusQueued, jobqueue.Status(b.job(t, next).Status), "the queued job does the work")
	require.Equal(t, jobqueue.StatusCancelled, outcomes[first], "the hook hears what the job became")
	require.Zero(t, b.countStatus(t, jobqueue.StatusRunning))
}

// TestQueuedKeyReaperSupersedes: the reaper returns expired jobs of one key
// to queued once: the first by id goes back, a second of the same key, or
// one whose key already has a queued job, is cancelled, and the other
// expired jobs are reaped in the same pass (one conflict used to fail the
// reaper's whole statement on every tick).
func TestQueuedKeyReaperSupersedes(t *testing.T) {
	t.Parallel()
	b := queuedKeySetup(t)
	ctx := context.Background()
	run := jobSpec{status: jobqueue.StatusRunning}
	ids := b.insert(t, run, run, run, run, jobSpec{runAt: time.Now().Add(time.Hour)})
	back, twin, covered, alone, queued := ids[0], ids[1], ids[2], ids[3], ids[4]
	past := time.Now().Add(-time.Minute)
	for id, key := range map[uuid.UUID]int{back: 1, twin: 1, covered: 2, alone: 3} {
		_, err := b.pool.Exec(ctx, `UPDATE jobs SET status = 'running', attempt = 1, payload = $2, locked_by = 'dead', locked_until = $3 WHERE id = $1`, id, key, past)
		require.NoError(t, err)
	}
	_, err := b.pool.Exec(ctx, `UPDATE jobs SET payload = 2 WHERE id = $1`, queued)
	require.NoError(t, err)
	b.newProcess(t, opts{cfg: jobqueue.Config{PollInterval: 20 * time.Millisecond}, queue: jobqueue.QueueConfig{QueuedKey: "payload", QueuedKeyNoun: "payload value"}})
	b.requireStatus(t, back, jobqueue.StatusCompleted)
	b.requireStatus(t, alone, jobqueue.StatusCompleted)
	for _, id := range []uuid.UUID{twin, covered} {
		r := b.requireStatus(t, id, jobqueue.StatusCancelled)
		require.Equal(t, "superseded by a queued job for the same payload value", *r.ErrorMsg)
	}
	require.Equal(t, string(jobqueue.StatusQueued), b.job(t, queued).Status)
}

// TestQueuedKeyValidated: the column is an identifier, and its noun (the
// superseded message's words, written into the SQL) is lower-case words.
func TestQueuedKeyValidated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, err := jobqueue.NewClient(b.pool, jobqueue.Config{})
	require.NoError(t, err)
	require.Error(t, c.AddQueue(jobqueue.QueueConfig{Name: "other", Table: "jobs", QueuedKey: "payload; DROP TABLE jobs", QueuedKeyNoun: "payload"}))
	for _, noun := range []string{"", "payload'; DROP TABLE jobs; --", "Object", "two  spaces"} {
		err := c.AddQueue(jobqueue.QueueConfig{Name: "other", Table: "jobs", QueuedKey: "payload", QueuedKeyNoun: noun})
		require.ErrorContains(t, err, "QueuedKeyNoun", "%q", noun)
	}
	require.NoError(t, c.AddQueue(jobqueue.QueueConfig{Name: "other", Table: "jobs", QueuedKey: "payload", QueuedKeyNoun: "graph object"}))
}
