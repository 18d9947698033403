package jobqueue_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
)

// statementCounter is a pgx QueryTracer counting the statements sent.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countedPool opens a second pool on the test's database whose statements
// are counted.
func countedPool(t *testing.T, url string) (*pgxpool.Pool, *statementCounter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	counter := &statementCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pool.Ping(context.Background()))
	counter.n.Store(0)
	return pool, counter
}

func (b *testBundle) fail(t *testing.T, id uuid.UUID, msg string, retries int) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `UPDATE jobs SET status = 'failed', error_msg = $2, retry_count = $3, completed_at = now() WHERE id = $1`, id, msg, retries)
	require.NoError(t, err)
}

// TestTransitionsReturnTheRow: Cancel and Retry are one statement each and
// return the job as they left it with what they replaced, so that a caller
// needs no second read; not found and the wrong state keep their messages.
func TestTransitionsReturnTheRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c := declaredClient(t, b)
	pool, counter := countedPool(t, b.url)
	project := uuid.New()
	ids := b.insert(t, jobSpec{project: &project}, jobSpec{project: &project})
	b.fail(t, ids[1], "boom", 3)

	ch, err := c.Retry(ctx, pool, queueName, ids[1])
	require.NoError(t, err)
	require.EqualValues(t, 1, counter.n.Load(), "one statement")
	require.Equal(t, ids[1], ch.ID)
	require.Equal(t, &project, ch.ProjectID)
	require.Equal(t, jobqueue.StatusQueued, ch.Status)
	require.Zero(t, ch.RetryCount)
	require.True(t, ch.StartedAt.IsZero())
	require.False(t, ch.UpdatedAt.IsZero())
	require.Equal(t, jobqueue.Previous{Status: jobqueue.StatusFailed, ErrorMsg: new("boom"), RetryCount: 3}, ch.Previous)
	r := b.job(t, ids[1])
	require.Equal(t, "queued", r.Status)
	require.Nil(t, r.ErrorMsg)

	counter.n.Store(0)
	ch, err = c.Cancel(ctx, pool, queueName, ids[0])
	require.NoError(t, err)
	require.EqualValues(t, 1, counter.n.Load(), "one statement")
	require.Equal(t, jobqueue.StatusCancelled, ch.Status)
	require.Equal(t, jobqueue.StatusQueued, ch.Previous.Status)
	require.Equal(t, "cancelled", b.job(t, ids[0]).Status)

	_, err = c.Cancel(ctx, pool, queueName, ids[0])
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	require.EqualError(t, err, "job "+ids[0].String()+" is cancelled; only queued or running jobs can be cancelled")
	_, err = c.Retry(ctx, pool, queueName, ids[0])
	require.EqualError(t, err, "job "+ids[0].String()+" is cancelled; only failed jobs can be retried")
	unknown := uuid.New()
	_, err = c.Retry(ctx, pool, queueName, unknown)
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
	require.EqualError(t, err, "job "+unknown.String()+" not found")
}

// TestBulkTransitionsAreOneStatement: CancelWhere and RetryWhere change
// every selected job of a project in one statement, leave the others
// alone, return the jobs with their previous values, and cancel a running
// job's handler.
func TestBulkTransitionsAreOneStatement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	started, observed := make(chan struct{}), make(chan error, 1)
	p := b.newProcess(t, opts{queue: jobqueue.QueueConfig{Handler: jobqueue.HandlerFunc(
		func(ctx context.Context, jobs []jobqueue.Job) []error {
			close(started)
			<-ctx.Done()
			observed <- context.Cause(ctx)
			return []error{ctx.Err()}
		})}})
	project, other := uuid.New(), uuid.New()
	running := b.insert(t, jobSpec{project: &project})[0]
	<-started
	require.NoError(t, p.client.Pause(ctx, queueName))
	queued := b.insertN(t, 5, jobSpec{project: &project})
	failed := b.insertN(t, 4, jobSpec{project: &project})
	for i, id := range failed {
		b.fail(t, id, "boom", i)
	}
	others := b.insert(t, jobSpec{project: &other}, jobSpec{project: &other})
	b.fail(t, others[1], "elsewhere", 1)
	pool, counter := countedPool(t, b.url)

	// Bulk retry: the project's four failed jobs, one statement.
	retried, err := p.client.RetryWhere(ctx, pool, queueName, jobqueue.Where{ProjectID: &project})
	require.NoError(t, err)
	require.EqualValues(t, 1, counter.n.Load(), "one statement for the bulk retry")
	require.ElementsMatch(t, failed, idsOf(retried))
	for _, ch := range retried {
		require.Equal(t, jobqueue.StatusQueued, ch.Status)
		require.Equal(t, jobqueue.StatusFailed, ch.Previous.Status)
		require.Equal(t, "boom", *ch.Previous.ErrorMsg)
		require.Equal(t, slices.Index(failed, ch.ID), ch.Previous.RetryCount)
		require.Zero(t, ch.RetryCount)
	}
	require.Equal(t, "failed", b.job(t, others[1]).Status, "other projects untouched")

	// Bulk cancel of queued only: the running job stays.
	counter.n.Store(0)
	cancelled, err := p.client.CancelWhere(ctx, pool, queueName, jobqueue.Where{ProjectID: &project, Statuses: []jobqueue.Status{jobqueue.StatusQueued}})
	require.NoError(t, err)
	require.EqualValues(t, 1, counter.n.Load(), "one statement for the bulk cancel")
	require.ElementsMatch(t, append(append([]uuid.UUID{}, queued...), failed...), idsOf(cancelled))
	require.Equal(t, "running", b.job(t, running).Status)

	// Bulk cancel of the rest: the running job, whose handler stops.
	counter.n.Store(0)
	cancelled, err = p.client.CancelWhere(ctx, pool, queueName, jobqueue.Where{ProjectID: &project})
	require.NoError(t, err)
	require.EqualValues(t, 1, counter.n.Load())
	require.Len(t, cancelled, 1)
	require.Equal(t, running, cancelled[0].ID)
	require.Equal(t, jobqueue.StatusRunning, cancelled[0].Previous.Status)
	require.ErrorIs(t, <-observed, jobqueue.ErrCancelled)
	require.Equal(t, "cancelled", b.job(t, running).Status)
	require.Equal(t, 10, b.countStatus(t, jobqueue.StatusCancelled))
	require.Equal(t, "queued", b.job(t, others[0]).Status, "other projects untouched")

	// A domain column narrows the selection; a status the transition does
	// not apply to is refused.
	counter.n.Store(0)
	got, err := p.client.CancelWhere(ctx, pool, queueName, jobqueue.Where{Column: "payload", Equals: 0, ProjectID: &other})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{others[0]}, idsOf(got))
	_, err = p.client.RetryWhere(ctx, pool, queueName, jobqueue.Where{Statuses: []jobqueue.Status{jobqueue.StatusQueued}})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))

	// Ids narrow the selection, across projects, alone or with a column;
	// unknown ids and jobs in another state count zero.
	notSelected := b.insert(t, jobSpec{project: &project}, jobSpec{project: &other})
	b.fail(t, notSelected[0], "not selected", 0)
	counter.n.Store(0)
	got, err = p.client.RetryWhere(ctx, pool, queueName, jobqueue.Where{IDs: []uuid.UUID{others[1], failed[0], uuid.New()}})
	require.NoError(t, err)
	require.EqualValues(t, 1, counter.n.Load(), "one statement for a retry by ids")
	require.Equal(t, []uuid.UUID{others[1]}, idsOf(got))
	got, err = p.client.CancelWhere(ctx, pool, queueName, jobqueue.Where{Column: "project_id", Equals: other, IDs: []uuid.UUID{others[1], queued[0]}})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{others[1]}, idsOf(got))
	require.Equal(t, "cancelled", b.job(t, others[1]).Status)
	require.Equal(t, "failed", b.job(t, notSelected[0]).Status)
	require.Equal(t, "queued", b.job(t, notSelected[1]).Status)
}

func idsOf(chs []jobqueue.Changed) []uuid.UUID {
	out := make([]uuid.UUID, len(chs))
	for i, ch := range chs {
		out[i] = ch.ID
	}
	return out
}
