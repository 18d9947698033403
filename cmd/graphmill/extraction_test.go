package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// extractionJob is an ObjectExtractionJob as the admin API answers it.
type extractionJob struct {
	ID                   string     `json:"id"`
	ProjectID            string     `json:"projectId"`
	DocumentID           string     `json:"documentId"`
	JobType              string     `json:"jobType"`
	TriggerType          string     `json:"triggerType"`
	Status               string     `json:"status"`
	Priority             int        `json:"priority"`
	ErrorMsg             string     `json:"errorMsg"`
	RetryCount           int        `json:"retryCount"`
	MaxRetries           int        `json:"maxRetries"`
	ObjectsCreated       int        `json:"objectsCreated"`
	RelationshipsCreated int        `json:"relationshipsCreated"`
	SuggestionsCreated   int        `json:"suggestionsCreated"`
	StartedAt            *time.Time `json:"startedAt"`
	CompletedAt          *time.Time `json:"completedAt"`
	CreatedAt            time.Time  `json:"createdAt"`
}

type extractionLog struct {
	ID        string         `json:"id"`
	Operation string         `json:"operation"`
	Level     string         `json:"level"`
	Message   string         `json:"message"`
	Metadata  map[string]any `json:"metadata"`
	CreatedAt time.Time      `json:"createdAt"`
}

type extractionLogList struct {
	Data  []extractionLog `json:"data"`
	Total int             `json:"total"`
}

type extractionStats struct {
	Total                int64            `json:"total"`
	ByStatus             map[string]int64 `json:"byStatus"`
	ByJobType            map[string]int64 `json:"byJobType"`
	JobsLastHour         int64            `json:"jobsLastHour"`
	JobsLast24Hours      int64            `json:"jobsLast24Hours"`
	AvgDurationMs        float64          `json:"avgDurationMs"`
	ObjectsCreated       int64            `json:"objectsCreated"`
	RelationshipsCreated int64            `json:"relationshipsCreated"`
	SuggestionsCreated   int64            `json:"suggestionsCreated"`
}

// extractionUpload uploads a Markdown document and returns its id.
func (s *testServer) extractionUpload(project, filename, content string) string {
	s.t.Helper()
	var d docBody
	s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": filename, "content": content, "mimeType": "text/markdown"},
		header{"X-Project-ID", project}).Decode(s.t, &d)
	return d.ID
}

// extractionJobOf waits for the extraction job of a document to exist and
// returns its id (the newest when there are several).
func (s *testServer) extractionJobOf(doc string) string {
	s.t.Helper()
	var id string
	require.Eventually(s.t, func() bool {
		err := s.m.db.pool.QueryRow(context.Background(),
			`SELECT id::text FROM object_extraction_jobs WHERE document_id = $1 ORDER BY created_at DESC LIMIT 1`, doc).Scan(&id)
		return err == nil
	}, 20*time.Second, 20*time.Millisecond)
	return id
}

// extractionGetJob reads a job through the admin API.
func (s *testServer) extractionGetJob(id string) extractionJob {
	s.t.Helper()
	var j extractionJob
	s.must(200, "GET", "/api/admin/extraction-jobs/"+id, s.admin, nil).Decode(s.t, &j)
	return j
}

// extractionWaitJob waits until a job is in one of statuses.
func (s *testServer) extractionWaitJob(id string, statuses ...string) extractionJob {
	s.t.Helper()
	var j extractionJob
	require.Eventually(s.t, func() bool {
		j = s.extractionGetJob(id)
		for _, st := range statuses {
			if j.Status == st {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "job %s never reached %v", id, statuses)
	return j
}

func (s *testServer) extractionLogs(id string) []extractionLog {
	s.t.Helper()
	var l extractionLogList
	s.must(200, "GET", "/api/admin/extraction-jobs/"+id+"/logs", s.admin, nil).Decode(s.t, &l)
	require.Equal(s.t, len(l.Data), l.Total)
	return l.Data
}

func extractionOps(logs []extractionLog) map[string]int {
	out := map[string]int{}
	for _, l := range logs {
		out[l.Operation]++
	}
	return out
}

// extractionSetThreshold sets the project's review threshold.
func (s *testServer) extractionSetThreshold(project string, v float64) {
	s.t.Helper()
	r := s.must(200, "PUT", "/api/projects/"+project+"/extraction-settings", s.admin, map[string]any{"reviewThreshold": v})
	require.InDelta(s.t, v, r.JSON(s.t)["reviewThreshold"], 1e-9)
}

func extractionReadFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/extraction/" + name)
	require.NoError(t, err)
	return string(b)
}

// extractionCount runs a count query.
func (s *testServer) extractionCount(sql string, args ...any) int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// TestExtractionPipelineLocal: real Markdown documents go through parsing
// and the auto-queued full extraction with the offline provider; the graph
// holds objects and relationships with provenance to the chunks, the logs
// hold every step, statistics and monitoring agree.
func TestExtractionPipelineLocal(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0) // everything accepted: no review here
	files := []string{"orbit.md", "lantern.md", "harbor.md"}
	jobs := map[string]string{}
	for _, f := range files {
		doc := s.extractionUpload(project, f, extractionReadFile(t, f))
		jobs[f] = s.extractionJobOf(doc)
	}
	totalObjects, totalRels := 0, 0
	for _, f := range files {
		j := s.extractionWaitJob(jobs[f], "completed", "failed", "requires_review")
		require.Equal(t, "completed", j.Status, "%s: %s", f, j.ErrorMsg)
		require.Equal(t, "full_extraction", j.JobType)
		require.Equal(t, "manual", j.TriggerType)
		require.Positive(t, j.ObjectsCreated, f)
		require.NotNil(t, j.StartedAt)
		require.NotNil(t, j.CompletedAt)
		totalObjects += j.ObjectsCreated
		totalRels += j.RelationshipsCreated

		// Every object the job wrote links to chunks of its document.
		require.Positive(t, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE extraction_job_id = $1`, j.ID), f)
		require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_objects o WHERE o.extraction_job_id = $1
			AND NOT EXISTS (SELECT 1 FROM graph_object_provenance p JOIN document_chunks c ON c.id = p.chunk_id
			                WHERE p.object_id = o.id AND c.document_id = $2)`, j.ID, j.DocumentID), f)
		// Every chunk was extracted.
		require.Zero(t, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE document_id = $1 AND extracted_at IS NULL`, j.DocumentID))

		logs := s.extractionLogs(j.ID)
		ops := extractionOps(logs)
		for _, op := range []string{"chunk_processing", "llm_call", "object_creation"} {
			require.Positive(t, ops[op], "%s: %s logged", f, op)
		}
		require.Equal(t, j.ObjectsCreated, ops["object_creation"], f)
		require.Equal(t, j.RelationshipsCreated, ops["relationship_creation"], f)
		for i, l := range logs {
			if i > 0 {
				require.False(t, l.CreatedAt.Before(logs[i-1].CreatedAt), "logs in order")
			}
			require.EqualValues(t, 1, l.Metadata["attempt"])
			if l.Operation == "llm_call" {
				require.Equal(t, "local/heuristic-v1", l.Metadata["model"])
				require.Equal(t, "local", l.Metadata["provider"])
				require.Positive(t, l.Metadata["inputTokens"])
				require.Positive(t, l.Metadata["outputTokens"])
				require.Contains(t, l.Metadata, "costUsd")
				require.Contains(t, l.Metadata, "durationMs")
			}
		}

		// Monitoring agrees with the admin view and the call log.
		var d struct {
			ID                   string           `json:"id"`
			SourceType           string           `json:"source_type"`
			SourceID             string           `json:"source_id"`
			Status               string           `json:"status"`
			ObjectsCreated       int              `json:"objects_created"`
			RelationshipsCreated int              `json:"relationships_created"`
			DurationMs           *int64           `json:"duration_ms"`
			Logs                 []map[string]any `json:"logs"`
			LLMCalls             []map[string]any `json:"llm_calls"`
			Metrics              struct {
				TotalLLMCalls int     `json:"total_llm_calls"`
				TotalTokens   int     `json:"total_tokens"`
				SuccessRate   float64 `json:"success_rate"`
				AvgMs         float64 `json:"avg_call_duration_ms"`
			} `json:"metrics"`
		}
		hp := header{"X-Project-ID", project}
		s.must(200, "GET", "/api/monitoring/extraction-jobs/"+j.ID, s.admin, nil, hp).Decode(t, &d)
		require.Equal(t, "completed", d.Status)
		require.Equal(t, "document", d.SourceType)
		require.Equal(t, j.DocumentID, d.SourceID)
		require.Equal(t, j.ObjectsCreated, d.ObjectsCreated)
		require.Equal(t, j.RelationshipsCreated, d.RelationshipsCreated)
		require.NotNil(t, d.DurationMs)
		require.Len(t, d.Logs, len(logs))
		require.Len(t, d.LLMCalls, ops["llm_call"])
		require.Equal(t, ops["llm_call"], d.Metrics.TotalLLMCalls)
		require.InDelta(t, 1.0, d.Metrics.SuccessRate, 1e-9)
		tokens := 0
		for _, c := range d.LLMCalls {
			require.Equal(t, "success", c["status"])
			require.Equal(t, "local/heuristic-v1", c["model_name"])
			tokens += int(c["total_tokens"].(float64))
			require.NotEmpty(t, c["request_payload"])
			require.NotEmpty(t, c["response_payload"])
		}
		require.Equal(t, tokens, d.Metrics.TotalTokens)
		var calls struct {
			LLMCalls []map[string]any `json:"llm_calls"`
		}
		s.must(200, "GET", "/api/monitoring/extraction-jobs/"+j.ID+"/llm-calls", s.admin, nil, hp).Decode(t, &calls)
		require.Len(t, calls.LLMCalls, d.Metrics.TotalLLMCalls)
		var pl struct {
			Logs []map[string]any `json:"logs"`
		}
		s.must(200, "GET", "/api/monitoring/extraction-jobs/"+j.ID+"/logs?level=info", s.admin, nil, hp).Decode(t, &pl)
		require.NotEmpty(t, pl.Logs)
		for _, l := range pl.Logs {
			require.Equal(t, "info", l["level"])
			require.NotEmpty(t, l["processType"])
		}
	}

	// Objects and relationships from the documents, relationships with
	// provenance too.
	require.Positive(t, totalRels)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1 AND type = 'Person' AND name = 'Maria Gonzalez' AND status = 'accepted'`, project))
	require.Positive(t, s.extractionCount(`SELECT count(*) FROM graph_relationships WHERE project_id = $1`, project))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_relationships r WHERE r.project_id = $1
		AND NOT EXISTS (SELECT 1 FROM graph_relationship_provenance p WHERE p.relationship_id = r.id)`, project))

	// Every extracted object gets its graph embedding (the default text,
	// no policy), with the project's embedding model.
	require.Eventually(t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM graph_objects o WHERE o.project_id = $1 AND o.deleted_at IS NULL
			AND NOT EXISTS (SELECT 1 FROM graph_object_embeddings e WHERE e.object_id = o.id)`, project) == 0
	}, 60*time.Second, 50*time.Millisecond, "every object embedded; the unembedded objects' jobs: %s", unembeddedJobs(s, project))
	require.Equal(t, extractionLiveObjects(s, project), s.extractionCount(`SELECT count(*) FROM graph_object_embeddings
		WHERE project_id = $1 AND policy_id = '00000000-0000-0000-0000-000000000000' AND model = 'local/feature-hash-v1' AND dimension = 768`, project))

	var st extractionStats
	s.must(200, "GET", "/api/admin/extraction-jobs/projects/"+project+"/statistics", s.admin, nil).Decode(t, &st)
	require.EqualValues(t, 3, st.Total)
	require.EqualValues(t, 3, st.ByStatus["completed"])
	require.Zero(t, st.ByStatus["failed"])
	require.Contains(t, st.ByStatus, "requires_review")
	require.EqualValues(t, 3, st.ByJobType["full_extraction"])
	require.Zero(t, st.ByJobType["incremental"])
	require.EqualValues(t, 3, st.JobsLastHour)
	require.EqualValues(t, 3, st.JobsLast24Hours)
	require.Positive(t, st.AvgDurationMs)
	require.EqualValues(t, totalObjects, st.ObjectsCreated)
	require.EqualValues(t, totalRels, st.RelationshipsCreated)

	var ml struct {
		Items []map[string]any `json:"items"`
		Total int              `json:"total"`
	}
	s.must(200, "GET", "/api/monitoring/extraction-jobs?status=completed&sort_by=duration_ms&sort_order=asc", s.admin, nil,
		header{"X-Project-ID", project}).Decode(t, &ml)
	require.Equal(t, 3, ml.Total)
	prev := -1.0
	for _, it := range ml.Items {
		d := it["duration_ms"].(float64)
		require.GreaterOrEqual(t, d, prev, "sorted by duration")
		prev = d
		require.Positive(t, it["total_llm_calls"])
		require.Contains(t, it, "total_cost_usd")
	}
}

// unembeddedJobs describes, for a failure message, the graph embedding
// jobs of the project's live objects that have no embedding: each job's
// status, attempt, run_at and error.
func unembeddedJobs(s *testServer, project string) fmt.Stringer {
	return lazyString(func() string {
		rows, err := s.m.db.pool.Query(context.Background(), `SELECT o.id::text, coalesce(j.status, 'no job'), coalesce(j.attempt, 0),
				coalesce(j.run_at::text, ''), coalesce(j.error_msg, '')
			FROM graph_objects o LEFT JOIN graph_embedding_jobs j ON j.object_id = o.id
			WHERE o.project_id = $1 AND o.deleted_at IS NULL
				AND NOT EXISTS (SELECT 1 FROM graph_object_embeddings e WHERE e.object_id = o.id)
			ORDER BY o.id, j.created_at`, project)
		if err != nil {
			return err.Error()
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var id, status, runAt, msg string
			var attempt int
			if err := rows.Scan(&id, &status, &attempt, &runAt, &msg); err != nil {
				return err.Error()
			}
			fmt.Fprintf(&b, "\n  object %s: %s, attempt %d, run_at %s, error %q", id, status, attempt, runAt, msg)
		}
		return b.String()
	})
}

func extractionLiveObjects(s *testServer, project string) int {
	return s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1 AND deleted_at IS NULL`, project)
}

// extractionKeyAIAnswer is the fake model's extraction answer: valid
// objects, one with an invalid property (repaired), one of an unknown type
// and one without properties that fit (dropped), and relationships, one to
// an object that was not extracted (dropped).
const extractionKeyAIAnswer = `{
  "objects": [
    {"type": "Person", "name": "Ada Lovelace", "key": "Ada Lovelace", "description": "Mathematician.",
     "properties": {"occupation": "mathematician", "birthDate": 1815}, "confidence": 0.95},
    {"type": "Person", "name": "Charles Babbage", "key": "Charles Babbage", "properties": {}, "confidence": 0.9},
    {"type": "Organization", "name": "Analytical Society", "properties": {}, "confidence": 0.85},
    {"type": "Spaceship", "name": "Enterprise", "properties": {}, "confidence": 0.99}
  ],
  "relationships": [
    {"type": "FOUNDED", "source": "Charles Babbage", "target": "Analytical Society", "confidence": 0.9},
    {"type": "WORKS_FOR", "source": "Ada Lovelace", "target": "Royal Society", "confidence": 0.8}
  ]
}`

// TestExtractionThroughKeyAI: the same pipeline through the real genai
// client against the Gemini fake: the fake's answer is validated (one
// object repaired, one dropped, each with a validation entry) and the call
// is priced exactly as the usage ledger prices it.
func TestExtractionThroughKeyAI(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-extraction-key-1234"
	gemini := llmtest.NewGemini(t, apiKey)
	var mu sync.Mutex
	var schemas []string
	gemini.SetGenerate(func(c llmtest.GenerateCall) string {
		mu.Lock()
		schemas = append(schemas, string(c.Schema))
		mu.Unlock()
		return extractionKeyAIAnswer
	})
	s := newServer(t, withKeyAI(gemini.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	doc := s.extractionUpload(project, "engine.md", "# The engine\n\nAda Lovelace worked with Charles Babbage, who founded the Analytical Society.")
	j := s.extractionWaitJob(s.extractionJobOf(doc), "completed", "failed", "requires_review")
	require.Equal(t, "completed", j.Status, j.ErrorMsg)
	require.Equal(t, 3, j.ObjectsCreated)
	require.Equal(t, 1, j.RelationshipsCreated)

	// The schema sent names the project's types as enums.
	mu.Lock()
	require.NotEmpty(t, schemas)
	require.Contains(t, schemas[0], `"Person"`)
	require.Contains(t, schemas[0], `"FOUNDED"`)
	mu.Unlock()

	ctx := context.Background()
	pool := s.m.db.pool
	var props string
	require.NoError(t, pool.QueryRow(ctx, `SELECT properties::text FROM graph_objects WHERE project_id = $1 AND name = 'Ada Lovelace'`, project).Scan(&props))
	require.JSONEq(t, `{"occupation": "mathematician"}`, props, "the invalid property was dropped")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1 AND type = 'Spaceship'`, project))
	var validation []extractionLog
	for _, l := range s.extractionLogs(j.ID) {
		if l.Operation == "validation" {
			validation = append(validation, l)
		}
	}
	var msgs []string
	for _, l := range validation {
		msgs = append(msgs, l.Message)
	}
	all := strings.Join(msgs, "\n")
	require.Contains(t, all, "repaired Person \"Ada Lovelace\"")
	require.Contains(t, all, "Spaceship")
	require.Contains(t, all, "Royal Society")

	// Priced, and priced as the ledger prices it.
	var callCost, ledgerCost float64
	var model, status string
	var in, out int
	require.NoError(t, pool.QueryRow(ctx, `SELECT cost_usd::float8, model_name, status, input_tokens, output_tokens FROM extraction_llm_calls WHERE job_id = $1`, j.ID).
		Scan(&callCost, &model, &status, &in, &out))
	require.Equal(t, "success", status)
	require.Equal(t, "gemini-2.5-flash", model)
	require.Positive(t, in)
	require.Positive(t, out)
	require.Positive(t, callCost)
	require.NoError(t, pool.QueryRow(ctx, `SELECT estimated_cost_usd::float8 FROM provider_usage
		WHERE project_id = $1 AND operation = 'generate' AND job_id = $2`, project, j.ID).Scan(&ledgerCost))
	require.InDelta(t, ledgerCost, callCost, 1e-12)

	// No secret in what was logged.
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1
		AND (request_payload::text LIKE '%' || $2 || '%' OR coalesce(response_payload::text, '') LIKE '%' || $2 || '%')`, j.ID, apiKey))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM extraction_job_logs WHERE job_id = $1 AND (metadata::text LIKE '%' || $2 || '%' OR message LIKE '%' || $2 || '%')`, j.ID, apiKey))
}

// extractionLongDocument is Markdown long enough for two windows.
func extractionLongDocument() string {
	var b strings.Builder
	b.WriteString("# Staff directory\n\n")
	first := []string{"Alice", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas"}
	last := []string{"Anderson", "Baptiste", "Carter", "Dubois", "Eriksen", "Fischer", "Garcia", "Hughes", "Ibsen", "Jensen"}
	for i := range 60 {
		fmt.Fprintf(&b, "## Team %d\n\n%s %s works for Contoso Corporation in London and leads the team number %d. ", i, first[i%10], last[(i/10)%10], i)
		b.WriteString(strings.Repeat("The team maintains internal services, reviews designs, answers support questions and writes documentation for every release. ", 8))
		b.WriteString("\n\n")
	}
	return b.String()
}

// TestExtractionCancelMidCall: a job cancelled while its second window's
// call is in flight ends cancelled and leaves nothing in the graph, not
// even what its first window found; its calls stay in the call log.
func TestExtractionCancelMidCall(t *testing.T) {
	t.Parallel()
	s, project, doc, id := extractionBlockedCall(t, 1) // the second window's call hangs
	require.Equal(t, "running", s.extractionGetJob(id).Status)

	var j extractionJob
	s.must(200, "POST", "/api/admin/extraction-jobs/"+id+"/cancel", s.admin, nil).Decode(t, &j)
	require.Equal(t, "cancelled", j.Status)
	// The worker stops: its in-flight call is logged as failed.
	require.Eventually(t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1 AND status = 'error'`, id) == 1
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1 AND status = 'success'`, id))
	time.Sleep(200 * time.Millisecond) // a write phase would have committed by now
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1`, project), "no objects from the cancelled job")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE document_id = $1 AND extracted_at IS NOT NULL`, doc))
	require.Equal(t, "cancelled", s.extractionGetJob(id).Status)
	logs := s.extractionLogs(id)
	cancelLogged := false
	for _, l := range logs {
		cancelLogged = cancelLogged || (l.Operation == "error" && l.Message == "job cancelled")
	}
	require.True(t, cancelLogged)
	require.Equal(t, 2, extractionOps(logs)["llm_call"])

	// A final job cannot be cancelled again, nor retried (not failed).
	require.Equal(t, "failed_precondition", s.must(409, "POST", "/api/admin/extraction-jobs/"+id+"/cancel", s.admin, nil).JSON(t)["code"])
	s.must(409, "POST", "/api/admin/extraction-jobs/"+id+"/retry", s.admin, nil)

	// Monitoring shows the cancelled job as failed, "cancelled".
	var d map[string]any
	s.must(200, "GET", "/api/monitoring/extraction-jobs/"+id, s.admin, nil, header{"X-Project-ID", project}).Decode(t, &d)
	require.Equal(t, "failed", d["status"])
	require.Equal(t, "cancelled", d["error_message"])
	require.Less(t, d["metrics"].(map[string]any)["success_rate"].(float64), 1.0)
}

// extractionCompletedJob starts a server and runs a job of orbit.md (the
// local provider, no review threshold) to completion.
func extractionCompletedJob(t *testing.T) (s *testServer, project, job string, first extractionJob) {
	t.Helper()
	s = newServer(t)
	project, _ = s.defaultProject()
	s.extractionSetThreshold(project, 0)
	doc := s.extractionUpload(project, "orbit.md", extractionReadFile(t, "orbit.md"))
	job = s.extractionJobOf(doc)
	first = s.extractionWaitJob(job, "completed", "failed")
	require.Equal(t, "completed", first.Status, first.ErrorMsg)
	return s, project, job, first
}

// extractionLoseWorker makes job's worker "crash" after its commit: the
// row is running again under a dead worker whose lease ran out; the
// reaper queues it again after a backoff, and the clock moves past it.
func (s *testServer) extractionLoseWorker(job string) {
	s.t.Helper()
	_, err := s.m.db.pool.Exec(context.Background(), `UPDATE object_extraction_jobs SET status = 'running', completed_at = NULL,
		locked_by = 'dead-worker', locked_until = now() - interval '1 minute' WHERE id = $1`, job)
	require.NoError(s.t, err)
	require.Eventually(s.t, func() bool {
		return s.extractionGetJob(job).Status == "queued"
	}, 10*time.Second, 20*time.Millisecond)
	s.clock.Advance(10 * time.Minute)
}

// TestExtractionCrashThenRetryNoDuplicates: a job whose worker died after
// committing (the lease expires, the reaper queues it again) runs again
// and changes nothing: no duplicate objects, relationships or provenance.
func TestExtractionCrashThenRetryNoDuplicates(t *testing.T) {
	t.Parallel()
	s, project, id, first := extractionCompletedJob(t)
	counts := func() [4]int {
		return [4]int{
			s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1`, project),
			s.extractionCount(`SELECT count(*) FROM graph_relationships WHERE project_id = $1`, project),
			s.extractionCount(`SELECT count(*) FROM graph_object_provenance WHERE project_id = $1`, project),
			s.extractionCount(`SELECT count(*) FROM graph_relationship_provenance WHERE project_id = $1`, project),
		}
	}
	before := counts()
	require.Positive(t, before[0])

	s.extractionLoseWorker(id)
	again := s.extractionWaitJob(id, "completed", "failed")
	require.Equal(t, "completed", again.Status, again.ErrorMsg)
	require.Equal(t, 1, again.RetryCount)
	require.Equal(t, before, counts(), "no duplicates")
	require.Equal(t, first.ObjectsCreated, again.ObjectsCreated)

	logs := s.extractionLogs(id)
	var lease bool
	attempts := map[float64]bool{}
	for _, l := range logs {
		attempts[l.Metadata["attempt"].(float64)] = true
		if l.Operation == "error" && strings.Contains(l.Message, "lease expired") {
			lease = true
		}
	}
	require.True(t, lease, "the lost attempt is logged as an error")
	require.True(t, attempts[1] && attempts[2], "the logs of both attempts stay, marked by attempt")
}

// TestExtractionIncremental: an incremental job reads only the chunks not
// extracted yet and leaves the others alone.
func TestExtractionIncremental(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	doc := s.extractionUpload(project, "lantern.md", extractionReadFile(t, "lantern.md"))
	first := s.extractionWaitJob(s.extractionJobOf(doc), "completed", "failed")
	require.Equal(t, "completed", first.Status, first.ErrorMsg)
	ctx := context.Background()
	pool := s.m.db.pool
	var oldMark time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(extracted_at) FROM document_chunks WHERE document_id = $1`, doc).Scan(&oldMark))
	oldChunks := s.extractionCount(`SELECT count(*) FROM document_chunks WHERE document_id = $1`, doc)

	// A new chunk arrives (as a datasource sync or an edit would add one).
	var newChunk string
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO document_chunks (id, project_id, document_id, chunk_index, text, start_offset, end_offset, token_count, created_at)
		SELECT gen_random_uuid(), project_id, id, 1000, 'Zara Whitfield founded Quantum Dynamics in Dublin.', 0, 52, 12, now()
		FROM documents WHERE id = $1 RETURNING id::text`, doc).Scan(&newChunk))

	var j extractionJob
	s.must(201, "POST", "/api/admin/extraction-jobs", s.admin, map[string]any{"projectId": project, "documentId": doc, "jobType": "incremental"}).Decode(t, &j)
	require.Equal(t, "incremental", j.JobType)
	j = s.extractionWaitJob(j.ID, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMsg)

	// One call, on the new chunk only.
	var payload map[string]any
	var raw []byte
	require.NoError(t, pool.QueryRow(ctx, `SELECT request_payload FROM extraction_llm_calls WHERE job_id = $1`, j.ID).Scan(&raw))
	require.NoError(t, json.Unmarshal(raw, &payload))
	require.Equal(t, []any{newChunk}, payload["chunkIds"])
	require.Equal(t, oldChunks, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE document_id = $1 AND id <> $2 AND extracted_at = $3`, doc, newChunk, oldMark),
		"the other chunks are untouched")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE id = $1 AND extracted_at IS NOT NULL`, newChunk))
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM graph_objects o JOIN graph_object_provenance p ON p.object_id = o.id
		WHERE o.project_id = $1 AND o.name = 'Zara Whitfield' AND p.chunk_id = $2`, project, newChunk))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_object_provenance WHERE extraction_job_id = $1 AND chunk_id <> $2`, j.ID, newChunk))

	// Nothing new: an incremental job has nothing to do.
	s.must(201, "POST", "/api/admin/extraction-jobs", s.admin, map[string]any{"projectId": project, "documentId": doc, "jobType": "incremental"}).Decode(t, &j)
	j = s.extractionWaitJob(j.ID, "completed", "failed")
	require.Equal(t, "completed", j.Status)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1`, j.ID))
}

// TestExtractionReview: objects under the review threshold are stored as
// suggestions, the job ends requires_review with one review task and a
// notification to the admins; accepting the task accepts the objects,
// rejecting it deletes them.
func TestExtractionReview(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	s.extractionSetThreshold(project, 1) // the local provider is never fully sure

	review := func(file string) (extractionJob, taskBody, []string) {
		doc := s.extractionUpload(project, file, extractionReadFile(t, file))
		j := s.extractionWaitJob(s.extractionJobOf(doc), "requires_review", "completed", "failed")
		require.Equal(t, "requires_review", j.Status, j.ErrorMsg)
		require.Positive(t, j.SuggestionsCreated)
		require.Equal(t, j.ObjectsCreated, j.SuggestionsCreated)
		require.Positive(t, extractionOps(s.extractionLogs(j.ID))["suggestion_creation"])
		var tl taskList
		s.must(200, "GET", "/api/tasks?type=suggestion&status=pending", s.admin, nil, hp).Decode(t, &tl)
		var tk taskBody
		for _, x := range tl.Data {
			if x.SourceID == j.ID {
				tk = x
			}
		}
		require.Equal(t, "extraction_job", tk.SourceType)
		var meta struct {
			ObjectIDs []string `json:"objectIds"`
		}
		require.NoError(t, json.Unmarshal(tk.Metadata, &meta))
		require.Len(t, meta.ObjectIDs, j.SuggestionsCreated)
		require.Equal(t, len(meta.ObjectIDs), s.extractionCount(`SELECT count(*) FROM graph_objects WHERE id::text = ANY($1) AND status = 'suggested'`, meta.ObjectIDs))
		return j, tk, meta.ObjectIDs
	}

	_, accept, accepted := review("orbit.md")
	// The admin was told, with the task.
	var nl notificationList
	s.must(200, "GET", "/api/notifications", s.admin, nil).Decode(t, &nl)
	found := false
	for _, n := range nl.Data {
		if n.TaskID == accept.ID {
			found = true
			require.Equal(t, "extraction_job", n.RelatedResourceType)
		}
	}
	require.True(t, found, "a notification points at the review task")
	s.taskAction(200, accept.ID, "resolve", s.admin, map[string]any{"resolution": "accepted"}, hp)
	require.Equal(t, len(accepted), s.extractionCount(`SELECT count(*) FROM graph_objects WHERE id::text = ANY($1) AND status = 'accepted' AND deleted_at IS NULL`, accepted))

	_, reject, rejected := review("harbor.md")
	s.taskAction(200, reject.ID, "resolve", s.admin, map[string]any{"resolution": "rejected"}, hp)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE id::text = ANY($1) AND deleted_at IS NULL`, rejected))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_relationships WHERE source_id::text = ANY($1) OR target_id::text = ANY($1)`, rejected))
	require.Equal(t, len(accepted), s.extractionCount(`SELECT count(*) FROM graph_objects WHERE id::text = ANY($1) AND deleted_at IS NULL`, accepted), "the other job's objects stay")
}

// TestExtractionRejectKeepsAcceptedObjects: rejecting a review task removes
// only the objects still suggested and still owned by its extraction job.
// An object another job has accepted since stays, with its relationships.
func TestExtractionRejectKeepsAcceptedObjects(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}

	// Job 1 suggests every object of harbor.md.
	s.extractionSetThreshold(project, 1)
	doc := s.extractionUpload(project, "harbor.md", extractionReadFile(t, "harbor.md"))
	first := s.extractionWaitJob(s.extractionJobOf(doc), "requires_review", "completed", "failed")
	require.Equal(t, "requires_review", first.Status, first.ErrorMsg)
	var tl taskList
	s.must(200, "GET", "/api/tasks?type=suggestion&status=pending", s.admin, nil, hp).Decode(t, &tl)
	require.Len(t, tl.Data, 1)
	task := tl.Data[0]
	var meta struct {
		ObjectIDs []string `json:"objectIds"`
	}
	require.NoError(t, json.Unmarshal(task.Metadata, &meta))
	require.NotEmpty(t, meta.ObjectIDs)

	// Job 2, under no review threshold, finds some of the same objects
	// in another document and accepts them (it now owns them), with
	// relationships between them.
	s.extractionSetThreshold(project, 0)
	other := s.extractionUpload(project, "umbrella.md", "# Umbrella\n\nKenji Watanabe works for Umbrella Group in Oslo. "+
		"Umbrella Group opened its first office in Oslo, where Kenji Watanabe lives.\n")
	second := s.extractionWaitJob(s.extractionJobOf(other), "completed", "requires_review", "failed")
	require.Equal(t, "completed", second.Status, second.ErrorMsg)
	accepted := s.extractionIDs(`SELECT id::text FROM graph_objects WHERE id::text = ANY($1) AND status = 'accepted' AND extraction_job_id = $2 AND deleted_at IS NULL`,
		meta.ObjectIDs, second.ID)
	require.NotEmpty(t, accepted, "job 2 accepted objects of job 1's task")
	suggested := s.extractionIDs(`SELECT id::text FROM graph_objects WHERE id::text = ANY($1) AND status = 'suggested' AND deleted_at IS NULL`, meta.ObjectIDs)
	require.NotEmpty(t, suggested, "others are still job 1's suggestions")
	relsBetween := `SELECT count(*) FROM graph_relationships WHERE source_id::text = ANY($1) AND target_id::text = ANY($1)`
	rels := s.extractionCount(relsBetween, accepted)
	require.Positive(t, rels, "job 2 related the objects it accepted")

	s.taskAction(200, task.ID, "resolve", s.admin, map[string]any{"resolution": "rejected"}, hp)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE id::text = ANY($1)`, suggested), "the suggestions are gone")
	require.Equal(t, len(accepted), s.extractionCount(`SELECT count(*) FROM graph_objects WHERE id::text = ANY($1) AND status = 'accepted' AND deleted_at IS NULL`, accepted),
		"what job 2 accepted stays")
	require.Equal(t, rels, s.extractionCount(relsBetween, accepted), "with its relationships")
}

// extractionIDs runs a query returning ids as text.
func (s *testServer) extractionIDs(sql string, args ...any) []string {
	s.t.Helper()
	rows, err := s.pool().Query(context.Background(), sql, args...)
	require.NoError(s.t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(s.t, err)
	return ids
}

// TestExtractionAdminAPI: every admin endpoint's 401/403/404/400 answers
// and its effect.
func TestExtractionAdminAPI(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	// Jobs stay queued: the worker is paused.
	require.NoError(t, s.m.jobs.Pause(ctx, "object_extraction"))
	doc := s.extractionUpload(project, "orbit.md", extractionReadFile(t, "orbit.md"))
	s.waitDocument(project, doc)
	otherDoc := s.extractionUpload(other, "harbor.md", extractionReadFile(t, "harbor.md"))
	s.waitDocument(other, otherDoc)
	auto := s.extractionJobOf(doc)
	otherJob := s.extractionJobOf(otherDoc)

	_, viewer := s.newMember("viewer@example.com", []string{"extraction:read"}, project, "viewer")
	_, editor := s.newMember("editor@example.com", []string{"extraction:read", "extraction:write"}, project, "editor")
	_, noScope := s.newMember("noscope@example.com", []string{"documents:read", "admin:read"}, project, "admin")
	_, stranger := s.newUser("stranger@example.com", allScopes, "")

	base := "/api/admin/extraction-jobs"
	pp := base + "/projects/" + project
	create := map[string]any{"projectId": project, "documentId": doc}
	type call struct {
		method, path string
		body         any
		write, admin bool
	}
	calls := []call{
		{"GET", pp, nil, false, false},
		{"GET", pp + "/statistics", nil, false, false},
		{"GET", base + "/" + auto, nil, false, false},
		{"GET", base + "/" + auto + "/logs", nil, false, false},
		{"POST", base, create, true, false},
		{"POST", base + "/" + auto + "/cancel", nil, true, false},
		{"POST", base + "/" + auto + "/retry", nil, true, false},
		{"POST", pp + "/bulk-cancel", map[string]any{"status": "running"}, true, false},
		{"POST", pp + "/bulk-retry", map[string]any{}, true, false},
		{"DELETE", pp + "/bulk-delete", map[string]any{"olderThanDays": 365}, true, true},
		{"GET", "/api/projects/" + project + "/extraction-settings", nil, false, false},
		{"PUT", "/api/projects/" + project + "/extraction-settings", map[string]any{"reviewThreshold": 0.7}, true, true},
	}
	for _, c := range calls {
		name := c.method + " " + c.path
		require.Equal(t, 401, s.do(c.method, c.path, "", c.body).Status, name)
		require.Equal(t, 404, s.do(c.method, c.path, stranger, c.body).Status, name)
		require.Equal(t, 403, s.do(c.method, c.path, noScope, c.body).Status, name)
		if c.write {
			require.Equal(t, 403, s.do(c.method, c.path, viewer, c.body).Status, name)
		} else {
			require.Equal(t, 200, s.do(c.method, c.path, viewer, c.body).Status, name)
		}
		if c.admin {
			require.Equal(t, 403, s.do(c.method, c.path, editor, c.body).Status, name)
		}
	}
	// Another project's job is invisible to a member of this one.
	s.must(404, "GET", base+"/"+otherJob, editor, nil)
	s.must(404, "POST", base+"/"+otherJob+"/cancel", editor, nil)
	s.must(404, "GET", base+"/"+otherJob+"/logs", editor, nil)
	s.must(404, "GET", base+"/not-a-uuid", editor, nil)
	s.must(404, "GET", base+"/projects/not-a-uuid", editor, nil)

	// List: envelope, default limit, filters, bounds.
	var l struct {
		Data   []extractionJob `json:"data"`
		Total  int             `json:"total"`
		Limit  int             `json:"limit"`
		Offset int             `json:"offset"`
	}
	s.must(200, "GET", pp, viewer, nil).Decode(t, &l)
	require.Equal(t, 20, l.Limit)
	require.Equal(t, 1, l.Total)
	require.Equal(t, auto, l.Data[0].ID)
	require.Equal(t, "queued", l.Data[0].Status)
	require.Equal(t, "full_extraction", l.Data[0].JobType)
	require.Equal(t, 3, l.Data[0].MaxRetries)
	for _, q := range []string{"limit=0", "limit=101", "offset=-1", "status=bogus", "jobType=bogus"} {
		r := s.must(400, "GET", pp+"?"+q, viewer, nil)
		require.NotEmpty(t, r.Detail(t), q)
	}
	s.must(200, "GET", pp+"?limit=100&status=requires_review", viewer, nil).Decode(t, &l)
	require.Zero(t, l.Total)
	require.NotNil(t, l.Data)

	// Create: rules, then effect.
	for _, body := range []map[string]any{
		{"documentId": doc},
		{"projectId": project},
		{"projectId": project, "documentId": doc, "jobType": "bogus"},
		{"projectId": project, "documentId": doc, "priority": 101},
		{"projectId": project, "documentId": doc, "priority": -1},
		{"projectId": project, "documentId": doc, "extra": true},
	} {
		s.must(400, "POST", base, editor, body)
	}
	s.must(404, "POST", base, editor, map[string]any{"projectId": project, "documentId": otherDoc})
	s.must(404, "POST", base, editor, map[string]any{"projectId": "nope", "documentId": doc})
	s.must(404, "POST", base, editor, map[string]any{"projectId": other, "documentId": otherDoc})
	var j extractionJob
	s.must(201, "POST", base, editor, map[string]any{"projectId": project, "documentId": doc, "priority": 100}).Decode(t, &j)
	require.Equal(t, "full_extraction", j.JobType)
	require.Equal(t, "manual", j.TriggerType)
	require.Equal(t, "queued", j.Status)
	require.Equal(t, 100, j.Priority)
	require.Equal(t, doc, j.DocumentID)
	var big extractionJob
	s.must(201, "POST", base, s.admin, map[string]any{"projectId": project, "documentId": doc, "priority": 500, "jobType": "reextraction"}).Decode(t, &big)
	require.Equal(t, 500, big.Priority, "superadmins may go beyond 100")
	// Past the column's int32 range it is refused (it was a 500).
	for _, pr := range []int64{2147483648, -2147483649, 99999999999} {
		r := s.must(400, "POST", base, s.admin, map[string]any{"projectId": project, "documentId": doc, "priority": pr})
		require.Contains(t, r.Detail(t), "priority", pr)
	}
	require.Equal(t, "reextraction", big.JobType)

	// Cancel and retry.
	var c extractionJob
	s.must(200, "POST", base+"/"+j.ID+"/cancel", editor, nil).Decode(t, &c)
	require.Equal(t, "cancelled", c.Status)
	require.NotNil(t, c.CompletedAt)
	require.Equal(t, "failed_precondition", s.must(409, "POST", base+"/"+j.ID+"/cancel", editor, nil).JSON(t)["code"])
	s.must(409, "POST", base+"/"+j.ID+"/retry", editor, nil)
	s.must(409, "POST", base+"/"+big.ID+"/retry", editor, nil) // queued
	_, err := s.m.db.pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'failed', error_msg = 'boom', retry_count = 3, completed_at = now() WHERE id = $1`, j.ID)
	require.NoError(t, err)
	var r extractionJob
	s.must(200, "POST", base+"/"+j.ID+"/retry", editor, nil).Decode(t, &r)
	require.Equal(t, "queued", r.Status)
	require.Zero(t, r.RetryCount)
	require.Empty(t, r.ErrorMsg)
	logs := s.extractionLogs(j.ID)
	require.Equal(t, "manual retry", logs[len(logs)-1].Message)
	require.Equal(t, "boom", logs[len(logs)-1].Metadata["previousError"])

	// Bulk cancel: the queued jobs (auto, j, big).
	for _, st := range []string{"bogus", "completed", "failed"} {
		s.must(400, "POST", pp+"/bulk-cancel", editor, map[string]any{"status": st})
	}
	var br map[string]any
	s.must(200, "POST", pp+"/bulk-cancel", editor, map[string]any{"status": "queued"}).Decode(t, &br)
	require.Equal(t, true, br["success"])
	require.EqualValues(t, 3, br["cancelledCount"])
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE project_id = $1 AND status = 'queued'`, project))
	require.Equal(t, "queued", s.extractionGetJob(otherJob).Status, "other projects untouched")
	logs = s.extractionLogs(big.ID)
	require.Equal(t, "job cancelled", logs[len(logs)-1].Message, "each job cancelled in bulk is logged")
	require.Equal(t, map[string]any{"action": "cancel", "previousStatus": "queued", "userId": logs[len(logs)-1].Metadata["userId"]}, logs[len(logs)-1].Metadata)
	require.NotEmpty(t, logs[len(logs)-1].Metadata["userId"])

	// Bulk retry: the failed ones.
	_, err = s.m.db.pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'failed', error_msg = 'boom' WHERE id = ANY($1::uuid[])`, []string{auto, big.ID})
	require.NoError(t, err)
	s.must(400, "POST", pp+"/bulk-retry", editor, map[string]any{"status": "queued"})
	s.must(200, "POST", pp+"/bulk-retry", editor, map[string]any{"status": "failed"}).Decode(t, &br)
	require.EqualValues(t, 2, br["retriedCount"])
	require.Equal(t, "queued", s.extractionGetJob(auto).Status)
	for _, id := range []string{auto, big.ID} {
		logs = s.extractionLogs(id)
		require.Equal(t, "manual retry", logs[len(logs)-1].Message, "each job retried in bulk is logged")
		require.Equal(t, "manual_retry", logs[len(logs)-1].Metadata["action"])
		require.Equal(t, "boom", logs[len(logs)-1].Metadata["previousError"])
		require.EqualValues(t, 0, logs[len(logs)-1].Metadata["previousRetryCount"])
	}
	s.must(200, "POST", pp+"/bulk-retry", editor, nil).Decode(t, &br)
	require.EqualValues(t, 0, br["retriedCount"])

	// Statistics count them.
	var st extractionStats
	s.must(200, "GET", pp+"/statistics", viewer, nil).Decode(t, &st)
	require.EqualValues(t, 3, st.Total)
	require.EqualValues(t, 2, st.ByStatus["queued"])
	require.EqualValues(t, 1, st.ByStatus["cancelled"])
	require.EqualValues(t, 2, st.ByJobType["full_extraction"])
	require.EqualValues(t, 1, st.ByJobType["reextraction"])
	require.Len(t, st.ByStatus, 6)

	// Bulk delete: finished jobs only, by age.
	for _, body := range []map[string]any{{"olderThanDays": -1}, {"status": "queued"}, {"status": "bogus"}} {
		s.must(400, "DELETE", pp+"/bulk-delete", s.admin, body)
	}
	s.must(200, "DELETE", pp+"/bulk-delete", s.admin, map[string]any{"status": "cancelled", "olderThanDays": 1}).Decode(t, &br)
	require.EqualValues(t, 0, br["deletedCount"], "too recent")
	s.must(200, "DELETE", pp+"/bulk-delete", s.admin, map[string]any{"status": "cancelled"}).Decode(t, &br)
	require.EqualValues(t, 1, br["deletedCount"])
	s.must(404, "GET", base+"/"+j.ID, s.admin, nil)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM extraction_job_logs WHERE job_id = $1`, j.ID))
	require.Equal(t, 2, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE project_id = $1`, project), "queued jobs stay")

	// Settings.
	var set map[string]any
	s.must(200, "GET", "/api/projects/"+project+"/extraction-settings", viewer, nil).Decode(t, &set)
	require.InDelta(t, 0.7, set["reviewThreshold"], 1e-9)
	for _, v := range []any{1.5, -0.1, "high"} {
		s.must(400, "PUT", "/api/projects/"+project+"/extraction-settings", s.admin, map[string]any{"reviewThreshold": v})
	}
	s.must(400, "PUT", "/api/projects/"+project+"/extraction-settings", s.admin, map[string]any{})
	s.extractionSetThreshold(project, 0.55)
	s.must(200, "GET", "/api/projects/"+project+"/extraction-settings", viewer, nil).Decode(t, &set)
	require.InDelta(t, 0.55, set["reviewThreshold"], 1e-9)
}

// TestExtractionProviderFailure: a provider refusal fails the job at once
// (a permanent error): the failed call stays in the call log and the log,
// the error entry survives the rollback, and nothing reaches the graph.
// Without any provider the job fails permanently too, saying why.
func TestExtractionProviderFailure(t *testing.T) {
	t.Parallel()
	s, project, id := extractionFailingCall(t, "AIzaSy-extraction-fail-1234")
	j := s.extractionGetJob(id)
	require.Equal(t, "failed", j.Status)
	require.Contains(t, j.ErrorMsg, "extraction call 1 of 1")
	require.Zero(t, j.RetryCount, "a refused request is not retried")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1 AND status = 'error' AND error_message <> ''`, id))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1`, project))
	var callErr, jobErr bool
	for _, l := range s.extractionLogs(id) {
		callErr = callErr || (l.Operation == "llm_call" && l.Level == "error")
		jobErr = jobErr || (l.Operation == "error" && strings.HasPrefix(l.Message, "job failed: "))
	}
	require.True(t, callErr, "the failed call is logged")
	require.True(t, jobErr, "the failure is logged")
	var d map[string]any
	s.must(200, "GET", "/api/monitoring/extraction-jobs/"+id, s.admin, nil, header{"X-Project-ID", project}).Decode(t, &d)
	require.Equal(t, "failed", d["status"])
	require.Contains(t, d["error_message"], "extraction call")
	require.InDelta(t, 0, d["metrics"].(map[string]any)["success_rate"], 1e-9)

	// A manual retry runs it again, now successfully.
	s.must(200, "POST", "/api/admin/extraction-jobs/"+id+"/retry", s.admin, nil)
	j = s.extractionWaitJob(id, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMsg)
	require.Equal(t, 3, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1`, project))

	// No provider at all.
	bare := newServer(t, withoutLocalProvider)
	p2, _ := bare.defaultProject()
	doc2 := bare.extractionUpload(p2, "engine.md", "# Engine\n\nAda Lovelace worked with Charles Babbage.")
	j = bare.extractionWaitJob(bare.extractionJobOf(doc2), "failed", "completed")
	require.Equal(t, "failed", j.Status)
	require.Contains(t, j.ErrorMsg, "no provider configured")
	require.Zero(t, j.RetryCount)
}

// TestExtractionMergesWindows: a document read in several windows is one
// result: an object found in every window is one object whose provenance
// is every window's chunks, and one relationship likewise.
func TestExtractionMergesWindows(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-extraction-merge-1234"
	gemini := llmtest.NewGemini(t, apiKey)
	gemini.SetGenerate(func(llmtest.GenerateCall) string { return extractionKeyAIAnswer })
	s := newServer(t, withKeyAI(gemini.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	doc := s.extractionUpload(project, "staff.md", extractionLongDocument())
	j := s.extractionWaitJob(s.extractionJobOf(doc), "completed", "failed", "requires_review")
	require.Equal(t, "completed", j.Status, j.ErrorMsg)
	windows := s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1`, j.ID)
	require.GreaterOrEqual(t, windows, 2)
	require.Equal(t, windows, gemini.Count(llmtest.EndpointGenerate))
	chunks := s.extractionCount(`SELECT count(*) FROM document_chunks WHERE document_id = $1`, doc)
	require.Equal(t, 3, j.ObjectsCreated)
	require.Equal(t, 1, j.RelationshipsCreated)
	require.Equal(t, 3, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1`, project))
	require.Equal(t, chunks, s.extractionCount(`SELECT count(*) FROM graph_object_provenance p JOIN graph_objects o ON o.id = p.object_id
		WHERE o.project_id = $1 AND o.name = 'Ada Lovelace'`, project), "provenance from every window")
	require.Equal(t, chunks, s.extractionCount(`SELECT count(*) FROM graph_relationship_provenance WHERE project_id = $1`, project))
	// Each window's chunk_processing entry names its chunks, in order.
	seen := 0
	for _, l := range s.extractionLogs(j.ID) {
		if l.Operation == "chunk_processing" && l.Metadata["window"] != nil {
			seen += len(l.Metadata["chunkIds"].([]any))
		}
	}
	require.Equal(t, chunks, seen)
}

// TestDeleteDocumentCancelsRunningExtraction: deleting a document whose
// extraction job is mid-call cancels the job's worker (its in-flight
// provider call ends, recorded as failed in the usage ledger), and nothing
// of the job is written.
func TestDeleteDocumentCancelsRunningExtraction(t *testing.T) {
	t.Parallel()
	s, project, doc, id := extractionBlockedCall(t, 0) // the first call hangs

	s.must(204, "DELETE", "/api/documents/"+doc, s.admin, nil, header{"X-Project-ID", project})
	require.Eventually(t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM provider_usage WHERE job_id = $1 AND operation = 'generate' AND status = 'error'`, id) == 1
	}, 5*time.Second, 20*time.Millisecond, "the running call was cancelled")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE id = $1`, id))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1`, project))
}

// extractionRunScheduled moves the clock forward by d (at least the task's
// 10 minutes) and waits for the scheduler to run scheduled-reextraction
// at the new time.
func (s *testServer) extractionRunScheduled(d time.Duration) {
	s.t.Helper()
	s.runSchedulerTask("scheduled-reextraction", d)
}

// extractionReextractions lists a project's reextraction jobs.
func (s *testServer) extractionReextractions(project string) []extractionJob {
	s.t.Helper()
	var l struct {
		Data []extractionJob `json:"data"`
	}
	s.must(200, "GET", "/api/admin/extraction-jobs/projects/"+project+"?jobType=reextraction&limit=100", s.admin, nil).Decode(s.t, &l)
	return l.Data
}

// TestExtractionScheduledReextraction: a project's reextractionIntervalHours
// (extraction settings, partial updates, bounds) makes the scheduler queue
// one reextraction job (trigger scheduled) per document whose last
// extraction is older than the interval, never a second one while one is
// waiting; the worker re-extracts in place; 0 turns it off.
func TestExtractionScheduledReextraction(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	project, _ := s.defaultProject()
	path := "/api/projects/" + project + "/extraction-settings"
	s.extractionSetThreshold(project, 0)

	// Settings: off by default, bounds, partial updates.
	var set extraction.Settings
	s.must(200, "GET", path, s.admin, nil).Decode(t, &set)
	require.Zero(t, set.ReextractionIntervalHours)
	for _, v := range []any{-1, 9000} {
		r := s.must(400, "PUT", path, s.admin, map[string]any{"reextractionIntervalHours": v})
		require.Contains(t, r.Detail(t), "reextractionIntervalHours must be between 0 (off) and 8760")
	}
	s.must(400, "PUT", path, s.admin, map[string]any{"reextractionIntervalHours": 1.5})
	s.must(400, "PUT", path, s.admin, map[string]any{"reviewThreshold": 0.5, "reextractionIntervalHours": 9000})
	s.must(200, "PUT", path, s.admin, map[string]any{"reextractionIntervalHours": 1}).Decode(t, &set)
	require.Equal(t, 1, set.ReextractionIntervalHours)
	require.Zero(t, set.ReviewThreshold, "an absent field is unchanged")
	s.extractionSetThreshold(project, 0)
	s.must(200, "GET", path, s.admin, nil).Decode(t, &set)
	require.Equal(t, extraction.Settings{ProjectID: uuid.MustParse(project), ReextractionIntervalHours: 1}, set)

	doc := s.extractionUpload(project, "lantern.md", extractionReadFile(t, "lantern.md"))
	first := s.extractionWaitJob(s.extractionJobOf(doc), "completed", "failed")
	require.Equal(t, "completed", first.Status, first.ErrorMsg)
	objects := extractionLiveObjects(s, project)
	rels := s.extractionCount(`SELECT count(*) FROM graph_relationships WHERE project_id = $1`, project)
	require.Positive(t, objects)

	// Within the interval: nothing.
	s.extractionRunScheduled(11 * time.Minute)
	require.Empty(t, s.extractionReextractions(project))

	// Past it: one job, kept queued (the queue is paused) to see that a
	// waiting job is never doubled.
	require.NoError(t, s.m.jobs.Pause(ctx, extraction.Queue))
	s.extractionRunScheduled(2 * time.Hour)
	jobs := s.extractionReextractions(project)
	require.Len(t, jobs, 1)
	j := jobs[0]
	require.Equal(t, doc, j.DocumentID)
	require.Equal(t, "scheduled", j.TriggerType)
	require.Equal(t, "queued", j.Status)
	require.Equal(t, s.clock.Now().UnixMilli(), j.CreatedAt.UnixMilli())
	require.Equal(t, uuid.Version(7), uuid.MustParse(j.ID).Version())
	sec, nsec := uuid.MustParse(j.ID).Time().UnixTime()
	require.Equal(t, s.clock.Now().UnixMilli(), time.Unix(sec, nsec).UnixMilli(), "the id's time is the clock's")
	s.extractionRunScheduled(11 * time.Minute)
	require.Len(t, s.extractionReextractions(project), 1, "a queued job is not doubled")

	// The worker re-extracts in place.
	require.NoError(t, s.m.jobs.Resume(ctx, extraction.Queue))
	j = s.extractionWaitJob(j.ID, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMsg)
	require.Equal(t, first.ObjectsCreated, j.ObjectsCreated)
	require.Equal(t, objects, extractionLiveObjects(s, project), "no object duplicated")
	require.Equal(t, rels, s.extractionCount(`SELECT count(*) FROM graph_relationships WHERE project_id = $1`, project))

	// Just re-extracted: nothing until the interval has passed again.
	s.extractionRunScheduled(11 * time.Minute)
	require.Len(t, s.extractionReextractions(project), 1)

	// Off: nothing, however old the extraction.
	s.must(200, "PUT", path, s.admin, map[string]any{"reextractionIntervalHours": 0}).Decode(t, &set)
	require.Zero(t, set.ReextractionIntervalHours)
	s.extractionRunScheduled(3 * time.Hour)
	require.Len(t, s.extractionReextractions(project), 1)
	require.Equal(t, 2, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE document_id = $1`, doc))

	// On again: a job at once; cancelled, it is not queued again before the
	// interval has passed since it was created.
	require.NoError(t, s.m.jobs.Pause(ctx, extraction.Queue))
	s.must(200, "PUT", path, s.admin, map[string]any{"reextractionIntervalHours": 1})
	s.extractionRunScheduled(11 * time.Minute)
	jobs = s.extractionReextractions(project)
	require.Len(t, jobs, 2)
	s.must(200, "POST", "/api/admin/extraction-jobs/"+jobs[0].ID+"/cancel", s.admin, nil)
	s.extractionRunScheduled(50 * time.Minute)
	require.Len(t, s.extractionReextractions(project), 2)
	s.extractionRunScheduled(11 * time.Minute)
	require.Len(t, s.extractionReextractions(project), 3)
}

// extractionBlockedCall starts a server whose only provider is a key-ai
// fake that answers the first free generate calls and holds every later
// one until the test ends, uploads a long document and waits until call
// free+1 of its extraction job is in flight.
func extractionBlockedCall(t *testing.T, free int) (s *testServer, project, doc, job string) {
	t.Helper()
	const apiKey = "AIzaSy-extraction-blocked-1234"
	gemini := llmtest.NewGemini(t, apiKey)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the fake closes
	var calls atomic.Int32
	gemini.SetGenerate(func(llmtest.GenerateCall) string {
		if int(calls.Add(1)) > free {
			<-release
		}
		return extractionKeyAIAnswer
	})
	s = newServer(t, withKeyAI(gemini.URL(), apiKey), withoutLocalProvider)
	project, _ = s.defaultProject()
	doc = s.extractionUpload(project, "staff.md", extractionLongDocument())
	job = s.extractionJobOf(doc)
	require.Eventually(t, func() bool { return int(calls.Load()) > free }, 30*time.Second, 10*time.Millisecond,
		"the held call is in flight")
	return s, project, doc, job
}

// TestExtractionJobActionsTakeTheProject: the service's cancel and retry
// act on a job of the project they are given only; for any other project
// the job is not found and stays as it was, with no log entry.
func TestExtractionJobActionsTakeTheProject(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	require.NoError(t, s.m.jobs.Pause(ctx, "object_extraction"))
	project, org := s.defaultProject()
	other := uuid.MustParse(s.newProject(org, "other"))
	job := s.extractionJobOf(s.extractionUpload(project, "p.md", "# P\n\nAda."))
	id := uuid.MustParse(job)
	logs := func() int {
		return s.extractionCount(`SELECT count(*) FROM extraction_job_logs WHERE job_id = $1`, job)
	}
	before := logs()

	_, err := s.m.extract.CancelJob(ctx, other, id, nil)
	require.ErrorIs(t, err, extraction.ErrNotFound)
	require.Equal(t, "queued", s.extractionGetJob(job).Status)
	require.Equal(t, before, logs())

	s.extractionCount(`UPDATE object_extraction_jobs SET status = 'failed', error_msg = 'boom' WHERE id = $1 RETURNING 1`, job)
	_, err = s.m.extract.RetryJob(ctx, other, id, nil)
	require.ErrorIs(t, err, extraction.ErrNotFound)
	require.Equal(t, "failed", s.extractionGetJob(job).Status)
	require.Equal(t, before, logs())

	j, err := s.m.extract.RetryJob(ctx, uuid.MustParse(project), id, nil)
	require.NoError(t, err)
	require.Equal(t, "queued", j.Status)
	require.Equal(t, before+1, logs())
}

// lazyString is a failure-message argument computed only when the message
// is formatted (require formats its message only on failure).
type lazyString func() string

func (f lazyString) String() string { return f() }
