-- +goose Up
-- Scheduled re-extraction: every parsed document of a project whose last
-- extraction finished more than this many hours ago is re-extracted by the
-- scheduler (0: off; at most a year).
ALTER TABLE projects ADD COLUMN reextraction_interval_hours int NOT NULL DEFAULT 0
    CHECK (reextraction_interval_hours BETWEEN 0 AND 8760);

-- The scheduler reads each document's jobs (and deleting a document
-- cascades to them).
CREATE INDEX object_extraction_jobs_document_idx ON object_extraction_jobs (document_id) WHERE document_id IS NOT NULL;

-- +goose Down
DROP INDEX object_extraction_jobs_document_idx;
ALTER TABLE projects DROP COLUMN reextraction_interval_hours;
