package mcpregistry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/mcpregistry"
)

type whoami struct {
	UID       int               `json:"uid"`
	Env       []string          `json:"env"`
	Args      []string          `json:"args"`
	FDs       map[string]string `json:"fds"`
	Inherited []int             `json:"inherited"`
}

func callWhoami(t *testing.T, b *bundle, server string) whoami {
	t.Helper()
	r, err := b.svc.CallTool(context.Background(), b.project, server, "whoami", nil)
	require.NoError(t, err)
	var w whoami
	require.NoError(t, json.Unmarshal([]byte(resultText(t, r)), &w))
	return w
}

func stdioServer(t *testing.T, b *bundle, name string) {
	t.Helper()
	ctx := context.Background()
	srv, err := b.svc.CreateServer(ctx, b.project, mcpregistry.ServerInput{
		Name: name, Type: mcpregistry.TypeStdio, Command: stdioBin,
		Env: map[string]string{"MCPTEST_TOOLS": "whoami", "SERVER_TOKEN": "child-own-secret"},
	}, superadmin)
	require.NoError(t, err)
	_, err = b.svc.Sync(ctx, b.project, srv.ID)
	require.NoError(t, err)
}

// A stdio child sees none of this server's secrets: it runs as another
// user (the tests run as root), inherits no file descriptor beyond 0-2
// (not even one this process opened without close-on-exec), and gets only
// the record's env plus PATH.
func TestStdioChildIsolated(t *testing.T) {
	t.Parallel()
	// A descriptor opened without O_CLOEXEC, as a library might.
	leak := filepath.Join(t.TempDir(), "graphmill-secret-key")
	require.NoError(t, os.WriteFile(leak, []byte("key material"), 0o600))
	fd, err := syscall.Open(leak, syscall.O_RDONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })

	b := setup(t)
	stdioServer(t, b, "iso")
	w := callWhoami(t, b, "iso")
	require.Equal(t, []string{"MCPTEST_TOOLS", "PATH", "SERVER_TOKEN"}, w.Env)
	for _, target := range w.FDs {
		require.NotContains(t, target, "graphmill-secret-key")
	}
	require.Equal(t, []int{0, 1, 2}, w.Inherited, "%v", w.FDs)
	if os.Geteuid() == 0 {
		require.Equal(t, 65534, w.UID, "nobody")
	}
}

// syncBuffer is a log sink safe for the service's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// logLines decodes JSON log lines.
func logLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split([]byte(s), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		m := map[string]any{}
		require.NoError(t, json.Unmarshal(line, &m))
		out = append(out, m)
	}
	return out
}

// Without a way to run children as another user, they would read this
// server's secrets: only superadmins may have stdio servers then, and the
// start says so at INFO.
func TestStdioWithoutSeparateUser(t *testing.T) {
	t.Parallel()
	const euid = 4242 // a non-root server without CAP_SETUID
	for _, tt := range []struct {
		policy, user string
		setID        bool
		refused      bool
		child        int // the uid the child runs as (-1: this process's)
		log          string
	}{
		{policy: mcpregistry.StdioSuperadmin, child: -1, log: "only superadmins may create them"},
		{policy: mcpregistry.StdioEnabled, refused: true, log: "stdio MCP servers are refused"},
		{policy: mcpregistry.StdioEnabled, user: "nobody", setID: true, child: 65534, log: "run as nobody"},
	} {
		t.Run(tt.policy+"/"+tt.user, func(t *testing.T) {
			t.Parallel()
			if tt.setID && os.Geteuid() != 0 {
				t.Skip("switching users needs root")
			}
			logs := &syncBuffer{}
			b := setup(t, func(c *mcpregistry.Config) {
				c.StdioPolicy, c.StdioUser = tt.policy, tt.user
				c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
				mcpregistry.PretendHost(c, euid, tt.setID)
			})
			lines := logLines(t, logs.String())
			var said bool
			for _, l := range lines {
				require.Equal(t, "INFO", l["level"], "%v", l)
				said = said || bytes.Contains([]byte(l["msg"].(string)), []byte(tt.log))
			}
			require.True(t, said, "the start says %q: %v", tt.log, lines)
			if tt.refused {
				require.ErrorIs(t, b.svc.CheckStdio(mcpregistry.Caller{Superadmin: true, OrgAdmin: true}), mcpregistry.ErrStdioShared)
				srv, err := b.svc.CreateRecord(context.Background(), b.project, mcpregistry.ServerInput{Name: "x", Type: mcpregistry.TypeStdio, Command: stdioBin})
				require.NoError(t, err, "a record made before is kept")
				_, err = b.svc.Inspect(context.Background(), b.project, srv.ID)
				require.ErrorIs(t, err, mcpregistry.ErrStdioShared)
				require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))
				return
			}
			require.NoError(t, b.svc.CheckStdio(mcpregistry.Caller{Superadmin: true, OrgAdmin: false}))
			stdioServer(t, b, "child")
			w := callWhoami(t, b, "child")
			want := tt.child
			if want == -1 {
				want = os.Geteuid()
			}
			if os.Geteuid() == 0 {
				require.Equal(t, want, w.UID)
			}
		})
	}
	// A user to switch to, but no right to: the start fails, naming why.
	_, err := mcpregistry.NewService(func() mcpregistry.Config {
		c := mcpregistry.Config{StdioUser: "nobody"}
		mcpregistry.PretendHost(&c, euid, false)
		return c
	}())
	require.ErrorContains(t, err, "CAP_SETUID")
	// A user that does not exist.
	_, err = mcpregistry.NewService(mcpregistry.Config{StdioUser: "no-such-user-graphmill"})
	require.ErrorContains(t, err, "no-such-user-graphmill")
}
