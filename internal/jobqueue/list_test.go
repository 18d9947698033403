package jobqueue_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
)

// TestDeleteWhereDeletesFinalJobsOnly: DeleteWhere deletes, in one
// statement, the final jobs among those selected, skips and counts the
// queued and running ones, and honours the project, column and status
// narrowing; unknown ids count zero.
func TestDeleteWhereDeletesFinalJobsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c := declaredClient(t, b)
	project, other := uuid.New(), uuid.New()
	ids := b.insert(t,
		jobSpec{project: &project},
		jobSpec{project: &project, status: jobqueue.StatusRunning},
		jobSpec{project: &project, status: jobqueue.StatusCompleted},
		jobSpec{project: &project, status: jobqueue.StatusFailed},
		jobSpec{project: &project, status: jobqueue.StatusCancelled},
		jobSpec{project: &other, status: jobqueue.StatusRequiresReview},
		jobSpec{project: &other, status: jobqueue.StatusCompleted},
	)
	exists := func(id uuid.UUID) bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE id = $1`, id).Scan(&n))
		return n == 1
	}
	pool, counter := countedPool(t, b.url)

	// A project narrows; a status narrows among the final ones.
	deleted, skipped, err := c.DeleteWhere(ctx, pool, queueName, jobqueue.Where{ProjectID: &other, Statuses: []jobqueue.Status{jobqueue.StatusRequiresReview}})
	require.NoError(t, err)
	require.Equal(t, [2]int{1, 0}, [2]int{deleted, skipped})
	require.False(t, exists(ids[5]))
	require.True(t, exists(ids[6]))

	// By ids: the final ones go, the queued and running ones are counted.
	counter.n.Store(0)
	deleted, skipped, err = c.DeleteWhere(ctx, pool, queueName, jobqueue.Where{IDs: []uuid.UUID{ids[0], ids[1], ids[2], ids[3], uuid.New()}})
	require.NoError(t, err)
	require.EqualValues(t, 1, counter.n.Load(), "one statement")
	require.Equal(t, [2]int{2, 2}, [2]int{deleted, skipped})
	require.True(t, exists(ids[0]))
	require.True(t, exists(ids[1]))
	require.False(t, exists(ids[2]))
	require.False(t, exists(ids[3]))

	// A column narrows the ids.
	_, err = b.pool.Exec(ctx, `UPDATE jobs SET payload = 7 WHERE id = $1`, ids[6])
	require.NoError(t, err)
	deleted, _, err = c.DeleteWhere(ctx, pool, queueName, jobqueue.Where{IDs: []uuid.UUID{ids[4], ids[6]}, Column: "payload", Equals: 7})
	require.NoError(t, err)
	require.Equal(t, 1, deleted)
	require.True(t, exists(ids[4]))
	require.False(t, exists(ids[6]))

	// Only final states can be selected.
	_, _, err = c.DeleteWhere(ctx, pool, queueName, jobqueue.Where{Statuses: []jobqueue.Status{jobqueue.StatusQueued}})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.True(t, exists(ids[0]))
}

// TestCountByStatus: every status is counted, zeros included, in
// lifecycle order; CountOf sums one status or all.
func TestCountByStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	project := uuid.New()
	ids := b.insert(t, jobSpec{project: &project}, jobSpec{project: &project, status: jobqueue.StatusFailed}, jobSpec{project: &project, status: jobqueue.StatusFailed})
	b.fail(t, ids[1], "boom", 1)

	counts, err := jobqueue.CountByStatus(ctx, b.pool, `SELECT status, count(*)::int, count(error_msg)::int FROM jobs GROUP BY status`)
	require.NoError(t, err)
	require.Equal(t, []jobqueue.StatusCount{
		{Status: jobqueue.StatusQueued, Count: 1},
		{Status: jobqueue.StatusRunning},
		{Status: jobqueue.StatusCompleted},
		{Status: jobqueue.StatusFailed, Count: 2, WithErrors: 1},
		{Status: jobqueue.StatusCancelled},
		{Status: jobqueue.StatusRequiresReview},
	}, counts)
	require.Equal(t, 3, jobqueue.CountOf(counts, ""))
	require.Equal(t, 2, jobqueue.CountOf(counts, "failed"))
	require.Zero(t, jobqueue.CountOf(counts, "running"))
}

func TestVocabulary(t *testing.T) {
	t.Parallel()
	v := jobqueue.Vocabulary{
		{Name: "pending", Status: jobqueue.StatusQueued},
		{Name: "sent", Status: jobqueue.StatusCompleted},
	}
	st, ok := v.Status("sent")
	require.True(t, ok)
	require.Equal(t, jobqueue.StatusCompleted, st)
	_, ok = v.Status("completed")
	require.False(t, ok, "a job column word is not a list word")
	require.Equal(t, "pending", v.Name(jobqueue.StatusQueued))
	require.Equal(t, "failed", v.Name(jobqueue.StatusFailed), "no word: the job status")
	counts := []jobqueue.StatusCount{{Status: jobqueue.StatusCompleted, Count: 4, WithErrors: 1}, {Status: jobqueue.StatusFailed, Count: 2}}
	require.Equal(t, []jobqueue.NamedCount{{Name: "pending"}, {Name: "sent", Count: 4, WithErrors: 1}}, v.Counts(counts))
}
