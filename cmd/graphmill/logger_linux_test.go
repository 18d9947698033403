package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/graphmill/graphmill/internal/config"
)

// openPTY opens a pseudo-terminal pair (Linux /dev/ptmx).
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { _ = master.Close() })
	fd := int(master.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err)
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tty.Close() })
	return master, tty
}

// TestLoggerOnTerminal: with GRAPHMILL_LOG_FORMAT unset, a logger writing
// to a terminal writes text lines; set to json, JSON.
func TestLoggerOnTerminal(t *testing.T) {
	t.Parallel()
	master, tty := openPTY(t)
	read := func() string {
		require.NoError(t, master.SetReadDeadline(time.Now().Add(5*time.Second)))
		buf := make([]byte, 4096)
		n, err := master.Read(buf)
		require.NoError(t, err)
		return string(buf[:n])
	}

	cfg, err := config.Load(nil)
	require.NoError(t, err)
	newLogger(cfg, tty).Info("hello", "k", "v")
	out := read()
	require.True(t, strings.HasPrefix(out, "time="), out)
	require.Contains(t, out, "level=INFO msg=hello k=v")

	cfg, err = config.Load([]string{"GRAPHMILL_LOG_FORMAT=json"})
	require.NoError(t, err)
	newLogger(cfg, tty).Info("hello")
	require.True(t, strings.HasPrefix(read(), `{"time":`))
}
