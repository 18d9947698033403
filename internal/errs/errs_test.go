package errs_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
)

// TestQuoted: a value of at most QuotedMax characters is quoted whole;
// a longer one is cut to QuotedMax characters (whole runes) and "…".
func TestQuoted(t *testing.T) {
	t.Parallel()
	require.Equal(t, `"search"`, errs.Quoted("search"))
	require.Equal(t, `"a\nb"`, errs.Quoted("a\nb"))
	exact := strings.Repeat("é", errs.QuotedMax)
	require.Equal(t, `"`+exact+`"`, errs.Quoted(exact))
	require.Equal(t, `"`+exact+`…"`, errs.Quoted(exact+"é"))
	require.Equal(t, `"`+strings.Repeat("x", errs.QuotedMax)+`…"`, errs.Quoted(strings.Repeat("x", 100_000)))
}
