-- +goose Up
-- The event stream's log (internal/events). Ids are handed out under an
-- advisory lock held to commit, so they become visible in id order and a
-- client resuming from Last-Event-ID misses nothing. Kept 24 hours.
CREATE TABLE events (
    id          bigserial PRIMARY KEY,
    project_id  uuid REFERENCES projects (id),
    user_id     uuid REFERENCES users (id),
    type        text NOT NULL,
    payload     jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    CHECK (project_id IS NOT NULL OR user_id IS NOT NULL)
);
CREATE INDEX events_created_idx ON events (created_at);

-- +goose Down
DROP TABLE events;
