-- +goose Up
-- The superadmin audit log: one row per superadmin action that changed
-- something (bulk job deletes, cancels and retries; user, organization
-- and project deletion), written in the action's transaction. No foreign
-- keys: the log outlives the users, tokens and records it names.
CREATE TABLE audit_events (
    id         uuid PRIMARY KEY,
    actor_id   uuid NOT NULL,
    token_id   uuid,
    action     text NOT NULL,
    target_ids uuid[] NOT NULL DEFAULT '{}',
    requested  int NOT NULL CHECK (requested >= 0),
    affected   int NOT NULL CHECK (affected >= 0),
    request_id text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);
-- The list pages newest first, alone or filtered by actor or action (the
-- date bounds are a range of the same leading order).
CREATE INDEX audit_events_created_idx ON audit_events (created_at DESC, id DESC);
CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, created_at DESC, id DESC);
CREATE INDEX audit_events_action_idx ON audit_events (action, created_at DESC, id DESC);

-- +goose Down
DROP TABLE audit_events;
