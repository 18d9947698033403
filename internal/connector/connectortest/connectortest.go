// Package connectortest holds what connector tests share: an in-memory
// Walker standing for the integration domain, and config building.
package connectortest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/graphmill/graphmill/internal/connector"
)

// Walker is an in-memory connector.Walker: Known answers from the
// versions of an earlier sync, and it records what a walk reports.
type Walker struct {
	mu        sync.Mutex
	known     map[string]string
	items     map[string]connector.Item
	unchanged []string
	failed    map[string]error
	logs      []Log
	state     json.RawMessage
	// ItemFunc, when set, is called for each Item before it is recorded;
	// its error is returned to the connector (and the item not recorded).
	ItemFunc func(it connector.Item) error
}

// Log is one entry written through Walker.Log.
type Log struct {
	Level, Message string
	Details        map[string]any
}

// NewWalker returns a Walker whose Known answers from known (the
// versions stored by an earlier sync; nil for a first sync).
func NewWalker(known map[string]string) *Walker {
	return &Walker{known: maps.Clone(known), items: map[string]connector.Item{}, failed: map[string]error{}}
}

// Next returns a Walker for the next sync: it knows the versions the
// domain would have stored after this walk, and this walk's state.
func (w *Walker) Next() *Walker {
	n := NewWalker(w.Versions())
	n.state = w.State()
	return n
}

// Known implements connector.Walker.
func (w *Walker) Known(id string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.known[id]
	return v, ok
}

// Unchanged implements connector.Walker.
func (w *Walker) Unchanged(_ context.Context, id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unchanged = append(w.unchanged, id)
	return nil
}

// Item implements connector.Walker.
func (w *Walker) Item(_ context.Context, it connector.Item) error {
	if w.ItemFunc != nil {
		if err := w.ItemFunc(it); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.items[it.ExternalID] = it
	return nil
}

// Failed implements connector.Walker.
func (w *Walker) Failed(_ context.Context, id string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failed[id] = err
}

// Log implements connector.Walker.
func (w *Walker) Log(_ context.Context, level, message string, details map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.logs = append(w.logs, Log{Level: level, Message: message, Details: details})
}

// State implements connector.Walker.
func (w *Walker) State() json.RawMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

// SetState implements connector.Walker.
func (w *Walker) SetState(state json.RawMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state = state
}

// Items returns the items reported with content, by external id.
func (w *Walker) Items() map[string]connector.Item {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.items)
}

// ItemIDs returns the external ids of the items reported with content,
// sorted.
func (w *Walker) ItemIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return sortedKeys(w.items)
}

// UnchangedIDs returns the ids reported Unchanged, sorted.
func (w *Walker) UnchangedIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.unchanged)
	sort.Strings(out)
	return out
}

// Reported returns every id the walk reported (Item or Unchanged),
// sorted: what the domain keeps; the documents of other ids are deleted.
func (w *Walker) Reported() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append(sortedKeys(w.items), w.unchanged...)
	sort.Strings(out)
	return out
}

// FailedItems returns the items reported Failed, by external id.
func (w *Walker) FailedItems() map[string]error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.failed)
}

// Logs returns the entries written through Log.
func (w *Walker) Logs() []Log {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.logs)
}

// Versions returns what the domain stores after the walk: the version of
// every reported item.
func (w *Walker) Versions() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for _, id := range w.unchanged {
		out[id] = w.known[id]
	}
	for id, it := range w.items {
		out[id] = it.Version
	}
	return out
}

// TreeSite serves pages /p/0 .. /p/n-1; page i links pages 10i+1 ..
// 10i+10 (a tree of depth 4 for 2,000 pages), each about 2 KiB, with an
// ETag, answering If-None-Match with 304 (the benchmarks' web site).
func TreeSite(n int) http.Handler {
	filler := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 30)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || id < 0 || id >= n {
			http.NotFound(w, r)
			return
		}
		tag := fmt.Sprintf(`"v1-%d"`, id)
		w.Header().Set("ETag", tag)
		if r.Header.Get("If-None-Match") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var sb strings.Builder
		fmt.Fprintf(&sb, "<!DOCTYPE html><html><head><title>Page %d</title></head><body><h1>Page %d</h1><p>%s</p><ul>", id, id, filler)
		for c := 10*id + 1; c <= 10*id+10 && c < n; c++ {
			fmt.Fprintf(&sb, `<li><a href="/p/%d">page %d</a></li>`, c, c)
		}
		sb.WriteString(`</ul><a href="/p/0">home</a></body></html>`)
		_, _ = w.Write([]byte(sb.String()))
	})
}

// Config builds a connector.Config from Go values.
func Config(fields map[string]any) connector.Config {
	cfg := connector.Config{}
	for k, v := range fields {
		raw, err := json.Marshal(v)
		if err != nil {
			panic("connectortest.Config: " + err.Error())
		}
		cfg[k] = raw
	}
	return cfg
}

func sortedKeys(m map[string]connector.Item) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Transport returns a transport of the test's own. Connector tests never
// use http.DefaultTransport: httptest.Server.Close closes that
// transport's idle connections, and a parallel test's request that just
// picked one fails with "CloseIdleConnections called".
func Transport() *http.Transport {
	return http.DefaultTransport.(*http.Transport).Clone()
}

// Client returns an HTTP client on a Transport of its own.
func Client() *http.Client { return &http.Client{Transport: Transport()} }
