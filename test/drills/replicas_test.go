//go:build drills

package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// testSecretKey seals secrets for every process of a drill that shares a
// database.
const testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// Load of the replicas drill. GRAPHMILL_DRILL_LOAD_SECONDS and
// GRAPHMILL_DRILL_LOAD_RPS override the duration and the request rate.
const (
	replicaLoadDefault = 60 * time.Second
	replicaRPSDefault  = 300
	replicaDocuments   = 400
	replicaClients     = 24
)

// TestReplicasDrill: two graphmill serve processes and one graphmill worker
// on one database (the first serve's embedded cluster, which the others
// reach by URL) under a bounded load: a few hundred API requests a second,
// spread over both API processes, for a minute, among them uploads that
// make a few thousand jobs. Afterwards: no job ran twice (every job was
// claimed once: attempt 1, and announced once), nothing is duplicated,
// every event reached the streams open on both processes, and when the
// scheduler's leader is killed a survivor runs the next due task within 30
// seconds. It runs with the build tag drills (make test/drills, which make
// test runs): it takes a few minutes.
func TestReplicasDrill(t *testing.T) {
	t.Parallel()
	began := time.Now()
	load, rps := envDuration(t, "GRAPHMILL_DRILL_LOAD_SECONDS", replicaLoadDefault), envInt(t, "GRAPHMILL_DRILL_LOAD_RPS", replicaRPSDefault)
	dirA, dirB := dataDir(t), dataDir(t)
	token := newToken()
	common := []string{"GRAPHMILL_BOOTSTRAP_TOKEN=" + token, "GRAPHMILL_SECRET_KEY=" + testSecretKey}
	a := newProc(t, dirA, "serve-a", "serve", append(slices.Clone(common), "GRAPHMILL_DATA_DIR="+dirA)...)
	a.start()
	url := embeddedURL(t, dirA)
	external := append(slices.Clone(common), "GRAPHMILL_DATABASE_URL="+url)
	b := newProc(t, dirB, "serve-b", "serve", append(slices.Clone(external), "GRAPHMILL_DATA_DIR="+dirB)...)
	w := newProc(t, dirB, "worker", "worker", append(slices.Clone(external), "GRAPHMILL_DATA_DIR="+dirB)...)
	b.start()
	w.start()
	db := openDB(t, url)
	bases := []string{"http://" + a.api, "http://" + b.api}
	project := defaultProject(t, bases[0], token)
	from := maxEventID(t, db)
	streams := []*stream{subscribe(t, bases[0], token, from), subscribe(t, bases[1], token, from)}

	// The load: each client sends requests to both API processes in turn,
	// a rate limiter shared by all keeping the total at rps.
	type result struct {
		requests, uploads, failures atomic.Int64
		mu                          sync.Mutex
		statuses                    map[int]int
		latencies                   []time.Duration
	}
	res := &result{statuses: map[int]int{}}
	loadStart := time.Now()
	docIDs := make(chan string, replicaDocuments)
	var nextDoc atomic.Int64
	tick := time.NewTicker(time.Second / time.Duration(rps))
	ctx, stopLoad := context.WithTimeout(context.Background(), load)
	defer stopLoad()
	tokens := make(chan struct{}, rps)
	go func() {
		defer close(tokens)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				select {
				case tokens <- struct{}{}:
				default: // the clients are behind: the rate is what they achieve
				}
			}
		}
	}()
	var known []string
	var knownMu sync.Mutex
	pick := func(n int64) string {
		knownMu.Lock()
		defer knownMu.Unlock()
		select {
		case id := <-docIDs:
			known = append(known, id)
		default:
		}
		if len(known) == 0 {
			return ""
		}
		return known[int(n)%len(known)]
	}
	reads := []func(n int64) string{
		func(int64) string { return "/api/documents?limit=20" },
		func(n int64) string {
			if id := pick(n); id != "" {
				return "/api/documents/" + id
			}
			return "/api/documents?limit=5"
		},
		func(n int64) string {
			if id := pick(n); id != "" {
				return "/api/documents/" + id + "/chunks"
			}
			return "/api/documents?limit=5"
		},
		func(int64) string { return "/api/graph/objects?limit=20" },
		func(int64) string { return "/api/graph/relationships?limit=20" },
		func(int64) string { return "/api/notifications" },
		func(int64) string { return "/api/tasks" },
		func(int64) string { return "/api/metrics/jobs" },
	}
	uploadEvery := max(int64(1), int64(rps)*int64(load/time.Second)/replicaDocuments)
	var wg sync.WaitGroup
	for c := range replicaClients {
		wg.Go(func() {
			for range tokens {
				n := res.requests.Add(1)
				base := bases[(int(n)+c)%2]
				start := time.Now()
				var status int
				var err error
				if n%uploadEvery == 0 && nextDoc.Load() < replicaDocuments {
					i := nextDoc.Add(1) - 1
					var raw []byte
					status, raw, err = call(base, token, "POST", "/api/documents", map[string]any{
						"filename": fmt.Sprintf("replica-%03d.md", i), "content": drillDocument(1000+int(i), 2+int(i)%4), "mimeType": "text/markdown",
					}, "X-Project-ID", project)
					var d struct {
						ID string `json:"id"`
					}
					if err == nil && status == http.StatusCreated && json.Unmarshal(raw, &d) == nil {
						res.uploads.Add(1)
						docIDs <- d.ID
					}
				} else {
					status, _, err = call(base, token, "GET", reads[int(n)%len(reads)](n), nil, "X-Project-ID", project)
				}
				took := time.Since(start)
				res.mu.Lock()
				res.statuses[status]++
				res.latencies = append(res.latencies, took)
				res.mu.Unlock()
				if err != nil || status >= 300 {
					res.failures.Add(1)
				}
			}
		})
	}
	wg.Wait()
	loadTime := time.Since(loadStart)
	// Uploads the load did not get to (a slow machine) are sent now, so
	// that the job count stays what the drill promises.
	for i := nextDoc.Load(); i < replicaDocuments; i++ {
		mustCall(t, 201, bases[i%2], token, "POST", "/api/documents", map[string]any{
			"filename": fmt.Sprintf("replica-%03d.md", i), "content": drillDocument(1000+int(i), 2+int(i)%4), "mimeType": "text/markdown",
		}, "X-Project-ID", project)
		res.uploads.Add(1)
	}
	require.Zero(t, res.failures.Load(), "failed requests by status: %v", res.statuses)

	waitDrained(t, db, replicaDocuments, 5*time.Minute)
	counts := jobCounts(t, db)
	jobs := 0
	for _, byStatus := range counts {
		for _, n := range byStatus {
			jobs += n
		}
	}
	var twice []string
	for _, table := range jobTables {
		rows, err := db.Query(context.Background(), `SELECT id::text, status, attempt, retry_count, coalesce(error_msg, '') FROM `+table+` WHERE attempt <> 1`)
		require.NoError(t, err)
		for rows.Next() {
			var id, status, msg string
			var attempt, retries int
			require.NoError(t, rows.Scan(&id, &status, &attempt, &retries, &msg))
			twice = append(twice, fmt.Sprintf("%s %s: %s, attempt %d, retries %d, %s", table, id, status, attempt, retries, msg))
		}
		require.NoError(t, rows.Err())
	}
	if len(twice) > 0 {
		rows, err := db.Query(context.Background(), `SELECT job_id::text, message FROM extraction_job_logs WHERE level = 'error'`)
		require.NoError(t, err)
		for rows.Next() {
			var id, msg string
			require.NoError(t, rows.Scan(&id, &msg))
			twice = append(twice, "log "+id+": "+msg)
		}
	}
	require.Empty(t, twice, "jobs claimed more than once")
	found := checkIntegrity(t, db)
	streamed := make([]int, len(streams))
	connects := make([]int, len(streams))
	for i, s := range streams {
		streamed[i] = requireStreamed(t, db, s, []string{"stream on serve-a", "stream on serve-b"}[i], from)
		_, connects[i] = s.received()
	}
	byProcess := map[string]float64{}
	for _, p := range []*proc{a, b, w} {
		byProcess[p.name] = completedJobs(t, p)
	}

	// Leadership: the process that runs the next due task leads; kill it,
	// make the task due again, and a survivor runs it.
	leaderPid := runDueTask(t, db, time.Time{})
	var leader, survivor *proc
	for _, p := range []*proc{a, b} {
		if p.pid() == leaderPid {
			leader = p
		} else {
			survivor = p
		}
	}
	require.NotNil(t, leader, "the leader is one of the serve processes")
	killed := time.Now()
	leader.kill()
	newPid := runDueTask(t, db, killed)
	takeover := time.Since(killed)
	require.Equal(t, survivor.pid(), newPid)
	require.Less(t, takeover, 30*time.Second, "a survivor leads within 30 seconds")

	res.mu.Lock()
	slices.Sort(res.latencies)
	p50, p99 := res.latencies[len(res.latencies)/2], res.latencies[len(res.latencies)*99/100]
	total := len(res.latencies)
	res.mu.Unlock()
	achieved := float64(total) / loadTime.Seconds()
	require.GreaterOrEqual(t, achieved, float64(rps)/2, "the load reached at least half the asked rate")
	survivor.stop()
	w.stop()
	t.Logf("replicas drill: %v of load at %d requests/s asked: %d requests (%.0f/s achieved, p50 %v, p99 %v, statuses %v), %d uploads; "+
		"%d jobs (%s), none claimed twice, completed by process %v; events streamed %v in %v connections; duplicates found: %d; "+
		"%s killed as scheduler leader, %s led %v later; wall time %v",
		load, rps, total, achieved, p50.Round(time.Millisecond), p99.Round(time.Millisecond), res.statuses, res.uploads.Load(),
		jobs, inFlight(counts), byProcess, streamed, connects, found, leader.name, survivor.name, takeover.Round(10*time.Millisecond),
		time.Since(began).Round(time.Second))
}

// runDueTask makes the events-expiry task due now and waits until a
// scheduler leader runs it (after since), returning the pid of the process
// that ran it (its worker id is host-pid).
func runDueTask(t *testing.T, db *pgxpool.Pool, since time.Time) int {
	t.Helper()
	ctx := context.Background()
	var before time.Time
	require.NoError(t, db.QueryRow(ctx, `UPDATE scheduler_tasks SET next_run_at = now() WHERE name = 'events-expiry'
		RETURNING coalesce(last_run_at, 'epoch')`).Scan(&before))
	var leader string
	require.Eventually(t, func() bool {
		var last time.Time
		require.NoError(t, db.QueryRow(ctx, `SELECT coalesce(last_run_at, 'epoch'), coalesce(leader, '') FROM scheduler_tasks WHERE name = 'events-expiry'`).
			Scan(&last, &leader))
		return last.After(before) && last.After(since)
	}, 30*time.Second, 20*time.Millisecond, "no leader ran the due task")
	i := strings.LastIndex(leader, "-")
	pid, err := strconv.Atoi(leader[i+1:])
	require.NoError(t, err, "leader %q", leader)
	return pid
}

// completedJobs sums the jobs a process completed, from its metrics.
func completedJobs(t *testing.T, p *proc) float64 {
	t.Helper()
	status, raw, err := httpGet("http://" + p.ops + "/metrics")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	total := 0.0
	for line := range strings.SplitSeq(string(raw), "\n") {
		if strings.HasPrefix(line, "graphmill_jobqueue_jobs_completed_total{") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			require.NoError(t, err)
			total += v
		}
	}
	return total
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	return time.Duration(n) * time.Second
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	return n
}
