package search_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
)

// corpus is a project's chunks and graph objects, written as the pipeline
// would have (COPY), with their local embeddings.
type corpus struct {
	project uuid.UUID
	chunks  []uuid.UUID
	objects []uuid.UUID
	vocab   []string // Zipf-like: low indexes are common words
}

// seedCorpus writes a project with one document of chunks chunks of 60
// words and objects graph objects (a name of two words and a description
// of twelve) over a vocabulary of 5,000 random words, embedded by the
// local embedder in dim dimensions, and analyzes the tables.
func seedCorpus(tb testing.TB, pool *pgxpool.Pool, chunks, objects, dim int) corpus {
	tb.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	c := corpus{project: uuid.New(), vocab: make([]string, 5000)}
	for i := range c.vocab {
		b := make([]byte, 4+rng.IntN(6))
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		c.vocab[i] = string(b)
	}
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = c.vocab[int(float64(len(c.vocab))*rng.Float64()*rng.Float64())]
		}
		return strings.Join(w, " ")
	}
	org, doc := uuid.New(), uuid.New()
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, now(), now())`, org, org.String())
	require.NoError(tb, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, c.project, org)
	require.NoError(tb, err)
	_, err = pool.Exec(ctx, `INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, sha256, content, status, created_at, updated_at)
		VALUES ($1, $2, 'd.txt', 'text/plain', 0, $3, '', 'parsed', now(), now())`, doc, c.project, doc[:])
	require.NoError(tb, err)

	emb := llm.NewLocalEmbedder(dim)
	now := time.Now()
	texts := make([]string, chunks)
	for i := range texts {
		texts[i] = words(60)
	}
	vecs, err := emb.Embed(ctx, texts)
	require.NoError(tb, err)
	rows := make([][]any, chunks)
	for i := range rows {
		id := uuid.New()
		c.chunks = append(c.chunks, id)
		rows[i] = []any{id, c.project, doc, i, texts[i], 0, len(texts[i]), []string{}, 60, vecs[i], llm.LocalEmbedModel, dim, now, now}
	}
	_, err = pool.CopyFrom(ctx, pgx.Identifier{"document_chunks"}, []string{
		"id", "project_id", "document_id", "chunk_index", "text", "start_offset", "end_offset", "heading_path",
		"token_count", "embedding", "embedding_model", "embedding_dim", "embedded_at", "created_at",
	}, pgx.CopyFromRows(rows))
	require.NoError(tb, err)

	names, descs, objTexts := make([]string, objects), make([]string, objects), make([]string, objects)
	for i := range names {
		names[i], descs[i] = words(2), words(12)
		objTexts[i] = names[i] + ": " + descs[i]
	}
	vecs, err = emb.Embed(ctx, objTexts)
	require.NoError(tb, err)
	objRows, vecRows := make([][]any, objects), make([][]any, objects)
	for i := range objRows {
		id := uuid.New()
		c.objects = append(c.objects, id)
		key := names[i] + " " + id.String()
		objRows[i] = []any{id, c.project, "Concept", key, key, names[i], descs[i], "accepted", now, now}
		vecRows[i] = []any{id, uuid.Nil, c.project, "local", llm.LocalEmbedModel, dim, vecs[i], []byte{0}, now}
	}
	_, err = pool.CopyFrom(ctx, pgx.Identifier{"graph_objects"}, []string{
		"id", "project_id", "type", "key", "normalized_key", "name", "description", "status", "created_at", "updated_at",
	}, pgx.CopyFromRows(objRows))
	require.NoError(tb, err)
	_, err = pool.CopyFrom(ctx, pgx.Identifier{"graph_object_embeddings"}, []string{
		"object_id", "policy_id", "project_id", "provider", "model", "dimension", "embedding", "text_sha256", "embedded_at",
	}, pgx.CopyFromRows(vecRows))
	require.NoError(tb, err)
	_, err = pool.Exec(ctx, `ANALYZE document_chunks, graph_objects, graph_object_embeddings`)
	require.NoError(tb, err)
	return c
}
