package connector_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/errs"
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

func TestSaveState(t *testing.T) {
	t.Parallel()

	t.Run("RecordsJSON", func(t *testing.T) {
		t.Parallel()
		w := connectortest.NewWalker(nil)
		require.NoError(t, connector.SaveState(w, struct {
			Commit string `json:"commit"`
		}{"abc"}))
		require.JSONEq(t, `{"commit":"abc"}`, string(w.State()))
	})

	t.Run("UnencodableRecordsNothing", func(t *testing.T) {
		t.Parallel()
		w := connectortest.NewWalker(nil)
		require.ErrorContains(t, connector.SaveState(w, map[string]any{"f": func() {}}), "encode connector state")
		require.Nil(t, w.State())
	})
}

func TestParseHTTPURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, want string }{
		{"%zz", "feed is not a valid URL"},
		{"", "feed must be an http or https URL"},
		{"file:///etc/passwd", "feed must be an http or https URL"},
		{"https:///x", "feed has no host"},
		{"https://u:p@x.test/", "feed must not contain credentials"},
	} {
		_, err := connector.ParseHTTPURL("feed", tc.raw)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), tc.raw)
		require.EqualError(t, err, tc.want, tc.raw)
	}
	u, err := connector.ParseHTTPURL("feed", " https://X.test/a?b#c ")
	require.NoError(t, err)
	require.Equal(t, "https://X.test/a?b#c", u.String())
}

func TestConfigIntBetween(t *testing.T) {
	t.Parallel()
	var c connector.Config
	require.NoError(t, json.Unmarshal([]byte(`{"n":7,"none":null,"low":0,"high":11,"text":"7","frac":7.5}`), &c))
	for name, want := range map[string]int{"n": 7, "none": 3, "missing": 3} {
		got, err := c.IntBetween(name, 3, 1, 10)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
	}
	for _, name := range []string{"low", "high", "text", "frac"} {
		_, err := c.IntBetween(name, 3, 1, 10)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), name)
		require.EqualError(t, err, name+" must be an integer from 1 to 10", name)
	}
}
