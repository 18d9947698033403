package console

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSnippetParts(t *testing.T) {
	t.Parallel()
	require.Equal(t, []snippetPart{
		{Text: "The "}, {Text: "loom", Mark: true}, {Text: " reads <script>x</script> "}, {Text: "cards", Mark: true},
	}, snippetParts("The <b>loom</b> reads &lt;script&gt;x&lt;/script&gt; <b>cards</b>"))
	require.Equal(t, []snippetPart{
		{Text: "a "}, {Text: "<b>", Mark: true}, {Text: " & b"},
	}, snippetParts("a <b>&lt;b&gt;</b> &amp; b"), "the text's own <b> is text")
	require.Equal(t, []snippetPart{{Text: "open", Mark: true}}, snippetParts("<b>open"))
	require.Nil(t, snippetParts(""))
}
