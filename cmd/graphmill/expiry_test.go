package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/postgres"
)

// TestExpiryTask: an expiry task runs every ten minutes, deletes in the
// task's transaction, logs how many it deleted (nothing when none) and
// returns the delete's error.
func TestExpiryTask(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	deleted, failure := int64(3), error(nil)
	task := expiryTask("things-expiry", "things", log, func(context.Context, postgres.DBTX) (int64, error) {
		return deleted, failure
	})
	require.Equal(t, "things-expiry", task.Name)
	require.Equal(t, 10*time.Minute, task.Interval)
	require.Nil(t, task.Run)

	require.NoError(t, task.RunInTx(context.Background(), nil))
	var line struct {
		Msg   string `json:"msg"`
		Count int64  `json:"count"`
	}
	require.NoError(t, json.Unmarshal(logs.Bytes(), &line))
	require.Equal(t, "expired things deleted", line.Msg)
	require.Equal(t, int64(3), line.Count)

	logs.Reset()
	deleted, failure = 0, errors.New("gone")
	require.ErrorIs(t, task.RunInTx(context.Background(), nil), failure)
	require.Empty(t, logs.String(), "nothing deleted, nothing logged")
}
