package llm_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
)

func TestToolName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "graph_create_object", llm.ToolName("graph_create_object"))
	require.Equal(t, "weather:forecast", llm.ToolName("weather/forecast"))
	require.Equal(t, "w.x-1:a_b.c", llm.ToolName("w.x-1/a_b.c"))
	require.Equal(t, "notes:find:all", llm.ToolName("notes/find/all"))
	require.Regexp(t, `^My_Notes_find:[0-9a-f]{8}$`, llm.ToolName("My Notes/find"))
	require.Regexp(t, `^a_b:[0-9a-f]{8}$`, llm.ToolName("a:b"), "a name holding a colon is hashed: a:b is the form of a/b")

	seen := map[string]string{}
	for _, name := range []string{
		"search", "a/b", "a:b", "a_b", "My Notes/find", "My_Notes/find", "My Notes/find/all", "notes/find/all", "notes/find_all",
		"ö/ü", "_/_", "a:b/c", "a/b:c",
		strings.Repeat("s", 31) + "/" + strings.Repeat("t", 32), strings.Repeat("s", 31) + "/" + strings.Repeat("t", 33),
		strings.Repeat("x", 200) + "/" + strings.Repeat("y", 300), strings.Repeat("x", 200) + "/" + strings.Repeat("y", 301),
	} {
		m := llm.ToolName(name)
		require.True(t, llm.ValidToolName(m), "%s: %s", name, m)
		require.NotContains(t, seen, m, "%s and %s", name, seen[m])
		seen[m] = name
	}
	require.False(t, llm.ValidToolName(""))
	require.False(t, llm.ValidToolName("a/b"))
	require.False(t, llm.ValidToolName(strings.Repeat("a", 65)))
}
