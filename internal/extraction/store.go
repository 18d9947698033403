package extraction

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// jobColumns are Job's (a NULL error is empty).
const jobColumns = `id, project_id, document_id, datasource_id, job_type, trigger_type, status, priority,
	COALESCE(error_msg, '') AS error_msg, retry_count, max_retries, objects_created, relationships_created,
	suggestions_created, created_by, started_at, completed_at, created_at, updated_at`

// jobGetByID returns job id of project.
func jobGetByID(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (Job, error) {
	j, err := postgres.One[Job](ctx, db, ErrNotFound, `SELECT `+jobColumns+` FROM object_extraction_jobs WHERE id = $1 AND project_id = $2`, id, project)
	if err != nil {
		return Job{}, fmt.Errorf("get extraction job: %w", err)
	}
	return j, nil
}

// jobProject returns the project of job id.
func jobProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrNotFound, `SELECT project_id FROM object_extraction_jobs WHERE id = $1`, id)
}

// jobList pages project's jobs matching f, newest first: the page's ids
// are read from an index (object_extraction_jobs_project_created_idx, or
// _project_idx with a status) and only their rows whole; the total is
// counted over the index alone. The condition names only the filters set,
// so that a cached plan still uses the index.
func jobList(ctx context.Context, db postgres.DBTX, project uuid.UUID, f JobFilter) ([]Job, int, error) {
	where, args := `project_id = $1`, []any{project}
	for _, c := range []struct{ column, value string }{{"status", f.Status}, {"job_type", f.JobType}} {
		if c.value != "" {
			args = append(args, c.value)
			where += fmt.Sprintf(` AND %s = $%d`, c.column, len(args))
		}
	}
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM object_extraction_jobs WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count extraction jobs: %w", err)
	}
	n := len(args)
	rows, _ := db.Query(ctx, `SELECT `+jobColumns+` FROM object_extraction_jobs WHERE id IN (
			SELECT id FROM object_extraction_jobs WHERE `+where+fmt.Sprintf(`
			ORDER BY created_at DESC, id DESC LIMIT $%d OFFSET $%d)
		ORDER BY created_at DESC, id DESC`, n+1, n+2), append(args, f.Limit, f.Offset)...)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Job])
	if err != nil {
		return nil, 0, fmt.Errorf("list extraction jobs: %w", err)
	}
	return list, total, nil
}

func jobInsert(ctx context.Context, db postgres.DBTX, j Job) error {
	_, err := db.Exec(ctx, `INSERT INTO object_extraction_jobs
		(id, project_id, status, priority, run_at, created_at, updated_at, document_id, job_type, trigger_type, created_by, trace_parent)
		VALUES ($1, $2, 'queued', $3, $4, $4, $4, $5, $6, $7, $8, $9)`,
		j.ID, j.ProjectID, j.Priority, j.CreatedAt, j.DocumentID, j.JobType, j.TriggerType, j.CreatedBy, jobqueue.TraceParent(ctx))
	if err != nil {
		return fmt.Errorf("insert extraction job: %w", err)
	}
	return nil
}

// jobInsertForDocument queues the extraction a parse of document calls
// for (see Service.EnqueueDocument) and reports whether it queued one.
func jobInsertForDocument(ctx context.Context, tx pgx.Tx, project, document uuid.UUID, datasource *uuid.UUID, trigger string, newChunks bool, now time.Time) (bool, error) {
	return postgres.ExecOne(ctx, tx, "queue extraction", `INSERT INTO object_extraction_jobs (id, project_id, run_at, created_at, updated_at, document_id, job_type, trigger_type, datasource_id, trace_parent)
		SELECT $1, $2, $3, $3, $3, $4, kind, $6, $9, $10 FROM (
			SELECT CASE
				WHEN NOT EXISTS (SELECT 1 FROM object_extraction_jobs WHERE document_id = $4 AND job_type = $7) THEN $7
				WHEN $5 AND NOT EXISTS (SELECT 1 FROM object_extraction_jobs WHERE document_id = $4 AND status = 'queued') THEN $8
			END AS kind) AS k
		WHERE kind IS NOT NULL`,
		uuid.Must(uuid.NewV7()), project, now, document, newChunks, trigger, JobTypeFull, JobTypeIncremental, datasource, jobqueue.TraceParent(ctx))
}

// jobsInsertReextraction queues the reextractions of
// Service.EnqueueReextraction and returns how many it queued.
func jobsInsertReextraction(ctx context.Context, tx pgx.Tx, project uuid.UUID, documents []uuid.UUID, by *uuid.UUID, now time.Time) (int, error) {
	ids := make([]uuid.UUID, len(documents))
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	tag, err := tx.Exec(ctx, `INSERT INTO object_extraction_jobs (id, project_id, run_at, created_at, updated_at, document_id, job_type, trigger_type, created_by, trace_parent)
		SELECT n.id, d.project_id, $3, $3, $3, d.id, $4, $5, $6, $8
		FROM unnest($1::uuid[], $2::uuid[]) AS n(id, doc)
		JOIN documents d ON d.id = n.doc AND d.project_id = $7 AND d.status = 'parsed'
		WHERE NOT EXISTS (SELECT 1 FROM object_extraction_jobs j WHERE j.document_id = d.id AND j.status = 'queued')`,
		ids, documents, now, JobTypeReextraction, TriggerManual, by, project, jobqueue.TraceParent(ctx))
	if err != nil {
		return 0, fmt.Errorf("queue reextraction: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

func jobStats(ctx context.Context, db postgres.DBTX, project uuid.UUID, now time.Time) (Statistics, error) {
	st := Statistics{
		ByStatus:  map[string]int64{"queued": 0, "running": 0, "completed": 0, "failed": 0, "cancelled": 0, "requires_review": 0},
		ByJobType: map[string]int64{JobTypeFull: 0, JobTypeReextraction: 0, JobTypeIncremental: 0},
	}
	rows, err := db.Query(ctx, `SELECT status, job_type, count(*) FROM object_extraction_jobs WHERE project_id = $1 GROUP BY status, job_type`, project)
	if err != nil {
		return Statistics{}, fmt.Errorf("extraction statistics: %w", err)
	}
	for rows.Next() {
		var status, jobType string
		var n int64
		if err := rows.Scan(&status, &jobType, &n); err != nil {
			rows.Close()
			return Statistics{}, fmt.Errorf("extraction statistics: %w", err)
		}
		st.ByStatus[status] += n
		st.ByJobType[jobType] += n
		st.Total += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Statistics{}, fmt.Errorf("extraction statistics: %w", err)
	}
	err = db.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE status IN ('completed', 'requires_review', 'failed') AND completed_at >= $2::timestamptz - interval '1 hour'),
		count(*) FILTER (WHERE status IN ('completed', 'requires_review', 'failed') AND completed_at >= $2::timestamptz - interval '24 hours'),
		coalesce(avg(extract(epoch FROM completed_at - started_at) * 1000)
			FILTER (WHERE status IN ('completed', 'requires_review') AND started_at IS NOT NULL AND completed_at IS NOT NULL), 0)::float8,
		coalesce(sum(objects_created), 0), coalesce(sum(relationships_created), 0), coalesce(sum(suggestions_created), 0)
		FROM object_extraction_jobs WHERE project_id = $1`, project, now).
		Scan(&st.JobsLastHour, &st.JobsLast24Hours, &st.AvgDurationMs, &st.ObjectsCreated, &st.RelationshipsCreated, &st.SuggestionsCreated)
	if err != nil {
		return Statistics{}, fmt.Errorf("extraction statistics: %w", err)
	}
	return st, nil
}

// jobDeleteFinal deletes a project's jobs in one of statuses (final ones)
// that ended before cutoff.
func jobDeleteFinal(ctx context.Context, db postgres.DBTX, project uuid.UUID, statuses []string, cutoff time.Time) (int, error) {
	tag, err := db.Exec(ctx, `DELETE FROM object_extraction_jobs WHERE project_id = $1 AND status = ANY($2)
		AND coalesce(completed_at, updated_at) <= $3`, project, statuses, cutoff)
	if err != nil {
		return 0, fmt.Errorf("delete extraction jobs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// logRow is a log entry to write.
type logRow struct {
	operation, level, message string
	metadata                  map[string]any
}

// jobLogRow is a log entry of a job to write.
type jobLogRow struct {
	job, project uuid.UUID
	logRow
}

// logInsert writes entries of job in one statement, in order (created_at
// increases by a microsecond per entry so that the order is kept).
func logInsert(ctx context.Context, db postgres.DBTX, job, project uuid.UUID, now time.Time, entries []logRow) error {
	rows := make([]jobLogRow, len(entries))
	for i, e := range entries {
		rows[i] = jobLogRow{job: job, project: project, logRow: e}
	}
	return logsInsert(ctx, db, now, rows)
}

// logsInsert writes entries, of any jobs, in one statement, as logInsert
// does; their texts may quote a provider's error (postgres.Text, JSONB).
func logsInsert(ctx context.Context, db postgres.DBTX, now time.Time, entries []jobLogRow) error {
	if len(entries) == 0 {
		return nil
	}
	n := len(entries)
	ids, jobs, projects := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
	ops, levels, msgs, metas, ats := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
	for i, e := range entries {
		meta := e.metadata
		if meta == nil {
			meta = map[string]any{}
		}
		raw, err := json.Marshal(meta)
		if err != nil {
			return fmt.Errorf("encode log metadata: %w", err)
		}
		ids[i], jobs[i], projects[i], ops[i], levels[i], msgs[i], metas[i] = uuid.Must(uuid.NewV7()), e.job, e.project, e.operation, e.level, postgres.TextMax(e.message, 4000), string(postgres.JSONB(raw))
		ats[i] = now.Add(time.Duration(i) * time.Microsecond)
	}
	_, err := db.Exec(ctx, `INSERT INTO extraction_job_logs (id, job_id, project_id, operation, level, message, metadata, created_at)
		SELECT u.id, u.job, u.project, u.op, u.level, u.msg, u.meta::jsonb, u.at
		FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
		AS u(id, job, project, op, level, msg, meta, at)`,
		ids, jobs, projects, ops, levels, msgs, metas, ats)
	if err != nil {
		return fmt.Errorf("write extraction logs: %w", err)
	}
	return nil
}

// logList pages a job's log in order, of one level when level is set.
func logList(ctx context.Context, db postgres.DBTX, job uuid.UUID, level string, limit, offset int) ([]LogEntry, int, error) {
	const from = `FROM extraction_job_logs WHERE job_id = $1 AND ($2 = '' OR level = $2)`
	rows, _ := db.Query(ctx, `SELECT id, job_id, operation, level, message, metadata, created_at, count(*) OVER () AS total
		`+from+` ORDER BY created_at, id LIMIT $3 OFFSET $4`, job, level, limit, offset)
	list, total, err := postgres.CollectPageOf[LogEntry](rows)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(list), offset, total, `SELECT count(*) `+from, job, level)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list extraction logs: %w", err)
	}
	return list, total, nil
}

func callInsert(ctx context.Context, db postgres.DBTX, project uuid.UUID, c LLMCall) error {
	_, err := db.Exec(ctx, `INSERT INTO extraction_llm_calls (id, job_id, project_id, provider, model_name, status, input_tokens, output_tokens,
		total_tokens, cost_usd, duration_ms, started_at, completed_at, request_payload, response_payload, error_message)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		c.ID, c.JobID, project, c.Provider, c.ModelName, c.Status, c.InputTokens, c.OutputTokens, c.TotalTokens, c.CostUSD,
		c.DurationMs, c.StartedAt, c.CompletedAt, postgres.NullIfEmpty(string(c.RequestPayload)), postgres.NullIfEmpty(string(c.ResponsePayload)), postgres.NullIfEmpty(c.ErrorMessage))
	if err != nil {
		return fmt.Errorf("write llm call: %w", err)
	}
	return nil
}

func callList(ctx context.Context, db postgres.DBTX, job uuid.UUID, limit, offset int) ([]CallLog, int, error) {
	rows, _ := db.Query(ctx, `SELECT id, model_name, status, input_tokens, output_tokens, total_tokens,
		cost_usd::float8 AS cost_usd, duration_ms, started_at, completed_at, request_payload, response_payload,
		COALESCE(error_message, '') AS error_message, count(*) OVER () AS total
		FROM extraction_llm_calls WHERE job_id = $1 ORDER BY started_at, id LIMIT $2 OFFSET $3`, job, limit, offset)
	list, total, err := postgres.CollectPageOf[CallLog](rows)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(list), offset, total, `SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1`, job)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list llm calls: %w", err)
	}
	return list, total, nil
}

// callMetrics sums a job's call log.
func callMetrics(ctx context.Context, db postgres.DBTX, job uuid.UUID) (Metrics, error) {
	var m Metrics
	var ok int
	err := db.QueryRow(ctx, `SELECT count(*), coalesce(sum(cost_usd), 0)::float8, coalesce(sum(total_tokens), 0),
		coalesce(avg(duration_ms), 0)::float8, count(*) FILTER (WHERE status = 'success')
		FROM extraction_llm_calls WHERE job_id = $1`, job).Scan(&m.TotalLLMCalls, &m.TotalCostUSD, &m.TotalTokens, &m.AvgCallDurationMs, &ok)
	if err != nil {
		return Metrics{}, fmt.Errorf("llm call metrics: %w", err)
	}
	if m.TotalLLMCalls > 0 {
		m.SuccessRate = float64(ok) / float64(m.TotalLLMCalls)
	}
	return m, nil
}

// reextractionLock serialises the scheduled re-extraction runs (a run
// started by a former leader may overlap the new leader's).
const reextractionLock = 0x67727278 // "grrx"

// jobsInsertScheduled queues, in one statement, a scheduled reextraction
// job for every parsed document of the projects of intervals whose
// newest completed (or requires_review) job finished more than the
// interval before now, unless the document has a queued or running job,
// or a scheduled job created within the interval (a scheduled job that
// failed or was cancelled waits for the next interval instead of being
// queued again at every run). The ids are UUIDv7 at now. It returns how
// many jobs it queued.
func jobsInsertScheduled(ctx context.Context, tx pgx.Tx, intervals []tenancy.ReextractionInterval, now time.Time) (int, error) {
	projects, hours := make([]uuid.UUID, len(intervals)), make([]int32, len(intervals))
	for i, v := range intervals {
		projects[i], hours[i] = v.ProjectID, int32(v.Hours) //nolint:gosec // at most ReextractionIntervalMax
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, reextractionLock); err != nil {
		return 0, fmt.Errorf("lock scheduled reextraction: %w", err)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO object_extraction_jobs
		(id, project_id, status, priority, run_at, created_at, updated_at, document_id, job_type, trigger_type)
		SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
				PLACING substring(int8send(floor(extract(epoch FROM $1::timestamptz) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid,
			d.project_id, 'queued', 0, $1, $1, $1, d.id, $2, $3
		FROM unnest($4::uuid[], $5::int[]) AS p(id, hours)
		JOIN documents d ON d.project_id = p.id AND d.status = 'parsed'
		CROSS JOIN LATERAL (
			SELECT max(j.completed_at) FILTER (WHERE j.status IN ('completed', 'requires_review')) AS last_done,
				coalesce(bool_or(j.status IN ('queued', 'running')
					OR (j.trigger_type = $3 AND j.created_at > $1::timestamptz - make_interval(hours => p.hours))), false) AS busy
			FROM object_extraction_jobs j WHERE j.document_id = d.id
		) j
		WHERE j.last_done < $1::timestamptz - make_interval(hours => p.hours) AND NOT j.busy`,
		now, JobTypeReextraction, TriggerScheduled, projects, hours)
	if err != nil {
		return 0, fmt.Errorf("queue scheduled reextraction: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// jobLockRunning locks the job's row if it is still running the given
// attempt: a cancelled or reaped job must not write its results. Holding
// the lock makes a concurrent cancel wait for the commit.
func jobLockRunning(ctx context.Context, tx pgx.Tx, id uuid.UUID, attempt int) (bool, error) {
	running, err := postgres.One[bool](ctx, tx, nil, `SELECT true FROM object_extraction_jobs WHERE id = $1 AND status = 'running' AND attempt = $2 FOR UPDATE`, id, attempt)
	if err != nil {
		return false, fmt.Errorf("lock extraction job: %w", err)
	}
	return running, nil
}

func jobSetCounters(ctx context.Context, db postgres.DBTX, id uuid.UUID, objects, relationships, suggestions int) error {
	_, err := db.Exec(ctx, `UPDATE object_extraction_jobs SET objects_created = $2, relationships_created = $3, suggestions_created = $4 WHERE id = $1`,
		id, objects, relationships, suggestions)
	if err != nil {
		return fmt.Errorf("save extraction counters: %w", err)
	}
	return nil
}

// jobSource is what the worker needs of its job row, and its document's
// filename.
type jobSource struct {
	DocumentID *uuid.UUID `db:"document_id"`
	JobType    string     `db:"job_type"`
	Filename   string     `db:"-"`
}

func jobSourceGet(ctx context.Context, db postgres.DBTX, id uuid.UUID) (jobSource, error) {
	s, err := postgres.One[jobSource](ctx, db, ErrNotFound, `SELECT document_id, job_type FROM object_extraction_jobs WHERE id = $1`, id)
	if err != nil {
		return jobSource{}, fmt.Errorf("load extraction job: %w", err)
	}
	return s, nil
}
