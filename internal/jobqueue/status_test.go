package jobqueue_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
)

// The one list of job statuses: what messages, validation and schemas
// derive from (the words of the API's messages stay as they were).
func TestStatuses(t *testing.T) {
	t.Parallel()
	require.Equal(t, "queued, running, completed, failed, cancelled or requires_review", jobqueue.Describe(jobqueue.Statuses()))
	require.Equal(t, "completed, failed, cancelled or requires_review", jobqueue.Describe(jobqueue.FinalStatuses()))
	require.Equal(t, "queued", jobqueue.Describe([]jobqueue.Status{jobqueue.StatusQueued}))
	require.Empty(t, jobqueue.Describe(nil))
	for _, s := range jobqueue.Statuses() {
		require.True(t, s.Valid(), s)
	}
	require.False(t, jobqueue.Status("bogus").Valid())
	require.False(t, jobqueue.Status("").Valid())
	require.Equal(t, []any{"queued", "running", "completed", "failed", "cancelled", "requires_review"}, jobqueue.Enum(jobqueue.Statuses()))
	// Callers may change the slices they get without changing the list.
	jobqueue.Statuses()[0] = "changed"
	require.Equal(t, jobqueue.StatusQueued, jobqueue.Statuses()[0])
}
