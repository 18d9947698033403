package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ingestWords is the vocabulary of generated documents.
var ingestWords = strings.Fields(`graph knowledge document chunk embedding vector search object relationship
extraction pipeline worker queue project organization token scope policy provider model schema template
review notification event stream integration discovery server client database index cluster replica`)

// genMarkdown returns a ~size byte Markdown document with headings,
// paragraphs and lists.
func genMarkdown(r *rand.Rand, n, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Document %d\n\n", n)
	for sec := 1; b.Len() < size; sec++ {
		fmt.Fprintf(&b, "## Section %d\n\n", sec)
		for p := 0; p < 3 && b.Len() < size; p++ {
			for s := 0; s < 5; s++ {
				for w := 0; w < 12; w++ {
					if w > 0 {
						b.WriteByte(' ')
					}
					b.WriteString(ingestWords[r.IntN(len(ingestWords))])
				}
				b.WriteString(". ")
			}
			b.WriteString("\n\n")
		}
		b.WriteString("- first item\n- second item\n\n")
	}
	return b.String()
}

// BenchmarkIngest pushes 1,000 generated ~10 KB Markdown documents through
// upload, parsing, chunking and local embedding, and reports documents per
// second end to end and the mean time per stage from the job rows.
//
//	go test ./cmd/graphmill -run '^$' -bench Ingest -benchtime 1x
func BenchmarkIngest(b *testing.B) {
	const docs = 1000
	for b.Loop() {
		b.StopTimer()
		s := newServer(b)
		project, _ := s.defaultProject()
		r := rand.New(rand.NewPCG(1, 2))
		bodies := make([]string, docs)
		for i := range bodies {
			bodies[i] = genMarkdown(r, i, 10<<10)
		}
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		work := make(chan int)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					s.must(201, "POST", "/api/documents", s.admin, map[string]any{
						"filename": fmt.Sprintf("doc-%d.md", i), "content": bodies[i], "mimeType": "text/markdown",
					}, header{"X-Project-ID", project})
				}
			}()
		}
		for i := range docs {
			work <- i
		}
		close(work)
		wg.Wait()
		uploaded := time.Since(start)
		ctx := context.Background()
		for {
			var pending int
			require.NoError(b, s.m.db.pool.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM document_parsing_jobs WHERE status IN ('queued', 'running')) +
				(SELECT count(*) FROM chunk_embedding_jobs WHERE status IN ('queued', 'running'))`).Scan(&pending))
			if pending == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		total := time.Since(start)
		b.StopTimer()
		var parsed, failed, chunks int
		var parseMs, embedMs float64
		require.NoError(b, s.m.db.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM documents WHERE status = 'parsed'),
			(SELECT count(*) FROM documents WHERE status = 'failed'),
			(SELECT count(*) FROM document_chunks WHERE embedded_at IS NOT NULL),
			(SELECT COALESCE(avg(extract(epoch FROM completed_at - started_at) * 1000), 0) FROM document_parsing_jobs),
			(SELECT COALESCE(avg(extract(epoch FROM completed_at - started_at) * 1000), 0) FROM chunk_embedding_jobs)`).
			Scan(&parsed, &failed, &chunks, &parseMs, &embedMs))
		require.Equal(b, docs, parsed)
		require.Zero(b, failed)
		b.ReportMetric(float64(docs)/total.Seconds(), "docs/s")
		b.ReportMetric(float64(docs)/uploaded.Seconds(), "uploads/s")
		b.ReportMetric(float64(chunks)/float64(docs), "chunks/doc")
		b.ReportMetric(parseMs, "parse-ms/job")
		b.ReportMetric(embedMs, "embed-ms/batch-job")
		b.StartTimer()
	}
}
