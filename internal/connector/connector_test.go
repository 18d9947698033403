package connector_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
)

func TestConfigAccessors(t *testing.T) {
	t.Parallel()
	var c connector.Config
	require.NoError(t, json.Unmarshal([]byte(`{"url":"https://x.test","list":["a","b"],"n":7,"on":true,"bad":3}`), &c))
	require.Equal(t, "https://x.test", c.String("url"))
	require.Empty(t, c.String("bad"))
	require.Empty(t, c.String("missing"))
	require.Equal(t, []string{"a", "b"}, c.Strings("list"))
	require.Nil(t, c.Strings("url"))
	require.Equal(t, 7, c.Int("n", 1))
	require.Equal(t, 1, c.Int("missing", 1))
	require.Equal(t, 1, c.Int("url", 1))
	require.True(t, c.Bool("on", false))
	require.False(t, c.Bool("missing", false))
}
