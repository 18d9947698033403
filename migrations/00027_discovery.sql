-- +goose Up
-- Schema discovery (issue 16). The schema_discovery queue (DESIGN 6):
-- jobqueue.CommonColumns verbatim (project_id NOT NULL with its foreign
-- key, a tenant queue), then the job's request (documents, options, who
-- started it), its progress and result, the pack a finalize made, and
-- the checkpoint of the finished batches: one proposal per batch, in
-- batch order, committed with the batch, so that an attempt after a
-- crash resumes at the first unfinished batch.
CREATE TABLE discovery_jobs (
    id                       uuid PRIMARY KEY,
    project_id               uuid NOT NULL REFERENCES projects (id),
    status                   text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled','requires_review')),
    priority                 int NOT NULL DEFAULT 0,
    run_at                   timestamptz NOT NULL,
    attempt                  int NOT NULL DEFAULT 0,
    retry_count              int NOT NULL DEFAULT 0,
    max_retries              int NOT NULL DEFAULT 3,
    locked_by                text,
    locked_until             timestamptz,
    heartbeat_at             timestamptz,
    error_msg                text,
    started_at               timestamptz,
    completed_at             timestamptz,
    created_at               timestamptz NOT NULL,
    updated_at               timestamptz NOT NULL,
    created_by               uuid REFERENCES users (id),
    document_ids             uuid[] NOT NULL CHECK (cardinality(document_ids) BETWEEN 1 AND 500),
    options                  jsonb NOT NULL CHECK (jsonb_typeof(options) = 'object'),
    progress                 jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(progress) = 'object'),
    discovered_types         jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(discovered_types) = 'array'),
    discovered_relationships jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(discovered_relationships) = 'array'),
    batch_proposals          jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(batch_proposals) = 'array'),
    template_pack_id         uuid REFERENCES template_packs (id) ON DELETE SET NULL
);
CREATE INDEX discovery_jobs_queued_idx ON discovery_jobs (priority DESC, run_at, id) WHERE status = 'queued';
CREATE INDEX discovery_jobs_running_idx ON discovery_jobs (locked_until) WHERE status = 'running';
CREATE INDEX discovery_jobs_project_idx ON discovery_jobs (project_id, created_at DESC, id DESC);

-- Every provider call of a discovery job, as extraction_llm_calls keeps
-- extraction's (the usage ledger, provider_usage, records them too):
-- its phase and batch, tokens, cost, timing, request summary and answer.
CREATE TABLE discovery_llm_calls (
    id               uuid PRIMARY KEY,
    job_id           uuid NOT NULL REFERENCES discovery_jobs (id) ON DELETE CASCADE,
    project_id       uuid NOT NULL REFERENCES projects (id),
    phase            text NOT NULL CHECK (phase IN ('analyzing', 'merging', 'relationships')),
    step             int NOT NULL,
    provider         text NOT NULL,
    model_name       text NOT NULL,
    status           text NOT NULL CHECK (status IN ('success', 'error')),
    input_tokens     int NOT NULL DEFAULT 0,
    output_tokens    int NOT NULL DEFAULT 0,
    total_tokens     int NOT NULL DEFAULT 0,
    cost_usd         numeric NOT NULL DEFAULT 0,
    duration_ms      int NOT NULL DEFAULT 0,
    started_at       timestamptz NOT NULL,
    completed_at     timestamptz,
    request_payload  jsonb,
    response_payload jsonb,
    error_message    text
);
CREATE INDEX discovery_llm_calls_job_idx ON discovery_llm_calls (job_id, started_at, id);

-- +goose Down
DROP TABLE discovery_llm_calls;
DROP TABLE discovery_jobs;
