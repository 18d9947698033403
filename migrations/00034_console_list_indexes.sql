-- +goose Up
-- Console pages (issue 18, BenchmarkConsolePages): a project's extraction
-- jobs and live graph objects are paged newest first, (created_at, id)
-- descending, with or without a status or type; these indexes give that
-- order at once, so a page reads its ids from the index instead of sorting
-- every row of the project. The one-column indexes are for counting a
-- project's rows (a list's total, the project page): deduplicated, they are
-- a few pages long, so the count reads them instead of the table.
CREATE INDEX object_extraction_jobs_project_created_idx ON object_extraction_jobs (project_id, created_at DESC, id DESC);
DROP INDEX object_extraction_jobs_project_idx;
CREATE INDEX object_extraction_jobs_project_idx ON object_extraction_jobs (project_id, status, created_at DESC, id DESC);
CREATE INDEX object_extraction_jobs_project_count_idx ON object_extraction_jobs (project_id);
CREATE INDEX graph_objects_project_created ON graph_objects (project_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
DROP INDEX graph_objects_project_type;
CREATE INDEX graph_objects_project_type ON graph_objects (project_id, type, created_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX graph_objects_project_live ON graph_objects (project_id) WHERE deleted_at IS NULL;
CREATE INDEX graph_relationships_project ON graph_relationships (project_id);

-- +goose Down
DROP INDEX graph_relationships_project;
DROP INDEX graph_objects_project_live;
DROP INDEX graph_objects_project_type;
CREATE INDEX graph_objects_project_type ON graph_objects (project_id, type, created_at) WHERE deleted_at IS NULL;
DROP INDEX graph_objects_project_created;
DROP INDEX object_extraction_jobs_project_count_idx;
DROP INDEX object_extraction_jobs_project_idx;
CREATE INDEX object_extraction_jobs_project_idx ON object_extraction_jobs (project_id, status, created_at);
DROP INDEX object_extraction_jobs_project_created_idx;
