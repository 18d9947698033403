package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
)

func TestLogFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		configured string
		terminal   bool
		want       string
	}{
		{"", true, "text"},
		{"", false, "json"},
		{"json", true, "json"},
		{"json", false, "json"},
		{"text", true, "text"},
		{"text", false, "text"},
	} {
		require.Equal(t, tc.want, logFormat(tc.configured, tc.terminal), "%q terminal=%v", tc.configured, tc.terminal)
	}
}

// TestLoggerNotTerminal: a writer that is not a terminal (a pipe, a file,
// a buffer) gets JSON lines unless text is asked for.
func TestLoggerNotTerminal(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(nil)
	require.NoError(t, err)
	var buf bytes.Buffer
	newLogger(cfg, &buf).Info("hello", "k", "v")
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
	require.Equal(t, "hello", line["msg"])

	cfg, err = config.Load([]string{"GRAPHMILL_LOG_FORMAT=text"})
	require.NoError(t, err)
	buf.Reset()
	newLogger(cfg, &buf).Info("hello", "k", "v")
	require.True(t, strings.HasPrefix(buf.String(), "time="), buf.String())
	require.Contains(t, buf.String(), "level=INFO msg=hello k=v")
}
