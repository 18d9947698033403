package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// chatTurnTiming is what one streamed turn took, as the client saw it.
type chatTurnTiming struct {
	firstDelta, total, retrieval, search, keywords time.Duration
}

// chatTimedTurn asks question with Accept: text/event-stream and times
// the first message.delta event and the message.completed one; the
// retrieval time is the server's (Server-Timing).
func (s *testServer) chatTimedTurn(tb testing.TB, project, session, question string) chatTurnTiming {
	raw, err := json.Marshal(map[string]any{"content": question})
	require.NoError(tb, err)
	req, err := http.NewRequestWithContext(context.Background(), "POST", s.base+"/api/chat/sessions/"+session+"/messages", bytes.NewReader(raw))
	require.NoError(tb, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("X-Project-ID", project)
	start := time.Now()
	res, err := s.client.Do(req)
	require.NoError(tb, err)
	defer res.Body.Close()
	require.Equal(tb, 200, res.StatusCode)
	var out chatTurnTiming
	var retrieval, search, keywords float64
	_, err = fmt.Sscanf(res.Header.Get("Server-Timing"), "retrieval;dur=%g, search;dur=%g, keywords;dur=%g", &retrieval, &search, &keywords)
	require.NoError(tb, err, res.Header.Get("Server-Timing"))
	out.retrieval = time.Duration(retrieval * float64(time.Millisecond))
	out.search = time.Duration(search * float64(time.Millisecond))
	out.keywords = time.Duration(keywords * float64(time.Millisecond))
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		switch sc.Text() {
		case "event: message.delta":
			if out.firstDelta == 0 {
				out.firstDelta = time.Since(start)
			}
		case "event: message.completed":
			out.total = time.Since(start)
		case "event: error":
			tb.Fatalf("the turn failed")
		}
	}
	require.NoError(tb, sc.Err())
	require.NotZero(tb, out.total, "no message.completed")
	return out
}

// chatReport reports the percentiles of the turns' timings.
func chatReport(b *testing.B, what string, turns []chatTurnTiming) {
	pct := func(get func(chatTurnTiming) time.Duration, p float64) float64 {
		d := make([]time.Duration, len(turns))
		for i, t := range turns {
			d[i] = get(t)
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) / 1000
	}
	first := func(t chatTurnTiming) time.Duration { return t.firstDelta }
	total := func(t chatTurnTiming) time.Duration { return t.total }
	retrieval := func(t chatTurnTiming) time.Duration { return t.retrieval }
	search := func(t chatTurnTiming) time.Duration { return t.search }
	keywords := func(t chatTurnTiming) time.Duration { return t.keywords }
	b.ReportMetric(pct(first, 0.5), "first-token-p50-ms")
	b.ReportMetric(pct(total, 0.5), "total-p50-ms")
	b.ReportMetric(pct(retrieval, 0.5), "retrieval-p50-ms")
	b.ReportMetric(pct(retrieval, 0.95), "retrieval-p95-ms")
	b.ReportMetric(pct(keywords, 0.95), "keywords-p95-ms")
	b.Logf("%s (%d turns): first token p50 %.1f ms, p95 %.1f ms; total p50 %.1f ms, p95 %.1f ms; retrieval p50 %.1f ms, p95 %.1f ms "+
		"(of which hybrid search p50 %.1f ms, p95 %.1f ms; the keyword words' per-project counts p50 %.1f ms, p95 %.1f ms)",
		what, len(turns), pct(first, 0.5), pct(first, 0.95), pct(total, 0.5), pct(total, 0.95),
		pct(retrieval, 0.5), pct(retrieval, 0.95), pct(search, 0.5), pct(search, 0.95), pct(keywords, 0.5), pct(keywords, 0.95))
}

// chatBenchLatency is the fake model's fixed latency before it answers.
const chatBenchLatency = 100 * time.Millisecond

// BenchmarkChatTurn measures streamed chat turns end to end through the
// API against the OpenAI-compatible fake answering after a fixed latency
// (chatBenchLatency) in ten deltas: time to the first streamed delta,
// total reply time, and the retrieval part (hybrid search of the
// question, its embedding by the fake, the graph neighbourhood, chunk
// texts), over the chat test documents.
//
//	go test ./cmd/graphmill -run '^$' -bench 'ChatTurn$' -benchtime 50x
func BenchmarkChatTurn(b *testing.B) {
	fake := llmtest.NewOpenAI(b)
	fake.SetChatStream(func(c llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		return append(fakeOpenAIAnswer(c), llmtest.OpenAIDelta{Content: " More"}, llmtest.OpenAIDelta{Content: " words"}, llmtest.OpenAIDelta{Content: " follow."})
	})
	s := newServer(b, withOpenAI(fake.URL(), "", "llama3.1:8b", "nomic-embed-text"))
	project, _ := s.defaultProject()
	chatUpload(b, s, project)
	fake.SetRateLimit(0, chatBenchLatency)
	session := s.chatSession(s.admin, project)
	s.chatTimedTurn(b, project, session, chatLabelled[0].question) // warm up
	turns := make([]chatTurnTiming, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		turns = append(turns, s.chatTimedTurn(b, project, s.chatSession(s.admin, project), chatLabelled[i%len(chatLabelled)].question))
	}
	b.StopTimer()
	chatReport(b, fmt.Sprintf("chat turn, model latency %v", chatBenchLatency), turns)
}

// chatBenchObjects is the number of graph objects of
// BenchmarkChatRetrieval100k.
const chatBenchObjects = 10_000

// chatBenchGraph writes n graph objects into project as extraction would
// have: each named by two words of vocab (Zipf-like, as the chunks' words)
// with a description of four, extracted from one of the project's chunks
// (provenance), and related to the next two objects.
func chatBenchGraph(b *testing.B, s *testServer, project string, vocab []string, n int, rng *rand.Rand) {
	ctx := context.Background()
	pool := s.m.db.pool
	rows, err := pool.Query(ctx, `SELECT id FROM document_chunks WHERE project_id = $1 ORDER BY chunk_index LIMIT $2`, project, n)
	require.NoError(b, err)
	chunks, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(b, err)
	word := func() string { return vocab[int(float64(len(vocab))*rng.Float64()*rng.Float64())] }
	now := time.Now()
	ids := make([]uuid.UUID, n)
	objects, provenance, rels := make([][]any, n), make([][]any, n), make([][]any, 0, 2*n)
	for i := range n {
		ids[i] = uuid.Must(uuid.NewV7())
		name := fmt.Sprintf("%s %s %d", word(), word(), i)
		objects[i] = []any{
			ids[i], project, "Component", name, strings.ToLower(name), name,
			strings.Join([]string{word(), word(), word(), word()}, " "), "accepted", now, now,
		}
		provenance[i] = []any{ids[i], chunks[i%len(chunks)], project, now}
	}
	for i := range n {
		for _, j := range []int{(i + 1) % n, (i + 2) % n} {
			rels = append(rels, []any{uuid.Must(uuid.NewV7()), project, "CONNECTS_TO", ids[i], ids[j], now, now})
		}
	}
	for _, c := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"graph_objects", []string{"id", "project_id", "type", "key", "normalized_key", "name", "description", "status", "created_at", "updated_at"}, objects},
		{"graph_object_provenance", []string{"object_id", "chunk_id", "project_id", "created_at"}, provenance},
		{"graph_relationships", []string{"id", "project_id", "type", "source_id", "target_id", "created_at", "updated_at"}, rels},
	} {
		_, err := pool.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows))
		require.NoError(b, err, c.table)
	}
	_, err = pool.Exec(ctx, `ANALYZE graph_objects; ANALYZE graph_object_provenance; ANALYZE graph_relationships`)
	require.NoError(b, err)
}

// BenchmarkChatRetrieval100k measures chat turns over a project of
// 100,000 chunks (768-dimension local embeddings, written by COPY as the
// pipeline would have) and chatBenchObjects graph objects with
// provenance and relationships, with the local provider: retrieval
// percentiles (target: p95 under 50 ms), first delta and total. The first
// turn loads the vector index. Each turn's retrieval includes the
// per-project counts of its words (keywords) and the graph material of
// the objects found.
//
//	go test ./cmd/graphmill -run '^$' -bench ChatRetrieval100k -benchtime 200x -timeout 30m
func BenchmarkChatRetrieval100k(b *testing.B) {
	const chunks = 100_000
	rng := rand.New(rand.NewPCG(3, 4))
	s, project, vocab := benchCorpus(b, chunks, rng)
	chatBenchGraph(b, s, project, vocab, chatBenchObjects, rng)
	hp := header{"X-Project-ID", project}

	questions := make([]string, 64)
	for i := range questions {
		questions[i] = "What do the sources say about " + vocab[rng.IntN(200)] + " and " + vocab[rng.IntN(2000)] + " " + vocab[rng.IntN(len(vocab))] + "?"
	}
	session := s.chatSession(s.admin, project)
	start := time.Now()
	s.chatTimedTurn(b, project, session, "warm up")
	b.Logf("first turn (loads %d vectors into the index): %v", chunks, time.Since(start))

	turns := make([]chatTurnTiming, 0, b.N)
	searches := make([]chatTurnTiming, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		q := questions[i%len(questions)]
		turns = append(turns, s.chatTimedTurn(b, project, s.chatSession(s.admin, project), q))
		// The search API with the same question, at the same time, for
		// comparison (its keyword side requires every word).
		t0 := time.Now()
		s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": q, "limit": 8}, hp)
		searches = append(searches, chatTurnTiming{total: time.Since(t0)})
	}
	b.StopTimer()
	chatReport(b, fmt.Sprintf("chat turn over %d chunks and %d graph objects, local provider", chunks, chatBenchObjects), turns)
	// How often the graph took part: answers citing a source that came
	// with a graph object.
	withObject := 0
	for _, q := range questions {
		for _, c := range s.chatAsk(s.admin, project, s.chatSession(s.admin, project), q).Citations {
			if c.ObjectID != nil {
				withObject++
				break
			}
		}
	}
	b.Logf("%d of %d questions answered citing a source with a graph object", withObject, len(questions))
	sort.Slice(searches, func(i, j int) bool { return searches[i].total < searches[j].total })
	p50, p95 := searches[len(searches)/2].total, searches[min(len(searches)-1, len(searches)*95/100)].total
	b.ReportMetric(float64(p50.Microseconds())/1000, "search-api-p50-ms")
	b.ReportMetric(float64(p95.Microseconds())/1000, "search-api-p95-ms")
	b.Logf("POST /api/search of the same questions, interleaved (client-side time): p50 %v, p95 %v", p50, p95)
}
