package extraction

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The status messages and the monitoring map derive from jobqueue's
// statuses and say what they said when they were written out.
func TestStatusVocabulary(t *testing.T) {
	t.Parallel()
	require.Equal(t, "status must be queued, running, completed, failed, cancelled or requires_review", ErrBadStatus.Error())
	require.Equal(t, "status must be completed, failed, cancelled or requires_review: only finished jobs can be deleted", ErrNotFinal.Error())
	for monitor, admin := range map[string][]string{
		MonitorPending:   {"queued"},
		MonitorRunning:   {"running"},
		MonitorCompleted: {"completed", "requires_review"},
		MonitorFailed:    {"failed", "cancelled"},
	} {
		got, ok := adminStatuses(monitor)
		require.True(t, ok, monitor)
		require.Equal(t, admin, got, monitor)
		for _, s := range admin {
			require.Equal(t, monitor, monitorStatus(s), s)
		}
	}
	_, ok := adminStatuses("queued")
	require.False(t, ok)
}
