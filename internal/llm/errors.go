package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/graphmill/graphmill/internal/jobqueue"
)

// ErrorKind says what a failed provider call means for the caller.
type ErrorKind string

// The error kinds.
const (
	// ErrorRateLimit is HTTP 429: try again after Error.RetryAfter (0 when
	// the provider did not say) without counting a failure.
	ErrorRateLimit ErrorKind = "rate_limit"
	// ErrorAuth is HTTP 401/403, a rejected API key or a failed
	// service-account token exchange: permanent until the credential is
	// fixed.
	ErrorAuth ErrorKind = "auth"
	// ErrorInvalid is a request the provider refuses (HTTP 400/404 and other
	// 4xx) or a response that cannot be decoded: permanent.
	ErrorInvalid ErrorKind = "invalid"
	// ErrorTransient is HTTP 5xx, 408 or a network failure: worth retrying.
	ErrorTransient ErrorKind = "transient"
)

// Error is a failed provider call. Message never contains credentials.
type Error struct {
	Kind ErrorKind
	// Status is the HTTP status, 0 when there was no HTTP response.
	Status int
	// RetryAfter is the provider's requested wait (Retry-After header or
	// google.rpc.RetryInfo), 0 when it gave none.
	RetryAfter time.Duration
	Message    string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("llm ")
	b.WriteString(string(e.Kind))
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// JobError maps err to the job engine's vocabulary: rate limits become
// jobqueue.RateLimited with the provider's delay, auth and invalid errors
// jobqueue.Permanent, anything else stays a plain (retried) error.
func JobError(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Kind {
	case ErrorRateLimit:
		return jobqueue.RateLimited(err, e.RetryAfter)
	case ErrorAuth, ErrorInvalid:
		return jobqueue.Permanent(err)
	default:
		return err
	}
}

// kindForStatus classifies an HTTP error status.
func kindForStatus(status int) ErrorKind {
	switch {
	case status == http.StatusTooManyRequests:
		return ErrorRateLimit
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrorAuth
	case status == http.StatusRequestTimeout || status >= 500:
		return ErrorTransient
	default:
		return ErrorInvalid
	}
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an
// HTTP-date (relative to now). It returns 0 for an absent, malformed or
// past value.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 || secs > int64(24*time.Hour/time.Second) {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// retryInfoType is the @type of google.rpc.RetryInfo in an error's details.
const retryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// errorInfoType is the @type of google.rpc.ErrorInfo.
const errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// retryDelayFromDetails reads google.rpc.RetryInfo.retryDelay (a JSON
// Duration such as "37s" or "1.5s") from an error's details.
func retryDelayFromDetails(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); t != retryInfoType {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if dur, err := time.ParseDuration(s); err == nil && dur > 0 {
			return dur
		}
	}
	return 0
}

// errorReason reads google.rpc.ErrorInfo.reason from an error's details.
func errorReason(details []map[string]any) string {
	for _, d := range details {
		if t, _ := d["@type"].(string); t == errorInfoType {
			r, _ := d["reason"].(string)
			return r
		}
	}
	return ""
}

// isAuthReason reports whether an ErrorInfo reason means a bad credential
// even when the status is 400 (the Gemini API answers a wrong key with 400
// INVALID_ARGUMENT, reason API_KEY_INVALID).
func isAuthReason(reason string) bool {
	switch reason {
	case "API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED", "ACCESS_TOKEN_EXPIRED", "ACCESS_TOKEN_TYPE_UNSUPPORTED", "CREDENTIALS_MISSING":
		return true
	}
	return false
}

// oauthErrorMessage summarises an OAuth token endpoint's error body
// ({"error": "...", "error_description": "..."}); the body never holds the
// assertion, but only the two documented fields are shown.
func oauthErrorMessage(body []byte) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return ""
	}
	if e.Description == "" {
		return e.Error
	}
	return e.Error + ": " + e.Description
}

// messageMax bounds provider messages kept in an Error.
const messageMax = 1000

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
