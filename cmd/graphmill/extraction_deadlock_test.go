package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// TestExtractionCommitRunsAgainOnHookDeadlock: an extraction's write
// transaction chosen as a deadlock's victim inside its outcome hook
// (job.completed waiting for the events publish lock while the job's row
// is held) runs again as a whole: the job completes at its first attempt
// with its job.completed and its logs, once each. Before, the hook's
// savepoint was rolled back and the job completed without job.completed
// (seen in a drill).
func TestExtractionCommitRunsAgainOnHookDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const apiKey = "AIzaSy-extraction-deadlock-1234"
	gemini := llmtest.NewGemini(t, apiKey)
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before the fake closes
	var calls atomic.Int32
	gemini.SetGenerate(func(llmtest.GenerateCall) string {
		calls.Add(1)
		<-release
		return extractionKeyAIAnswer
	})
	s := newServer(t, withKeyAI(gemini.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0) // no review: the hook is the commit's first publisher
	job := s.extractionJobOf(s.extractionUpload(project, "staff.md", "# Staff\n\nAda Lovelace works with Charles Babbage."))
	require.Eventually(t, func() bool {
		return calls.Load() > 0 && s.extractionCount(`SELECT count(*) FROM events WHERE type = 'job.started' AND payload->'jobIds' ? $1`, job) == 1
	}, 30*time.Second, 10*time.Millisecond, "the job was announced and its call is in flight")

	// The other side publishes first, then wants the job's row.
	other := pgtest.Hold(t, s.pool(), `SELECT pg_advisory_xact_lock($1)`, int64(0x67726576)) // events' publish lock
	free()
	require.Eventually(t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM pg_stat_activity a
			WHERE a.datname = current_database() AND a.wait_event_type = 'Lock'
			  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted AND l.relation = 'object_extraction_jobs'::regclass)`) == 1
	}, 30*time.Second, 10*time.Millisecond, "the write transaction, holding the job, waits for the publish lock")
	_, err := other.Exec(ctx, `SELECT 1 FROM object_extraction_jobs WHERE id = $1 FOR UPDATE`, job)
	require.NoError(t, err, "the write transaction gave way")
	require.NoError(t, other.Commit(ctx))

	j := s.extractionWaitJob(job, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMsg)
	require.Zero(t, j.RetryCount, "no attempt lost")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM events WHERE type = 'job.completed' AND payload->>'jobId' = $1`, job), "job.completed, once")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM extraction_job_logs WHERE job_id = $1 AND message LIKE 'extraction finished%'`, job),
		"the logs of the run that rolled back are not written again")
}
