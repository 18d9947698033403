// Package httpapi is the HTTP platform: the huma API and its conventions
// (errors, schema names, authorization middleware), the chi router with
// request ids, logs, metrics and timeouts, and the server lifecycle.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Problem is the RFC 9457 error body, with Graphmill's `code` and
// `requestId` members.
type Problem struct {
	Type      string              `json:"type,omitempty" doc:"A URI reference identifying the problem type."`
	Title     string              `json:"title" doc:"Short summary of the status."`
	Status    int                 `json:"status" doc:"HTTP status code."`
	Detail    string              `json:"detail,omitempty" doc:"What went wrong, for a person."`
	Code      errs.Code           `json:"code" doc:"Stable machine-readable error code."`
	RequestID string              `json:"requestId,omitempty" doc:"Id of the request, as logged."`
	Errors    []*huma.ErrorDetail `json:"errors,omitempty" doc:"Individual validation errors."`
}

// Error implements error.
func (p *Problem) Error() string { return p.Detail }

// GetStatus implements huma.StatusError.
func (p *Problem) GetStatus() int { return p.Status }

// ContentType implements huma.ContentTypeFilter.
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

// StatusOf maps an error code to its HTTP status: the one place this
// happens.
func StatusOf(c errs.Code) int {
	switch c {
	case errs.Invalid:
		return http.StatusBadRequest
	case errs.Unauthenticated:
		return http.StatusUnauthorized
	case errs.PermissionDenied:
		return http.StatusForbidden
	case errs.NotFound:
		return http.StatusNotFound
	case errs.Conflict, errs.FailedPrecondition:
		return http.StatusConflict
	case errs.PayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case errs.RateLimited:
		return http.StatusTooManyRequests
	case errs.BadGateway:
		return http.StatusBadGateway
	case errs.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// CodeOfStatus is the error code of an HTTP status (StatusOf's inverse,
// with the statuses huma answers itself mapped too).
func CodeOfStatus(status int) errs.Code {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusMethodNotAllowed,
		http.StatusNotAcceptable, http.StatusUnsupportedMediaType:
		return errs.Invalid
	case http.StatusUnauthorized:
		return errs.Unauthenticated
	case http.StatusForbidden:
		return errs.PermissionDenied
	case http.StatusNotFound:
		return errs.NotFound
	case http.StatusConflict:
		return errs.Conflict
	case http.StatusRequestEntityTooLarge:
		return errs.PayloadTooLarge
	case http.StatusTooManyRequests:
		return errs.RateLimited
	case http.StatusBadGateway:
		return errs.BadGateway
	case http.StatusServiceUnavailable:
		return errs.Unavailable
	}
	if status >= 500 {
		return errs.Internal
	}
	return errs.Invalid
}

// unstorableText is the detail of a value PostgreSQL refused as text.
const unstorableText = "a text value holds a character that cannot be stored (such as NUL, U+0000)"

// ClientError is the status and client-safe message of a domain error
// (errs.Error) or of a value PostgreSQL refused as text (400: a second
// line of defence behind the boundary checks, the caller's input); ok is
// false for anything else, which is an internal error. The API's problem
// writer and the console share it.
func ClientError(err error) (status int, msg string, ok bool) {
	var de *errs.Error
	if errors.As(err, &de) {
		return StatusOf(de.Code), de.Message, true
	}
	if postgres.IsUnstorableText(err) {
		return http.StatusBadRequest, unstorableText, true
	}
	return 0, "", false
}

// newProblem builds the body for status and message, turning domain errors
// into their codes and hiding everything else behind "internal error" (the
// cause goes to the request's log line).
func newProblem(ctx context.Context, status int, msg string, errList ...error) *Problem {
	var details []*huma.ErrorDetail
	domain := false
	for _, e := range errList {
		if e == nil {
			continue
		}
		if st, m, ok := ClientError(e); ok {
			status, msg, domain = st, m, true
			continue
		}
		var dd huma.ErrorDetailer
		if errors.As(e, &dd) {
			d := dd.ErrorDetail()
			// Never echo values back: they may be secrets (keys, passwords).
			loc, m := d.Location, d.Message
			// A decoder error that names a field inside the body
			// ("body.name: ...", CheckJSON) takes that field as location.
			if l, rest, ok := strings.Cut(m, ": "); ok && loc != "" && strings.HasPrefix(l, loc) {
				loc, m = l, rest
			}
			details = append(details, &huma.ErrorDetail{Message: m, Location: loc})
			continue
		}
		if status >= 500 {
			recordCause(ctx, e)
			if postgres.IsUnavailable(e) {
				// Our own dependency is down: 503, and the client may
				// try again (DESIGN 5).
				status, msg, domain = http.StatusServiceUnavailable, "the database is unavailable; try again shortly", true
			}
			continue
		}
		details = append(details, &huma.ErrorDetail{Message: e.Error()})
	}
	if status == http.StatusUnprocessableEntity {
		status = http.StatusBadRequest
	}
	if status >= 500 && !domain {
		// Only a domain error's message is written for clients; anything
		// else may carry internals.
		msg = "internal error"
		details = nil
	}
	if len(details) > 0 {
		parts := make([]string, 0, len(details))
		for _, d := range details {
			if d.Location != "" {
				parts = append(parts, d.Location+": "+d.Message)
			} else {
				parts = append(parts, d.Message)
			}
		}
		msg = strings.TrimSuffix(msg, ".") + ": " + strings.Join(parts, "; ")
	}
	code := CodeOfStatus(status)
	if domain && msg == unstorableText {
		code = errs.Invalid
	}
	if len(errList) > 0 {
		var de *errs.Error
		for _, e := range errList {
			if errors.As(e, &de) {
				code = de.Code
			}
		}
	}
	return &Problem{
		Title: http.StatusText(status), Status: status, Detail: msg, Code: code,
		RequestID: RequestID(ctx), Errors: details,
	}
}

var installOnce sync.Once //nolint:gochecknoglobals // huma keeps its error constructor in a package variable; it is replaced once.

// installErrorModel points huma's error constructors at Problem.
func installErrorModel() {
	installOnce.Do(func() {
		huma.NewErrorWithContext = func(hctx huma.Context, status int, msg string, errList ...error) huma.StatusError {
			return newProblem(hctx.Context(), status, msg, errList...)
		}
		huma.NewError = func(status int, msg string, errList ...error) huma.StatusError {
			return newProblem(context.Background(), status, msg, errList...)
		}
	})
}

// WriteProblem writes an error response outside huma (router fallbacks,
// panics, stream endpoints).
func WriteProblem(w http.ResponseWriter, r *http.Request, err error) {
	writeProblem(w, ProblemFor(r.Context(), err))
}

// ProblemFor is the problem body of err, as WriteProblem writes it: for a
// stream that fails after its status was sent (an error event).
func ProblemFor(ctx context.Context, err error) *Problem {
	return newProblem(ctx, StatusOf(errs.CodeOf(err)), errs.MessageOf(err), err)
}

func writeProblem(w http.ResponseWriter, p *Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="graphmill"`)
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}
