-- +goose Up
-- Keyword search over graph objects: name (weight A), key and description
-- (B) and the string values of the properties (C).
ALTER TABLE graph_objects ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', name), 'A') ||
    setweight(to_tsvector('english', key || ' ' || coalesce(description, '')), 'B') ||
    setweight(jsonb_to_tsvector('english', properties, '["string"]'), 'C')
) STORED;
CREATE INDEX graph_objects_tsv ON graph_objects USING gin (tsv) WHERE deleted_at IS NULL;

-- +goose Down
DROP INDEX graph_objects_tsv;
ALTER TABLE graph_objects DROP COLUMN tsv;
