-- +goose Up
-- A re-parse compares each chunk's text by its SHA-256: unchanged chunks
-- keep their ids, embeddings and provenance, and nothing is queued for them.
ALTER TABLE document_chunks ADD COLUMN content_sha256 bytea;
UPDATE document_chunks SET content_sha256 = sha256(convert_to(text, 'UTF8'));
ALTER TABLE document_chunks ALTER COLUMN content_sha256 SET NOT NULL;

-- +goose Down
ALTER TABLE document_chunks DROP COLUMN content_sha256;
