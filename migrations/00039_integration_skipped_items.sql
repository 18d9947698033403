-- +goose Up
-- The items a sync skipped (session 10): an item the document rules
-- refuse (binary, too large) has no document to carry its version, so
-- without this every sync read it and logged its skip again. The version
-- the integration domain gives back through Walker.Known, so a connector
-- skips the unchanged ones as it does unchanged documents; the job that
-- last examined it (a retry of that job examines it again); when.
CREATE TABLE integration_skipped_items (
    integration_id uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    external_id    text NOT NULL,
    version        text NOT NULL CHECK (version <> ''),
    sync_job_id    uuid NOT NULL,
    skipped_at     timestamptz NOT NULL,
    PRIMARY KEY (integration_id, external_id)
);

-- +goose Down
DROP TABLE integration_skipped_items;
