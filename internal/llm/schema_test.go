package llm_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
)

func TestSchemaRequired(t *testing.T) {
	t.Parallel()
	var decoded map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"type":"object","required":["name",3,"kind"]}`), &decoded))
	for _, c := range []struct {
		name   string
		schema map[string]any
		want   []string
	}{
		{"decoded from JSON, non-strings skipped", decoded, []string{"name", "kind"}},
		{"built in Go", map[string]any{"required": []string{"a", "b"}}, []string{"a", "b"}},
		{"none", map[string]any{"type": "object"}, nil},
		{"not a list", map[string]any{"required": "a"}, nil},
	} {
		require.Equal(t, c.want, llm.SchemaRequired(c.schema), c.name)
	}
}
