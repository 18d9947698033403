package vectorindex

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/viterin/vek/vek32"
)

// graph is a hierarchical navigable small world graph (Malkov and
// Yashunin) over the slots of an arena, by inner product of unit vectors.
// It holds slot numbers only; the vectors stay in the arena. It is not safe
// for concurrent insertion; searches may run concurrently with each other.
type graph struct {
	m, m0, efConstruction int
	ml                    float64
	rng                   *rand.Rand

	levels []int8      // per node: its top level
	links  [][][]int32 // per node, per level: neighbour slots
	entry  int32
	top    int

	visited sync.Pool
}

func newGraph(m, efConstruction int, seed uint64) *graph {
	return &graph{
		m:              m,
		m0:             2 * m,
		efConstruction: efConstruction,
		ml:             1 / math.Log(float64(m)),
		rng:            rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), //nolint:gosec // level sampling, not security
		entry:          -1,
	}
}

// bytes estimates the memory of the graph's links.
func (g *graph) bytes() int64 {
	return int64(len(g.levels)) * int64(1+24+24+4*g.m0+int(float64(4*g.m)*g.ml))
}

// candidate is a node and its similarity to the query.
type candidate struct {
	slot int32
	sim  float32
}

// candHeap is a binary heap of candidates: better(a, b) puts a nearer the
// root. Typed rather than container/heap, which boxes every push.
type candHeap struct {
	items  []candidate
	better func(a, b float32) bool
}

func maxFirst(a, b float32) bool { return a > b }
func minFirst(a, b float32) bool { return a < b }

func (h *candHeap) push(c candidate) {
	h.items = append(h.items, c)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.better(h.items[i].sim, h.items[p].sim) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *candHeap) pop() candidate {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		c := l
		if r := l + 1; r < last && h.better(h.items[r].sim, h.items[l].sim) {
			c = r
		}
		if !h.better(h.items[c].sim, h.items[i].sim) {
			break
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
	return top
}

// visitSet marks visited nodes with a generation number, so that it is
// cleared in O(1) between searches.
type visitSet struct {
	marks []uint32
	gen   uint32
}

func (g *graph) getVisited() *visitSet {
	vs, _ := g.visited.Get().(*visitSet)
	if vs == nil {
		vs = &visitSet{}
	}
	if len(vs.marks) < len(g.levels) {
		vs.marks = make([]uint32, len(g.levels)+len(g.levels)/4)
		vs.gen = 0
	}
	vs.gen++
	if vs.gen == 0 {
		clear(vs.marks)
		vs.gen = 1
	}
	return vs
}

// searchLayer returns up to ef nodes of level closest to q, starting from
// eps. accept (nil: all) says which nodes may be results; rejected nodes are
// still traversed. It also returns how many nodes it evaluated.
func (g *graph) searchLayer(a *arena, q []float32, eps []candidate, ef, level int, accept func(int32) bool, vs *visitSet) ([]candidate, int) {
	cands := candHeap{items: make([]candidate, 0, ef*2), better: maxFirst}
	results := candHeap{items: make([]candidate, 0, ef+1), better: minFirst}
	evaluated := 0
	for _, ep := range eps {
		vs.marks[ep.slot] = vs.gen
		cands.push(ep)
		if accept == nil || accept(ep.slot) {
			results.push(ep)
			if len(results.items) > ef {
				results.pop()
			}
		}
	}
	for len(cands.items) > 0 {
		c := cands.pop()
		if len(results.items) >= ef && c.sim < results.items[0].sim {
			break
		}
		for _, nb := range g.links[c.slot][level] {
			if vs.marks[nb] == vs.gen {
				continue
			}
			vs.marks[nb] = vs.gen
			evaluated++
			s := vek32.Dot(a.vec(nb), q)
			if len(results.items) < ef || s > results.items[0].sim {
				cands.push(candidate{nb, s})
				if accept == nil || accept(nb) {
					results.push(candidate{nb, s})
					if len(results.items) > ef {
						results.pop()
					}
				}
			}
		}
	}
	return results.items, evaluated
}

// search returns up to ef accepted nodes near q, best first, and how many
// nodes it evaluated.
func (g *graph) search(a *arena, q []float32, ef int, accept func(int32) bool) ([]candidate, int) {
	if g.entry < 0 {
		return nil, 0
	}
	vs := g.getVisited()
	defer g.visited.Put(vs)
	ep := candidate{g.entry, vek32.Dot(a.vec(g.entry), q)}
	for l := g.top; l > 0; l-- {
		ep = g.greedy(a, q, ep, l)
	}
	out, n := g.searchLayer(a, q, []candidate{ep}, ef, 0, accept, vs)
	slices.SortFunc(out, closestFirst)
	return out, n
}

// closestFirst orders candidates by similarity, highest first.
func closestFirst(x, y candidate) int {
	switch {
	case x.sim > y.sim:
		return -1
	case x.sim < y.sim:
		return 1
	}
	return 0
}

// greedy walks level towards q and returns the closest node it finds.
func (g *graph) greedy(a *arena, q []float32, ep candidate, level int) candidate {
	for changed := true; changed; {
		changed = false
		for _, nb := range g.links[ep.slot][level] {
			if s := vek32.Dot(a.vec(nb), q); s > ep.sim {
				ep = candidate{nb, s}
				changed = true
			}
		}
	}
	return ep
}

// insert adds slot (the next node: slots are inserted in order, gaps
// allowed) to the graph.
func (g *graph) insert(a *arena, slot int32) {
	for int(slot) >= len(g.levels) {
		g.levels = append(g.levels, -1)
		g.links = append(g.links, nil)
	}
	level := min(int(-math.Log(1-g.rng.Float64())*g.ml), 32)
	g.levels[slot] = int8(level) //nolint:gosec // level is at most 32
	g.links[slot] = make([][]int32, level+1)
	if g.entry < 0 {
		g.entry, g.top = slot, level
		return
	}
	q := a.vec(slot)
	ep := candidate{g.entry, vek32.Dot(a.vec(g.entry), q)}
	for l := g.top; l > level; l-- {
		ep = g.greedy(a, q, ep, l)
	}
	vs := g.getVisited()
	defer g.visited.Put(vs)
	eps := []candidate{ep}
	for l := min(level, g.top); l >= 0; l-- {
		vs.gen++
		if vs.gen == 0 {
			clear(vs.marks)
			vs.gen = 1
		}
		found, _ := g.searchLayer(a, q, eps, g.efConstruction, l, nil, vs)
		slices.SortFunc(found, closestFirst)
		limit := g.m
		if l == 0 {
			limit = g.m0
		}
		chosen := g.selectNeighbours(a, found, g.m)
		g.links[slot][l] = chosen
		for _, nb := range chosen {
			g.link(a, nb, slot, l, limit)
		}
		eps = found
	}
	if level > g.top {
		g.entry, g.top = slot, level
	}
}

// selectNeighbours picks up to m of the candidates (best first) by the
// paper's heuristic: a candidate is kept only if it is closer to the query
// than to every neighbour already kept, which spreads the links across
// directions; places left over are filled with the best of the rest.
func (g *graph) selectNeighbours(a *arena, cands []candidate, m int) []int32 {
	if len(cands) <= m {
		out := make([]int32, len(cands))
		for i, c := range cands {
			out[i] = c.slot
		}
		return out
	}
	out := make([]int32, 0, m)
	var skipped []int32
	for _, c := range cands {
		if len(out) == m {
			break
		}
		keep := true
		cv := a.vec(c.slot)
		for _, r := range out {
			if vek32.Dot(cv, a.vec(r)) > c.sim {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c.slot)
		} else {
			skipped = append(skipped, c.slot)
		}
	}
	for _, s := range skipped {
		if len(out) == m {
			break
		}
		out = append(out, s)
	}
	return out
}

// link adds the edge from -> to at level, dropping from's least similar
// neighbour when it has more than limit.
func (g *graph) link(a *arena, from, to int32, level, limit int) {
	nbs := g.links[from][level]
	nbs = append(nbs, to)
	if len(nbs) > limit {
		fv := a.vec(from)
		worst, worstSim := 0, float32(math.Inf(1))
		for i, nb := range nbs {
			if s := vek32.Dot(fv, a.vec(nb)); s < worstSim {
				worst, worstSim = i, s
			}
		}
		nbs[worst] = nbs[len(nbs)-1]
		nbs = nbs[:len(nbs)-1]
	}
	g.links[from][level] = nbs
}
