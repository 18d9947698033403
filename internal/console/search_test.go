package console

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSnippetParts(t *testing.T) {
	t.Parallel()
	require.Equal(t, []snippetPart{
		{Text: "The "}, {Text: "loom", Mark: true}, {Text: " reads <script>x</script> "}, {Text: "cards", Mark: true},
	}, snippetParts("The <b>loom</b> reads <script>x</script> <b>cards</b>"))
	require.Equal(t, []snippetPart{{Text: "open", Mark: true}}, snippetParts("<b>open"))
	require.Nil(t, snippetParts(""))
}
