package agent

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQuestionAsks: a stored question is used for a call only when it
// asks the same: kind, tool, and arguments as JSON values (key order and
// spacing aside) or, for ask_user, the same text; anything else is asked
// again.
func TestQuestionAsks(t *testing.T) {
	t.Parallel()
	approval := questionRow{Kind: kindApproval, Tool: "delete_thing", Arguments: json.RawMessage(`{"id": "a", "all": false}`)}
	require.True(t, approval.asks(questionRow{Kind: kindApproval, Tool: "delete_thing", Arguments: json.RawMessage(`{"all":false,"id":"a"}`)}))
	for name, other := range map[string]questionRow{
		"other arguments": {Kind: kindApproval, Tool: "delete_thing", Arguments: json.RawMessage(`{"id":"everything","all":false}`)},
		"other tool":      {Kind: kindApproval, Tool: "make_thing", Arguments: json.RawMessage(`{"id":"a","all":false}`)},
		"other kind":      {Kind: kindQuestion, Tool: "delete_thing", Arguments: json.RawMessage(`{"id":"a","all":false}`)},
		"no arguments":    {Kind: kindApproval, Tool: "delete_thing"},
	} {
		require.False(t, approval.asks(other), name)
	}
	question := questionRow{Kind: kindQuestion, Tool: "ask_user", Question: "Which city?"}
	require.True(t, question.asks(questionRow{Kind: kindQuestion, Tool: "ask_user", Question: "Which city?"}))
	require.False(t, question.asks(questionRow{Kind: kindQuestion, Tool: "ask_user", Question: "Which country?"}))
}
