package vectorindex

import (
	"bytes"
	"slices"

	"github.com/google/uuid"
	"github.com/viterin/vek/vek32"
)

// blockVectors is how many vectors one arena block holds. Blocks are never
// reallocated, so a vector's memory never moves once written: graph
// builders read it without a lock while new vectors are appended.
const blockVectors = 1024

// arena stores vectors of one dimension in fixed-size contiguous blocks.
type arena struct {
	dim    int
	blocks [][]float32
	n      int
}

func (a *arena) vec(i int32) []float32 {
	b := a.blocks[int(i)/blockVectors]
	off := (int(i) % blockVectors) * a.dim
	return b[off : off+a.dim : off+a.dim]
}

// add appends v (already normalised) and returns its slot.
func (a *arena) add(v []float32) int32 {
	if a.n%blockVectors == 0 {
		a.blocks = append(a.blocks, make([]float32, blockVectors*a.dim))
	}
	slot := int32(a.n) //nolint:gosec // vectors.apply keeps n below MaxInt32
	copy(a.vec(slot), v)
	a.n++
	return slot
}

// normalize scales v to unit length in place and reports whether it could
// (a zero or non-finite vector has no direction).
func normalize(v []float32) bool {
	norm := vek32.Norm(v)
	if norm == 0 || norm != norm || norm > 3.4e38 {
		return false
	}
	vek32.MulNumber_Inplace(v, 1/norm)
	return true
}

// topK keeps the k best hits seen, at most one per ID (an object may have
// several vectors in one space, one per embedding policy). It is a min-heap
// on score: the root is the hit a better candidate replaces.
type topK struct {
	k    int
	hits []Hit
	pos  map[uuid.UUID]int
}

func newTopK(k int) *topK {
	return &topK{k: k, hits: make([]Hit, 0, k), pos: make(map[uuid.UUID]int, k)}
}

// worse orders hits: lower score first, ties broken by ID so that results
// are deterministic.
func worse(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return bytes.Compare(a.ID[:], b.ID[:]) > 0
}

// full reports whether a candidate must beat min to enter.
func (t *topK) full() bool { return len(t.hits) == t.k }

func (t *topK) min() float32 { return t.hits[0].Score }

func (t *topK) offer(id uuid.UUID, score float32) {
	h := Hit{ID: id, Score: score}
	if i, ok := t.pos[id]; ok {
		if worse(t.hits[i], h) {
			t.hits[i] = h
			t.down(i)
		}
		return
	}
	if !t.full() {
		t.hits = append(t.hits, h)
		t.pos[id] = len(t.hits) - 1
		t.up(len(t.hits) - 1)
		return
	}
	if !worse(t.hits[0], h) {
		return
	}
	delete(t.pos, t.hits[0].ID)
	t.hits[0] = h
	t.pos[id] = 0
	t.down(0)
}

func (t *topK) swap(i, j int) {
	t.hits[i], t.hits[j] = t.hits[j], t.hits[i]
	t.pos[t.hits[i].ID] = i
	t.pos[t.hits[j].ID] = j
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(t.hits[i], t.hits[p]) {
			return
		}
		t.swap(i, p)
		i = p
	}
}

func (t *topK) down(i int) {
	n := len(t.hits)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && worse(t.hits[r], t.hits[l]) {
			c = r
		}
		if !worse(t.hits[c], t.hits[i]) {
			return
		}
		t.swap(i, c)
		i = c
	}
}

// sorted returns the hits best first.
func (t *topK) sorted() []Hit {
	out := slices.Clone(t.hits)
	slices.SortFunc(out, func(a, b Hit) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return out
}

// exactSearch scans every live vector of v. filter may be nil.
func (v *vectors) exactSearch(q []float32, k int, filter func(uuid.UUID) bool) []Hit {
	top := newTopK(k)
	v.scan(top, q, 0, v.arena.n, filter)
	return top.sorted()
}

// scan offers top the live vectors of slots [from, to) that filter (nil:
// all) accepts.
func (v *vectors) scan(top *topK, q []float32, from, to int, filter func(uuid.UUID) bool) {
	a := &v.arena
	for b := from / blockVectors; b*blockVectors < to; b++ {
		block := a.blocks[b]
		base := b * blockVectors
		for j := max(from-base, 0); j < min(blockVectors, to-base); j++ {
			slot := base + j
			if v.dead[slot] {
				continue
			}
			id := v.ids[slot]
			if filter != nil && !filter(id) {
				continue
			}
			off := j * a.dim
			s := vek32.Dot(block[off:off+a.dim], q)
			if top.full() && s < top.min() {
				continue
			}
			top.offer(id, s)
		}
	}
}
