package postgres

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ClusterUser is the superuser name of an embedded cluster.
const ClusterUser = "graphmill"

// ClusterDatabase is the database Graphmill uses inside an embedded cluster.
const ClusterDatabase = "graphmill"

// ErrNoBinaries is returned when no PostgreSQL server binaries can be found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or under /usr/lib/postgresql/*/bin: " +
	"install them (Debian/Ubuntu: apt-get install -y postgresql) or set GRAPHMILL_DATABASE_URL to an existing database")

// ClusterOptions tunes an embedded cluster.
type ClusterOptions struct {
	// Settings are extra postgresql.conf lines written at initdb time
	// (tests turn fsync off).
	Settings map[string]string
	Logger   *slog.Logger
}

// Cluster is a PostgreSQL cluster that this process owns: created on first
// start under Dir, started on a loopback port, stopped on Stop. Dir holds
// data/ (the cluster), .password, port and log.
type Cluster struct {
	Dir    string
	binDir string
	opts   ClusterOptions
	cred   *syscall.Credential // run the binaries as this user (when root)
	port   int
	pass   string
	// started is set when Start launched the postmaster (rather than
	// adopting one that was already running).
	started bool
}

// Started reports whether Start launched the postmaster itself.
func (c *Cluster) Started() bool { return c.started }

// NewCluster finds the server binaries and checks that they can run on dir.
// It creates nothing yet.
func NewCluster(dir string, opts ClusterOptions) (*Cluster, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster directory: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: abs, binDir: bin, opts: opts}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root: PostgreSQL refuses to run as root and there is no 'postgres' system user to run it as (create one, or run as an ordinary user)")
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := checkTraversable(filepath.Dir(abs), c.cred); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// FindBinaries returns the directory holding initdb and pg_ctl: from PATH,
// else the newest /usr/lib/postgresql/<version>/bin.
func FindBinaries() (string, error) {
	return findBinaries(exec.LookPath, "/usr/lib/postgresql/*/bin/pg_ctl")
}

// findBinaries is FindBinaries with the PATH lookup and the glob matching
// versioned pg_ctl binaries passed in, so tests can point it elsewhere.
func findBinaries(lookPath func(string) (string, error), pgCtlGlob string) (string, error) {
	if p, err := lookPath("pg_ctl"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob(pgCtlGlob)
	sort.Slice(matches, func(i, j int) bool { return pgVersion(matches[i]) > pgVersion(matches[j]) })
	for _, m := range matches {
		dir := filepath.Dir(m)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", ErrNoBinaries
}

func pgVersion(path string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(path))), 64)
	return v
}

// checkTraversable makes sure the postgres user can enter every directory
// from / down to dir; PostgreSQL cannot start in a directory it cannot reach.
func checkTraversable(dir string, cred *syscall.Credential) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			sys, ok := st.Sys().(*syscall.Stat_t)
			if ok {
				mode := st.Mode().Perm()
				var can bool
				switch {
				case sys.Uid == cred.Uid:
					can = mode&0o100 != 0
				case sys.Gid == cred.Gid:
					can = mode&0o010 != 0
				default:
					can = mode&0o001 != 0
				}
				if !can {
					return fmt.Errorf("the postgres user cannot enter %s (mode %v): PostgreSQL runs as that user when Graphmill runs as root; "+
						"choose a GRAPHMILL_DATA_DIR outside it, or allow traversal with chmod o+x %s", d, mode, d)
				}
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stat %s: %w", d, err)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func (c *Cluster) dataDir() string { return filepath.Join(c.Dir, "data") }

func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...) //nolint:gosec // our own PostgreSQL binaries, fixed arguments
	cmd.Dir = c.Dir
	// The binaries get a minimal environment, never the server's secrets.
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
	return cmd
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	out, err := c.command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *Cluster) chown(path string) error {
	if c.cred == nil {
		return nil
	}
	return os.Chown(path, int(c.cred.Uid), int(c.cred.Gid))
}

// Start creates the cluster on first use, recovers from a crash of a previous
// owner (a stale postmaster.pid, or a postmaster still running), and starts
// it. It returns once the database accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", c.Dir, err)
	}
	if err := c.chown(c.Dir); err != nil {
		return fmt.Errorf("chown %s: %w", c.Dir, err)
	}
	if err := c.ensurePassword(); err != nil {
		return err
	}
	if err := c.initIfNeeded(ctx); err != nil {
		return err
	}
	running, err := c.clearStalePID()
	if err != nil {
		return err
	}
	if running {
		port, err := c.runningPort()
		if err != nil {
			return err
		}
		c.port = port
		c.opts.Logger.Info("embedded postgres already running; adopting it", "dir", c.Dir, "port", port)
	} else {
		if err := c.ensurePort(ctx); err != nil {
			return err
		}
		c.opts.Logger.Info("starting embedded postgres", "dir", c.Dir, "port", c.port)
		if err := c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-l", filepath.Join(c.Dir, "log"), "-w", "-t", "60",
			"-o", fmt.Sprintf("-p %d", c.port), "start"); err != nil {
			return fmt.Errorf("start embedded postgres (log: %s): %w", filepath.Join(c.Dir, "log"), err)
		}
		c.started = true
	}
	return c.ensureDatabase(ctx)
}

func (c *Cluster) ensurePassword() error {
	path := filepath.Join(c.Dir, ".password")
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		c.pass = strings.TrimSpace(string(b))
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	raw := make([]byte, 24)
	_, _ = rand.Read(raw)
	c.pass = base64.RawURLEncoding.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(c.pass+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return c.chown(path)
}

func (c *Cluster) initIfNeeded(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dataDir(), "PG_VERSION")); err == nil {
		return nil
	}
	// A data directory without PG_VERSION is the debris of an interrupted
	// initdb; nothing in it is worth keeping.
	if err := os.RemoveAll(c.dataDir()); err != nil {
		return fmt.Errorf("remove incomplete cluster: %w", err)
	}
	c.opts.Logger.Info("initialising embedded postgres", "dir", c.dataDir())
	if err := c.run(ctx, "initdb", "-D", c.dataDir(), "-U", ClusterUser, "--auth=scram-sha-256",
		"--pwfile="+filepath.Join(c.Dir, ".password"), "--encoding=UTF8", "--locale=C"); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = ''",
		"max_connections = 200",
	}
	keys := make([]string, 0, len(c.opts.Settings))
	for k := range c.opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		conf = append(conf, fmt.Sprintf("%s = '%s'", k, c.opts.Settings[k]))
	}
	f, err := os.OpenFile(filepath.Join(c.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open postgresql.conf: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n# Graphmill embedded cluster\n" + strings.Join(conf, "\n") + "\n"); err != nil {
		return fmt.Errorf("write postgresql.conf: %w", err)
	}
	return nil
}

// clearStalePID reports whether a postmaster still runs on the data
// directory, and removes postmaster.pid when its process is gone or is not a
// postmaster (after a crash the pid may have been reused).
func (c *Cluster) clearStalePID() (bool, error) {
	pidFile := filepath.Join(c.dataDir(), "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", pidFile, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(first))
	if pid > 0 && isPostgres(pid) {
		return true, nil
	}
	c.opts.Logger.Warn("removing stale postmaster.pid", "pid", pid)
	if err := os.Remove(pidFile); err != nil {
		return false, fmt.Errorf("remove stale %s: %w", pidFile, err)
	}
	return false, nil
}

func isPostgres(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		// No /proc: trust the signal check.
		return true
	}
	return filepath.Base(strings.TrimSuffix(exe, " (deleted)")) == "postgres"
}

// runningPort reads the port from postmaster.pid (its fourth line).
func (c *Cluster) runningPort() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.dataDir(), "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("read postmaster.pid: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, fmt.Errorf("postmaster.pid has no port line")
	}
	return strconv.Atoi(strings.TrimSpace(lines[3]))
}

// ensurePort reuses the saved port, or picks a free loopback port on first
// start (or when another program has taken the saved one).
func (c *Cluster) ensurePort(ctx context.Context) error {
	var lc net.ListenConfig
	path := filepath.Join(c.Dir, "port")
	if b, err := os.ReadFile(path); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 {
			if l, err := lc.Listen(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
				_ = l.Close()
				c.port = p
				return nil
			}
			c.opts.Logger.Warn("saved postgres port is taken; picking another", "port", p)
		}
	}
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("find a free port: %w", err)
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	if err := os.WriteFile(path, []byte(strconv.Itoa(c.port)+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return c.chown(path)
}

func (c *Cluster) ensureDatabase(ctx context.Context) error {
	var conn *pgx.Conn
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err = pgx.Connect(ctx, c.URL("postgres"))
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("connect to embedded postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, ClusterDatabase).Scan(&exists); err != nil {
		return fmt.Errorf("look up database: %w", err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+ClusterDatabase); err != nil {
			return fmt.Errorf("create database: %w", err)
		}
	}
	return nil
}

// URL is the connection URL of database dbname in the running cluster.
func (c *Cluster) URL(dbname string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", ClusterUser, c.pass, c.port, dbname)
}

// Stop shuts the cluster down (fast mode: sessions are disconnected, work in
// progress is rolled back, everything committed is on disk).
func (c *Cluster) Stop(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dataDir(), "postmaster.pid")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	c.opts.Logger.Info("stopping embedded postgres", "dir", c.Dir)
	return c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-m", "fast", "-w", "-t", "60", "stop")
}
