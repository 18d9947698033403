package console

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeneratedUpToDate fails when a .templ file was changed without
// running go generate: templ (pinned in tools/go.mod) regenerates each
// file to stdout, which must equal the committed *_templ.go.
func TestGeneratedUpToDate(t *testing.T) {
	t.Parallel()
	sources, err := filepath.Glob("*.templ")
	require.NoError(t, err)
	require.NotEmpty(t, sources)
	for _, src := range sources {
		cmd := exec.CommandContext(t.Context(), "go", "tool", "-modfile=../../tools/go.mod", "templ", "generate", "-f", src, "-stdout")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		want, err := cmd.Output()
		require.NoError(t, err, "templ generate -f %s: %s", src, stderr.String())
		got, err := os.ReadFile(strings.TrimSuffix(src, ".templ") + "_templ.go")
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s is stale: run go generate ./internal/console", src)
	}
}
