package llm_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
)

func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot
}

func TestLocalEmbedder(t *testing.T) {
	t.Parallel()
	e := llm.NewLocalEmbedder(0)
	require.Equal(t, llm.LocalDimensionDefault, e.Dimension())
	require.Equal(t, "local/feature-hash-v1", e.Model())
	var _ llm.Embedder = e

	texts := []string{
		"PostgreSQL stores the vectors of every chunk.",
		"Every chunk's vectors are stored in PostgreSQL!",
		"Bananas are yellow fruit grown in the tropics.",
		"",
	}
	vs, err := e.Embed(context.Background(), texts)
	require.NoError(t, err)
	require.Len(t, vs, len(texts))
	for i, v := range vs[:3] {
		require.Len(t, v, 768)
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		require.InDelta(t, 1, math.Sqrt(n), 1e-5, "text %d", i)
	}
	require.Greater(t, cosine(vs[0], vs[1]), 0.5)
	require.Less(t, cosine(vs[0], vs[2]), 0.2)
	require.Greater(t, cosine(vs[0], vs[1]), cosine(vs[0], vs[2])+0.3)
	for _, x := range vs[3] {
		require.Zero(t, x, "empty text embeds to the zero vector")
	}

	// Deterministic, batch-independent.
	again, err := llm.NewLocalEmbedder(768).Embed(context.Background(), texts[1:2])
	require.NoError(t, err)
	require.Equal(t, vs[1], again[0])

	small, err := llm.NewLocalEmbedder(16).Embed(context.Background(), texts[:1])
	require.NoError(t, err)
	require.Len(t, small[0], 16)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.Embed(ctx, texts)
	require.ErrorIs(t, err, context.Canceled)
}

func BenchmarkLocalEmbed(b *testing.B) {
	e := llm.NewLocalEmbedder(768)
	text := "Graphmill parses documents into chunks, extracts typed objects and relationships, and embeds both for search. "
	for len(text) < 2000 {
		text += text
	}
	batch := make([]string, 32)
	for i := range batch {
		batch[i] = text
	}
	b.SetBytes(int64(len(text) * len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
}
