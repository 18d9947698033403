package document

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// fixedEmbedder embeds every text as the same vector.
type fixedEmbedder struct{}

func (fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}
func (fixedEmbedder) Model() string  { return "fixed" }
func (fixedEmbedder) Dimension() int { return 2 }

// fixedEmbedders gives every project fixedEmbedder.
type fixedEmbedders struct{}

func (fixedEmbedders) Embedder(context.Context, uuid.UUID) (llm.Embedder, error) {
	return fixedEmbedder{}, nil
}

// embedSetup makes a service over a fresh database with a project and a
// parsed document of one chunk, and returns them.
func embedSetup(t *testing.T) (*Service, *jobqueue.Client, uuid.UUID, uuid.UUID, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	jobs, err := jobqueue.NewClient(pool, jobqueue.Config{})
	require.NoError(t, err)
	s, err := NewService(Config{Pool: pool, Jobs: jobs, Embedders: fixedEmbedders{}, Extraction: noExtraction{}, Now: time.Now})
	require.NoError(t, err)
	require.NoError(t, s.AddQueues(1, 0))
	project, doc, chunk := uuid.New(), uuid.New(), uuid.New()
	for _, q := range []string{
		`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`,
		`INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $1, 'p', now(), now())`,
	} {
		_, err := pool.Exec(ctx, q, project)
		require.NoError(t, err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, sha256, content, status, created_at, updated_at)
		VALUES ($1, $2, 'a.md', 'text/markdown', 1, '\x01', 'a', 'parsed', now(), now())`, doc, project)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO document_chunks (id, project_id, document_id, chunk_index, text, start_offset, end_offset, token_count, created_at)
		VALUES ($1, $2, $3, 0, 'a', 0, 1, 1, now())`, chunk, project, doc)
	require.NoError(t, err)
	return s, jobs, project, doc, chunk
}

// embedJob inserts a chunk embedding job of chunk running under jobs.
func embedJob(t *testing.T, s *Service, jobs *jobqueue.Client, project, chunk, id uuid.UUID) {
	t.Helper()
	_, err := s.pool.Exec(context.Background(), `INSERT INTO chunk_embedding_jobs (id, project_id, chunk_id, status, attempt, locked_by, locked_until, run_at, created_at, updated_at)
		VALUES ($1, $2, $3, 'running', 1, $4, now() + interval '1 minute', now(), now(), now())`, id, project, chunk, jobs.WorkerID())
	require.NoError(t, err)
}

// TestEmbedDuringDelete: a document's deletion cancels the document's
// running chunk embedding jobs, then its cascade deletes the chunks; a
// batch storing its vectors meanwhile takes its jobs first too, so it
// waits for the deletion and finds its job gone (cancelled), instead of
// holding a chunk the cascade waits for while it waits for the job (a
// deadlock, the batch its victim, before).
func TestEmbedDuringDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, jobs, project, _, chunk := embedSetup(t)
	pool, job := s.pool, uuid.New()
	embedJob(t, s, jobs, project, chunk, job)

	// The deletion: the job cancelled, then (the document's cascade) the chunk.
	del := pgtest.Hold(t, pool, `SELECT 1 FROM chunk_embedding_jobs WHERE id = $1 FOR UPDATE`, job)
	stored := make(chan error, 1)
	go func() {
		stored <- s.embedGroup(ctx, project, []jobqueue.Job{{ID: job, Queue: QueueChunkEmbedding, ProjectID: &project, Attempt: 1}},
			[]string{"a"}, []uuid.UUID{chunk})
	}()
	require.Eventually(t, func() bool { return pgtest.LockWaits(t, pool) == 1 }, 10*time.Second, 10*time.Millisecond, "the batch waits for its job")
	_, err := del.Exec(ctx, `DELETE FROM document_chunks WHERE id = $1`, chunk)
	require.NoError(t, err, "the batch gave way")
	require.NoError(t, del.Commit(ctx))

	require.ErrorIs(t, <-stored, jobqueue.ErrCancelled, "the batch found its job gone")
}

// TestJobsOfDocumentByID: a document's running jobs are listed (and so
// cancelled by its deletion) in id order, the order in which a batch
// finishing several of them locks them.
func TestJobsOfDocumentByID(t *testing.T) {
	t.Parallel()
	s, jobs, project, doc, chunk := embedSetup(t)
	high, low := uuid.MustParse("ffffffff-0000-4000-8000-000000000000"), uuid.MustParse("00000000-0000-4000-8000-000000000000")
	embedJob(t, s, jobs, project, chunk, high)
	embedJob(t, s, jobs, project, chunk, low)
	got, err := jobsOfDocument(context.Background(), s.pool, doc)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{low, high}, got[QueueChunkEmbedding])
}
