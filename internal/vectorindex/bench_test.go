package vectorindex

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The benchmarks search vectors built in memory, as a loaded (project,
// space) holds them: loading from PostgreSQL is not what they measure.
const (
	benchVectors = 100_000
	benchDim     = 768
	benchK       = 10
	benchQueries = 200
)

// benchData returns n vectors of dim dimensions. With latent 0 they are
// uniform on the sphere: the worst case for a graph, as every point is
// about as far from the query as every other. Otherwise they are like
// embeddings, whose intrinsic dimension is far below their length: points
// of a latent-dimensional Gaussian, mapped to dim dimensions by a fixed
// random projection, plus isotropic noise.
func benchData(r *rand.Rand, proj [][]float32, n, dim int) [][]float32 {
	out := make([][]float32, n)
	z := make([]float32, len(proj))
	for i := range out {
		v := make([]float32, dim)
		for j := range z {
			z[j] = float32(r.NormFloat64())
		}
		for j := range v {
			v[j] = float32(r.NormFloat64())
			for l, p := range proj {
				v[j] += p[j] * z[l]
			}
		}
		out[i] = v
	}
	return out
}

func benchProjection(r *rand.Rand, latent, dim int) [][]float32 {
	proj := make([][]float32, latent)
	for l := range proj {
		proj[l] = make([]float32, dim)
		for j := range proj[l] {
			proj[l][j] = float32(r.NormFloat64())
		}
	}
	return proj
}

func benchVectorsOf(data [][]float32) *vectors {
	v := newVectors(len(data[0]))
	at := time.Now()
	for _, x := range data {
		v.apply(row{key: rowKey{id: uuid.New()}, inSpace: true, embedding: slices.Clone(x), embeddedAt: at})
	}
	return v
}

func benchQueriesOf(data [][]float32) [][]float32 {
	out := make([][]float32, len(data))
	for i, q := range data {
		out[i] = slices.Clone(q)
		normalize(out[i])
	}
	return out
}

// BenchmarkExactSearch is one top-10 query scanning 100,000 vectors of
// dimension 768 (target: under 30 ms on one core, -cpu 1).
func BenchmarkExactSearch(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	e := &entry{data: benchVectorsOf(benchData(r, nil, benchVectors, benchDim))}
	queries := benchQueriesOf(benchData(r, nil, benchQueries, benchDim))
	cfg := Config{}.withDefaults()
	i := 0
	for b.Loop() {
		if hits := e.search(queries[i%len(queries)], benchK, nil, cfg); len(hits) != benchK {
			b.Fatalf("%d hits", len(hits))
		}
		i++
	}
}

// BenchmarkHNSWSearch is one top-10 query through the graph of 100,000
// vectors of dimension 768 and reports recall@10 against the exact scan
// (target: at least 0.95) on embedding-like data (intrinsic dimension 32)
// and on uniform random vectors. The graph is built before timing starts.
func BenchmarkHNSWSearch(b *testing.B) {
	for _, ds := range []struct {
		name   string
		latent int
	}{{"latent32", 32}, {"uniform", 0}} {
		b.Run(ds.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			proj := benchProjection(r, ds.latent, benchDim)
			d := benchVectorsOf(benchData(r, proj, benchVectors, benchDim))
			queries := benchQueriesOf(benchData(r, proj, benchQueries, benchDim))
			cfg := Config{}.withDefaults()
			start := time.Now()
			g := newGraph(cfg.HNSWM, cfg.HNSWEfConstruction, 1)
			for slot := range int32(d.arena.n) { //nolint:gosec // fits
				g.insert(&d.arena, slot)
			}
			b.Logf("graph of %d vectors built in %v", d.arena.n, time.Since(start).Round(time.Millisecond))
			d.graph, d.graphN = g, d.arena.n
			e := &entry{data: d}

			found := 0
			for _, q := range queries {
				exact := ids(d.exactSearch(q, benchK, nil))
				for _, h := range e.search(q, benchK, nil, cfg) {
					if slices.Contains(exact, h.ID) {
						found++
					}
				}
			}
			recall := float64(found) / float64(len(queries)*benchK)

			i := 0
			for b.Loop() {
				if hits := e.search(queries[i%len(queries)], benchK, nil, cfg); len(hits) != benchK {
					b.Fatalf("%d hits", len(hits))
				}
				i++
			}
			b.ReportMetric(recall, "recall@10")
		})
	}
}

func ids(hits []Hit) []uuid.UUID {
	out := make([]uuid.UUID, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}
