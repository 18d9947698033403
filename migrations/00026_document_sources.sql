-- +goose Up
-- Documents synced from an integration (issue 15): the integration
-- (datasource_id, the spec's datasourceId), the item's stable id at the
-- source and its metadata, and the last sync job that stored or confirmed
-- it (a resumed sync counts each item once). Deleting an integration keeps
-- its documents, detached: datasource_id is cleared, the source metadata
-- stays.
ALTER TABLE documents
    ADD COLUMN datasource_id   uuid REFERENCES integrations (id) ON DELETE SET NULL (datasource_id),
    ADD COLUMN external_id     text,
    ADD COLUMN source_url      text,
    ADD COLUMN source_version  text,
    ADD COLUMN source_title    text,
    ADD COLUMN source_modified timestamptz,
    ADD COLUMN sync_job_id     uuid,
    ADD CONSTRAINT documents_datasource_external_check CHECK (datasource_id IS NULL OR external_id IS NOT NULL);
CREATE UNIQUE INDEX documents_datasource_external_key ON documents (datasource_id, external_id) WHERE datasource_id IS NOT NULL;
-- Uploads are deduplicated by content; synced documents are keyed by
-- their source instead (two items may hold the same bytes).
ALTER TABLE documents DROP CONSTRAINT documents_project_sha256_key;
CREATE UNIQUE INDEX documents_project_sha256_key ON documents (project_id, sha256) WHERE external_id IS NULL;

-- +goose Down
DROP INDEX documents_project_sha256_key;
ALTER TABLE documents ADD CONSTRAINT documents_project_sha256_key UNIQUE (project_id, sha256);
DROP INDEX documents_datasource_external_key;
ALTER TABLE documents DROP CONSTRAINT documents_datasource_external_check,
    DROP COLUMN sync_job_id, DROP COLUMN source_modified, DROP COLUMN source_title, DROP COLUMN source_version,
    DROP COLUMN source_url, DROP COLUMN external_id, DROP COLUMN datasource_id;
