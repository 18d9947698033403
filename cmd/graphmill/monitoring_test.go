package main

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type monitoringItem struct {
	ID             string   `json:"id"`
	SourceType     string   `json:"source_type"`
	SourceID       string   `json:"source_id"`
	Status         string   `json:"status"`
	StartedAt      *string  `json:"started_at"`
	CompletedAt    *string  `json:"completed_at"`
	DurationMs     *int64   `json:"duration_ms"`
	ObjectsCreated *int     `json:"objects_created"`
	TotalLLMCalls  *int     `json:"total_llm_calls"`
	TotalCostUSD   *float64 `json:"total_cost_usd"`
	ErrorMessage   string   `json:"error_message"`
}

type monitoringList struct {
	Items  []monitoringItem `json:"items"`
	Total  int              `json:"total"`
	Limit  int              `json:"limit"`
	Offset int              `json:"offset"`
}

// extractionMonitorList lists monitored jobs with a query string.
func (s *testServer) extractionMonitorList(token, project, query string) monitoringList {
	s.t.Helper()
	var l monitoringList
	s.must(200, "GET", "/api/monitoring/extraction-jobs?"+query, token, nil, header{"X-Project-ID", project}).Decode(s.t, &l)
	return l
}

// TestMonitoringExtractionJobs: the four monitoring endpoints: the status
// mapping, filters, sorting, limits, metrics from the call log, and their
// 401/403/404/400 answers.
func TestMonitoringExtractionJobs(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	pool := s.m.db.pool
	project, org := s.defaultProject()
	other := s.newProject(org, "other")
	hp := header{"X-Project-ID", project}
	require.NoError(t, s.m.jobs.Pause(ctx, "object_extraction"))
	doc := s.extractionUpload(project, "orbit.md", extractionReadFile(t, "orbit.md"))
	s.waitDocument(project, doc)
	otherDoc := s.extractionUpload(other, "harbor.md", extractionReadFile(t, "harbor.md"))
	s.waitDocument(other, otherDoc)
	otherJob := s.extractionJobOf(otherDoc)

	// Six jobs, one per admin status.
	ids := map[string]string{"queued": s.extractionJobOf(doc)}
	for _, st := range []string{"running", "completed", "requires_review", "failed", "cancelled"} {
		var j extractionJob
		s.must(201, "POST", "/api/admin/extraction-jobs", s.admin, map[string]any{"projectId": project, "documentId": doc}).Decode(t, &j)
		ids[st] = j.ID
	}
	s.must(200, "POST", "/api/admin/extraction-jobs/"+ids["cancelled"]+"/cancel", s.admin, nil)
	_, err := pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'running', started_at = now() - interval '2 seconds' WHERE id = $1`, ids["running"])
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = $2, started_at = now() - interval '10 seconds', completed_at = now() - interval '7 seconds',
		objects_created = 4, relationships_created = 2 WHERE id = $1`, ids["completed"], "completed")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = $2, started_at = now() - interval '5 seconds', completed_at = now() - interval '4 seconds',
		suggestions_created = 3 WHERE id = $1`, ids["requires_review"], "requires_review")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'failed', error_msg = 'provider said no', started_at = now(), completed_at = now() WHERE id = $1`, ids["failed"])
	require.NoError(t, err)
	// Calls of the completed job: one success, one error.
	_, err = pool.Exec(ctx, `INSERT INTO extraction_llm_calls (id, job_id, project_id, provider, model_name, status, input_tokens, output_tokens, total_tokens,
		cost_usd, duration_ms, started_at, completed_at, request_payload, response_payload, error_message) VALUES
		(gen_random_uuid(), $1, $2, 'key-ai', 'gemini-2.5-flash', 'success', 20, 10, 30, 0.5, 100, now() - interval '9 seconds', now(), '{"window":1}', '{"objects":[]}', NULL),
		(gen_random_uuid(), $1, $2, 'key-ai', 'gemini-2.5-flash', 'error', 0, 0, 0, 0, 300, now() - interval '8 seconds', now(), '{"window":2}', NULL, 'boom'),
		(gen_random_uuid(), $3, $2, 'key-ai', 'gemini-2.5-flash', 'success', 5, 5, 10, 0.1, 50, now(), now(), '{}', '{}', NULL)`,
		ids["completed"], project, ids["requires_review"])
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO extraction_job_logs (id, job_id, project_id, operation, level, message, metadata, created_at) VALUES
		(gen_random_uuid(), $1, $2, 'chunk_processing', 'info', 'window 1', '{}', now() - interval '3 seconds'),
		(gen_random_uuid(), $1, $2, 'validation', 'warn', 'dropped one', '{"type":"Person"}', now() - interval '2 seconds'),
		(gen_random_uuid(), $1, $2, 'error', 'error', 'went wrong', '{}', now() - interval '1 second')`, ids["completed"], project)
	require.NoError(t, err)

	// The status mapping.
	all := s.extractionMonitorList(s.admin, project, "")
	require.Equal(t, 6, all.Total)
	require.Equal(t, 50, all.Limit)
	want := map[string]string{"queued": "pending", "running": "running", "completed": "completed", "requires_review": "completed", "failed": "failed", "cancelled": "failed"}
	byID := map[string]monitoringItem{}
	for _, it := range all.Items {
		byID[it.ID] = it
		require.Equal(t, "document", it.SourceType)
		require.Equal(t, doc, it.SourceID)
	}
	for admin, mon := range want {
		require.Equal(t, mon, byID[ids[admin]].Status, admin)
	}
	require.Equal(t, "cancelled", byID[ids["cancelled"]].ErrorMessage)
	require.Equal(t, "provider said no", byID[ids["failed"]].ErrorMessage)
	require.Nil(t, byID[ids["queued"]].StartedAt, "a pending job has not started")
	require.Nil(t, byID[ids["queued"]].DurationMs)
	require.InDelta(t, 3000, *byID[ids["completed"]].DurationMs, 50)
	require.GreaterOrEqual(t, *byID[ids["running"]].DurationMs, int64(2000), "a running job's duration runs to now")
	require.Equal(t, 2, *byID[ids["completed"]].TotalLLMCalls)
	require.InDelta(t, 0.5, *byID[ids["completed"]].TotalCostUSD, 1e-9)
	require.Equal(t, 4, *byID[ids["completed"]].ObjectsCreated)

	// Filters.
	count := func(q string) int { return s.extractionMonitorList(s.admin, project, q).Total }
	require.Equal(t, 1, count("status=pending"))
	require.Equal(t, 1, count("status=running"))
	require.Equal(t, 2, count("status=completed"))
	require.Equal(t, 2, count("status=failed"))
	require.Equal(t, 6, count("source_type=document"))
	require.Zero(t, count("source_type=datasource"))
	now := time.Now().UTC()
	require.Zero(t, count("date_from="+url.QueryEscape(now.Add(time.Hour).Format(time.RFC3339))))
	require.Zero(t, count("date_to="+url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339))))
	require.Equal(t, 6, count("date_from="+url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339))+"&date_to="+url.QueryEscape(now.Add(time.Hour).Format(time.RFC3339Nano))))

	// Sorting.
	byCost := s.extractionMonitorList(s.admin, project, "sort_by=total_cost_usd&sort_order=desc").Items
	require.Equal(t, []string{ids["completed"], ids["requires_review"]}, []string{byCost[0].ID, byCost[1].ID})
	byDuration := s.extractionMonitorList(s.admin, project, "sort_by=duration_ms&sort_order=asc&status=completed").Items
	require.Equal(t, []string{ids["requires_review"], ids["completed"]}, []string{byDuration[0].ID, byDuration[1].ID})
	byStart := s.extractionMonitorList(s.admin, project, "sort_by=started_at&sort_order=asc").Items
	require.Equal(t, ids["completed"], byStart[0].ID)
	created := s.extractionMonitorList(s.admin, project, "sort_by=created_at&sort_order=asc").Items
	require.Equal(t, ids["queued"], created[0].ID)

	// Paging and limits.
	page := s.extractionMonitorList(s.admin, project, "limit=2&offset=2")
	require.Len(t, page.Items, 2)
	require.Equal(t, 6, page.Total)
	require.Equal(t, 2, page.Limit)
	require.Equal(t, 2, page.Offset)
	require.Empty(t, s.extractionMonitorList(s.admin, project, "offset=10").Items)
	require.Len(t, s.extractionMonitorList(s.admin, project, "limit=100").Items, 6)
	for _, q := range []string{
		"limit=0", "limit=101", "offset=-1", "status=queued", "status=bogus", "source_type=file",
		"date_from=yesterday", "date_to=2026-13-01", "sort_by=name", "sort_order=up",
	} {
		r := s.must(400, "GET", "/api/monitoring/extraction-jobs?"+q, s.admin, nil, hp)
		require.NotEmpty(t, r.Detail(t), q)
	}
	// From after to is refused with superadmin's rule (httpapi.ParseTimeRange).
	backwards := "date_from=" + url.QueryEscape(now.Add(time.Hour).Format(time.RFC3339)) + "&date_to=" + url.QueryEscape(now.Format(time.RFC3339))
	r := s.must(400, "GET", "/api/monitoring/extraction-jobs?"+backwards, s.admin, nil, hp)
	require.Equal(t, "date_from must not be after date_to", r.Detail(t))
	same := url.QueryEscape(now.Format(time.RFC3339Nano))
	s.must(200, "GET", "/api/monitoring/extraction-jobs?date_from="+same+"&date_to="+same, s.admin, nil, hp)

	// Detail: metrics from the call log.
	var d struct {
		ID       string           `json:"id"`
		Status   string           `json:"status"`
		Logs     []map[string]any `json:"logs"`
		LLMCalls []map[string]any `json:"llm_calls"`
		Metrics  map[string]any   `json:"metrics"`
		Extra    *int             `json:"total_llm_calls"`
	}
	s.must(200, "GET", "/api/monitoring/extraction-jobs/"+ids["completed"], s.admin, nil, hp).Decode(t, &d)
	require.Equal(t, "completed", d.Status)
	require.Nil(t, d.Extra, "the detail carries the metrics instead")
	require.Len(t, d.Logs, 3)
	require.Len(t, d.LLMCalls, 2)
	require.EqualValues(t, 2, d.Metrics["total_llm_calls"])
	require.InDelta(t, 0.5, d.Metrics["total_cost_usd"], 1e-9)
	require.EqualValues(t, 30, d.Metrics["total_tokens"])
	require.InDelta(t, 200, d.Metrics["avg_call_duration_ms"], 1e-9)
	require.InDelta(t, 0.5, d.Metrics["success_rate"], 1e-9)
	var empty map[string]any
	s.must(200, "GET", "/api/monitoring/extraction-jobs/"+ids["queued"], s.admin, nil, hp).Decode(t, &empty)
	require.Equal(t, []any{}, empty["logs"])
	require.Equal(t, []any{}, empty["llm_calls"])
	require.EqualValues(t, 0, empty["metrics"].(map[string]any)["success_rate"])

	// Logs: order, level filter, processType, limits.
	var logs struct {
		Logs  []map[string]any `json:"logs"`
		Total int              `json:"total"`
		Limit int              `json:"limit"`
	}
	lp := "/api/monitoring/extraction-jobs/" + ids["completed"] + "/logs"
	s.must(200, "GET", lp, s.admin, nil, hp).Decode(t, &logs)
	require.Equal(t, 100, logs.Limit)
	require.Equal(t, []any{"window 1", "dropped one", "went wrong"}, []any{logs.Logs[0]["message"], logs.Logs[1]["message"], logs.Logs[2]["message"]})
	s.must(200, "GET", lp+"?level=warn", s.admin, nil, hp).Decode(t, &logs)
	require.Len(t, logs.Logs, 1)
	require.Equal(t, "validation", logs.Logs[0]["processType"])
	require.Equal(t, "warn", logs.Logs[0]["level"])
	require.Equal(t, map[string]any{"type": "Person"}, logs.Logs[0]["metadata"])
	require.NotEmpty(t, logs.Logs[0]["timestamp"])
	s.must(200, "GET", lp+"?limit=500", s.admin, nil, hp)
	for _, q := range []string{"limit=0", "limit=501", "level=trace", "offset=-1"} {
		s.must(400, "GET", lp+"?"+q, s.admin, nil, hp)
	}

	// LLM calls: fields, limits.
	var calls struct {
		LLMCalls []map[string]any `json:"llm_calls"`
		Limit    int              `json:"limit"`
	}
	cp := "/api/monitoring/extraction-jobs/" + ids["completed"] + "/llm-calls"
	s.must(200, "GET", cp, s.admin, nil, hp).Decode(t, &calls)
	require.Equal(t, 50, calls.Limit)
	require.Len(t, calls.LLMCalls, 2)
	first := calls.LLMCalls[0]
	require.Equal(t, "gemini-2.5-flash", first["model_name"])
	require.Equal(t, "success", first["status"])
	require.EqualValues(t, 20, first["input_tokens"])
	require.EqualValues(t, 10, first["output_tokens"])
	require.EqualValues(t, 30, first["total_tokens"])
	require.InDelta(t, 0.5, first["cost_usd"], 1e-9)
	require.EqualValues(t, 100, first["duration_ms"])
	require.Equal(t, map[string]any{"window": float64(1)}, first["request_payload"])
	require.Equal(t, "boom", calls.LLMCalls[1]["error_message"])
	require.NotContains(t, calls.LLMCalls[1], "response_payload")
	s.must(200, "GET", cp+"?limit=500", s.admin, nil, hp)
	for _, q := range []string{"limit=0", "limit=501"} {
		s.must(400, "GET", cp+"?"+q, s.admin, nil, hp)
	}

	// Auth: 401, 403, 404, and X-Project-ID is required.
	paths := []string{"/api/monitoring/extraction-jobs", "/api/monitoring/extraction-jobs/" + ids["completed"], lp, cp}
	_, noScope := s.newMember("member@example.com", []string{"documents:read"}, project, "admin")
	_, stranger := s.newUser("stranger@example.com", allScopes, "")
	boundID, bound := s.newUser("bound@example.com", []string{"extraction:read"}, project)
	s.addMember(project, boundID, "viewer")
	for _, p := range paths {
		require.Equal(t, 401, s.do("GET", p, "", nil, hp).Status, p)
		require.Equal(t, 400, s.do("GET", p, s.admin, nil).Status, p)
		require.Contains(t, s.do("GET", p, bound, nil).Detail(t), "X-Project-ID", "a bound token still needs the header: %s", p)
		require.Equal(t, 200, s.do("GET", p, bound, nil, hp).Status, p)
		require.Equal(t, 403, s.do("GET", p, noScope, nil, hp).Status, p)
		require.Equal(t, 404, s.do("GET", p, stranger, nil, hp).Status, p)
		require.Equal(t, 404, s.do("GET", p, s.admin, nil, header{"X-Project-ID", "not-a-uuid"}).Status, p)
	}
	// A job of another project is not found under this one.
	for _, p := range []string{"", "/logs", "/llm-calls"} {
		s.must(404, "GET", "/api/monitoring/extraction-jobs/"+otherJob+p, s.admin, nil, hp)
		s.must(200, "GET", "/api/monitoring/extraction-jobs/"+otherJob+p, s.admin, nil, header{"X-Project-ID", other})
	}
	s.must(404, "GET", "/api/monitoring/extraction-jobs/not-a-uuid", s.admin, nil, hp)
	require.Equal(t, 1, s.extractionMonitorList(s.admin, other, "").Total)
}
