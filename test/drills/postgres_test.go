package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/postgres"
)

// restartDocuments is how many documents the PostgreSQL restart drill
// uploads.
const restartDocuments = 24

// TestPostgresRestartDrill: PostgreSQL is stopped under a running graphmill
// serve, with extraction jobs queued and running, and started again a few
// seconds later by someone else (as a service manager would). /ready answers
// 503 not_ready within seconds of the stop and 200 within seconds of the
// start, with no manual step; API requests meanwhile answer 503
// unavailable; the workers resume and every queued job completes, none
// lost or failed, nothing duplicated; an event stream open across the
// outage (reconnecting with Last-Event-ID) receives every event once.
func TestPostgresRestartDrill(t *testing.T) {
	t.Parallel()
	began := time.Now()
	dir := dataDir(t)
	token := newToken()
	srv := newProc(t, dir, "serve", "serve", "GRAPHMILL_DATA_DIR="+dir, "GRAPHMILL_BOOTSTRAP_TOKEN="+token)
	srv.start()
	base := "http://" + srv.api
	db := openDB(t, embeddedURL(t, dir))
	project := defaultProject(t, base, token)
	setPaused(t, db, "object_extraction", true)
	for i := range restartDocuments {
		mustCall(t, 201, base, token, "POST", "/api/documents", map[string]any{
			"filename": fmt.Sprintf("leg-%02d.md", i), "content": drillDocument(100+i, 3+i%4), "mimeType": "text/markdown",
		}, "X-Project-ID", project)
	}
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM object_extraction_jobs WHERE status = 'queued'`) == restartDocuments
	}, time.Minute, 20*time.Millisecond)
	setPaused(t, db, "object_extraction", false)
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM object_extraction_jobs WHERE status = 'running'`) > 0
	},
		time.Minute, time.Millisecond)
	atStop := inFlight(jobCounts(t, db))
	from := maxEventID(t, db)
	events := subscribe(t, base, token, from)

	cluster, err := postgres.NewCluster(filepath.Join(dir, "pg"), postgres.ClusterOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	stopped := time.Now()
	require.NoError(t, cluster.Stop(ctx))
	notReady := waitReady(t, base, http.StatusServiceUnavailable, "not_ready", 10*time.Second)
	outageStatus, raw, err := call(base, token, "GET", "/api/documents", nil, "X-Project-ID", project)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, outageStatus, "%s", raw)
	var problem struct {
		Code, RequestID string
	}
	require.NoError(t, json.Unmarshal(raw, &problem))
	require.Equal(t, "unavailable", problem.Code)
	require.NotEmpty(t, problem.RequestID)
	time.Sleep(5 * time.Second) // the workers meet the outage
	require.Equal(t, http.StatusServiceUnavailable, readyStatus(t, base), "still not ready while the database is down")
	restarted := time.Now()
	require.NoError(t, cluster.Start(ctx))
	ready := waitReady(t, base, http.StatusOK, "ready", 30*time.Second)

	waitDrained(t, db, restartDocuments, 3*time.Minute)
	require.Equal(t, restartDocuments, count(t, db, `SELECT count(*) FROM object_extraction_jobs WHERE status IN ('completed', 'requires_review')`),
		"every queued extraction completed")
	found := checkIntegrity(t, db)
	drained := time.Since(restarted)
	streamed := requireStreamed(t, db, events, "the stream open across the outage", from)
	_, connects := events.received()
	srv.stop()
	t.Logf("postgres restart drill: %d documents; at the stop: %s; /ready 503 after %v, API answered %d during the outage; "+
		"/ready 200 %v after the start; drained %v after the start; %d events streamed in %d connections; duplicates found: %d; wall time %v",
		restartDocuments, atStop, notReady.Sub(stopped).Round(time.Millisecond), outageStatus, ready.Sub(restarted).Round(time.Millisecond),
		drained.Round(time.Second), streamed, connects, found, time.Since(began).Round(time.Second))
}

// readyStatus returns the status /ready answers now (0 when unreachable).
func readyStatus(t *testing.T, base string) int {
	t.Helper()
	status, _, err := httpGet(base + "/ready")
	if err != nil {
		return 0
	}
	return status
}

// waitReady waits until /ready answers status with body status want, and
// returns when it did.
func waitReady(t *testing.T, base string, status int, want string, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, raw, err := httpGet(base + "/ready")
		if err == nil && got == status {
			var body struct {
				Status string `json:"status"`
			}
			require.NoError(t, json.Unmarshal(raw, &body), "%s", raw)
			require.Equal(t, want, body.Status)
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready did not answer %d within %v (last %d %s %v)", status, within, got, raw, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
