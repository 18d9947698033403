package gitrepo_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
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

	b.Run("first", func(b *testing.B) {
		env, _ := newEnv(b)
		root := env.CacheDir
		for b.Loop() {
			dir, err := os.MkdirTemp(root, "cache-")
			require.NoError(b, err)
			env.CacheDir = dir
			w := newWalker()
			require.NoError(b, c.Walk(ctx, env, cfg, connector.Options{}, w))
			require.Len(b, w.items, n)
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "files/s")
	})

	b.Run("unchanged", func(b *testing.B) {
		env, _ := newEnv(b)
		first := newWalker()
		require.NoError(b, c.Walk(ctx, env, cfg, connector.Options{}, first))
		for b.Loop() {
			w := first.next()
			require.NoError(b, c.Walk(ctx, env, cfg, connector.Options{}, w))
			require.Empty(b, w.items)
			require.Len(b, w.unchanged, n)
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "files/s")
	})

	b.Run("one-changed", func(b *testing.B) {
		env, _ := newEnv(b)
		w := newWalker()
		require.NoError(b, c.Walk(ctx, env, cfg, connector.Options{}, w))
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			repo.commit("main", map[string]string{"docs/d00/file0000.md": fmt.Sprintf("# File 0, edit %d\n", i)})
			w = w.next()
			b.StartTimer()
			require.NoError(b, c.Walk(ctx, env, cfg, connector.Options{}, w))
			require.Len(b, w.items, 1)
			require.Len(b, w.unchanged, n-1)
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "files/s")
	})
}
