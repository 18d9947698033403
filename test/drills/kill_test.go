package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// killDocuments is how many documents the kill drill uploads.
const killDocuments = 36

// TestKillNineDrill: graphmill serve on the embedded PostgreSQL is killed
// with SIGKILL three times at different points of the pipeline (while
// documents are being uploaded and parsed, while chunks are being embedded,
// while objects are being extracted) and restarted each time on the same
// data directory (adopting the postmaster the killed server left running).
// Once the queues drain, every document went through the pipeline exactly
// once: one parsing and one full extraction job each, every job final and
// none failed, chunk indexes unique and contiguous, no duplicate objects,
// relationships, provenance, embeddings, events or notifications.
//
// The embedding and extraction queues are paused (persisted queue settings,
// as an operator would) until their kill, so that each kill finds its stage
// at work.
func TestKillNineDrill(t *testing.T) {
	t.Parallel()
	began := time.Now()
	dir := dataDir(t)
	token := newToken()
	srv := newProc(t, dir, "serve", "serve", "GRAPHMILL_DATA_DIR="+dir, "GRAPHMILL_BOOTSTRAP_TOKEN="+token)
	srv.start()
	base := "http://" + srv.api
	db := openDB(t, embeddedURL(t, dir))
	project := defaultProject(t, base, token)
	mustCall(t, 200, "http://"+srv.ops, token, "POST", "/api/embeddings/pause", nil)
	setPaused(t, db, "object_extraction", true)
	var report []string
	kill := func(point string) {
		t.Helper()
		counts := jobCounts(t, db)
		srv.kill()
		report = append(report, fmt.Sprintf("kill -9 %s (pid %d) with %s", point, srv.pid(), inFlight(counts)))
		srv.start()
	}

	// 1. While documents are uploaded and parsed.
	docs := make([]string, killDocuments)
	var uploaded atomic.Int32
	upload := func(i int) bool {
		status, raw, err := call(base, token, "POST", "/api/documents", map[string]any{
			"filename": fmt.Sprintf("expedition-%02d.md", i), "content": drillDocument(i, 4+i%5), "mimeType": "text/markdown",
		}, "X-Project-ID", project)
		if err != nil || (status != http.StatusCreated && status != http.StatusOK) {
			return false
		}
		var d struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &d) != nil || d.ID == "" {
			return false
		}
		docs[i] = d.ID
		uploaded.Add(1)
		return true
	}
	next := make(chan int, killDocuments)
	for i := range killDocuments {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				if !upload(i) {
					return // the server is gone: uploaded again after the restart
				}
			}
		})
	}
	require.Eventually(t, func() bool { return uploaded.Load() >= killDocuments/3 }, time.Minute, time.Millisecond)
	kill("during uploads and parsing")
	wg.Wait()
	for i := range killDocuments {
		if docs[i] == "" {
			require.True(t, upload(i), "upload %d after the restart", i)
		}
	}
	require.Equal(t, int32(killDocuments), uploaded.Load())

	// 2. While chunks are embedded.
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM chunk_embedding_jobs WHERE status = 'queued'`) > 0
	},
		time.Minute, 10*time.Millisecond)
	mustCall(t, 200, "http://"+srv.ops, token, "POST", "/api/embeddings/resume", nil)
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM chunk_embedding_jobs WHERE status = 'running'`) > 0
	},
		time.Minute, time.Millisecond)
	kill("during chunk embedding")

	// 3. While objects are extracted.
	setPaused(t, db, "object_extraction", false)
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM object_extraction_jobs WHERE status = 'running'`) > 0
	},
		time.Minute, time.Millisecond)
	kill("during extraction")

	waitDrained(t, db, killDocuments, 3*time.Minute)
	found := checkIntegrity(t, db)
	var objects, relationships, chunks int
	require.NoError(t, db.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM graph_objects), (SELECT count(*) FROM graph_relationships),
		(SELECT count(*) FROM document_chunks)`).Scan(&objects, &relationships, &chunks))
	require.Positive(t, objects)
	reaped := count(t, db, `SELECT (SELECT count(*) FROM document_parsing_jobs WHERE attempt > 1) + (SELECT count(*) FROM chunk_embedding_jobs WHERE attempt > 1)
		+ (SELECT count(*) FROM object_extraction_jobs WHERE attempt > 1) + (SELECT count(*) FROM graph_embedding_jobs WHERE attempt > 1)`)
	srv.stop()
	t.Logf("kill -9 drill: %d documents, %d chunks, %d objects, %d relationships; %d jobs ran again after a kill; duplicates found: %d; wall time %v",
		killDocuments, chunks, objects, relationships, reaped, found, time.Since(began).Round(time.Second))
	for _, r := range report {
		t.Log(r)
	}
}

// setPaused pauses or resumes a queue in every process, as the embedding
// control endpoints do for theirs: the persisted setting and its
// notification.
func setPaused(t *testing.T, db *pgxpool.Pool, queue string, paused bool) {
	t.Helper()
	_, err := db.Exec(context.Background(), `WITH s AS (
		INSERT INTO jobqueue_settings (queue, paused, updated_at) VALUES ($1, $2, now())
		ON CONFLICT (queue) DO UPDATE SET paused = EXCLUDED.paused, updated_at = EXCLUDED.updated_at RETURNING queue)
		SELECT pg_notify('jobqueue_settings', queue) FROM s`, queue, paused)
	require.NoError(t, err)
}

// count runs a count query.
func count(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}
