-- +goose Up
-- The email queue (DESIGN 6): one job per message. The column block is
-- jobqueue.CommonColumns verbatim; project_id stays nullable (a platform
-- queue). The message is stored as queued: the template's name, the
-- recipient, the subject and the data the template is rendered with (the
-- body is rendered at send time and by preview-json, never stored).
CREATE TABLE email_jobs (
    id            uuid PRIMARY KEY,
    project_id    uuid,
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled','requires_review')),
    priority      int NOT NULL DEFAULT 0,
    run_at        timestamptz NOT NULL,
    attempt       int NOT NULL DEFAULT 0,
    retry_count   int NOT NULL DEFAULT 0,
    max_retries   int NOT NULL DEFAULT 3,
    locked_by     text,
    locked_until  timestamptz,
    heartbeat_at  timestamptz,
    error_msg     text,
    started_at    timestamptz,
    completed_at  timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    template_name text NOT NULL,
    to_email      text NOT NULL,
    to_name       text NOT NULL DEFAULT '',
    subject       text NOT NULL CHECK (subject !~ '[\r\n]'),
    data          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(data) = 'object')
);
CREATE INDEX email_jobs_queued_idx ON email_jobs (priority DESC, run_at, id) WHERE status = 'queued';
CREATE INDEX email_jobs_running_idx ON email_jobs (locked_until) WHERE status = 'running';
CREATE INDEX email_jobs_created_idx ON email_jobs (created_at DESC, id);
CREATE INDEX email_jobs_recipient_idx ON email_jobs (lower(to_email), created_at DESC);

-- +goose Down
DROP TABLE email_jobs;
