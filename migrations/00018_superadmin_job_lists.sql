-- +goose Up
-- The superadmin job list pages every project's extraction jobs newest
-- first; its stats count them per status.
CREATE INDEX object_extraction_jobs_created_idx ON object_extraction_jobs (created_at DESC, id DESC);

-- +goose Down
DROP INDEX object_extraction_jobs_created_idx;
