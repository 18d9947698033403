// Package connectortest holds what connector tests share: an in-memory
// Walker standing for the integration domain, and config building.
package connectortest

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sort"
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
