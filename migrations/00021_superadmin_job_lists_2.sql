-- +goose Up
-- The superadmin lists page every project's document parsing jobs, and the
-- graph and chunk embedding jobs merged into one list, newest first.
CREATE INDEX document_parsing_jobs_created_idx ON document_parsing_jobs (created_at DESC, id DESC);
CREATE INDEX chunk_embedding_jobs_created_idx ON chunk_embedding_jobs (created_at DESC, id DESC);
CREATE INDEX graph_embedding_jobs_created_idx ON graph_embedding_jobs (created_at DESC, id DESC);

-- +goose Down
DROP INDEX graph_embedding_jobs_created_idx;
DROP INDEX chunk_embedding_jobs_created_idx;
DROP INDEX document_parsing_jobs_created_idx;
