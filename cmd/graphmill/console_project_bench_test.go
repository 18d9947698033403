package main

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// benchProjectAdmin gives BenchmarkConsolePages's project the records of
// the project administration pages (an LLM call per job, 50 calls with
// 2 KB payloads on job, 100,000 usage ledger rows over 90 days, 200
// members, 200 project tokens) and returns the pages to measure.
func benchProjectAdmin(b *testing.B, s *testServer, project, org, job uuid.UUID) []string {
	ctx := context.Background()
	pool := s.m.db.pool
	exec := func(sql string, args ...any) {
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(b, err)
	}
	exec(`INSERT INTO extraction_llm_calls (id, job_id, project_id, provider, model_name, status, input_tokens, output_tokens, total_tokens,
		cost_usd, duration_ms, started_at, completed_at, request_payload, response_payload)
		SELECT gen_random_uuid(), id, project_id, 'key-ai', 'gemini-2.5-flash', 'success', 900, 100, 1000, 0.00052, 800, created_at, created_at,
			'{"window":1}', '{"objects":[]}'
		FROM object_extraction_jobs WHERE project_id = $1`, project)
	exec(`INSERT INTO extraction_llm_calls (id, job_id, project_id, provider, model_name, status, input_tokens, output_tokens, total_tokens,
		cost_usd, duration_ms, started_at, completed_at, request_payload, response_payload)
		SELECT gen_random_uuid(), $1, $2, 'key-ai', 'gemini-2.5-flash', 'success', 900, 100, 1000, 0.00052, 800, now(), now(),
			jsonb_build_object('window', i, 'prompt', repeat('The Jacquard loom reads punched cards. ', 50)), jsonb_build_object('objects', jsonb_build_array('Jacquard loom'))
		FROM generate_series(1, 50) i`, job, project)
	exec(`INSERT INTO provider_usage (id, org_id, project_id, provider, model, operation, source, text_tokens, output_tokens, duration_ms, status,
		estimated_cost_usd, created_at)
		SELECT gen_random_uuid(), $1, $2, 'key-ai', CASE WHEN i % 3 = 0 THEN 'gemini-embedding-001' ELSE 'gemini-2.5-flash' END,
			CASE WHEN i % 3 = 0 THEN 'embed' ELSE 'generate' END, 'environment', 1000, 100, 10, 'ok', 0.0005, now() - (i * interval '77 seconds')
		FROM generate_series(1, 100000) i`, org, project)
	exec(`WITH u AS (INSERT INTO users (id, display_name, primary_email, created_at, updated_at)
			SELECT gen_random_uuid(), 'member ' || i, 'member' || i || '@example.com', now(), now() FROM generate_series(1, 200) i RETURNING id)
		INSERT INTO project_members (project_id, user_id, role, created_at) SELECT $1, id, 'viewer', now() FROM u`, project)
	for _, t := range []string{"extraction_llm_calls", "provider_usage", "users", "project_members"} {
		exec(`ANALYZE ` + t)
	}
	br := newConsoleBrowser(b, s)
	br.signIn(s.admin)
	base := "/projects/" + project.String()
	for range 200 {
		status, _, _ := br.do("POST", base+"/tokens", map[string][]string{"csrf": {br.csrf}, "name": {"bench"}, "scope": {"documents:read"}})
		require.Equal(b, 201, status)
	}
	return []string{
		base + "/members", base + "/tokens", base + "/providers", base + "/usage", base + "/usage?days=90",
		base + "/monitoring", base + "/monitoring?sort_by=total_cost_usd", base + "/jobs/" + job.String() + "/llm-calls",
	}
}
