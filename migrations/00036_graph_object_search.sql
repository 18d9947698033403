-- +goose Up
-- The graph explorer's and GET /api/graph/objects' text filter (`q`) is a
-- substring match, ILIKE '%q%', on an object's name, key and description:
-- without an index it reads every live object of the table. Trigram
-- indexes (pg_trgm, shipped with PostgreSQL and trusted since 13: a
-- database owner may create it) answer it for queries of three characters
-- or more, one bitmap scan per column ORed together.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX graph_objects_name_trgm ON graph_objects USING gin (name gin_trgm_ops) WHERE deleted_at IS NULL;
CREATE INDEX graph_objects_key_trgm ON graph_objects USING gin (key gin_trgm_ops) WHERE deleted_at IS NULL;
CREATE INDEX graph_objects_description_trgm ON graph_objects USING gin (description gin_trgm_ops) WHERE deleted_at IS NULL;

-- +goose Down
DROP INDEX graph_objects_description_trgm;
DROP INDEX graph_objects_key_trgm;
DROP INDEX graph_objects_name_trgm;
