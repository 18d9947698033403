-- +goose Up
-- Integrations (issue 15): a project's configured sources and their sync
-- jobs. The config is sealed at rest (secrets.Box, additional data
-- integrations/config/<id>); the sync settings the scheduler and the
-- deletion guard read live in columns of their own.
CREATE TABLE integrations (
    id                    uuid PRIMARY KEY,
    project_id            uuid NOT NULL REFERENCES projects (id),
    name                  text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,99}$'),
    display_name          text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 200),
    provider_type         text NOT NULL,
    config_sealed         text NOT NULL,
    status                text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive', 'error')),
    sync_interval_minutes int CHECK (sync_interval_minutes >= 5),
    max_delete_fraction   double precision NOT NULL DEFAULT 0.5 CHECK (max_delete_fraction > 0 AND max_delete_fraction <= 1),
    connector_state       jsonb,
    last_sync_at          timestamptz,
    next_sync_at          timestamptz,
    created_by            uuid REFERENCES users (id),
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    CONSTRAINT integrations_project_name_key UNIQUE (project_id, name)
);
-- The scheduler's walk: due integrations with a schedule.
CREATE INDEX integrations_next_sync_idx ON integrations (next_sync_at) WHERE next_sync_at IS NOT NULL;

-- The integration_sync queue (DESIGN 6): jobqueue.CommonColumns verbatim
-- (project_id NOT NULL with its foreign key, a tenant queue), then the
-- spec's sync job: integration, trigger, phase, counters, options and the
-- connector state this sync will save when it succeeds.
CREATE TABLE integration_sync_jobs (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects (id),
    status          text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled','requires_review')),
    priority        int NOT NULL DEFAULT 0,
    run_at          timestamptz NOT NULL,
    attempt         int NOT NULL DEFAULT 0,
    retry_count     int NOT NULL DEFAULT 0,
    max_retries     int NOT NULL DEFAULT 3,
    locked_by       text,
    locked_until    timestamptz,
    heartbeat_at    timestamptz,
    error_msg       text,
    started_at      timestamptz,
    completed_at    timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    integration_id  uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    trigger_type    text NOT NULL CHECK (trigger_type IN ('manual', 'scheduled')),
    phase           text NOT NULL DEFAULT 'pending' CHECK (phase IN ('pending', 'listing', 'deleting', 'done')),
    total_items     int NOT NULL DEFAULT 0,
    processed_items int NOT NULL DEFAULT 0,
    created_items   int NOT NULL DEFAULT 0,
    updated_items   int NOT NULL DEFAULT 0,
    unchanged_items int NOT NULL DEFAULT 0,
    deleted_items   int NOT NULL DEFAULT 0,
    failed_items    int NOT NULL DEFAULT 0,
    options         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(options) = 'object'),
    connector_state jsonb
);
CREATE INDEX integration_sync_jobs_queued_idx ON integration_sync_jobs (priority DESC, run_at, id) WHERE status = 'queued';
CREATE INDEX integration_sync_jobs_running_idx ON integration_sync_jobs (locked_until) WHERE status = 'running';
CREATE INDEX integration_sync_jobs_integration_idx ON integration_sync_jobs (integration_id, created_at DESC);
CREATE INDEX integration_sync_jobs_created_idx ON integration_sync_jobs (created_at DESC, id);
-- One active sync per integration: a database rule, so that concurrent
-- requests cannot both queue one.
CREATE UNIQUE INDEX integration_sync_jobs_active_key ON integration_sync_jobs (integration_id) WHERE status IN ('queued', 'running');

-- The sync job's log, written as the sync goes.
CREATE TABLE integration_sync_logs (
    id         uuid PRIMARY KEY,
    job_id     uuid NOT NULL REFERENCES integration_sync_jobs (id) ON DELETE CASCADE,
    project_id uuid NOT NULL REFERENCES projects (id),
    level      text NOT NULL CHECK (level IN ('debug', 'info', 'warn', 'error')),
    message    text NOT NULL,
    details    jsonb,
    created_at timestamptz NOT NULL
);
CREATE INDEX integration_sync_logs_job_idx ON integration_sync_logs (job_id, created_at, id);

-- +goose Down
DROP TABLE integration_sync_logs;
DROP TABLE integration_sync_jobs;
DROP TABLE integrations;
