package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// extractionCallTotalsMatch checks that job's call totals, as its row
// keeps them and as the monitoring list shows them (sorted by cost), equal
// the sums of its call log, and returns the number of calls.
func (s *testServer) extractionCallTotalsMatch(project, job string) int {
	s.t.Helper()
	var calls, keptCalls int
	var tokens, keptTokens int64
	var cost, keptCost float64
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(total_tokens), 0), coalesce(sum(cost_usd), 0)::float8
		FROM extraction_llm_calls WHERE job_id = $1`, job).Scan(&calls, &tokens, &cost))
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), `SELECT llm_calls, llm_total_tokens, llm_cost_usd::float8
		FROM object_extraction_jobs WHERE id = $1`, job).Scan(&keptCalls, &keptTokens, &keptCost))
	require.Equal(s.t, [3]any{calls, tokens, cost}, [3]any{keptCalls, keptTokens, keptCost}, "the row's totals are the call log's sums")
	l := s.extractionMonitorList(s.admin, project, "sort_by=total_cost_usd")
	var seen bool
	for _, it := range l.Items {
		if it.ID == job {
			seen = true
			require.Equal(s.t, calls, *it.TotalLLMCalls)
			require.InDelta(s.t, cost, *it.TotalCostUSD, 0)
		}
	}
	require.True(s.t, seen, "the job is listed")
	return calls
}

// extractionFailingCall starts a server whose only provider is a key-ai
// fake with apiKey, and a job whose first extraction call the fake refuses
// (400); it returns once that job failed.
func extractionFailingCall(t *testing.T, apiKey string) (s *testServer, project, job string) {
	t.Helper()
	gemini := llmtest.NewGemini(t, apiKey)
	gemini.SetGenerate(func(llmtest.GenerateCall) string { return extractionKeyAIAnswer })
	s = newServer(t, withKeyAI(gemini.URL(), apiKey), withoutLocalProvider)
	ctx := context.Background()
	project, _ = s.defaultProject()
	require.NoError(t, s.m.jobs.Pause(ctx, "object_extraction"))
	doc := s.extractionUpload(project, "engine.md", "# Engine\n\nAda Lovelace worked with Charles Babbage.")
	s.waitDocument(project, doc)
	job = s.extractionJobOf(doc)
	// Only the extraction call fails: an embedding or a model-list
	// request meanwhile must not take the failure.
	gemini.FailNextOn(llmtest.EndpointGenerate, 1, 400)
	require.NoError(t, s.m.jobs.Resume(ctx, "object_extraction"))
	require.Equal(t, "failed", s.extractionWaitJob(job, "failed", "completed").Status)
	return s, project, job
}

// TestExtractionCallTotalsFailureRetry: a job whose call failed and that
// a manual retry ran again keeps totals equal to its call log, the failed
// call included, as the monitoring list shows them.
func TestExtractionCallTotalsFailureRetry(t *testing.T) {
	t.Parallel()
	s, project, id := extractionFailingCall(t, "AIzaSy-extraction-totals-1234")
	require.Equal(t, 1, s.extractionCallTotalsMatch(project, id), "the failed call")

	s.must(200, "POST", "/api/admin/extraction-jobs/"+id+"/retry", s.admin, nil)
	require.Equal(t, "completed", s.extractionWaitJob(id, "completed", "failed").Status)
	require.Equal(t, 2, s.extractionCallTotalsMatch(project, id), "the failed call and the retry's")
}

// TestExtractionCallTotalsCrashAndCancel: a job run again after its worker
// was lost, and a job cancelled while a call is in flight (the call is
// written after the cancel), keep totals equal to their call logs.
func TestExtractionCallTotalsCrashAndCancel(t *testing.T) {
	t.Parallel()
	s, project, id, _ := extractionCompletedJob(t)
	first := s.extractionCallTotalsMatch(project, id)
	require.Positive(t, first)
	s.extractionLoseWorker(id)
	require.Equal(t, "completed", s.extractionWaitJob(id, "completed", "failed").Status)
	require.Equal(t, 2*first, s.extractionCallTotalsMatch(project, id), "both attempts' calls")

	b, bproject, _, bid := extractionBlockedCall(t, 1)
	b.must(200, "POST", "/api/admin/extraction-jobs/"+bid+"/cancel", b.admin, nil)
	require.Eventually(t, func() bool {
		return b.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1 AND status = 'error'`, bid) == 1
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 2, b.extractionCallTotalsMatch(bproject, bid), "the call before the cancel and the one it stopped")
}
