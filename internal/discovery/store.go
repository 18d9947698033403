package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
)

// jobRow is a discovery_jobs row as the API and the worker read it.
type jobRow struct {
	ID             uuid.UUID       `db:"id"`
	ProjectID      uuid.UUID       `db:"project_id"`
	Status         jobqueue.Status `db:"status"`
	ErrorMsg       *string         `db:"error_msg"`
	StartedAt      *time.Time      `db:"started_at"`
	CompletedAt    *time.Time      `db:"completed_at"`
	CreatedAt      time.Time       `db:"created_at"`
	CreatedBy      *uuid.UUID      `db:"created_by"`
	DocumentIDs    []uuid.UUID     `db:"document_ids"`
	Options        Options         `db:"options"`
	Progress       Progress        `db:"progress"`
	Types          []Type          `db:"discovered_types"`
	Relationships  []Relationship  `db:"discovered_relationships"`
	TemplatePackID *uuid.UUID      `db:"template_pack_id"`
}

const jobColumns = `id, project_id, status, error_msg, started_at, completed_at, created_at, created_by, document_ids,
	options, progress, discovered_types, discovered_relationships, template_pack_id`

func jobInsert(ctx context.Context, tx pgx.Tx, r jobRow) error {
	_, err := tx.Exec(ctx, `INSERT INTO discovery_jobs (id, project_id, run_at, created_at, updated_at, created_by, document_ids, options, progress, trace_parent)
		VALUES ($1, $2, $3, $3, $3, $4, $5, $6, $7, $8)`,
		r.ID, r.ProjectID, r.CreatedAt, r.CreatedBy, r.DocumentIDs, r.Options, r.Progress, jobqueue.TraceParent(ctx))
	if err != nil {
		return fmt.Errorf("queue discovery job: %w", err)
	}
	return nil
}

func jobGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (jobRow, error) {
	r, err := postgres.One[jobRow](ctx, db, ErrNotFound, `SELECT `+jobColumns+` FROM discovery_jobs WHERE project_id = $1 AND id = $2`, project, id)
	if err != nil {
		return jobRow{}, fmt.Errorf("get discovery job: %w", err)
	}
	return r, nil
}

// jobLock locks a job of project for a change and returns it.
func jobLock(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) (jobRow, error) {
	r, err := postgres.One[jobRow](ctx, tx, ErrNotFound, `SELECT `+jobColumns+` FROM discovery_jobs WHERE project_id = $1 AND id = $2 FOR UPDATE`, project, id)
	if err != nil {
		return jobRow{}, fmt.Errorf("lock discovery job: %w", err)
	}
	return r, nil
}

func jobProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	p, err := postgres.One[uuid.UUID](ctx, db, ErrNotFound, `SELECT project_id FROM discovery_jobs WHERE id = $1`, id)
	if err != nil {
		return uuid.Nil, fmt.Errorf("find discovery job: %w", err)
	}
	return p, nil
}

type listRow struct {
	jobRow
	postgres.Total
}

func jobList(ctx context.Context, db postgres.DBTX, project uuid.UUID, limit, offset int) ([]jobRow, int, error) {
	// The count runs over the ids alone (an index-only scan), not over
	// whole rows with their results, which a large project's count would
	// sort through.
	rows, _ := db.Query(ctx, `WITH page AS (SELECT id, count(*) OVER () AS total FROM discovery_jobs
			WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3)
		SELECT `+jobColumns+`, total FROM page JOIN discovery_jobs USING (id) ORDER BY created_at DESC, id DESC`, project, limit, offset)
	list, total, err := postgres.CollectPage(rows, func(r listRow) jobRow { return r.jobRow })
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(list), offset, total, `SELECT count(*) FROM discovery_jobs WHERE project_id = $1`, project)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list discovery jobs: %w", err)
	}
	return list, total, nil
}

// work is what the worker reads of its job: the request and the
// proposals of the batches finished so far.
type work struct {
	ProjectID   uuid.UUID   `db:"project_id"`
	DocumentIDs []uuid.UUID `db:"document_ids"`
	Options     Options     `db:"options"`
	Proposals   []Proposal  `db:"batch_proposals"`
}

func workGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (work, error) {
	w, err := postgres.One[work](ctx, db, ErrNotFound, `SELECT project_id, document_ids, options, batch_proposals FROM discovery_jobs
		WHERE project_id = $1 AND id = $2`, project, id)
	if err != nil {
		return work{}, fmt.Errorf("load discovery job: %w", err)
	}
	return w, nil
}

// jobCheckpoint appends the proposal of batch (0-based) to the job's
// finished batches, with the progress, while the job runs at attempt and
// has finished exactly batch batches; it reports whether it did (false:
// cancelled, reaped, or the batch was recorded already).
func jobCheckpoint(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, attempt, batch int, p Proposal, pr Progress, now time.Time) (bool, error) {
	raw, err := json.Marshal([]Proposal{p})
	if err != nil {
		return false, fmt.Errorf("encode batch proposal: %w", err)
	}
	return postgres.ExecOne(ctx, tx, "checkpoint discovery batch", `UPDATE discovery_jobs SET batch_proposals = batch_proposals || $4::jsonb, progress = $5, updated_at = $6
		WHERE id = $1 AND status = 'running' AND attempt = $2 AND jsonb_array_length(batch_proposals) = $3 AND project_id = $7`,
		id, attempt, batch, raw, pr, now, project)
}

// jobSetProgress records the progress of a job running at attempt; it
// reports whether the job still runs at it.
func jobSetProgress(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, attempt int, pr Progress, now time.Time) (bool, error) {
	return postgres.ExecOne(ctx, tx, "record discovery progress", `UPDATE discovery_jobs SET progress = $3, updated_at = $4
		WHERE id = $1 AND status = 'running' AND attempt = $2 AND project_id = $5`,
		id, attempt, pr, now, project)
}

// jobSetResult records a job's result and final progress (FinishInTx
// then completes it in the same transaction).
func jobSetResult(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, types []Type, rels []Relationship, pr Progress, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE discovery_jobs SET discovered_types = $2, discovered_relationships = $3, progress = $4, updated_at = $5
		WHERE id = $1 AND project_id = $6`,
		id, types, rels, pr, now, project)
	if err != nil {
		return fmt.Errorf("record discovery result: %w", err)
	}
	return nil
}

func jobSetPack(ctx context.Context, tx pgx.Tx, project, id, pack uuid.UUID, now time.Time) error {
	if _, err := tx.Exec(ctx, `UPDATE discovery_jobs SET template_pack_id = $2, updated_at = $3 WHERE id = $1 AND project_id = $4`, id, pack, now, project); err != nil {
		return fmt.Errorf("record discovery pack: %w", err)
	}
	return nil
}

// callRow is one row of discovery_llm_calls.
type callRow struct {
	provider.Call
	JobID          uuid.UUID
	ProjectID      uuid.UUID
	Phase          string
	Step           int
	RequestPayload json.RawMessage
}

func callInsert(ctx context.Context, db postgres.DBTX, c callRow) error {
	_, err := db.Exec(ctx, `INSERT INTO discovery_llm_calls (id, job_id, project_id, phase, step, provider, model_name, status, input_tokens,
		output_tokens, total_tokens, cost_usd, duration_ms, started_at, completed_at, request_payload, response_payload, error_message)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
		c.ID, c.JobID, c.ProjectID, c.Phase, c.Step, c.Provider, c.ModelName, c.Status, c.InputTokens, c.OutputTokens, c.TotalTokens,
		c.CostUSD, c.DurationMs, c.StartedAt, c.CompletedAt, postgres.NullIfEmpty(string(c.RequestPayload)), postgres.NullIfEmpty(string(c.ResponsePayload)), postgres.NullIfEmpty(c.ErrorMessage))
	if err != nil {
		return fmt.Errorf("write discovery llm call: %w", err)
	}
	return nil
}

// usage sums the provider calls of a job.
type usage struct {
	Calls        int
	InputTokens  int
	OutputTokens int
}

// callTotals sums a job's call log.
func callTotals(ctx context.Context, db postgres.DBTX, project, job uuid.UUID) (usage, error) {
	var u usage
	err := db.QueryRow(ctx, `SELECT count(*)::int, coalesce(sum(input_tokens), 0)::int, coalesce(sum(output_tokens), 0)::int
		FROM discovery_llm_calls WHERE project_id = $1 AND job_id = $2`, project, job).Scan(&u.Calls, &u.InputTokens, &u.OutputTokens)
	if err != nil {
		return usage{}, fmt.Errorf("sum discovery llm calls: %w", err)
	}
	return u, nil
}
