package graph_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/graph"
)

// BenchmarkApply10k writes one extraction result of 10,000 objects and
// 5,000 relationships, each with a provenance chunk, in one transaction,
// into a fresh project each iteration, and reports objects per second.
func BenchmarkApply10k(b *testing.B) {
	const nObjects, nRels = 10000, 5000
	types := []string{"Person", "Organization", "Location", "Event", "Product", "Concept", "Document"}
	objs := make([]graph.ObjectInput, nObjects)
	for i := range objs {
		objs[i] = graph.ObjectInput{
			Type: types[i%len(types)], Key: fmt.Sprintf("Entity %d", i), Name: fmt.Sprintf("Entity %d", i),
			Description: "An entity found by the benchmark, with a sentence of description.",
			Properties:  map[string]any{"aliases": []string{fmt.Sprintf("E%d", i)}, "kind": "benchmark", "rank": i},
			Labels:      []string{"bench"}, Confidence: ptr(0.8),
		}
	}
	rels := make([]graph.RelationshipInput, nRels)
	for i := range rels {
		s, t := (2*i)%nObjects, (2*i+1)%nObjects
		rels[i] = graph.RelationshipInput{
			Type: "RELATED_TO", SourceType: objs[s].Type, SourceKey: objs[s].Key, TargetType: objs[t].Type, TargetKey: objs[t].Key,
			Confidence: ptr(0.7),
		}
	}
	var total int
	for b.Loop() {
		b.StopTimer()
		tb := setup(b)
		chunk := tb.chunks[0]
		for i := range objs {
			objs[i].ChunkIDs = []uuid.UUID{chunk}
		}
		for i := range rels {
			rels[i].ChunkIDs = []uuid.UUID{chunk}
		}
		b.StartTimer()
		res, err := tb.apply(b, ptr(uuid.Must(uuid.NewV7())), objs, rels)
		b.StopTimer()
		require.NoError(b, err)
		require.Equal(b, nObjects, res.ObjectsCreated)
		require.Equal(b, nRels, res.RelationshipsCreated)
		require.Len(b, tb.queue.take()[0], nObjects)
		total += nObjects
		tb.pool.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "objects/s")
}
