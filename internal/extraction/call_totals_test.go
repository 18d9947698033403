package extraction

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/provider"
)

// callTotals are a job's call totals as its row keeps them (kept) and as
// its call log sums them (summed).
type callTotals struct {
	calls, tokens int64
	cost          float64 // the numeric sum, as the list reads it
}

func (f storeFixture) totals(t *testing.T, job uuid.UUID) (kept, summed callTotals) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, f.tx.QueryRow(ctx, `SELECT llm_calls, llm_total_tokens, llm_cost_usd::float8 FROM object_extraction_jobs WHERE id = $1`, job).
		Scan(&kept.calls, &kept.tokens, &kept.cost))
	require.NoError(t, f.tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(total_tokens), 0), coalesce(sum(cost_usd), 0)::float8 FROM extraction_llm_calls WHERE job_id = $1`, job).
		Scan(&summed.calls, &summed.tokens, &summed.cost))
	return kept, summed
}

// TestCallTotalsFollowTheCallLog: a job row's call totals (calls, tokens,
// cost) equal the sums of its calls after every way calls are written:
// the worker's insert (callInsert, success and error calls, as a retried
// or cancelled job writes them), a several-job insert in one statement,
// a change of a call's cost or job, deleted calls, and a deleted job.
func TestCallTotalsFollowTheCallLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStoreFixture(t)
	now := time.Now().UTC()
	f.addJobs(t, now, []priorJob{
		{jobType: JobTypeFull, status: "completed", created: 2 * time.Hour, completed: time.Hour},
		{jobType: JobTypeIncremental, status: "failed", created: time.Hour, completed: time.Minute},
	})
	var jobs []uuid.UUID
	rows, err := f.tx.Query(ctx, `SELECT id FROM object_extraction_jobs WHERE project_id = $1 ORDER BY created_at`, f.project)
	require.NoError(t, err)
	for rows.Next() {
		var id uuid.UUID
		require.NoError(t, rows.Scan(&id))
		jobs = append(jobs, id)
	}
	require.NoError(t, rows.Err())
	a, b := jobs[0], jobs[1]
	check := func(step string, want map[uuid.UUID]callTotals) {
		t.Helper()
		for job, w := range want {
			kept, summed := f.totals(t, job)
			require.Equal(t, summed, kept, step)
			require.Equal(t, w, kept, step)
		}
	}
	check("no calls", map[uuid.UUID]callTotals{a: {}, b: {}})

	call := func(job uuid.UUID, status string, tokens int, cost float64) LLMCall {
		c := LLMCall{JobID: job}
		c.Call = provider.Call{
			ID: uuid.Must(uuid.NewV7()), Provider: "google", ModelName: "gemini-2.5-flash", Status: status,
			InputTokens: tokens - 1, OutputTokens: 1, TotalTokens: tokens, CostUSD: cost, StartedAt: now,
		}
		return c
	}
	// The worker's calls: a success, then a failed attempt and its retry.
	require.NoError(t, callInsert(ctx, f.tx, f.project, call(a, CallSuccess, 100, 0.000125)))
	require.NoError(t, callInsert(ctx, f.tx, f.project, call(a, CallError, 40, 0)))
	require.NoError(t, callInsert(ctx, f.tx, f.project, call(a, CallSuccess, 60, 0.0000375)))
	check("worker calls", map[uuid.UUID]callTotals{a: {calls: 3, tokens: 200, cost: 0.0001625}, b: {}})

	// Calls of two jobs in one statement.
	_, err = f.tx.Exec(ctx, `INSERT INTO extraction_llm_calls (id, job_id, project_id, provider, model_name, status, total_tokens, cost_usd, started_at)
		SELECT gen_random_uuid(), j, $3, 'google', 'm', 'success', 10, 0.1, now() FROM unnest(ARRAY[$1::uuid, $2::uuid, $2::uuid]) AS j`, a, b, f.project)
	require.NoError(t, err)
	check("one statement", map[uuid.UUID]callTotals{a: {calls: 4, tokens: 210, cost: 0.1001625}, b: {calls: 2, tokens: 20, cost: 0.2}})

	// A call's cost changed, and a call moved to the other job.
	_, err = f.tx.Exec(ctx, `UPDATE extraction_llm_calls SET cost_usd = 0.5 WHERE job_id = $1 AND cost_usd = 0.1`, a)
	require.NoError(t, err)
	_, err = f.tx.Exec(ctx, `UPDATE extraction_llm_calls SET job_id = $2 WHERE job_id = $1 AND status = 'error'`, a, b)
	require.NoError(t, err)
	check("updated", map[uuid.UUID]callTotals{a: {calls: 3, tokens: 170, cost: 0.5001625}, b: {calls: 3, tokens: 60, cost: 0.2}})

	// Calls deleted.
	_, err = f.tx.Exec(ctx, `DELETE FROM extraction_llm_calls WHERE job_id = $1 AND cost_usd = 0.1`, b)
	require.NoError(t, err)
	check("deleted", map[uuid.UUID]callTotals{a: {calls: 3, tokens: 170, cost: 0.5001625}, b: {calls: 1, tokens: 40, cost: 0}})

	// A deleted job takes its calls along; the other job keeps its totals.
	_, err = f.tx.Exec(ctx, `DELETE FROM object_extraction_jobs WHERE id = $1`, b)
	require.NoError(t, err)
	check("job deleted", map[uuid.UUID]callTotals{a: {calls: 3, tokens: 170, cost: 0.5001625}})
}
