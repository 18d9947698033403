package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	ID   string
	Name string // the event: field ("" for unnamed events)
	Data string
}

// readSSE calls fn with each event of a text/event-stream body until the
// body ends or fn returns an error (comments and heartbeats are skipped).
func readSSE(body io.Reader, fn func(sseEvent) error) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 {
				ev.Data = strings.Join(data, "\n")
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data = sseEvent{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Name = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read the event stream: %w", err)
	}
	return nil
}

// eventStream opens GET /api/events/stream, replaying the stored events
// after the event id since when it is not empty. The generated client has no
// streaming responses (oapi-codegen reads whole bodies), and the stream is
// not an operation of the OpenAPI document, so this request is written by
// hand (decisions.md).
func (s *session) eventStream(ctx context.Context, since string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(s.cfg.Server, "/")+"/api/events/stream", http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("event stream: %w", err)
	}
	s.authorize(req)
	req.Header.Set("Accept", "text/event-stream")
	if since != "" {
		req.Header.Set("Last-Event-ID", since)
	}
	res, err := s.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("event stream: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode == http.StatusForbidden {
			return nil, fmt.Errorf("%w: %w", errEventsForbidden, problemError(res, body))
		}
		return nil, problemError(res, body)
	}
	return res.Body, nil
}

// errEventsForbidden is the event stream refused to a token the server
// knows (403: it lacks notifications:read).
var errEventsForbidden = errors.New("event stream refused")

// wakeOnEvents opens the event stream and signals on the channel (without
// blocking: one signal stands for any number of events) whenever an event
// arrives; the commands that wait re-read their state then, and every two
// seconds anyway. stop closes the stream. A token that may not read the
// stream (403) gets a warning and a channel that never signals: the
// commands poll.
func (s *session) wakeOnEvents(ctx context.Context) (<-chan struct{}, func(), error) {
	stream, err := s.eventStream(ctx, "")
	if errors.Is(err, errEventsForbidden) {
		fmt.Fprintf(s.stderr, "warning: %v; polling every 2 s instead\n", err)
		return nil, func() {}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	changed := make(chan struct{}, 1)
	go func() {
		_ = readSSE(stream, func(sseEvent) error {
			select {
			case changed <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	return changed, func() { stream.Close() }, nil
}

// until calls check until it reports done or fails, first at once, then
// whenever the event stream wakes it and every two seconds (an event the
// token cannot see must not stall it); it gives up after timeout, its
// error naming what it waited for.
func (s *session) until(what string, timeout time.Duration, check func(ctx context.Context) (done bool, err error)) error {
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	changed, stop, err := s.wakeOnEvents(ctx)
	if err != nil {
		return err
	}
	defer stop()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		if done, err := check(ctx); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-changed:
		case <-tick.C:
		}
	}
}
