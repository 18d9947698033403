package console

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/chat"
)

// TestContentParts: an answer's [n] markers of its citations become
// links; a marker citing nothing, and brackets that are no marker, stay
// text; the parts concatenate to the content.
func TestContentParts(t *testing.T) {
	t.Parallel()
	m := chat.Message{Content: "Lubricate every quarter [1]. Not [9]; see [x] and [2][1]", Citations: []chat.Citation{{Index: 1}, {Index: 2}}}
	parts := contentParts(m)
	require.Equal(t, []contentPart{
		{Text: "Lubricate every quarter "},
		{Text: "[1]", Cites: 1},
		{Text: ". Not [9]"},
		{Text: "; see [x] and "},
		{Text: "[2]", Cites: 2},
		{Text: "[1]", Cites: 1},
	}, parts)
	var all string
	for _, p := range parts {
		all += p.Text
	}
	require.Equal(t, m.Content, all)
	require.Equal(t, []contentPart{{Text: "No sources."}}, contentParts(chat.Message{Content: "No sources."}))
	require.Nil(t, contentParts(chat.Message{}))
}
