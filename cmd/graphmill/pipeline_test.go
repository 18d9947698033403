package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// commitChecks are constraint triggers, checked at each commit, that refuse
// a transaction committing a job's results while the job is still running:
// results and final status must commit together (DESIGN 6, FinishInTx),
// or a crash between two commits leaves results under a job that runs
// again.
const commitChecks = `
CREATE FUNCTION test_parse_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM document_parsing_jobs WHERE document_id = NEW.document_id AND status = 'running') THEN
		RAISE EXCEPTION 'chunks of document % commit while its parsing job is running', NEW.document_id;
	END IF;
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER test_parse_final AFTER INSERT ON document_chunks
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_parse_final();

CREATE FUNCTION test_extraction_queued_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM document_parsing_jobs WHERE document_id = NEW.document_id AND status = 'running') THEN
		RAISE EXCEPTION 'extraction of document % queued while its parsing job is running', NEW.document_id;
	END IF;
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER test_extraction_queued_final AFTER INSERT ON object_extraction_jobs
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_extraction_queued_final();

CREATE FUNCTION test_embedding_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM chunk_embedding_jobs WHERE chunk_id = NEW.id AND status = 'running') THEN
		RAISE EXCEPTION 'the vector of chunk % commits while its embedding job is running', NEW.id;
	END IF;
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER test_embedding_final AFTER UPDATE OF embedded_at ON document_chunks
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_embedding_final();

CREATE FUNCTION test_extraction_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM object_extraction_jobs WHERE id = NEW.extraction_job_id AND status = 'running') THEN
		RAISE EXCEPTION 'provenance of extraction job % commits while the job is running', NEW.extraction_job_id;
	END IF;
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER test_extraction_final AFTER INSERT ON graph_object_provenance
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_extraction_final();

CREATE FUNCTION test_graph_embedding_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM graph_embedding_jobs WHERE object_id = NEW.object_id AND status = 'running') THEN
		RAISE EXCEPTION 'the vector of object % commits while its embedding job is running', NEW.object_id;
	END IF;
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER test_graph_embedding_final AFTER INSERT OR UPDATE ON graph_object_embeddings
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_graph_embedding_final();
`

// pipelineDocument is a Markdown document of n parts (about five parts a
// chunk) that the local extractor finds entities in.
func pipelineDocument(t *testing.T, n int) string {
	t.Helper()
	base := extractionReadFile(t, "orbit.md")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "# Part %d\n\n%s\n\n", i+1, strings.ReplaceAll(base, "# Orbit", fmt.Sprintf("## Orbit release %d", i+1)))
	}
	return b.String()
}

// TestPipelineCommitsResultsWithStatus: parsing, chunk embedding,
// extraction and graph embedding commit their results in the transaction that ends their job.
// The database refuses, at commit, any transaction that writes a job's
// results while the job is still running; documents still go all the way
// through the pipeline.
func TestPipelineCommitsResultsWithStatus(t *testing.T) {
	t.Parallel()
	url := pgtest.NewURL(t)
	ctx := context.Background()
	pool, err := postgres.Open(ctx, url, 2)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, commitChecks)
	pool.Close()
	require.NoError(t, err)

	s := startServer(t, url)
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	docs := make([]string, 3)
	for i := range docs {
		docs[i] = s.extractionUpload(project, fmt.Sprintf("commit-%d.md", i), pipelineDocument(t, i+1))
	}
	for _, d := range docs {
		doc := s.waitDocument(project, d)
		require.Equal(t, "parsed", doc.Status, doc.Error)
		s.extractionWaitJob(s.extractionJobOf(d), "completed")
	}
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM document_parsing_jobs WHERE status <> 'completed'`))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM chunk_embedding_jobs WHERE status <> 'completed'`))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE embedded_at IS NULL`))
	require.Positive(t, s.extractionCount(`SELECT count(*) FROM graph_object_provenance`))
	require.Eventually(t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM graph_embedding_jobs WHERE status IN ('queued', 'running')`) == 0
	}, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM graph_embedding_jobs WHERE status <> 'completed'`))
	require.Positive(t, s.extractionCount(`SELECT count(*) FROM graph_object_embeddings`))
}

// pipelineState is what a crashed and re-run job must leave as it was.
type pipelineState struct {
	chunks         map[string]string // id -> embedded_at
	provenance     int
	fullJobs       int
	otherJobs      int
	embeddingJobs  int
	convertedEvent int
}

func (s *testServer) pipelineState(doc string) pipelineState {
	s.t.Helper()
	ctx := context.Background()
	st := pipelineState{chunks: map[string]string{}}
	rows, err := s.m.db.pool.Query(ctx, `SELECT id::text, embedded_at::text FROM document_chunks WHERE document_id = $1`, doc)
	require.NoError(s.t, err)
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var v [2]string
		err := r.Scan(&v[0], &v[1])
		return v, err
	})
	require.NoError(s.t, err)
	for _, v := range ids {
		st.chunks[v[0]] = v[1]
	}
	st.provenance = s.extractionCount(`SELECT count(*) FROM graph_object_provenance p JOIN document_chunks c ON c.id = p.chunk_id WHERE c.document_id = $1`, doc)
	st.fullJobs = s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE document_id = $1 AND job_type = 'full_extraction'`, doc)
	st.otherJobs = s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE document_id = $1 AND job_type <> 'full_extraction'`, doc)
	st.embeddingJobs = s.extractionCount(`SELECT count(*) FROM chunk_embedding_jobs j JOIN document_chunks c ON c.id = j.chunk_id WHERE c.document_id = $1`, doc)
	st.convertedEvent = s.extractionCount(`SELECT count(*) FROM events WHERE type = 'document.converted' AND payload->>'documentId' = $1`, doc)
	return st
}

// crashJob puts a finished job back in the state a crash between its
// results' commit and its completion left it in before FinishInTx: running
// under a dead worker whose lease has run out. The reaper queues it again.
func (s *testServer) crashJob(table, id string) {
	s.t.Helper()
	_, err := s.m.db.pool.Exec(context.Background(), `UPDATE `+pgx.Identifier{table}.Sanitize()+`
		SET status = 'running', locked_by = 'crashed-worker', locked_until = now() - interval '1 minute', completed_at = NULL WHERE id = $1`, id)
	require.NoError(s.t, err)
}

// waitAttempt waits for a job to complete its attempt n.
func (s *testServer) waitAttempt(table, id string, n int) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		var attempt int
		var status string
		require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), `SELECT attempt, status FROM `+pgx.Identifier{table}.Sanitize()+` WHERE id = $1`, id).
			Scan(&attempt, &status))
		return attempt == n && status == "completed"
	}, 30*time.Second, 20*time.Millisecond, "job %s never completed attempt %d", id, n)
}

// TestCrashedJobsRunAgainIdempotently: a parsing job and a chunk embedding
// job whose results were committed before a crash (the job still running
// under a dead worker) run again after their lease expires. The re-parse
// of unchanged text keeps the chunks (ids, embeddings, provenance), queues
// no second full extraction nor anything else, and announces nothing; the
// re-embedding neither calls the provider again nor rewrites the vector.
func TestCrashedJobsRunAgainIdempotently(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	doc := s.extractionUpload(project, "crash.md", pipelineDocument(t, 10))
	require.Equal(t, "parsed", s.waitDocument(project, doc).Status)
	s.extractionWaitJob(s.extractionJobOf(doc), "completed")
	before := s.pipelineState(doc)
	require.Greater(t, len(before.chunks), 3)
	require.Positive(t, before.provenance)
	require.Equal(t, 1, before.fullJobs)
	require.Equal(t, 1, before.convertedEvent)

	var parseJob, embedJob string
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT id::text FROM document_parsing_jobs WHERE document_id = $1`, doc).Scan(&parseJob))
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT j.id::text FROM chunk_embedding_jobs j
		JOIN document_chunks c ON c.id = j.chunk_id WHERE c.document_id = $1 ORDER BY c.chunk_index LIMIT 1`, doc).Scan(&embedJob))
	s.crashJob("document_parsing_jobs", parseJob)
	s.crashJob("chunk_embedding_jobs", embedJob)
	s.waitAttempt("document_parsing_jobs", parseJob, 2)
	s.waitAttempt("chunk_embedding_jobs", embedJob, 2)
	require.Equal(t, before, s.pipelineState(doc))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE status IN ('queued', 'running')`))
}

// reparseChanged makes a parsed document's chunk at index look as an
// older parser stored it (another text), runs the document's parsing job
// again and waits for its attempt; it returns the id of the stale chunk,
// which the re-parse replaces.
func (s *testServer) reparseChanged(doc string, index, attempt int) string {
	s.t.Helper()
	ctx := context.Background()
	pool := s.m.db.pool
	var stale string
	require.NoError(s.t, pool.QueryRow(ctx, `UPDATE document_chunks SET text = 'An older parser wrote this.', content_sha256 = sha256('An older parser wrote this.')
		WHERE document_id = $1 AND chunk_index = $2 RETURNING id::text`, doc, index).Scan(&stale))
	var parseJob string
	require.NoError(s.t, pool.QueryRow(ctx, `UPDATE document_parsing_jobs SET status = 'queued', run_at = now(), completed_at = NULL
		WHERE document_id = $1 RETURNING id::text`, doc).Scan(&parseJob))
	_, err := pool.Exec(ctx, `SELECT pg_notify('jobqueue_document_parsing', '')`)
	require.NoError(s.t, err)
	s.waitAttempt("document_parsing_jobs", parseJob, attempt)
	return stale
}

// TestReparseWhileExtractionQueuedAddsNoIncremental: a re-parse that adds
// chunks while an extraction of the document is still queued queues
// nothing more (the queued job reads them when it runs): not behind the
// queued full extraction, nor a second incremental behind a queued one.
func TestReparseWhileExtractionQueuedAddsNoIncremental(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	require.NoError(t, s.m.jobs.Pause(ctx, "object_extraction"))
	doc := s.extractionUpload(project, "queued.md", pipelineDocument(t, 10))
	require.Equal(t, "parsed", s.waitDocument(project, doc).Status)
	jobs := func() []string {
		return s.extractionIDs(`SELECT job_type || ' ' || status FROM object_extraction_jobs WHERE document_id = $1 ORDER BY created_at, id`, doc)
	}
	require.Equal(t, []string{"full_extraction queued"}, jobs())

	s.reparseChanged(doc, 1, 2)
	require.Equal(t, []string{"full_extraction queued"}, jobs(), "the queued full extraction reads the new chunk")
	require.NoError(t, s.m.jobs.Resume(ctx, "object_extraction"))
	s.extractionWaitJob(s.extractionJobOf(doc), "completed")

	require.NoError(t, s.m.jobs.Pause(ctx, "object_extraction"))
	s.reparseChanged(doc, 2, 3)
	require.Equal(t, []string{"full_extraction completed", "incremental queued"}, jobs())
	s.reparseChanged(doc, 3, 4)
	require.Equal(t, []string{"full_extraction completed", "incremental queued"}, jobs(), "no second incremental behind the queued one")
	require.NoError(t, s.m.jobs.Resume(ctx, "object_extraction"))
	s.extractionWaitJob(s.extractionJobOf(doc), "completed")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE document_id = $1 AND extracted_at IS NULL`, doc),
		"the jobs read every chunk")
}

// TestReparseOfChangedChunksQueuesIncremental: a re-parse that finds some
// chunk texts changed (here, a chunk stored by an older parser) replaces
// only those chunks, keeps the others with their ids and embeddings, and
// queues one incremental extraction of the new chunks, never a second full
// extraction.
func TestReparseOfChangedChunksQueuesIncremental(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	pool := s.m.db.pool
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	doc := s.extractionUpload(project, "changed.md", pipelineDocument(t, 10))
	require.Equal(t, "parsed", s.waitDocument(project, doc).Status)
	s.extractionWaitJob(s.extractionJobOf(doc), "completed")
	before := s.pipelineState(doc)

	// An older parser stored another text for chunk 1.
	stale := s.reparseChanged(doc, 1, 2)

	var incremental string
	require.Eventually(t, func() bool {
		return pool.QueryRow(ctx, `SELECT id::text FROM object_extraction_jobs WHERE document_id = $1 AND job_type = 'incremental'`, doc).Scan(&incremental) == nil
	}, 20*time.Second, 20*time.Millisecond)
	s.extractionWaitJob(incremental, "completed")
	after := s.waitDocument(project, doc)
	require.Equal(t, len(before.chunks), after.ChunkCount)
	now := s.pipelineState(doc)
	require.Equal(t, 1, now.fullJobs, "never a second full extraction")
	require.Equal(t, 1, now.otherJobs, "one incremental extraction")
	require.NotContains(t, now.chunks, stale, "the changed chunk is replaced")
	kept := 0
	for id, embedded := range before.chunks {
		if id != stale {
			require.Equal(t, embedded, now.chunks[id], "chunk %s is kept with its embedding", id)
			kept++
		}
	}
	require.Equal(t, len(before.chunks)-1, kept)
	require.Equal(t, before.embeddingJobs, now.embeddingJobs, "one embedding job for the one new chunk, the stale one's gone with it")
	require.Equal(t, 2, now.convertedEvent)
	var newChunk string
	var indexes, distinct, maxIndex int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT chunk_index), max(chunk_index) FROM document_chunks WHERE document_id = $1`, doc).
		Scan(&indexes, &distinct, &maxIndex))
	require.Equal(t, indexes, distinct)
	require.Equal(t, indexes-1, maxIndex)
	require.NoError(t, pool.QueryRow(ctx, `SELECT id::text FROM document_chunks WHERE document_id = $1 AND chunk_index = 1`, doc).Scan(&newChunk))
	require.NotContains(t, before.chunks, newChunk)
	s.waitDocument(project, doc) // embedded
	require.Positive(t, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE id = $1 AND extracted_at IS NOT NULL AND embedded_at IS NOT NULL`, newChunk),
		"the incremental extraction read the new chunk")
}

// TestDeleteDocumentWhileItsJobCommits: deleting a document whose
// extraction job is committing (its row updated twice in its transaction,
// as extraction's counters and completion do, which makes PostgreSQL check
// the job's foreign key to the document) waits for that commit and then
// deletes; neither side deadlocks.
func TestDeleteDocumentWhileItsJobCommits(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	pool := s.m.db.pool
	project, _ := s.defaultProject()
	require.NoError(t, s.m.jobs.Pause(ctx, "object_extraction"))
	doc := s.extractionUpload(project, "deleted.md", pipelineDocument(t, 1))
	require.Equal(t, "parsed", s.waitDocument(project, doc).Status)
	var job string
	require.NoError(t, pool.QueryRow(ctx, `UPDATE object_extraction_jobs SET status = 'running', attempt = 1, locked_by = 'elsewhere',
		locked_until = now() + interval '1 minute' WHERE document_id = $1 RETURNING id::text`, doc).Scan(&job))

	// The job's transaction: its row locked and updated, not committed.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM object_extraction_jobs WHERE id = $1 FOR UPDATE`, job)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE object_extraction_jobs SET objects_created = 1 WHERE id = $1`, job)
	require.NoError(t, err)

	deleted := make(chan response, 1)
	go func() {
		deleted <- s.do("DELETE", "/api/documents/"+doc, s.admin, nil, header{"X-Project-ID", project})
	}()
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'transactionid'`).Scan(&waiting))
		return waiting == 1
	}, 10*time.Second, 10*time.Millisecond, "the delete waits for the job's transaction")

	_, err = tx.Exec(ctx, `UPDATE object_extraction_jobs SET status = 'completed', completed_at = now(), locked_by = NULL WHERE id = $1`, job)
	require.NoError(t, err, "the job's completion")
	require.NoError(t, tx.Commit(ctx))
	r := <-deleted
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM documents WHERE id = $1`, doc))
}
