package console

import (
	"errors"
	"net/http"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// chosen is the submitted form's values of name (a multiple select or a
// set of checkboxes; the form signedIn parsed); none is the message when
// nothing was chosen. Errors: invalid_argument.
func chosen(r *http.Request, name, none string) ([]string, error) {
	values := r.PostForm[name]
	if len(values) == 0 {
		return nil, errs.New(errs.Invalid, none)
	}
	return values, nil
}

// A refused form follows one rule (docs/decisions.md, "Issue 18: console
// forms"): what comes before the form's action (the session, the CSRF
// token, the form's encoding and size, the page's rule, reading the
// page's resource) fails with the error page (h.fail); the action's own
// refusal shows the form again, with what was typed and the message,
// when its user can fix it by changing the input (fixable), and the
// error page otherwise. An htmx action answers the message alone (h.fail)
// either way: htmx swaps nothing on an error, so its form stays as typed.

// fixable reports whether err, the refusal of a form's action, is one its
// user can fix by changing the input: invalid_argument, conflict,
// failed_precondition, payload_too_large, permission_denied (the page's
// rule passed before the action: a refusal by the action names what the
// input asked that is not allowed, a scope the caller lacks, a stdio
// server), and not_found of a record the form names (named: a user id
// typed, a pack id, the row a list's button acts on).
func fixable(err error, named ...error) bool {
	switch errs.CodeOf(err) {
	case errs.Invalid, errs.Conflict, errs.FailedPrecondition, errs.PayloadTooLarge, errs.PermissionDenied:
		return true
	case errs.NotFound:
		for _, n := range named {
			if errors.Is(err, n) {
				return true
			}
		}
	}
	return false
}

// formRefused answers a form whose action failed with err: again shows the
// form with its values, the status of err's code and its message, when
// err is fixable (with named, see fixable); anything else is the error
// page (a 5xx without its details).
func (h *Handler) formRefused(w http.ResponseWriter, r *http.Request, err error, again func(status int, problem string), named ...error) {
	if r.Header.Get("HX-Request") != "" || !fixable(err, named...) {
		h.fail(w, r, err)
		return
	}
	status, msg := statusOf(err)
	again(status, msg)
}

// formRefusedOn is formRefused for a form whose page has a read rule of
// its own, read, that the action's rule does not imply: a caller who may
// act but not read the page gets the refusal's error page (the action's
// status and message, as the API answers), not the page's 403.
func (h *Handler) formRefusedOn(read auth.Rule, w http.ResponseWriter, r *http.Request, c caller, err error, again func(status int, problem string), named ...error) {
	if !h.can(r, c, read) {
		h.fail(w, r, err)
		return
	}
	h.formRefused(w, r, err, again, named...)
}
