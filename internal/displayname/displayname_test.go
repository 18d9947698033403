package displayname_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/displayname"
	"github.com/graphmill/graphmill/internal/errs"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "Ada", "Zoë — R&D / Ünïcode 日本 (2)", "a b", "emoji 🚀"} {
		require.NoError(t, displayname.Check("agent name", ok), "%q", ok)
	}
	bad := []string{
		"bell\a", "line\nfeed", "cr\r", "tab\t", "nul\x00", "del\x7f", "c1\u0085",
		"zw\u200b", "zwj\u200d", "rtl\u202e", "bom\ufeff", "bad\xff",
	}
	for _, bad := range bad {
		err := displayname.Check("agent name", bad)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), "%q", bad)
		require.ErrorContains(t, err, "agent name ")
		require.ErrorContains(t, err, "no control or invisible characters (line breaks, tabs, zero-width and direction marks)")
	}
}

func TestStrip(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Ring the bell", displayname.Strip("Ring\a the\u200b bell\u202e"))
	require.Equal(t, "Zoë 日本", displayname.Strip("Zoë 日本"))
	require.NoError(t, displayname.Check("title", displayname.Strip("a\tb\nc\u0085")))
}
