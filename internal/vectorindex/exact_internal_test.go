package vectorindex

import (
	"math"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestTopK(t *testing.T) {
	t.Parallel()
	a, b, c, d := uuid.MustParse("00000000-0000-0000-0000-00000000000a"), uuid.MustParse("00000000-0000-0000-0000-00000000000b"),
		uuid.MustParse("00000000-0000-0000-0000-00000000000c"), uuid.MustParse("00000000-0000-0000-0000-00000000000d")
	type offer struct {
		id    uuid.UUID
		score float32
	}
	for _, tc := range []struct {
		name   string
		k      int
		offers []offer
		want   []Hit
	}{
		{"fewer than k", 3, []offer{{a, 0.1}, {b, 0.5}}, []Hit{{b, 0.5}, {a, 0.1}}},
		{"keeps the best k", 2, []offer{{a, 0.1}, {b, 0.5}, {c, 0.3}, {d, 0.05}}, []Hit{{b, 0.5}, {c, 0.3}}},
		{"one hit per id, its best score", 2, []offer{{a, 0.1}, {b, 0.5}, {a, 0.9}, {a, 0.2}, {c, 0.3}}, []Hit{{a, 0.9}, {b, 0.5}}},
		{"an id improving inside the heap", 3, []offer{{a, 0.1}, {b, 0.2}, {c, 0.3}, {a, 0.4}, {d, 0.15}}, []Hit{{a, 0.4}, {c, 0.3}, {b, 0.2}}},
		{"ties by id", 2, []offer{{c, 0.5}, {a, 0.5}, {b, 0.5}}, []Hit{{a, 0.5}, {b, 0.5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			top := newTopK(tc.k)
			for _, o := range tc.offers {
				top.offer(o.id, o.score)
			}
			require.Equal(t, tc.want, top.sorted())
		})
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	v := []float32{3, 4}
	require.True(t, normalize(v))
	require.InDeltaSlice(t, []float32{0.6, 0.8}, v, 1e-6)
	require.False(t, normalize([]float32{0, 0}))
	inf := float32(1e38)
	require.False(t, normalize([]float32{inf, inf, inf}), "overflows to +Inf")
}

func TestArenaBlocksNeverMove(t *testing.T) {
	t.Parallel()
	a := arena{dim: 3}
	first := a.add([]float32{1, 2, 3})
	p := &a.vec(first)[0]
	for i := range blockVectors * 2 {
		a.add([]float32{float32(i), 0, 0})
	}
	require.Same(t, p, &a.vec(first)[0])
	require.Equal(t, []float32{1, 2, 3}, a.vec(first))
	require.Equal(t, []float32{float32(blockVectors), 0, 0}, a.vec(blockVectors+1))
}

func TestScanCoversExactlyItsRange(t *testing.T) {
	t.Parallel()
	v := newVectors(2)
	var keys []uuid.UUID
	for i := range 2500 {
		id := uuid.New()
		keys = append(keys, id)
		// Slot i points at angle i: the query (1, 0) prefers low slots.
		angle := float64(i) / 2500
		v.apply(row{key: rowKey{id: id}, inSpace: true, embedding: []float32{float32(math.Cos(angle)), float32(math.Sin(angle))}})
	}
	for _, r := range [][2]int{{0, 2500}, {1000, 2100}, {1023, 1025}, {2047, 2500}, {5, 5}} {
		top := newTopK(3)
		v.scan(top, []float32{1, 0}, r[0], r[1], nil)
		want := []uuid.UUID{}
		for i := r[0]; i < min(r[0]+3, r[1]); i++ {
			want = append(want, keys[i])
		}
		require.Equal(t, want, ids(top.sorted()), "%v", r)
	}
}
