package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
)

// TestFormRefused: the one rule of a refused form. A fixable refusal
// (invalid, conflict, failed precondition, too large, permission denied
// by the action, not found of a record the form names) shows the form
// again with the code's status and the message; anything else is the
// error page, a 5xx without its details; an htmx action gets the message
// alone either way.
func TestFormRefused(t *testing.T) {
	t.Parallel()
	h := &Handler{cfg: Config{Logger: slog.New(slog.DiscardHandler)}}
	errUnknownPack := errs.New(errs.NotFound, "template pack not found")
	for _, c := range []struct {
		err    error
		named  []error
		again  bool
		status int
		shown  string
	}{
		{errs.New(errs.Invalid, "name is required"), nil, true, 400, "name is required"},
		{fmt.Errorf("create: %w", errs.New(errs.Conflict, "the name is taken")), nil, true, 409, "the name is taken"},
		{errs.New(errs.FailedPrecondition, "the job has not completed"), nil, true, 409, "the job has not completed"},
		{errs.New(errs.PayloadTooLarge, "the config is too large"), nil, true, 413, "the config is too large"},
		{errs.New(errs.PermissionDenied, "a token cannot grant scopes its creator lacks: admin:write"), nil, true, 403, "a token cannot grant scopes its creator lacks: admin:write"},
		{fmt.Errorf("finalize: %w", errUnknownPack), []error{errUnknownPack}, true, 404, "template pack not found"},
		{errs.New(errs.NotFound, "discovery job not found"), []error{errUnknownPack}, false, 404, "discovery job not found"},
		{errs.New(errs.Unavailable, "the provider at 10.0.0.7 is down"), nil, false, 503, "internal error"},
		{errors.New("pq: connection refused to 10.0.0.7"), nil, false, 500, "internal error"},
	} {
		status := 0
		r := httptest.NewRequest(http.MethodPost, "/projects/p/things", nil)
		w := httptest.NewRecorder()
		h.formRefused(w, r, c.err, func(st int, problem string) {
			status = st
			require.Equal(t, c.shown, problem, c.err)
			w.WriteHeader(st)
		}, c.named...)
		require.Equal(t, c.again, status != 0, "form again: %v", c.err)
		require.Equal(t, c.status, w.Code, c.err)
		if !c.again {
			require.Contains(t, w.Body.String(), "<title>Error", c.err)
			require.Contains(t, w.Body.String(), `<p class="error">`+c.shown+`</p>`, c.err)
			require.NotContains(t, w.Body.String(), "10.0.0.7", "no internal details")
		}

		// htmx: the message alone, the form left as it is in the page.
		r = httptest.NewRequest(http.MethodPost, "/projects/p/things", nil)
		r.Header.Set("HX-Request", "true")
		w = httptest.NewRecorder()
		h.formRefused(w, r, c.err, func(int, string) { t.Fatalf("htmx: the form is not rendered again: %v", c.err) }, c.named...)
		require.Equal(t, c.status, w.Code, c.err)
		require.Equal(t, c.shown, w.Body.String(), c.err)
	}
}

// TestFailBrowserGone: a request whose browser went away (its context
// cancelled) failing with the cancellation is logged at INFO, not as a
// server error; the same error while the browser waits is an ERROR.
func TestFailBrowserGone(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	h := &Handler{cfg: Config{Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/projects/p/chat/s/messages", nil)
	h.fail(httptest.NewRecorder(), r, fmt.Errorf("chat turn: %w", context.Canceled))
	require.Contains(t, logged.String(), "level=INFO msg=\"console request failed: the browser went away\"")
	require.NotContains(t, logged.String(), "level=ERROR")

	logged.Reset()
	r = httptest.NewRequest(http.MethodPost, "/projects/p/chat/s/messages", nil)
	h.fail(httptest.NewRecorder(), r, errors.New("provider: connection refused"))
	require.Contains(t, logged.String(), "level=ERROR msg=\"console request failed\"")
}
