package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// clientDir is the generated client's package, from this package's folder.
const clientDir = "../../internal/client"

// TestGeneratedClientUpToDate regenerates the Go client from the running
// server's OpenAPI document (3.0, as huma downgrades it) in a temporary
// folder and fails when internal/client differs. With
// GRAPHMILL_UPDATE_CLIENT=1 (go generate ./internal/client) it writes the
// new files instead.
func TestGeneratedClientUpToDate(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	spec := srv.must(200, "GET", "/api/openapi-3.0.json", "", nil).Body
	spec = append(bytes.TrimRight(spec, "\n"), '\n')

	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "openapi-3.0.json"), spec, 0o600))
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), "go", "tool", "-modfile="+filepath.Join(root, "tools", "go.mod"), "oapi-codegen",
		"-config", filepath.Join(root, "internal", "client", "oapi-codegen.yaml"),
		"-o", filepath.Join(out, "client.gen.go"), filepath.Join(out, "openapi-3.0.json"))
	cmd.Dir = root
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "oapi-codegen: %s", msg)

	for _, name := range []string{"openapi-3.0.json", "client.gen.go"} {
		fresh, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		path := filepath.Join(clientDir, name)
		if os.Getenv("GRAPHMILL_UPDATE_CLIENT") == "1" {
			require.NoError(t, os.WriteFile(path, fresh, 0o644)) //nolint:gosec // a source file
			continue
		}
		committed, err := os.ReadFile(path)
		require.NoError(t, err, "run go generate ./internal/client")
		require.True(t, bytes.Equal(fresh, committed), "%s is stale: run go generate ./internal/client", path)
	}
}
