-- +goose Up
-- Chat (issue 17): one turn at a time per session. turn_until is set while
-- a turn runs (its question stored, its answer not yet) to the time its
-- lease ends: another message on the session is refused until then, and
-- a turn whose process died stops blocking the session once it passes.
ALTER TABLE chat_sessions ADD COLUMN turn_until timestamptz;

-- +goose Down
ALTER TABLE chat_sessions DROP COLUMN turn_until;
