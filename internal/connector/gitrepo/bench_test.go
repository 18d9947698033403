package gitrepo_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/connector/gitrepo"
)

// BenchmarkWalk2000 walks a repository of 2,000 Markdown files (about
// 2 KiB each, in 40 directories) served by git http-backend on loopback:
// "first" clones into an empty cache and reads every file, "unchanged"
// re-walks the cached, unchanged repository (ref advertisement, no pack,
// every file Unchanged), "one-changed" re-walks after a commit that edits
// one file (incremental thin fetch, one Item).
func BenchmarkWalk2000(b *testing.B) {
	const n = 2000
	srv := newGitServer(b)
	repo := srv.newRepo(b, "bench")
	files := make(map[string]string, n)
	for i := range n {
		files[fmt.Sprintf("docs/d%02d/file%04d.md", i%40, i)] = fmt.Sprintf("# File %d\n\n%s\n", i, strings.Repeat(fmt.Sprintf("line %d of a document. ", i), 80))
	}
	repo.commit("main", files)
	cfg := config(b, map[string]any{"repository_url": repo.url})
	c := gitrepo.New()
	ctx := context.Background()

	// walk walks once and checks what was reported.
	walk := func(b *testing.B, env connector.Env, w *connectortest.Walker, items, unchanged int) {
		require.NoError(b, c.Walk(ctx, env, cfg, connector.Options{}, w))
		require.Len(b, w.Items(), items)
		require.Len(b, w.UnchangedIDs(), unchanged)
	}
	// synced is a cache and a walker after a first sync.
	synced := func(b *testing.B) (connector.Env, *connectortest.Walker) {
		env, _ := newEnv(b)
		w := connectortest.NewWalker(nil)
		walk(b, env, w, n, 0)
		return env, w
	}
	report := func(b *testing.B) { b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "files/s") }

	b.Run("first", func(b *testing.B) {
		env, _ := newEnv(b)
		root := env.CacheDir
		for b.Loop() {
			dir, err := os.MkdirTemp(root, "cache-")
			require.NoError(b, err)
			env.CacheDir = dir
			walk(b, env, connectortest.NewWalker(nil), n, 0)
		}
		report(b)
	})

	b.Run("unchanged", func(b *testing.B) {
		env, first := synced(b)
		for b.Loop() {
			walk(b, env, first.Next(), 0, n)
		}
		report(b)
	})

	b.Run("one-changed", func(b *testing.B) {
		env, w := synced(b)
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			repo.commit("main", map[string]string{"docs/d00/file0000.md": fmt.Sprintf("# File 0, edit %d\n", i)})
			w = w.Next()
			b.StartTimer()
			walk(b, env, w, 1, n-1)
		}
		report(b)
	})
}
