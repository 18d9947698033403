package main

import (
	"context"
	"net/http"
	"time"
)

// requestTimeoutDefault bounds an ordinary client request (--request-timeout).
const requestTimeoutDefault = time.Minute

// clientHTTP sends the client commands' requests. An ordinary request
// (its answer read whole) must be answered and read within the request
// timeout. An event stream (Accept: text/event-stream: GET
// /api/events/stream, a streamed chat answer) and a request made under
// withLimit(ctx, limitNone) (a chat answer as JSON: a model's time) have
// none. A request made under withLimit(ctx, limitAnswer) sends its body
// without a limit and must then be answered (its headers) within the
// timeout: an upload, whose size the timeout cannot foresee. A timeout of
// 0 is none.
type clientHTTP struct {
	timed  *http.Client // Timeout: the whole exchange
	sends  *http.Client // ResponseHeaderTimeout: the answer once the body is sent
	stream *http.Client // no limit
}

// newClientHTTP builds the clients for a request timeout.
func newClientHTTP(timeout time.Duration) *clientHTTP {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	sendTr := tr.Clone()
	sendTr.ResponseHeaderTimeout = timeout
	return &clientHTTP{
		timed:  &http.Client{Transport: tr, Timeout: timeout},
		sends:  &http.Client{Transport: sendTr},
		stream: &http.Client{Transport: tr},
	}
}

// requestLimit is how the request timeout bounds a request.
type requestLimit int

const (
	limitWhole  requestLimit = iota // the whole exchange (the default)
	limitAnswer                     // the wait for the answer once the body is sent
	limitNone                       // nothing
)

// requestLimitKey carries a requestLimit in a context.
type requestLimitKey struct{}

// withLimit is ctx with its requests bounded as l says.
func withLimit(ctx context.Context, l requestLimit) context.Context {
	return context.WithValue(ctx, requestLimitKey{}, l)
}

// Do implements client.HttpRequestDoer.
func (h *clientHTTP) Do(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Accept") == "text/event-stream" {
		return h.stream.Do(req)
	}
	switch l, _ := req.Context().Value(requestLimitKey{}).(requestLimit); l {
	case limitAnswer:
		return h.sends.Do(req)
	case limitNone:
		return h.stream.Do(req)
	}
	return h.timed.Do(req)
}
