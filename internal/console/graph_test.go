package console

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuoteOf(t *testing.T) {
	t.Parallel()
	text := "# Lantern\n\nLantern is a lamp. The Lantern project was started by Ada in Berlin, and it grew fast! Later on."
	require.Equal(t, quote{Before: "The ", Match: "Lantern", After: " project was started by Ada in Berlin, and it grew fast!"}, quoteOf(text, "lantern"))
	require.Equal(t, quote{Match: "Lantern"}, quoteOf("# Lantern\n", "Lantern"), "the only mention")
	require.Equal(t, quote{Before: "Nothing here."}, quoteOf("  Nothing here. ", "Ada"), "the chunk's beginning")
	require.Equal(t, quote{Before: "A (b) ", Match: "c.*d", After: " e."}, quoteOf("A (b) c.*d e.", "c.*d"), "a name is text, not a pattern")
	long := quoteOf(strings.Repeat("word ", 100)+"Ada"+strings.Repeat(" word", 100), "Ada")
	require.Equal(t, "…", long.Before[:len("…")])
	require.Equal(t, quoteAround+1, len([]rune(long.Before)))
	require.Equal(t, quoteAround+1, len([]rune(long.After)))
}
