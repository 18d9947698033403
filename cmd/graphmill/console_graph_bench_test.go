package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
)

// benchGraphTypes are the object types of the console benchmark's graph.
//
//nolint:gochecknoglobals // fixture
var benchGraphTypes = []string{"Person", "Organization", "Location", "Event", "Concept"}

// benchGraph writes the console benchmark's graph into project (COPY):
// objects objects ("Object 000042", five types, newest last), each
// related to the next, the last one (the center) also related to 60
// others and extracted from 30 chunks of docs. It returns the center.
func benchGraph(b *testing.B, s *testServer, project uuid.UUID, docs []uuid.UUID, objects int) uuid.UUID {
	b.Helper()
	now := time.Now().UTC()
	ids := make([]uuid.UUID, objects)
	rows := make([][]any, objects)
	for i := range rows {
		ids[i] = uuid.Must(uuid.NewV7())
		at := now.Add(-time.Duration(objects-i) * time.Second)
		name := fmt.Sprintf("Object %06d", i)
		rows[i] = []any{
			ids[i], project, benchGraphTypes[i%len(benchGraphTypes)], name, fmt.Sprintf("object %06d", i), name,
			"A benchmark object.", "accepted", at, at,
		}
	}
	benchCopy(b, s, "graph_objects", []string{"id", "project_id", "type", "key", "normalized_key", "name", "description", "status", "created_at", "updated_at"}, rows)
	center := ids[objects-1]
	var rels [][]any
	for i := range objects - 1 {
		rels = append(rels, []any{uuid.Must(uuid.NewV7()), project, "RELATED_TO", ids[i], ids[i+1], now, now})
	}
	for i := range 60 {
		rels = append(rels, []any{uuid.Must(uuid.NewV7()), project, "MENTIONS", center, ids[i*(objects/61)], now, now})
	}
	benchCopy(b, s, "graph_relationships", []string{"id", "project_id", "type", "source_id", "target_id", "created_at", "updated_at"}, rels)
	var chunks, prov [][]any
	for i := range 30 {
		id := uuid.Must(uuid.NewV7())
		text := fmt.Sprintf("# Part %d\n\nHere Object %06d meets the others, in a sentence long enough to quote.", i, objects-1)
		chunks = append(chunks, []any{id, project, docs[i], 0, text, 0, len(text), 20, now})
		prov = append(prov, []any{center, id, project, now})
	}
	benchCopy(b, s, "document_chunks", []string{"id", "project_id", "document_id", "chunk_index", "text", "start_offset", "end_offset", "token_count", "created_at"}, chunks)
	benchCopy(b, s, "graph_object_provenance", []string{"object_id", "chunk_id", "project_id", "created_at"}, prov)
	return center
}
