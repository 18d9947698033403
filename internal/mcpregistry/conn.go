package mcpregistry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
)

// StderrLogBytes bounds the stderr kept per stdio process.
const StderrLogBytes = 64 << 10

// ringLog keeps the last StderrLogBytes written to it.
type ringLog struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (r *ringLog) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	if over := len(r.buf) - r.max; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	return len(p), nil
}

func (r *ringLog) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}

// proc is one running stdio server.
type proc struct {
	session  *mcp.ClientSession
	cmd      *exec.Cmd
	version  time.Time // the record's updatedAt it was started with
	stderr   *ringLog
	done     chan struct{}
	mu       sync.Mutex
	lastUsed time.Time
	inUse    int
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) begin(now time.Time) {
	p.mu.Lock()
	p.inUse++
	p.lastUsed = now
	p.mu.Unlock()
}

func (p *proc) end(now time.Time) {
	p.mu.Lock()
	p.inUse--
	p.lastUsed = now
	p.mu.Unlock()
}

// idle reports whether no call is running and none ran for d.
func (p *proc) idle(now time.Time, d time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inUse == 0 && now.Sub(p.lastUsed) > d
}

// kill ends the process group at once and closes the session.
func (p *proc) kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = p.session.Close()
	<-p.done
}

// slot serialises starts of one server's process.
type slot struct {
	mu   sync.Mutex
	proc *proc
}

// connector opens sessions to MCP servers: stdio processes are started on
// demand, reused and reaped when idle; SSE and HTTP servers get a session
// per operation.
type connector struct {
	logger     *slog.Logger
	now        func() time.Time
	client     *mcp.Client
	httpClient *http.Client // dials through the egress guard
	idle       time.Duration
	startWait  time.Duration
	credential *syscall.Credential // nil: children run as this process's user
	maxBody    int64               // per response body of a remote server
	maxCalls   int                 // operations at once per server

	// remoteCalls is the process-wide semaphore of operations against
	// remote servers: with maxBody, it bounds the response bodies held.
	remoteCalls chan struct{}

	mu    sync.Mutex
	slots map[uuid.UUID]*slot
	calls map[uuid.UUID]chan struct{} // a semaphore per server
	wg    sync.WaitGroup
}

// acquire takes one of server id's call slots, or fails at once with
// rate_limited when all are taken; release gives it back.
func (c *connector) acquire(srv Server) (release func(), err error) {
	c.mu.Lock()
	sem, ok := c.calls[srv.ID]
	if !ok {
		sem = make(chan struct{}, c.maxCalls)
		c.calls[srv.ID] = sem
	}
	c.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	default:
		return nil, errs.Errorf(errs.RateLimited, "the MCP server %q already has %d concurrent calls from this server; try again when one ends", srv.Name, c.maxCalls)
	}
}

// acquireRemote takes one of the process's slots for an operation
// against a remote server, or fails at once with rate_limited when all
// are taken; release gives it back.
func (c *connector) acquireRemote() (release func(), err error) {
	select {
	case c.remoteCalls <- struct{}{}:
		return func() { <-c.remoteCalls }, nil
	default:
		return nil, errs.Errorf(errs.RateLimited, "this server already has %d calls to remote MCP servers running (GRAPHMILL_MCP_MAX_CONCURRENT_CALLS_TOTAL); try again when one ends", cap(c.remoteCalls))
	}
}

// forget drops the call slots of a deleted server.
func (c *connector) forget(id uuid.UUID) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

// host is what decides whom stdio children run as: this process's
// effective uid and whether it may switch users (CAP_SETUID and
// CAP_SETGID).
type host struct {
	euid  int
	setID bool
}

// currentHost reads this process's identity.
func currentHost() host {
	h := host{euid: os.Geteuid()}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return h
	}
	for line := range strings.Lines(string(status)) {
		if hexCaps, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hexCaps), 16, 64)
			const setGID, setUID = 1 << 6, 1 << 7 // CAP_SETGID, CAP_SETUID
			h.setID = err == nil && caps&setGID != 0 && caps&setUID != 0
		}
	}
	return h
}

// stdioCredential returns the credential stdio children run with: the
// named user (GRAPHMILL_MCP_STDIO_USER), else nobody when running as
// root. nil means they run as this process's own user, and can read its
// environment and files: its secrets.
func stdioCredential(h host, name string) (*syscall.Credential, error) {
	if name == "" {
		if h.euid != 0 {
			return nil, nil
		}
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("stdio MCP servers run as %s (GRAPHMILL_MCP_STDIO_USER; nobody by default when running as root), but: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has no numeric uid or gid", name)
	}
	if int(uid) == h.euid {
		return nil, nil
	}
	if h.euid != 0 && !h.setID {
		return nil, fmt.Errorf("stdio MCP servers should run as %s (GRAPHMILL_MCP_STDIO_USER), but this server (uid %d) may not switch users: run it as root or with CAP_SETUID and CAP_SETGID, or unset GRAPHMILL_MCP_STDIO_USER", name, h.euid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

func (c *connector) slot(id uuid.UUID) *slot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.slots[id]
	if !ok {
		s = &slot{}
		c.slots[id] = s
	}
	return s
}

// with runs fn with a session to srv, within srv's call slots and, for a
// remote server, the process's.
func (c *connector) with(ctx context.Context, srv Server, fn func(*mcp.ClientSession) error) error {
	release, err := c.acquire(srv)
	if err != nil {
		return err
	}
	defer release()
	switch srv.Type {
	case TypeStdio:
		p, err := c.stdio(ctx, srv)
		if err != nil {
			return err
		}
		p.begin(c.now())
		err = fn(p.session)
		p.end(c.now())
		if err != nil && !p.alive() {
			return errs.Errorf(errs.BadGateway, "the MCP server process exited during the call: %s", mcpMessage(err))
		}
		return err
	case TypeSSE, TypeHTTP:
		releaseRemote, err := c.acquireRemote()
		if err != nil {
			return err
		}
		defer releaseRemote()
		lim := &bodyLimit{max: c.maxBody}
		cs, err := c.remote(ctx, srv, lim)
		if err == nil {
			err = fn(cs)
			_ = cs.Close()
		}
		if err != nil && lim.exceeded.Load() {
			return errs.Errorf(errs.BadGateway, "the MCP server %q sent a response larger than %d bytes (GRAPHMILL_MCP_MAX_RESPONSE_BYTES)", srv.Name, c.maxBody)
		}
		return err
	}
	return ErrBuiltinRemote
}

// remote connects to an SSE or streamable HTTP server with the record's
// headers, every response body bounded by lim.
func (c *connector) remote(ctx context.Context, srv Server, lim *bodyLimit) (*mcp.ClientSession, error) {
	endpoint := srv.url()
	hc := &http.Client{
		Transport:     lim.wrap(headerTransport{base: c.httpClient.Transport, headers: srv.headers, origin: origin(endpoint)}),
		CheckRedirect: egress.CheckRedirect, // what go-sdk sets (Mcp-Session-Id) stays with the origin; no Referer
	}
	var t mcp.Transport
	if srv.Type == TypeSSE {
		t = &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	}
	cs, err := c.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, connectError(err)
	}
	return cs, nil
}

// headerTransport adds the record's headers to the requests to the
// record's origin, never to another (a redirect, an SSE endpoint event
// naming another host).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	origin  string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) == 0 || h.origin == "" || egress.Origin(r.URL) != h.origin {
		return h.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// errBodyTooLarge ends the read of a response body beyond its limit.
var errBodyTooLarge = errors.New("mcp server response body exceeds the limit")

// bodyLimit bounds each response body of one session's HTTP client to max
// bytes (go-sdk reads JSON answers whole, with no limit) and remembers
// whether one went beyond.
type bodyLimit struct {
	max      int64
	exceeded atomic.Bool
}

func (l *bodyLimit) wrap(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		res, err := base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		res.Body = &limitedBody{rc: res.Body, left: l.max, limit: l}
		return res, nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// limitedBody reads at most left more bytes of rc; a byte beyond fails
// the read (and every later one) with errBodyTooLarge.
type limitedBody struct {
	rc    io.ReadCloser
	left  int64
	limit *bodyLimit
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more tells a body of exactly the limit from a longer one
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = -1
		b.limit.exceeded.Store(true)
		return n, errBodyTooLarge
	}
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// origin returns the origin of raw ("" when it does not parse): see
// egress.Origin.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return egress.Origin(u)
}

// connectError turns a failed connection into a client-safe error.
func connectError(err error) error {
	switch {
	case errs.CodeOf(err) != errs.Internal:
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return errs.New(errs.BadGateway, "the MCP server did not answer in time")
	}
	return errs.Errorf(errs.BadGateway, "cannot connect to the MCP server: %s", mcpMessage(err))
}

// mcpMessage is an SDK error's text for clients. It may hold sealed
// values (a URL with its variables filled in): Service.session redacts,
// then shortens it.
func mcpMessage(err error) string { return err.Error() }

// stdio returns the running process of srv, starting it (again) when it is
// not running, crashed, or was started with an older record.
func (c *connector) stdio(ctx context.Context, srv Server) (*proc, error) {
	s := c.slot(srv.ID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.proc; p != nil {
		if p.alive() && p.version.Equal(srv.UpdatedAt) {
			return p, nil
		}
		p.kill()
		s.proc = nil
	}
	p, err := c.start(ctx, srv)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	current := c.slots[srv.ID] == s
	c.mu.Unlock()
	if !current {
		// The server was disabled or deleted while this process started.
		p.kill()
		return nil, errs.New(errs.FailedPrecondition, "the MCP server was changed or removed while it started")
	}
	s.proc = p
	return p, nil
}

func (c *connector) start(ctx context.Context, srv Server) (*proc, error) {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	cmd := exec.Command(srv.Command, srv.args()...) //nolint:gosec,noctx // running the configured command is the point; its lifetime is the process pool's, not a request's
	cmd.Env = []string{"PATH=" + path}
	for k, v := range srv.env {
		if k != "PATH" {
			cmd.Env = append(cmd.Env, k+"="+v)
		} else {
			cmd.Env[0] = "PATH=" + v
		}
	}
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.credential}
	stderr := &ringLog{max: StderrLogBytes}
	cmd.Stderr = stderr
	sctx, cancel := context.WithTimeout(ctx, c.startWait)
	defer cancel()
	closeOnExec()
	cs, err := c.client.Connect(sctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil, errs.Errorf(errs.BadGateway, "cannot start the MCP server: command %q not found or not executable", srv.Command)
		}
		if sctx.Err() != nil {
			return nil, errs.New(errs.BadGateway, "the MCP server process did not complete the MCP handshake in time")
		}
		return nil, errs.Errorf(errs.BadGateway, "the MCP server process failed the MCP handshake: %s", mcpMessage(err))
	}
	p := &proc{session: cs, cmd: cmd, version: srv.UpdatedAt, stderr: stderr, done: make(chan struct{}), lastUsed: c.now()}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = cs.Wait()
		close(p.done)
		// Reap the whole group: a server's own children must not outlive it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}()
	c.logger.Info("mcp stdio server started", "server", srv.ID, "pid", cmd.Process.Pid)
	return p, nil
}

// closeOnExec marks every descriptor of this process above stderr
// close-on-exec before a child starts. exec.Cmd passes a child only its
// stdin, stdout and stderr, and Go opens everything close-on-exec, but a
// descriptor opened otherwise (by cgo or a raw syscall in a library) would
// reach the child: a socket to the database, the secret key file.
func closeOnExec() {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return // not Linux: nothing to scan
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// stop ends the process of server id, if any.
func (c *connector) stop(id uuid.UUID) {
	c.mu.Lock()
	s, ok := c.slots[id]
	delete(c.slots, id)
	c.mu.Unlock()
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
}

// stderr returns the kept stderr of server id's process.
func (c *connector) stderr(id uuid.UUID) string {
	c.mu.Lock()
	s, ok := c.slots[id]
	c.mu.Unlock()
	if !ok {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return ""
	}
	return s.proc.stderr.String()
}

// pid returns the process id of server id's running process (0: none).
func (c *connector) pid(id uuid.UUID) int {
	c.mu.Lock()
	s, ok := c.slots[id]
	c.mu.Unlock()
	if !ok {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || !s.proc.alive() {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// servers lists the servers that have a slot.
func (c *connector) servers() []uuid.UUID {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]uuid.UUID, 0, len(c.slots))
	for id := range c.slots {
		ids = append(ids, id)
	}
	return ids
}

// reap stops processes idle for longer than the idle timeout, and forgets
// crashed ones.
func (c *connector) reap() {
	now := c.now()
	for _, id := range c.servers() {
		s := c.slot(id)
		if !s.mu.TryLock() {
			continue // starting or in use
		}
		if p := s.proc; p != nil && (!p.alive() || p.idle(now, c.idle)) {
			p.kill()
			s.proc = nil
			c.logger.Info("mcp stdio server stopped", "server", id, "reason", "idle")
		}
		s.mu.Unlock()
	}
}

// stopAll ends every process and waits for their watchers.
func (c *connector) stopAll() {
	for _, id := range c.servers() {
		c.stop(id)
	}
	c.wg.Wait()
}
