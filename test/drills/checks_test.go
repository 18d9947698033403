package drills

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// jobTables are the job tables of the document pipeline.
var jobTables = []string{"document_parsing_jobs", "chunk_embedding_jobs", "object_extraction_jobs", "graph_embedding_jobs"}

// integrityChecks count rows that break exactly-once: each must be 0
// after any crash.
var integrityChecks = []struct{ name, sql string }{
	{"documents without exactly one parsing job", `SELECT count(*) FROM documents d
		WHERE (SELECT count(*) FROM document_parsing_jobs j WHERE j.document_id = d.id) <> 1`},
	{"documents without exactly one full_extraction job", `SELECT count(*) FROM documents d
		WHERE (SELECT count(*) FROM object_extraction_jobs j WHERE j.document_id = d.id AND j.job_type = 'full_extraction') <> 1`},
	{"extraction jobs other than full_extraction", `SELECT count(*) FROM object_extraction_jobs WHERE job_type <> 'full_extraction'`},
	{"documents whose chunk indexes are not unique and 0..n-1", `SELECT count(*) FROM (SELECT document_id FROM document_chunks GROUP BY document_id
		HAVING count(*) <> count(DISTINCT chunk_index) OR min(chunk_index) <> 0 OR max(chunk_index) <> count(*) - 1) x`},
	{"documents whose chunk count disagrees with their chunks", `SELECT count(*) FROM documents d
		WHERE d.chunk_count <> (SELECT count(*) FROM document_chunks c WHERE c.document_id = d.id)`},
	{"chunks with other than one embedding job", `SELECT count(*) FROM document_chunks c
		WHERE (SELECT count(*) FROM chunk_embedding_jobs j WHERE j.chunk_id = c.id) <> 1`},
	{"duplicate objects", `SELECT count(*) FROM (SELECT 1 FROM graph_objects WHERE deleted_at IS NULL
		GROUP BY project_id, type, normalized_key HAVING count(*) > 1) x`},
	{"duplicate relationships", `SELECT count(*) FROM (SELECT 1 FROM graph_relationships
		GROUP BY project_id, type, source_id, target_id HAVING count(*) > 1) x`},
	{"duplicate object provenance", `SELECT count(*) FROM (SELECT 1 FROM graph_object_provenance GROUP BY object_id, chunk_id HAVING count(*) > 1) x`},
	{"duplicate relationship provenance", `SELECT count(*) FROM (SELECT 1 FROM graph_relationship_provenance
		GROUP BY relationship_id, chunk_id HAVING count(*) > 1) x`},
	{"duplicate object embeddings", `SELECT count(*) FROM (SELECT 1 FROM graph_object_embeddings GROUP BY object_id, policy_id HAVING count(*) > 1) x`},
	{"duplicate chunk embeddings (two chunks of a document with one text at one offset)", `SELECT count(*) FROM (SELECT 1 FROM document_chunks
		WHERE embedded_at IS NOT NULL GROUP BY document_id, start_offset, md5(text) HAVING count(*) > 1) x`},
	{"duplicate events", `SELECT count(*) FROM (SELECT 1 FROM events GROUP BY type, payload HAVING count(*) > 1) x`},
	{"jobs announced more than once", `SELECT count(*) FROM (SELECT 1 FROM events WHERE type = 'job.completed'
		GROUP BY payload->>'jobId' HAVING count(*) > 1) x`},
	{"documents not announced converted exactly once", `SELECT count(*) FROM documents d
		WHERE (SELECT count(*) FROM events e WHERE e.type = 'document.converted' AND e.payload->>'documentId' = d.id::text) <> 1`},
	{"duplicate notifications", `SELECT count(*) FROM (SELECT 1 FROM notifications
		GROUP BY user_id, type, related_resource_type, related_resource_id, group_key, task_id, message HAVING count(*) > 1) x`},
	{"duplicate review tasks", `SELECT count(*) FROM (SELECT 1 FROM tasks WHERE source_type IS NOT NULL
		GROUP BY project_id, type, source_type, source_id HAVING count(*) > 1) x`},
}

// checkIntegrity runs integrityChecks and fails on any finding; it returns
// the total found (0) for the drill's report.
func checkIntegrity(t *testing.T, db *pgxpool.Pool) int {
	t.Helper()
	ctx := context.Background()
	total := 0
	var found []string
	for _, c := range integrityChecks {
		var n int
		require.NoError(t, db.QueryRow(ctx, c.sql).Scan(&n), c.name)
		total += n
		if n > 0 {
			found = append(found, fmt.Sprintf("%s: %d", c.name, n))
		}
	}
	require.Empty(t, found, "exactly-once broken")
	return total
}

// jobCounts counts the jobs of the pipeline by table and status.
func jobCounts(t *testing.T, db *pgxpool.Pool) map[string]map[string]int {
	t.Helper()
	out := map[string]map[string]int{}
	for _, table := range jobTables {
		rows, err := db.Query(context.Background(), `SELECT status, count(*) FROM `+table+` GROUP BY status`)
		require.NoError(t, err)
		out[table] = map[string]int{}
		for rows.Next() {
			var s string
			var n int
			require.NoError(t, rows.Scan(&s, &n))
			out[table][s] = n
		}
		require.NoError(t, rows.Err())
	}
	return out
}

// inFlight summarises the queued and running jobs per table.
func inFlight(counts map[string]map[string]int) string {
	var parts []string
	for _, table := range jobTables {
		parts = append(parts, fmt.Sprintf("%s queued %d running %d", strings.TrimSuffix(table, "_jobs"), counts[table]["queued"], counts[table]["running"]))
	}
	return strings.Join(parts, ", ")
}

// waitDrained waits until every job of the pipeline is final, every
// document parsed and every chunk embedded, and requires that no job
// failed.
func waitDrained(t *testing.T, db *pgxpool.Pool, docs int, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for {
		var pending, parsed, unembedded int
		require.NoError(t, db.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM document_parsing_jobs WHERE status IN ('queued', 'running')) +
			(SELECT count(*) FROM chunk_embedding_jobs WHERE status IN ('queued', 'running')) +
			(SELECT count(*) FROM object_extraction_jobs WHERE status IN ('queued', 'running')) +
			(SELECT count(*) FROM graph_embedding_jobs WHERE status IN ('queued', 'running')),
			(SELECT count(*) FROM documents WHERE status = 'parsed'),
			(SELECT count(*) FROM document_chunks WHERE embedded_at IS NULL)`).Scan(&pending, &parsed, &unembedded))
		if pending == 0 && parsed == docs && unembedded == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained after %v: %s; %d of %d documents parsed, %d chunks not embedded",
				within, inFlight(jobCounts(t, db)), parsed, docs, unembedded)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for table, byStatus := range jobCounts(t, db) {
		require.Zero(t, byStatus["failed"], "failed %s", table)
		require.Zero(t, byStatus["cancelled"], "cancelled %s", table)
	}
}
