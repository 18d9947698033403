package embedding

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// jobsInsert queues one job per object, skipping objects that already
// have a queued job; it returns how many were queued.
func jobsInsert(ctx context.Context, db postgres.DBTX, project uuid.UUID, jobIDs, objectIDs []uuid.UUID, now time.Time) (int64, error) {
	tag, err := db.Exec(ctx, `INSERT INTO graph_embedding_jobs (id, project_id, status, run_at, created_at, updated_at, object_id, trace_parent)
		SELECT j, $1, 'queued', $2, $2, $2, o, $5 FROM unnest($3::uuid[], $4::uuid[]) AS t (j, o)
		ON CONFLICT (object_id) WHERE status = 'queued' DO NOTHING`, project, now, jobIDs, objectIDs, jobqueue.TraceParent(ctx))
	if err != nil {
		return 0, fmt.Errorf("queue graph embedding jobs: %w", err)
	}
	return tag.RowsAffected(), nil
}

// jobObjects maps the given jobs to their objects.
func jobObjects(ctx context.Context, db postgres.DBTX, jobIDs []uuid.UUID) (map[uuid.UUID]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `SELECT id, object_id FROM graph_embedding_jobs WHERE id = ANY($1)`, jobIDs)
	out, err := postgres.CollectMap[uuid.UUID, uuid.UUID](rows)
	if err != nil {
		return nil, fmt.Errorf("load graph embedding jobs: %w", err)
	}
	return out, nil
}

// jobsLockRunning locks the rows of the jobs still running at the attempt
// they were claimed at, in id order, and reports which they are.
func jobsLockRunning(ctx context.Context, tx pgx.Tx, jobs []jobqueue.Job) (map[uuid.UUID]bool, error) {
	ids, attempts := make([]uuid.UUID, len(jobs)), make([]int32, len(jobs))
	for i, j := range jobs {
		ids[i], attempts[i] = j.ID, int32(j.Attempt) //nolint:gosec // small counter
	}
	rows, _ := tx.Query(ctx, `SELECT j.id FROM graph_embedding_jobs j JOIN unnest($1::uuid[], $2::int[]) AS u (id, attempt)
		ON j.id = u.id AND j.attempt = u.attempt WHERE j.status = 'running' ORDER BY j.id FOR UPDATE OF j`, ids, attempts)
	set, err := postgres.CollectIDSet(rows)
	if err != nil {
		return nil, fmt.Errorf("lock graph embedding jobs: %w", err)
	}
	return set, nil
}

// stored identifies what an existing vector was computed from.
type stored struct {
	Provider, Model string
	Hash            []byte
}

type vectorKey struct{ object, policy uuid.UUID }

// embeddingsOf returns what the objects' vectors were computed from.
func embeddingsOf(ctx context.Context, db postgres.DBTX, objectIDs []uuid.UUID) (map[vectorKey]stored, error) {
	rows, _ := db.Query(ctx, `SELECT object_id, policy_id, provider, model, text_sha256 FROM graph_object_embeddings WHERE object_id = ANY($1)`, objectIDs)
	out := map[vectorKey]stored{}
	var k vectorKey
	var s stored
	_, err := pgx.ForEachRow(rows, []any{&k.object, &k.policy, &s.Provider, &s.Model, &s.Hash}, func() error {
		out[k] = stored{Provider: s.Provider, Model: s.Model, Hash: bytes.Clone(s.Hash)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load graph object embeddings: %w", err)
	}
	return out, nil
}

// vectorRow is a vector to store.
type vectorRow struct {
	Object, Policy, Project uuid.UUID
	Provider, Model         string
	Vector                  []float32
	Hash                    []byte
}

// embeddingsWrite upserts rows and deletes, per object in keep, its vectors
// of policies not listed there, and every vector of the objects in gone. It
// reports how many vectors it deleted.
func embeddingsWrite(ctx context.Context, tx pgx.Tx, rows []vectorRow, keep map[uuid.UUID][]uuid.UUID, gone []uuid.UUID, now time.Time) (int64, error) {
	b := &pgx.Batch{}
	for _, r := range rows {
		b.Queue(`INSERT INTO graph_object_embeddings (object_id, policy_id, project_id, provider, model, dimension, embedding, text_sha256, embedded_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (object_id, policy_id) DO UPDATE SET project_id = excluded.project_id, provider = excluded.provider,
				model = excluded.model, dimension = excluded.dimension, embedding = excluded.embedding,
				text_sha256 = excluded.text_sha256, embedded_at = excluded.embedded_at`,
			r.Object, r.Policy, r.Project, r.Provider, r.Model, len(r.Vector), r.Vector, r.Hash, now)
	}
	for object, policies := range keep {
		if policies == nil {
			policies = []uuid.UUID{}
		}
		b.Queue(`DELETE FROM graph_object_embeddings WHERE object_id = $1 AND NOT (policy_id = ANY($2))`, object, policies)
	}
	if len(gone) > 0 {
		b.Queue(`DELETE FROM graph_object_embeddings WHERE object_id = ANY($1)`, gone)
	}
	if b.Len() == 0 {
		return 0, nil
	}
	res := tx.SendBatch(ctx, b)
	var deleted int64
	for i := range b.Len() {
		tag, err := res.Exec()
		if err != nil {
			_ = res.Close()
			return 0, fmt.Errorf("store graph object embeddings: %w", err)
		}
		if i >= len(rows) {
			deleted += tag.RowsAffected()
		}
	}
	if err := res.Close(); err != nil {
		return 0, fmt.Errorf("store graph object embeddings: %w", err)
	}
	return deleted, nil
}

// embeddingsDeletePolicy deletes the vectors of a policy.
func embeddingsDeletePolicy(ctx context.Context, db postgres.DBTX, project, policy uuid.UUID) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM graph_object_embeddings WHERE project_id = $1 AND policy_id = $2`, project, policy)
	if err != nil {
		return 0, fmt.Errorf("delete policy embeddings: %w", err)
	}
	return tag.RowsAffected(), nil
}
