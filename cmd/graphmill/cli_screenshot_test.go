package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// cliScreenshotScripts is testdata/cli-screenshot with its packages
// (xterm.js, playwright-core) installed, once per test process.
var cliScreenshotScripts = sync.OnceValues(func() (string, error) { return nodeScripts("cli-screenshot") })

// TestCLIIngestScreenshot runs graphmill ingest --wait on a
// pseudo-terminal, replays what it wrote in xterm.js (Debian's chromium,
// playwright-core) and saves the screen as a PNG in the test's artifact
// directory; with GRAPHMILL_SCREENSHOTS=1 (make screenshots) also as
// docs/images/cli-ingest.png, the README's picture. The screen must show
// the four phases' bars at 100% and the table.
func TestCLIIngestScreenshot(t *testing.T) {
	// Not parallel: the command runs in the folder of the files, so that
	// the table shows short paths.
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the screenshot needs Node.js (node and npm) on PATH")
	_, err = os.Stat("/usr/bin/chromium")
	require.NoError(t, err, "the screenshot needs Debian's chromium (make test installs it)")
	readme, err := filepath.Abs("../../docs/images/cli-ingest.png")
	require.NoError(t, err)
	scripts, err := cliScreenshotScripts()
	require.NoError(t, err)

	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	dir := t.TempDir()
	manuals := map[string]string{
		"zephyr.md":     "# Zephyr maintenance\n\nQuillwort bearings need lubrication every quarter with whale-free grease.\n",
		"boiler.md":     "# Boiler\n\nThe boiler of the Zephyr is inspected by Ada Lovelace every spring.\n",
		"crew/roles.md": "# Crew\n\nCharles Babbage commands the Zephyr; Grace Hopper keeps its logs.\n",
		"safety.txt":    "Never open the pressure valve while the engine runs.\n",
	}
	for name, body := range manuals {
		path := filepath.Join(dir, "manuals", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	}
	t.Chdir(dir)

	const cols, rows = 104, 14
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	defer tty.Close()
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Cols: cols, Rows: rows}))
	out := readPTY(ptmx)
	_, err = fmt.Fprint(tty, "$ graphmill ingest --wait ./manuals\n")
	require.NoError(t, err)
	require.NoError(t, runIO(context.Background(), []string{"ingest", "--wait", "./manuals"}, env, tty, tty, tty))
	for _, phase := range []string{"upload", "parse", "extract", "embed"} {
		out.waitFor(t, fmt.Sprintf("%-8s 100%% |", phase))
	}
	out.waitFor(t, "manuals/safety.txt")
	_, err = fmt.Fprint(tty, "$ ")
	require.NoError(t, err)
	out.waitFor(t, "\r\n$ ")

	out.mu.Lock()
	screen := out.buf.Bytes()
	out.mu.Unlock()
	require.NotContains(t, string(screen), "error")
	raw := filepath.Join(t.ArtifactDir(), "cli-ingest.out")
	require.NoError(t, os.WriteFile(raw, screen, 0o600))
	png := filepath.Join(t.ArtifactDir(), "cli-ingest.png")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	shot := exec.CommandContext(ctx, node, "terminal.mjs", raw, fmt.Sprint(cols), fmt.Sprint(rows), png)
	shot.Dir = scripts
	msg, err := shot.CombinedOutput()
	require.NoError(t, err, "node terminal.mjs: %s", msg)
	img, err := os.ReadFile(png)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(img), "\x89PNG"), "not a PNG")
	require.Less(t, len(img), 200<<10, "the README's picture stays under 200 KB")
	if os.Getenv("GRAPHMILL_SCREENSHOTS") == "1" {
		require.NoError(t, os.WriteFile(readme, img, 0o644)) //nolint:gosec // a picture of the repository
	}
}
