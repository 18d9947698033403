package console

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/chat"
	"github.com/graphmill/graphmill/internal/tenancy"
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

// TestChatSessionsAgentsCut: when the project has more agents than the
// new chat form offers, the form says which it offers.
func TestChatSessionsAgentsCut(t *testing.T) {
	t.Parallel()
	pr := tenancy.Project{ID: uuid.New(), Name: "p"}
	a := agent.Named{ID: uuid.New(), Name: "Alpha"}
	render := func(v chatSessionsView) string {
		var b strings.Builder
		require.NoError(t, chatSessionsPage("csrf", pr, v).Render(t.Context(), &b))
		return b.String()
	}
	page := render(chatSessionsView{ReadsAgents: true, Agents: []agent.Named{a}, AgentsTotal: 1})
	require.Contains(t, page, `<option value="`+a.ID.String()+`">Alpha</option>`)
	require.NotContains(t, page, `id="chat-agents-cut"`)
	page = render(chatSessionsView{ReadsAgents: true, Agents: []agent.Named{a}, AgentsTotal: 501})
	require.Contains(t, page, `<span class="hint" id="chat-agents-cut">The first 1 of 501 agents by name; the API takes any.</span>`)
}
