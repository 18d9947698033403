-- +goose Up
-- A re-parse compares each chunk's text by its SHA-256: unchanged chunks
-- keep their ids, embeddings and provenance, and nothing is queued for them.
-- The parser writes it; a chunk written without it (before this migration,
-- or by hand) is compared by sha256(text) computed when read.
ALTER TABLE document_chunks ADD COLUMN content_sha256 bytea;
UPDATE document_chunks SET content_sha256 = sha256(convert_to(text, 'UTF8'));

-- +goose Down
ALTER TABLE document_chunks DROP COLUMN content_sha256;
