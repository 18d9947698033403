package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
)

// BenchmarkSearchHybrid100k measures hybrid search end to end through the
// API (HTTP, auth, keyword search in PostgreSQL, query embedding, vector
// index, fusion) over 100,000 chunks with 768-dimension local embeddings,
// and reports the latency percentiles. The chunks are written directly
// (COPY), as the pipeline would have; the first search loads the index.
//
//	go test ./cmd/graphmill -run '^$' -bench SearchHybrid100k -benchtime 200x -timeout 30m
func BenchmarkSearchHybrid100k(b *testing.B) {
	const chunks = 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	s, project, vocab := benchCorpus(b, chunks, rng)
	hp := header{"X-Project-ID", project}

	queries := make([]string, 64)
	for i := range queries {
		queries[i] = vocab[rng.IntN(200)] + " " + vocab[rng.IntN(2000)] + " " + vocab[rng.IntN(len(vocab))]
	}
	search := func(q string) {
		s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": q, "targets": []string{"chunks"}, "limit": 10}, hp)
	}
	start := time.Now()
	search("warm up")
	b.Logf("first search (loads %d vectors into the index): %v", chunks, time.Since(start))

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		search(queries[i%len(queries)])
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.Logf("%s", fmt.Sprintf("hybrid search over %d chunks: p50 %.1f ms, p99 %.1f ms (%d queries)", chunks, pct(0.5), pct(0.99), len(lat)))
}

// benchCorpus starts a server whose default project holds a seed
// document and n chunks of 60 words (Zipf-like over a vocabulary of 5,000
// random words, which it returns) with their 768-dimension local
// embeddings, written by COPY, as the pipeline would have, and analyzed.
func benchCorpus(b *testing.B, n int, rng *rand.Rand) (s *testServer, project string, vocab []string) {
	s = newServer(b)
	project, _ = s.defaultProject()
	var d docBody
	s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "seed.md", "content": "# Seed\n\nseed", "mimeType": "text/markdown"},
		header{"X-Project-ID", project}).Decode(b, &d)
	s.waitDocument(project, d.ID)
	return s, project, benchChunks(b, s, project, d.ID, n, rng)
}

// benchChunks writes the chunks of benchCorpus into document doc.
func benchChunks(b *testing.B, s *testServer, project, doc string, n int, rng *rand.Rand) []string {
	vocab := make([]string, 5000)
	for i := range vocab {
		var w strings.Builder
		for range 4 + rng.IntN(6) {
			w.WriteByte(byte('a' + rng.IntN(26)))
		}
		vocab[i] = w.String()
	}
	texts := make([]string, n)
	for i := range texts {
		words := make([]string, 60)
		for j := range words {
			// Zipf-like: low indexes are common words.
			words[j] = vocab[int(float64(len(vocab))*rng.Float64()*rng.Float64())]
		}
		texts[i] = strings.Join(words, " ")
	}
	emb := llm.NewLocalEmbedder(768)
	vecs, err := emb.Embed(context.Background(), texts)
	require.NoError(b, err)
	now := time.Now()
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{
			uuid.Must(uuid.NewV7()), project, doc, 1000 + i, texts[i], 0, len(texts[i]),
			[]string{},
			60,
			vecs[i], llm.LocalEmbedModel, 768, now, now,
		}
	}
	_, err = s.m.db.pool.CopyFrom(context.Background(), pgx.Identifier{"document_chunks"},
		[]string{
			"id", "project_id", "document_id", "chunk_index", "text", "start_offset", "end_offset", "heading_path",
			"token_count", "embedding", "embedding_model", "embedding_dim", "embedded_at", "created_at",
		}, pgx.CopyFromRows(rows))
	require.NoError(b, err)
	_, err = s.m.db.pool.Exec(context.Background(), `ANALYZE document_chunks`)
	require.NoError(b, err)
	return vocab
}
