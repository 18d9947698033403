package search_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/search"
)

// TestRequestNormalize: the checks every caller of the service gets (the
// console, chat and MCP do not pass the API's schema): a query that is
// empty, not UTF-8, holds a NUL or is longer than the API's 2,000
// characters is invalid; 2,000 characters (not bytes) are accepted.
func TestRequestNormalize(t *testing.T) {
	t.Parallel()
	for name, query := range map[string]string{
		"empty":    "",
		"not utf8": "loom \xff\xfe",
		"nul":      "loom\x00",
		"too long": strings.Repeat("loom ", 401),
	} {
		r := search.Request{Query: query}
		err := r.Normalize()
		require.Equal(t, errs.Invalid, errs.CodeOf(err), name)
	}
	r := search.Request{Query: strings.Repeat("é", search.QueryMax)}
	require.NoError(t, r.Normalize())
	require.Equal(t, search.ModeHybrid, r.Mode)
	require.Equal(t, search.LimitDefault, r.Limit)
}
