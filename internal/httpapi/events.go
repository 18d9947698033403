package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// EventWriteTimeout bounds the write of one server-sent event to a slow
// client.
const EventWriteTimeout = 10 * time.Second

// EventStream writes named server-sent events (JSON data) to one
// response: the status and headers with the first event, each event
// flushed under EventWriteTimeout. The first write error is kept (the
// client is gone) and later events are dropped.
type EventStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	header  func(http.Header)
	started bool
	err     error
}

// NewEventStream returns the event stream of w; header, when not nil,
// adds the response's own headers before the first event.
func NewEventStream(w http.ResponseWriter, header func(http.Header)) *EventStream {
	return &EventStream{w: w, rc: http.NewResponseController(w), header: header}
}

// Started tells whether the response's status has been written (an error
// can then only be an event).
func (s *EventStream) Started() bool { return s.started }

// Err is the first write error: the client is gone.
func (s *EventStream) Err() error { return s.err }

// Event writes one event named name with data as JSON.
func (s *EventStream) Event(name string, data any) {
	if s.err != nil {
		return
	}
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		if h.Get("Cache-Control") == "" { // the console's no-store stays
			h.Set("Cache-Control", "no-cache")
		}
		h.Set("X-Accel-Buffering", "no")
		if s.header != nil {
			s.header(h)
		}
		s.w.WriteHeader(http.StatusOK)
	}
	b, err := json.Marshal(data)
	if err != nil {
		s.err = fmt.Errorf("encode event %s: %w", name, err)
		return
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(EventWriteTimeout))
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		s.err = err
		return
	}
	s.err = s.rc.Flush()
}
