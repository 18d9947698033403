package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// rateLimitKnob reads an integer or duration knob of BenchmarkRateLimit
// from the environment (make bench/ratelimit RPM=120 DELAY=1s DOCS=60).
func rateLimitKnob[T int | time.Duration](b *testing.B, name string, def T) T {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out T
	switch p := any(&out).(type) {
	case *int:
		n, err := strconv.Atoi(v)
		require.NoError(b, err, name)
		*p = n
	case *time.Duration:
		d, err := time.ParseDuration(v)
		require.NoError(b, err, name)
		*p = d
	}
	return out
}

// BenchmarkRateLimit runs the extraction pipeline (upload, parsing,
// extraction through the openai provider) over DOCS documents against an
// OpenAI-compatible fake that allows RPM chat completions in any sliding
// minute (429 with Retry-After beyond) and answers each after DELAY, with
// GRAPHMILL_PROVIDER_RPM set to the same limit. It reports the calls per
// minute achieved as a share of the limit (from the first to the last
// answer), the most calls answered in any minute, the 429s per 100 calls,
// the wall time from the first upload to the last job finished, and the
// failed jobs. Target: >= 90 % of the limit, <= 1 429 per 100 calls, no
// failed job.
//
//	make bench/ratelimit                          # 60 RPM, 2 s, 200 documents (~4 min)
//	make bench/ratelimit RPM=120 DELAY=1s DOCS=150
func BenchmarkRateLimit(b *testing.B) {
	rpm := rateLimitKnob(b, "RPM", 60)
	delay := rateLimitKnob(b, "DELAY", 2*time.Second)
	docs := rateLimitKnob(b, "DOCS", 200)
	for b.Loop() {
		b.StopTimer()
		fake := llmtest.NewOpenAI(b)
		fake.SetRateLimit(rpm, delay)
		var mu sync.Mutex
		var answered []time.Time
		fake.SetChat(func(llmtest.OpenAIChat) string {
			mu.Lock()
			answered = append(answered, time.Now())
			mu.Unlock()
			return openAIAnswer
		})
		s := newServer(b, withOpenAI(fake.URL(), "", "llama3.1:8b", ""), func(c *config.Config) { c.ProviderRPM = rpm })
		project, _ := s.defaultProject()
		b.StartTimer()
		start := time.Now()
		for i := range docs {
			s.extractionUpload(project, fmt.Sprintf("doc-%d.md", i),
				fmt.Sprintf("# Note %d\n\nAda Lovelace worked with Charles Babbage, who founded the Analytical Society (note %d).", i, i))
		}
		ctx := context.Background()
		var done, failed int
		for {
			require.NoError(b, s.m.db.pool.QueryRow(ctx, `SELECT
				count(*) FILTER (WHERE status IN ('completed', 'requires_review', 'failed')),
				count(*) FILTER (WHERE status = 'failed')
				FROM object_extraction_jobs`).Scan(&done, &failed))
			if done >= docs {
				break
			}
			require.Less(b, time.Since(start), time.Duration(docs)*time.Minute/time.Duration(rpm)*3+5*time.Minute, "jobs never finished")
			time.Sleep(100 * time.Millisecond)
		}
		wall := time.Since(start)
		b.StopTimer()
		mu.Lock()
		calls := len(answered)
		span := answered[len(answered)-1].Sub(answered[0])
		busiest := 0
		for i, a := range answered {
			n := 0
			for _, c := range answered[i:] {
				if c.Sub(a) < time.Minute {
					n++
				}
			}
			busiest = max(busiest, n)
		}
		mu.Unlock()
		perMinute := float64(calls-1) / span.Minutes()
		b.ReportMetric(100*perMinute/float64(rpm), "%limit")
		b.ReportMetric(float64(busiest), "max-calls/min")
		b.ReportMetric(float64(fake.RateLimited()), "429s")
		b.ReportMetric(100*float64(fake.RateLimited())/float64(calls), "429s/100calls")
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(failed), "failed-jobs")
		b.Logf("%d documents, limit %d RPM, delay %s: %d calls in %s (%.1f/min, %.0f%% of the limit), busiest minute %d, %d 429s, %d failed jobs, wall %s",
			docs, rpm, delay, calls, span.Round(time.Second), perMinute, 100*perMinute/float64(rpm), busiest, fake.RateLimited(), failed, wall.Round(time.Second))
		b.StartTimer()
	}
}
