-- +goose Up
-- Console sign-out (issue 18 review): the sealed session cookie is the
-- whole session, so signing out records the session's id here until the
-- session would have ended; every console request looks its id up (the
-- primary key) and refuses a revoked one. The scheduler deletes the rows
-- of sessions past their end. Written only by the console package.
CREATE TABLE console_revoked_sessions (
    id         text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX console_revoked_sessions_expires_idx ON console_revoked_sessions (expires_at);

-- +goose Down
DROP TABLE console_revoked_sessions;
