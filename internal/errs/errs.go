// Package errs is the one error vocabulary of Graphmill: a small set of
// machine codes that every domain uses and that the HTTP layer maps to status
// codes in exactly one place.
package errs

import (
	"errors"
	"fmt"
	"strconv"
)

// Code is a stable machine-readable error class, sent to clients as the
// problem body's `code` member.
type Code string

// The codes, as DESIGN.md section 5 lists them.
const (
	Invalid            Code = "invalid_argument"
	Unauthenticated    Code = "unauthenticated"
	PermissionDenied   Code = "permission_denied"
	NotFound           Code = "not_found"
	Conflict           Code = "conflict"
	FailedPrecondition Code = "failed_precondition"
	PayloadTooLarge    Code = "payload_too_large"
	RateLimited        Code = "rate_limited"
	BadGateway         Code = "bad_gateway"
	Unavailable        Code = "unavailable"
	Internal           Code = "internal"
)

// Error is an error with a code and a message that is safe to show to the
// caller.
type Error struct {
	Code    Code
	Message string
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

// Is makes errors.Is match any *Error of the same code and message, so that
// domains can declare sentinels and still wrap them with more context.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code && t.Message == e.Message
}

// New returns an *Error with a fixed message.
func New(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// Errorf returns an *Error with a formatted message. The message is shown to
// clients, so it must not carry internals.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the first *Error in err's chain, or Internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// MessageOf returns the client-safe message of the first *Error in err's
// chain, or a generic text for anything else.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// QuotedMax bounds, in characters, the part of a caller's value that
// Quoted shows.
const QuotedMax = 80

// Quoted is v as %q quotes it, cut to its first QuotedMax characters and
// "…" when longer: how a message names a value the caller sent without
// echoing all of it back (an unknown name of 100,000 characters).
func Quoted(v string) string {
	n := 0
	for i := range v {
		if n == QuotedMax {
			return strconv.Quote(v[:i] + "…")
		}
		n++
	}
	return strconv.Quote(v)
}
