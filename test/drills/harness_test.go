package drills

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// binaryPath is the graphmill binary TestMain builds for every drill.
var binaryPath string

func TestMain(m *testing.M) { os.Exit(runDrills(m)) }

func runDrills(m *testing.M) int {
	dir, err := os.MkdirTemp("", "graphmill-drill-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "drills:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binaryPath = filepath.Join(dir, "graphmill")
	build := exec.Command("go", "build", "-o", binaryPath, "github.com/graphmill/graphmill/cmd/graphmill")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "drills: build graphmill:", err)
		return 1
	}
	return m.Run()
}

// newToken returns a bootstrap token in the API token format.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "gm_" + base64.RawURLEncoding.EncodeToString(b)
}

// dataDir makes a data directory that the postgres user can pass through
// (the embedded cluster runs as that user when the drills run as root). It
// is named like internal/pgtest's cluster directories and holds the owner's
// pid the same way, so that a later test run stops its cluster should this
// one die without cleaning up. It is in memory when there is room, as
// pgtest's are (a kill -9 of the server leaves the page cache as it is
// either way). Cleanup stops the cluster and removes it.
func dataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(pgtest.TempRoot(), "graphmill-pgtest-drill-")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o600))
	require.NoError(t, os.Chmod(dir, 0o711)) //nolint:gosec // traversal only, for the postgres user
	t.Cleanup(func() {
		stopCluster(t, dir)
		if t.Failed() {
			postgresErrors(t, dir)
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// postgresErrors prints the errors of the embedded cluster's log, with the
// details that follow them (a deadlock's processes and statements).
func postgresErrors(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "pg", "log"))
	if err != nil {
		return
	}
	var out []string
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.Contains(l, "ERROR:") && !strings.Contains(l, "canceling statement due to user request") {
			out = append(out, lines[i:min(i+14, len(lines))]...)
		}
	}
	if len(out) > 200 {
		out = out[:200]
	}
	if len(out) > 0 {
		t.Logf("--- postgres errors in %s:\n%s", dir, strings.Join(out, "\n"))
	}
}

// stopCluster stops the embedded cluster of a data directory if one runs
// (a killed server leaves its postmaster running).
func stopCluster(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "pg", "data", "postmaster.pid")); errors.Is(err, fs.ErrNotExist) {
		return
	}
	c, err := postgres.NewCluster(filepath.Join(dir, "pg"), postgres.ClusterOptions{})
	if err != nil {
		t.Logf("stop cluster of %s: %v", dir, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Logf("stop cluster of %s: %v", dir, err)
	}
}

// embeddedURL is the database URL of the embedded cluster of a data
// directory (its port and password files).
func embeddedURL(t *testing.T, dir string) string {
	t.Helper()
	port, err := os.ReadFile(filepath.Join(dir, "pg", "port"))
	require.NoError(t, err)
	pass, err := os.ReadFile(filepath.Join(dir, "pg", ".password"))
	require.NoError(t, err)
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%s/%s?sslmode=disable", postgres.ClusterUser,
		strings.TrimSpace(string(pass)), strings.TrimSpace(string(port)), postgres.ClusterDatabase)
}

// openDB opens a small pool for the drill's own queries.
func openDB(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := postgres.Open(ctx, url, 4)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// Ports handed to the processes a drill starts come from below Linux's
// ephemeral range (32768-60999 by default). A port picked by binding to :0
// is released before the child binds it, and in that window the kernel may
// give the same port to anyone else binding to :0, such as the child's own
// embedded PostgreSQL (a CI run failed with the ops listener and postgres on
// one port). Ports below the range are never handed out that way.
const (
	drillPortLow  = 20000
	drillPortHigh = 32000
)

var drillPorts = struct {
	sync.Mutex
	used map[int]bool
}{used: map[int]bool{}}

// freeAddr returns a loopback address free now, never returned before in this
// test binary; a process keeps it across restarts so that clients keep their
// base URL.
func freeAddr(t *testing.T) string {
	t.Helper()
	drillPorts.Lock()
	defer drillPorts.Unlock()
	var lc net.ListenConfig
	for range 1000 {
		port := drillPortLow + mathrand.IntN(drillPortHigh-drillPortLow)
		if drillPorts.used[port] {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := lc.Listen(context.Background(), "tcp", addr)
		if err != nil {
			continue
		}
		require.NoError(t, l.Close())
		drillPorts.used[port] = true
		return addr
	}
	t.Fatalf("no free loopback port in %d-%d", drillPortLow, drillPortHigh)
	return ""
}

// proc is one graphmill process (serve or worker) that a drill starts,
// kills and restarts; its addresses and environment stay the same.
type proc struct {
	t       *testing.T
	name    string
	command string // serve or worker
	env     []string
	api     string // host:port of the public API (serve)
	ops     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// newProc prepares a process; env adds GRAPHMILL_* settings to the
// drill's defaults (the offline local provider, fixed addresses).
func newProc(t *testing.T, logDir, name, command string, env ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, command: command, api: freeAddr(t), ops: freeAddr(t), logPath: filepath.Join(logDir, name+".log")}
	p.env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"GRAPHMILL_HTTP_ADDR=" + p.api,
		"GRAPHMILL_OPS_ADDR=" + p.ops,
		"GRAPHMILL_LOCAL_PROVIDER=true",
		"GRAPHMILL_LOG_FORMAT=json",
		"GRAPHMILL_SHUTDOWN_TIMEOUT=10s",
	}, env...)
	t.Cleanup(func() {
		if p.running() {
			p.kill()
		}
		if t.Failed() {
			p.logTail(40)
		}
	})
	return p
}

func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// start launches the process and waits until it is ready: /ready answers
// 200 (serve), or the ops endpoint answers (worker).
func (p *proc) start() {
	p.t.Helper()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(p.t, err)
	fmt.Fprintf(logf, "--- start %s %s\n", p.command, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(binaryPath, p.command) //nolint:gosec // the binary this test built
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logf, logf
	// The process dies with the test binary, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(p.t, cmd.Start())
	p.cmd = cmd
	p.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(p.exited)
	}()
	url := "http://" + p.api + "/ready"
	if p.command == "worker" {
		url = "http://" + p.ops + "/metrics"
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-p.exited:
			p.logTail(40)
			p.t.Fatalf("%s exited during start-up", p.name)
		default:
		}
		if status, _, err := httpGet(url); err == nil && status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			p.logTail(40)
			p.t.Fatalf("%s not ready after 2 minutes", p.name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.t.Helper()
	p.signal(syscall.SIGKILL, 10*time.Second)
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop() {
	p.t.Helper()
	p.signal(syscall.SIGTERM, time.Minute)
	require.True(p.t, p.cmd.ProcessState.Success(), "%s exited with %v", p.name, p.cmd.ProcessState)
}

func (p *proc) signal(sig syscall.Signal, wait time.Duration) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
	select {
	case <-p.exited:
	case <-time.After(wait):
		p.t.Fatalf("%s still running %v after %v", p.name, wait, sig)
	}
}

// pid is the running process's id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// logTail prints the end of the process's log.
func (p *proc) logTail(n int) {
	f, err := os.Open(p.logPath)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	p.t.Logf("--- %s log (last %d lines):\n%s", p.name, len(lines), strings.Join(lines, "\n"))
}

// drillHTTP is the drills' HTTP client: short timeouts, since the server
// may be killed under a request.
var drillHTTP = &http.Client{Timeout: 30 * time.Second}

func httpGet(url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	return send(req)
}

func send(req *http.Request) (int, []byte, error) {
	res, err := drillHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, body, err
}

// call sends an API request with the token; body is JSON-encoded when not
// nil. It returns the error instead of failing: the server may be down.
func call(base, token, method, path string, body any, headers ...string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return send(req)
}

// mustCall is call for requests that must answer status.
func mustCall(t *testing.T, status int, base, token, method, path string, body any, headers ...string) []byte {
	t.Helper()
	got, raw, err := call(base, token, method, path, body, headers...)
	require.NoError(t, err)
	require.Equal(t, status, got, "%s %s: %s", method, path, raw)
	return raw
}

// defaultProject returns the id of the bootstrap project.
func defaultProject(t *testing.T, base, token string) string {
	t.Helper()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(mustCall(t, 200, base, token, "GET", "/api/projects", nil), &list))
	require.Len(t, list.Data, 1)
	return list.Data[0].ID
}

// drillDocument is Markdown about fictional organisations, people and
// places, n sections long; documents share some names, so that their
// extractions upsert the same objects concurrently.
func drillDocument(i, sections int) string {
	people := []string{"Alice Novak", "Bruno Costa", "Chiara Ricci", "Dmitri Volkov", "Elena Garcia", "Farid Haddad", "Greta Lund", "Hiro Tanaka"}
	places := []string{"Lisbon", "Oslo", "Nairobi", "Montreal", "Kyoto", "Valparaiso", "Tallinn", "Cairo"}
	orgs := []string{"Northwind Labs", "Acme Corporation", "Blue Harbor Institute", "Meridian Systems", "Orchid Foundation"}
	var b strings.Builder
	fmt.Fprintf(&b, "# Expedition %d report\n\n", i)
	for s := range sections {
		p1, p2 := people[(i+s)%len(people)], people[(i*3+s+1)%len(people)]
		pl, org := places[(i+2*s)%len(places)], orgs[(i+s)%len(orgs)]
		fmt.Fprintf(&b, "## Leg %d of expedition %d\n\n", s+1, i)
		fmt.Fprintf(&b, "%s led leg %d of expedition %d from %s for %s. %s joined the team in %s and kept the logbook. "+
			"The team met engineers of %s in %s, where %s presented the survey results to the board of %s.\n\n",
			p1, s+1, i, pl, org, p2, pl, org, pl, p1, org)
		fmt.Fprintf(&b, "Notes %d.%d: the weather held for most of the leg; supplies from %s arrived late, "+
			"and %s reorganised the schedule so that the measurements in %s could be repeated twice. "+
			"Sample series %d-%d was archived at %s.\n\n", i, s, org, p2, pl, i, s, orgs[(i+s+1)%len(orgs)])
	}
	return b.String()
}

// stream is an event-stream subscriber that reconnects with Last-Event-ID
// whenever its connection ends, as a browser's EventSource does, and
// records every event id it receives.
type stream struct {
	base, token string
	cancel      context.CancelFunc
	done        chan struct{}

	mu       sync.Mutex
	got      map[int64]int // id -> deliveries
	last     int64
	connects int
}

// subscribe opens a stream that replays from after event id from.
func subscribe(t *testing.T, base, token string, from int64) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{base: base, token: token, cancel: cancel, done: make(chan struct{}), got: map[int64]int{}, last: from}
	connected := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			s.connect(ctx, func() { once.Do(func() { close(connected) }) })
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(s.close)
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		t.Fatalf("event stream on %s never connected", base)
	}
	return s
}

func (s *stream) connect(ctx context.Context, connected func()) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/api/events/stream", nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "text/event-stream")
	s.mu.Lock()
	if s.last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(s.last, 10))
	}
	s.mu.Unlock()
	res, err := http.DefaultClient.Do(req) // no timeout: a stream lasts
	if err != nil {
		return
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return
	}
	s.mu.Lock()
	s.connects++
	s.mu.Unlock()
	connected()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			s.mu.Lock()
			s.got[id]++
			s.last = max(s.last, id)
			s.mu.Unlock()
		}
	}
}

// received returns the ids received (with how many times) and the number of
// connections made.
func (s *stream) received() (map[int64]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int64]int, len(s.got))
	for id, n := range s.got {
		out[id] = n
	}
	return out, s.connects
}

func (s *stream) close() {
	s.cancel()
	<-s.done
}

// maxEventID is the newest event id.
func maxEventID(t *testing.T, db *pgxpool.Pool) int64 {
	t.Helper()
	var id int64
	require.NoError(t, db.QueryRow(context.Background(), `SELECT coalesce(max(id), 0) FROM events`).Scan(&id))
	return id
}

// requireStreamed waits until every event after from (up to the newest now)
// reached the stream, exactly once, and returns how many that was.
func requireStreamed(t *testing.T, db *pgxpool.Pool, s *stream, name string, from int64) int {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id FROM events WHERE id > $1 ORDER BY id`, from)
	require.NoError(t, err)
	want, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	var missing []int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _ := s.received()
		missing = missing[:0]
		for _, id := range want {
			if got[id] == 0 {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			for id, n := range got {
				require.Equal(t, 1, n, "%s received event %d %d times", name, id, n)
			}
			return len(want)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s missed %d of %d events (first %v)", name, len(missing), len(want), missing[:min(len(missing), 10)])
		}
		time.Sleep(100 * time.Millisecond)
	}
}
