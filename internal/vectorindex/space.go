package vectorindex

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/postgres"
)

// entry is one (project, space) of the cache.
type entry struct {
	key entryKey

	// loadMu serialises loads and refreshes; loaded and hasLoaded are
	// guarded by it.
	loadMu    sync.Mutex
	loaded    stamp
	hasLoaded bool

	mu   sync.RWMutex // guards data and what it points to
	data *vectors

	evicted atomic.Bool
	charged int64 // guarded by Index.mu
}

// rowKey identifies a stored vector: a chunk (policy is the nil UUID) or an
// object under one embedding policy.
type rowKey struct {
	id, policy uuid.UUID
}

// vectors holds the vectors of one (project, space). A vector that is
// replaced or removed becomes a dead slot (skipped by searches, still a
// waypoint of the graph) until the next full reload compacts them.
type vectors struct {
	arena arena
	ids   []uuid.UUID // per slot
	at    []int64     // per slot: embedded_at, µs since the epoch
	dead  []bool      // per slot
	live  int
	slots map[rowKey]int32

	// watermark is the newest embedded_at applied.
	watermark time.Time

	graph     *graph      // nil until built
	graphN    int         // slots [0, graphN) are in the graph; the rest is scanned
	building  bool        // a goroutine builds or extends the graph
	abandoned atomic.Bool // replaced by a full reload
}

func newVectors(dim int) *vectors {
	return &vectors{arena: arena{dim: dim}, slots: map[rowKey]int32{}}
}

// bytes estimates the memory held: the arena, the per-slot arrays, the slot
// map and the graph.
func (v *vectors) bytes() int64 {
	n := int64(v.arena.n)
	b := int64(len(v.arena.blocks))*blockVectors*int64(v.arena.dim)*4 + n*(16+8+1) + int64(len(v.slots))*64
	if v.graph != nil {
		b += v.graph.bytes()
	}
	return b
}

func (v *vectors) deadCount() int { return v.arena.n - v.live }

// row is one stored vector read from the database. inSpace is false for a
// vector that now belongs to another space or to a deleted object: it is
// removed from this one.
type row struct {
	key        rowKey
	inSpace    bool
	embedding  []float32
	embeddedAt time.Time
}

// apply adds, replaces or removes the vector of r. It reports false for a
// vector that cannot be used (wrong length, zero or not finite), which is
// then left out.
func (v *vectors) apply(r row) bool {
	at := r.embeddedAt.UnixMicro()
	if r.embeddedAt.After(v.watermark) {
		v.watermark = r.embeddedAt
	}
	if old, had := v.slots[r.key]; had && r.inSpace && v.at[old] == at {
		return true // read again within the overlap window: unchanged
	}
	v.remove(r.key)
	if !r.inSpace {
		return true
	}
	if len(r.embedding) != v.arena.dim || v.arena.n == math.MaxInt32 || !normalize(r.embedding) {
		return false
	}
	slot := v.arena.add(r.embedding)
	v.ids = append(v.ids, r.key.id)
	v.at = append(v.at, at)
	v.dead = append(v.dead, false)
	v.slots[r.key] = slot
	v.live++
	return true
}

// remove makes the vector of key, if any, a dead slot.
func (v *vectors) remove(key rowKey) {
	if slot, ok := v.slots[key]; ok {
		v.dead[slot] = true
		v.live--
		delete(v.slots, key)
	}
}

// refreshMode is how an entry catches up with the database.
type refreshMode int

const (
	modeFresh     refreshMode = iota
	modeFull                  // load everything into new vectors
	modeReconcile             // compare every key and embedded_at, fetch what differs
	modeSince                 // read what was embedded since the watermark
)

// refresh brings e up to want and returns the bytes e now holds (-1 when
// it was fresh). Apart from the first load and a compaction of dead slots
// (full loads), vectors change in place: writers are only read through
// the rows they changed.
func (e *entry) refresh(ctx context.Context, ix *Index, want stamp) (int64, error) {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.mu.RLock()
	d := e.data
	e.mu.RUnlock()
	// d's fields are written only under loadMu, which this goroutine
	// holds: reading them without e.mu is safe.
	mode := modeSince
	switch {
	case !e.hasLoaded || d == nil || d.deadCount() > max(blockVectors, d.live/4):
		mode = modeFull
	case e.loaded == want:
		return -1, nil
	case e.loaded.resync != want.resync || e.loaded.v.removed != want.v.removed:
		mode = modeReconcile
	}
	sp := e.key.space
	var rows []row
	var gone []rowKey
	switch mode {
	case modeFull:
		nv := newVectors(sp.Dimension)
		skipped := 0
		err := vectorsLoad(ctx, ix.db, e.key.project, sp, func(r row) {
			if !nv.apply(r) {
				skipped++
			}
		})
		if err != nil {
			return 0, fmt.Errorf("load %s of project %s: %w", sp, e.key.project, err)
		}
		if skipped > 0 {
			ix.logger.Warn("vectorindex: vectors left out (wrong length, zero or not finite)", "project", e.key.project, "space", sp.String(), "count", skipped)
		}
		e.mu.Lock()
		if d != nil {
			d.abandoned.Store(true)
		}
		e.data = nv
		total := nv.bytes()
		e.mu.Unlock()
		e.loaded, e.hasLoaded = want, true
		return total, nil
	case modeReconcile:
		var err error
		rows, gone, err = d.reconcile(ctx, ix.db, e.key.project, sp)
		if err != nil {
			return 0, fmt.Errorf("reconcile %s of project %s: %w", sp, e.key.project, err)
		}
	default:
		since := d.watermark.Add(-ix.cfg.Overlap)
		err := vectorsLoadSince(ctx, ix.db, e.key.project, sp, since, func(r row) { rows = append(rows, r) })
		if err != nil {
			return 0, fmt.Errorf("refresh %s of project %s: %w", sp, e.key.project, err)
		}
	}
	e.mu.Lock()
	for _, k := range gone {
		d.remove(k)
	}
	for _, r := range rows {
		d.apply(r)
	}
	total := d.bytes()
	e.mu.Unlock()
	e.loaded = want
	return total, nil
}

// reconcile compares v with the keys and embedded_at of every vector of
// the space in the database: it returns the rows to apply (absent from v
// or re-embedded) and the keys to remove (gone from the space). Called
// with the entry's loadMu held.
func (v *vectors) reconcile(ctx context.Context, db postgres.DBTX, project uuid.UUID, sp Space) ([]row, []rowKey, error) {
	stored := make(map[rowKey]int64, len(v.slots))
	err := vectorsStamps(ctx, db, project, sp, func(k rowKey, at time.Time) { stored[k] = at.UnixMicro() })
	if err != nil {
		return nil, nil, err
	}
	var gone []rowKey
	for k := range v.slots {
		if _, ok := stored[k]; !ok {
			gone = append(gone, k)
		}
	}
	var fetch []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for k, at := range stored {
		if slot, ok := v.slots[k]; (!ok || v.at[slot] != at) && !seen[k.id] {
			seen[k.id] = true
			fetch = append(fetch, k.id)
		}
	}
	var rows []row
	if len(fetch) > 0 {
		if err := vectorsByID(ctx, db, project, sp, fetch, func(r row) { rows = append(rows, r) }); err != nil {
			return nil, nil, err
		}
	}
	return rows, gone, nil
}

// search runs one query (normalised) against e's current vectors.
func (e *entry) search(q []float32, k int, filter func(uuid.UUID) bool, cfg Config) []Hit {
	e.mu.RLock()
	defer e.mu.RUnlock()
	d := e.data
	if d == nil || d.live == 0 {
		return nil
	}
	if d.graph == nil || (filter != nil && d.passRate(filter) < 1/float64(cfg.Oversample)) {
		return d.exactSearch(q, k, filter)
	}
	ef := max(cfg.HNSWEfSearch, k)
	if filter != nil {
		ef = max(cfg.HNSWEfSearch, k*cfg.Oversample)
	}
	accept := func(slot int32) bool {
		return !d.dead[slot] && (filter == nil || filter(d.ids[slot]))
	}
	cands, _ := d.graph.search(&d.arena, q, ef, accept)
	top := newTopK(k)
	for _, c := range cands {
		top.offer(d.ids[c.slot], c.sim)
	}
	// Vectors added since the graph was extended are scanned.
	d.scan(top, q, d.graphN, d.arena.n, filter)
	if !top.full() && (filter != nil || len(top.hits) < d.live) {
		// Too few accepted nodes were reachable within ef (a filter
		// more selective than estimated, or several vectors per ID):
		// the scan is exact and, for a selective filter, cheap.
		return d.exactSearch(q, k, filter)
	}
	return top.sorted()
}

// passRate estimates the share of live vectors filter accepts from an even
// sample of slots.
func (v *vectors) passRate(filter func(uuid.UUID) bool) float64 {
	const samples = 128
	step := max(1, v.arena.n/samples)
	seen, pass := 0, 0
	for s := 0; s < v.arena.n; s += step {
		if v.dead[s] {
			continue
		}
		seen++
		if filter(v.ids[s]) {
			pass++
		}
	}
	if seen == 0 {
		return 0
	}
	return float64(pass) / float64(seen)
}

// graphBatch is how many vectors the graph takes in under one hold of the
// entry's write lock, so that searches wait for at most that many inserts.
const graphBatch = 64

// maybeBuild starts a goroutine that builds e's graph when its vectors
// reached the threshold, or extends it with the vectors added since;
// searches scan what the graph does not cover yet.
func (ix *Index) maybeBuild(e *entry) {
	e.mu.Lock()
	d := e.data
	if d == nil || d.building || e.evicted.Load() ||
		(d.graph == nil && d.live < ix.cfg.HNSWThreshold) || (d.graph != nil && d.graphN == d.arena.n) {
		e.mu.Unlock()
		return
	}
	d.building = true
	snap := d.arena // the first snap.n slots never change
	e.mu.Unlock()

	if !ix.life.Go(func(ctx context.Context) { ix.build(ctx, e, d, snap) }) {
		e.mu.Lock()
		d.building = false // stopped (or not started)
		e.mu.Unlock()
	}
}

// build makes d's graph cover all its slots: a new graph is built from the
// snapshot without a lock and attached; then the slots added meanwhile go
// in, graphBatch at a time under the entry's write lock.
func (ix *Index) build(ctx context.Context, e *entry, d *vectors, snap arena) {
	start := time.Now()
	stopped := func() bool {
		return ctx.Err() != nil || d.abandoned.Load() || e.evicted.Load()
	}
	done := func() {
		e.mu.Lock()
		d.building = false
		e.mu.Unlock()
	}
	e.mu.RLock()
	g := d.graph
	e.mu.RUnlock()
	if g == nil {
		g = newGraph(ix.cfg.HNSWM, ix.cfg.HNSWEfConstruction, uint64(start.UnixNano())) //nolint:gosec // a seed
		for slot := range int32(snap.n) {                                               //nolint:gosec // slots fit int32
			if slot%256 == 0 && stopped() {
				done()
				return
			}
			g.insert(&snap, slot)
		}
		e.mu.Lock()
		d.graph, d.graphN = g, snap.n
		e.mu.Unlock()
		ix.logger.Info("vectorindex: graph built", "project", e.key.project, "space", e.key.space.String(),
			"vectors", snap.n, "took", time.Since(start).Round(time.Millisecond))
	}
	for {
		e.mu.Lock()
		if stopped() || d.graphN == d.arena.n {
			d.building = false
			total := d.bytes()
			e.mu.Unlock()
			ix.charge(e, total)
			return
		}
		end := min(d.graphN+graphBatch, d.arena.n)
		for slot := d.graphN; slot < end; slot++ {
			g.insert(&d.arena, int32(slot)) //nolint:gosec // slots fit int32
		}
		d.graphN = end
		e.mu.Unlock()
	}
}
