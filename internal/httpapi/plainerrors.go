package httpapi

import (
	"bytes"
	"errors"
	"mime"
	"net/http"
	"strings"
)

// plainErrorMax bounds how much of a plain-text error body is kept as
// the problem's detail.
const plainErrorMax = 1 << 10

// PlainErrorsAsProblems serves h, turning the error answers it writes as
// text/plain (http.Error, as libraries such as go-sdk do) into problem
// bodies like every other error of the API: code from the status,
// requestId, and the text, trimmed, as detail (5xx texts go to the
// request's log line instead, as for any internal error). Every other
// answer, streaming 2xx responses included, passes through untouched:
// writes and flushes go straight to the client.
func PlainErrorsAsProblems(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &plainErrorWriter{ResponseWriter: w, r: r}
		defer pw.finish()
		h.ServeHTTP(pw, r)
	})
}

// plainErrorWriter holds back a text/plain error answer until the handler
// returns, then writes it as a problem.
type plainErrorWriter struct {
	http.ResponseWriter
	r       *http.Request
	written bool // WriteHeader seen
	held    bool // the answer is a held-back plain-text error
	status  int
	text    bytes.Buffer
}

func (w *plainErrorWriter) WriteHeader(status int) {
	switch {
	case w.held:
		return // superfluous
	case w.written || (status >= 100 && status < 200):
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.written = true
	if status >= 400 && isPlainText(w.Header().Get("Content-Type")) {
		w.held, w.status = true, status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *plainErrorWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	if !w.held {
		return w.ResponseWriter.Write(b)
	}
	if room := plainErrorMax - w.text.Len(); room > 0 {
		w.text.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

// Flush implements http.Flusher (found before Unwrap by
// http.ResponseController): a held-back error is not flushed.
func (w *plainErrorWriter) Flush() {
	if w.held {
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *plainErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *plainErrorWriter) finish() {
	if !w.held {
		return
	}
	detail := strings.TrimSpace(w.text.String())
	if detail == "" {
		detail = http.StatusText(w.status)
	}
	w.Header().Del("Content-Length")
	if w.status >= 500 {
		recordCause(w.r.Context(), errors.New(detail))
	}
	writeProblem(w.ResponseWriter, newProblem(w.r.Context(), w.status, detail))
}

func isPlainText(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/plain"
}
