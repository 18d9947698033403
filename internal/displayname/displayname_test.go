package displayname_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/displayname"
	"github.com/graphmill/graphmill/internal/errs"
)

// joined are real names that need a zero-width joiner or non-joiner
// between two visible characters.
var joined = []string{
	"👨\u200d👩\u200d👧 family", // emoji ZWJ sequence
	"🏳\ufe0f\u200d🌈",         // variation selector, then ZWJ
	"👩🏽\u200d💻 Dev",          // skin tone modifier, then ZWJ
	"می\u200cخواهم",          // Persian: ZWNJ between letters
	"ශ්\u200dරී ලංකා",        // Sinhala: Sri Lanka (ZWJ after the virama)
	"क्\u200dष",              // Devanagari half form
	"നന്ദി ന്\u200d",         // Malayalam: joiner before a visible mark
	"☺\ufe0f smile",          // variation selector (a mark) alone
}

func TestCheck(t *testing.T) {
	t.Parallel()
	ok := append([]string{"", "Ada", "Zoë — R&D / Ünïcode 日本 (2)", "a b", "emoji 🚀", "שלום עולם (2)", "مرحبا 3"}, joined...)
	for _, ok := range ok {
		require.NoError(t, displayname.Check("agent name", ok), "%q", ok)
	}
	bad := []string{
		"bell\a", "line\nfeed", "cr\r", "tab\t", "nul\x00", "del\x7f", "c1\u0085",
		"zw\u200b", "rtl\u202e", "bom\ufeff", "bad\xff", "lrm\u200e", "rlm\u200f", "alm\u061c",
		"iso\u2066x\u2069", "shy\u00ad", "tag\U000E0041",
		// A joiner not between two visible characters joins nothing.
		"zwj\u200d", "\u200czwnj", "a\u200d b", "a \u200cb", "a\u200d\u200db", "a\u200d\u200bb", "a\u200d\nb",
	}
	for _, bad := range bad {
		err := displayname.Check("agent name", bad)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), "%q", bad)
		require.ErrorContains(t, err, "agent name ")
		require.ErrorContains(t, err, "no control or invisible characters (line breaks, tabs, zero-width spaces, direction marks; a zero-width joiner only between two visible characters)")
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	for _, ok := range joined {
		require.True(t, displayname.Valid(ok), "%q", ok)
	}
	for _, bad := range []string{"a\u200d", "a\u200bb", "a\nb", "\xff"} {
		require.False(t, displayname.Valid(bad), "%q", bad)
	}
}

func TestStrip(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Ring the bell", displayname.Strip("Ring\a the\u200b bell\u202e"))
	require.Equal(t, "Zoë 日本", displayname.Strip("Zoë 日本"))
	require.NoError(t, displayname.Check("title", displayname.Strip("a\tb\nc\u0085")))
	for _, s := range joined {
		require.Equal(t, s, displayname.Strip(s), "a name's joiners are kept")
	}
	// Joiners left out of place, or put out of place by what is dropped,
	// go too: what Strip returns passes Check.
	for in, want := range map[string]string{
		"a\u200d": "a", "\u200cb": "b", "a\u200d b": "a b", "a\u200d\u200db": "ab",
		"a\u200d\u200bb": "a\u200db", "a\u200d\nb": "a\u200db", "👨\u200d\u200e👩": "👨\u200d👩",
	} {
		got := displayname.Strip(in)
		require.Equal(t, want, got, "%q", in)
		require.NoError(t, displayname.Check("title", got), "%q", in)
	}
}
