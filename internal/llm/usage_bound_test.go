package llm_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
)

// hostileUsageServer is an OpenAI-compatible endpoint that reports the
// token counts prompt and completion, whatever it was asked.
func hostileUsageServer(t *testing.T, prompt, completion string) string {
	t.Helper()
	usage := fmt.Sprintf(`"usage":{"prompt_tokens":%s,"completion_tokens":%s,"total_tokens":%[1]s}`, prompt, completion)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.HasSuffix(r.URL.Path, "/embeddings"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5]}],%s}`, usage)
		case strings.Contains(string(body), `"stream":true`):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n")
			_, _ = fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],%s}\n\ndata: [DONE]\n\n", usage)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{\"ok\":true}"}}],%s}`, usage)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOpenAIUsageBounded: token counts an endpoint reports are kept
// within 0 and llm.MaxCallTokens by every call (structured output, chat,
// embeddings): a negative count was recorded as is in the usage ledger,
// and counts near the int64 limit made its sums overflow (every usage
// summary of the project and organization answered 500 from then on).
func TestOpenAIUsageBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		prompt, completion string
		want               int64
	}{
		{"-1000000", "-5", 0},
		{fmt.Sprint(int64(math.MaxInt64)), fmt.Sprint(int64(math.MaxInt64)), llm.MaxCallTokens},
	} {
		c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: hostileUsageServer(t, tc.prompt, tc.completion)})
		require.NoError(t, err)
		g, err := c.Generate(ctx, "m", llm.GenerateRequest{Prompt: "p", Schema: map[string]any{"type": "object"}})
		require.NoError(t, err)
		require.Equal(t, llm.Usage{InputText: tc.want, Output: tc.want}, g.Usage, "generate %s", tc.prompt)
		ch, err := c.Chat(ctx, "m", llm.ChatRequest{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
		require.NoError(t, err)
		require.Equal(t, llm.Usage{InputText: tc.want, Output: tc.want}, ch.Usage, "chat %s", tc.prompt)
		e, err := c.Embed(ctx, "m", []string{"one two three four"}, 0)
		require.NoError(t, err)
		if tc.want == 0 {
			require.Positive(t, e.Usage.InputText, "a count below zero is estimated from the text, as a missing one")
			continue
		}
		require.Equal(t, tc.want, e.Usage.InputText, "embed %s", tc.prompt)
	}
}
