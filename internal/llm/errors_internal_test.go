package llm

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"30", 30 * time.Second},
		{" 5 ", 5 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"999999999", 0},
		{now.Add(2 * time.Minute).Format(http.TimeFormat), 2 * time.Minute},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"Sun, 01 Mar 2026 12:00:45 GMT", 45 * time.Second},
		{"soon", 0},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, parseRetryAfter(tc.in, now), tc.in)
	}
}

func TestRetryDelayAndReason(t *testing.T) {
	t.Parallel()
	details := []map[string]any{
		{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"},
		{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"},
	}
	require.Equal(t, 1500*time.Millisecond, retryDelayFromDetails(details))
	require.Equal(t, "API_KEY_INVALID", errorReason(details))
	require.True(t, isAuthReason(errorReason(details)))
	require.Zero(t, retryDelayFromDetails(nil))
	require.Zero(t, retryDelayFromDetails([]map[string]any{{"@type": retryInfoType, "retryDelay": "later"}}))
}

func TestKindForStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]ErrorKind{
		400: ErrorInvalid, 401: ErrorAuth, 403: ErrorAuth, 404: ErrorInvalid, 408: ErrorTransient,
		413: ErrorInvalid, 429: ErrorRateLimit, 500: ErrorTransient, 502: ErrorTransient, 503: ErrorTransient,
	} {
		require.Equal(t, want, kindForStatus(status), status)
	}
}

func TestEmbedBatches(t *testing.T) {
	t.Parallel()
	texts := func(n int, s string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	gemini := &genaiClient{}
	vertex := &genaiClient{vertex: true}
	require.Equal(t, [][2]int{{0, 32}}, gemini.embedBatches("gemini-embedding-001", texts(32, "a")))
	require.Equal(t, [][2]int{{0, 100}, {100, 200}, {200, 201}}, gemini.embedBatches("gemini-embedding-001", texts(201, "a")))
	require.Equal(t, [][2]int{{0, 250}, {250, 300}}, vertex.embedBatches("text-embedding-005", texts(300, "a")))
	require.Equal(t, [][2]int{{0, 1}, {1, 2}, {2, 3}}, vertex.embedBatches("gemini-embedding-001", texts(3, "a")))
	long := strings.Repeat("x", 4*6000) // 6,000 estimated tokens
	require.Equal(t, [][2]int{{0, 2}, {2, 4}, {4, 5}}, vertex.embedBatches("text-embedding-005", texts(5, long)))
	huge := strings.Repeat("x", 4*30000)
	require.Equal(t, [][2]int{{0, 1}, {1, 2}}, vertex.embedBatches("text-embedding-005", []string{huge, "a"}), "an oversized text goes alone")
}

func TestGuard(t *testing.T) {
	t.Parallel()
	_, err := guard(func() (int, error) {
		var m map[string]any
		return m["x"].([]any)[0].(int), nil
	})
	var p panicError
	require.ErrorAs(t, err, &p)
	require.Contains(t, err.Error(), "undecodable response")
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(0), EstimateTokens(""))
	require.Equal(t, int64(1), EstimateTokens("abc"))
	require.Equal(t, int64(1), EstimateTokens("abcd"))
	require.Equal(t, int64(2), EstimateTokens("abcde"))
	require.Equal(t, int64(1), EstimateTokens("äöüß"), "characters, not bytes")
}
