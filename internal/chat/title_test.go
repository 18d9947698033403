package chat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTitleOfDropsInvisibleWords: a first question's invisible characters
// standing alone between spaces leave no doubled or leading space in the
// title derived from it; its line breaks and tabs still part its words.
func TestTitleOfDropsInvisibleWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Ring\u0007 the\tbell\u200b twice": "Ring the bell twice",
		"Ring \u200b the \u202e bell":      "Ring the bell",
		"\u200b hello":                     "hello",
		"hello \ufeff":                     "hello",
		"line\nbreak":                      "line break",
		"👨\u200d👩 family":                  "👨\u200d👩 family",
		"\u200b":                           "",
	} {
		require.Equal(t, want, titleOf(in), "%q", in)
	}
	long := titleOf(strings.Repeat("\u200b word", 100))
	require.Equal(t, 80, len([]rune(long)))
	require.True(t, strings.HasPrefix(long, "word word"), long)
}
