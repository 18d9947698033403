-- +goose Up
-- Secret template values of an email job (an invitation's link, whose
-- token the invitation table holds only hashed) are kept out of data:
-- secret_keys names them (preview-json shows a placeholder for each) and
-- secrets holds them sealed (internal/secrets, a JSON object, bound to the
-- row), merged into data only at send time. The job engine sets secrets to
-- NULL in the statement that makes the job final (QueueConfig.ClearOnFinal).
ALTER TABLE email_jobs
    ADD COLUMN secret_keys text[] NOT NULL DEFAULT '{}',
    ADD COLUMN secrets text;

-- +goose Down
ALTER TABLE email_jobs DROP COLUMN secrets, DROP COLUMN secret_keys;
