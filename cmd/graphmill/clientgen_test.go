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

// TestGeneratedClientUpToDate regenerates the Go client from the API's
// OpenAPI document (3.0, as huma downgrades it), built without a database
// (openAPIDocument), in a temporary folder and fails when internal/client
// differs (go generate ./internal/client writes them, through graphmill
// openapi).
func TestGeneratedClientUpToDate(t *testing.T) {
	t.Parallel()
	spec, err := openAPIDocument("/api/openapi-3.0.json")
	require.NoError(t, err)

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
		committed, err := os.ReadFile(path)
		require.NoError(t, err, "run go generate ./internal/client")
		require.True(t, bytes.Equal(fresh, committed), "%s is stale: run go generate ./internal/client", path)
	}
}

// TestServedOpenAPIIsTheBuiltOne compares the documents a running server
// serves with those openAPIDocument builds without a database: every
// route of the document is registered by registerAPI, so the generated
// client covers the server.
func TestServedOpenAPIIsTheBuiltOne(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	for _, path := range []string{"/api/openapi.json", "/api/openapi-3.0.json"} {
		built, err := openAPIDocument(path)
		require.NoError(t, err)
		served := srv.must(200, "GET", path, "", nil).Body
		require.JSONEq(t, string(served), string(built), path)
		require.Contains(t, string(built), "/api/superadmin/sync-jobs", path)
	}
}

// TestOpenAPICommand prints the documents with graphmill openapi.
func TestOpenAPICommand(t *testing.T) {
	t.Parallel()
	for version, path := range map[string]string{"3.1": "/api/openapi.json", "3.0": "/api/openapi-3.0.json"} {
		want, err := openAPIDocument(path)
		require.NoError(t, err)
		r := runCLI(t, nil, "openapi", "--openapi", version)
		require.NoError(t, r.err)
		require.Equal(t, string(want), r.stdout, version)
	}
	require.Equal(t, exitUsage, runCLI(t, nil, "openapi", "--openapi", "2.0").code)
}
