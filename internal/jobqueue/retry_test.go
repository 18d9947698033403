package jobqueue

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	backoff := func(n int) time.Duration { return time.Duration(n) * time.Minute }
	started := now.Add(-10 * time.Minute)
	boom := errors.New("boom")
	tests := []struct {
		name      string
		job       Job
		err       error
		status    Status
		retry     int
		runAt     time.Time // zero: not re-queued
		completed bool
	}{
		{"retry left", Job{RetryCount: 0, MaxRetries: 3}, boom, StatusQueued, 1, now.Add(time.Minute), false},
		{"second retry waits longer", Job{RetryCount: 1, MaxRetries: 3}, boom, StatusQueued, 2, now.Add(2 * time.Minute), false},
		{"retries exhausted", Job{RetryCount: 3, MaxRetries: 3}, boom, StatusFailed, 3, time.Time{}, true},
		{"no retries", Job{MaxRetries: 0}, boom, StatusFailed, 0, time.Time{}, true},
		{"permanent", Job{MaxRetries: 3}, Permanent(boom), StatusFailed, 0, time.Time{}, true},
		{"wrapped permanent", Job{MaxRetries: 3}, errors.Join(errors.New("x"), Permanent(boom)), StatusFailed, 0, time.Time{}, true},
		{"text PostgreSQL cannot store", Job{MaxRetries: 3}, fmt.Errorf("write chunks: %w", &pgconn.PgError{Code: "22021", Message: "invalid byte sequence for encoding \"UTF8\": 0x00"}), StatusFailed, 0, time.Time{}, true},
		{"rate limited", Job{RetryCount: 1, MaxRetries: 1, StartedAt: started}, RateLimited(boom, 5*time.Second), StatusQueued, 1, now.Add(5 * time.Second), false},
		{"rate limited default delay", Job{StartedAt: started}, RateLimited(boom, 0), StatusQueued, 0, now.Add(RateLimitRetryDefault), false},
		{"rate limited past an hour", Job{StartedAt: now.Add(-59 * time.Minute)}, RateLimited(boom, 2*time.Minute), StatusFailed, 0, time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := decide(tt.job, tt.err, now, backoff)
			require.Equal(t, tt.status, d.status)
			require.Equal(t, tt.retry, d.retryCount)
			require.Equal(t, tt.err.Error(), *d.errorMsg)
			if tt.runAt.IsZero() {
				require.Nil(t, d.runAt)
			} else {
				require.Equal(t, tt.runAt, *d.runAt)
			}
			require.Equal(t, tt.completed, d.completed != nil)
		})
	}
}

func TestBackoffDefault(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{1: 10 * time.Second, 2: 30 * time.Second, 3: 90 * time.Second, 10: time.Hour, 100: time.Hour} {
		for range 50 {
			got := BackoffDefault(n)
			require.GreaterOrEqual(t, got, want*8/10, "retry %d", n)
			require.LessOrEqual(t, got, want*12/10, "retry %d", n)
		}
	}
}
