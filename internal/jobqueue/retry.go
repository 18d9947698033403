package jobqueue

import (
	"math/rand/v2"
	"time"

	"github.com/graphmill/graphmill/internal/postgres"
)

// BackoffDefault is the default retry policy: 10 s times 3^(retry-1) (10 s,
// 30 s, 90 s, ...), at most an hour, with ±20% jitter so that jobs that
// failed together do not come back together.
func BackoffDefault(retry int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < retry && d < time.Hour; i++ {
		d *= 3
	}
	d = min(d, time.Hour)
	return jitter(d)
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	span := int64(d) * 2 / 5 // 40% wide, centred on d
	if span <= 0 {
		return d
	}
	return time.Duration(int64(d) - span/2 + rand.Int64N(span)) //nolint:gosec // jitter, not security
}

// decision is how a finished attempt changes its row.
type decision struct {
	status     Status
	retryCount int
	runAt      *time.Time
	errorMsg   *string
	completed  *time.Time
	keepError  bool // leave error_msg as it is (a release)
}

// decide applies the one retry rule to a failed attempt: err is what went
// wrong (handler error, or ErrLeaseExpired from the reaper).
func decide(j Job, err error, now time.Time, backoff func(int) time.Duration) decision {
	msg := postgres.TextMax(err.Error(), errorMsgMax)
	after, rateLimited := RetryAfterOf(err)
	switch {
	case IsPermanent(err):
		return decision{status: StatusFailed, retryCount: j.RetryCount, errorMsg: &msg, completed: &now}
	case rateLimited:
		if after <= 0 {
			after = RateLimitRetryDefault
		}
		at := now.Add(after)
		if !j.StartedAt.IsZero() && at.Sub(j.StartedAt) > RateLimitMaxWait {
			return decision{status: StatusFailed, retryCount: j.RetryCount, errorMsg: &msg, completed: &now}
		}
		return decision{status: StatusQueued, retryCount: j.RetryCount, runAt: &at, errorMsg: &msg}
	case j.RetryCount < j.MaxRetries:
		at := now.Add(backoff(j.RetryCount + 1))
		return decision{status: StatusQueued, retryCount: j.RetryCount + 1, runAt: &at, errorMsg: &msg}
	default:
		return decision{status: StatusFailed, retryCount: j.RetryCount, errorMsg: &msg, completed: &now}
	}
}
