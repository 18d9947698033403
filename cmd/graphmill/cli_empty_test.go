package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLIEmptyListsJSON: every list command prints [] with --json when
// there is nothing to list, never null: agents ls and agents runs, jobs ls
// and tokens ls against the server, and each of them against a server
// whose list answer is empty or leaves data out.
func TestCLIEmptyListsJSON(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	project, _ := s.defaultProject()

	lists := [][]string{
		{"agents", "ls"},
		{"jobs", "ls", "--queue", "graph_embedding"},
		{"jobs", "ls"},
	}
	for _, args := range lists {
		r := runCLI(t, env, append(args, "--json")...)
		require.NoError(t, r.err, "%v: %s", args, r.stderr)
		require.Equal(t, "[]\n", r.stdout, "%v", args)
	}
	agent := s.agentCreate(s.admin, project, map[string]any{"name": "Idle", "instructions": "i", "tools": []string{"search"}})
	r := runCLI(t, env, "agents", "runs", agent, "--json")
	require.NoError(t, r.err, r.stderr)
	require.Equal(t, "[]\n", r.stdout)

	// The caller's own token is always in its list: tokens ls, and the
	// rest once more, against a server that has nothing (data empty, or
	// left out).
	for _, body := range []string{`{"data":[],"total":0}`, `{"total":0}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}))
		env := []string{
			"XDG_CONFIG_HOME=" + t.TempDir(), "GRAPHMILL_URL=" + srv.URL, "GRAPHMILL_TOKEN=gm_x",
			"GRAPHMILL_PROJECT=00000000-0000-0000-0000-000000000001",
		}
		for _, args := range append(lists, []string{"tokens", "ls"}, []string{"agents", "runs", "00000000-0000-0000-0000-000000000002"}) {
			r := runCLI(t, env, append(args, "--json")...)
			require.NoError(t, r.err, "%v %s: %s", args, body, r.stderr)
			require.Equal(t, "[]\n", r.stdout, "%v %s", args, body)
		}
		srv.Close()
	}
}
