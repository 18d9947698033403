-- +goose Up
-- Review tasks (internal/task), notifications (internal/notification) and
-- recent activity (internal/activity).

-- A task is a human-review item of a project; other domains create them and
-- learn of their resolution through a resolver called in the resolving
-- transaction.
CREATE TABLE tasks (
    id                uuid PRIMARY KEY,
    project_id        uuid NOT NULL REFERENCES projects (id),
    title             text NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
    description       text,
    type              text NOT NULL CHECK (length(type) BETWEEN 1 AND 100),
    status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'rejected', 'cancelled')),
    resolved_at       timestamptz,
    resolved_by       uuid REFERENCES users (id),
    resolution_notes  text,
    source_type       text,
    source_id         text,
    metadata          jsonb,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    CHECK ((status IN ('accepted', 'rejected')) = (resolved_at IS NOT NULL))
);
CREATE INDEX tasks_project_created_idx ON tasks (project_id, created_at DESC, id DESC);
CREATE INDEX tasks_project_status_idx ON tasks (project_id, status);
CREATE INDEX tasks_source_idx ON tasks (source_type, source_id) WHERE source_type IS NOT NULL;

-- Notifications belong to a user (the owner leads every index); the
-- project is optional. read/dismissed are derived from read_at and
-- dismissed_at. An unread, undismissed notification with a group key is
-- the one that later occurrences of the same key update (the partial
-- unique index makes that an atomic upsert).
CREATE TABLE notifications (
    id                     uuid PRIMARY KEY,
    user_id                uuid NOT NULL REFERENCES users (id),
    project_id             uuid REFERENCES projects (id),
    title                  text NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
    message                text NOT NULL,
    type                   text,
    severity               text NOT NULL CHECK (severity IN ('info', 'warning', 'error', 'critical', 'success')),
    importance             text NOT NULL CHECK (importance IN ('important', 'other')),
    category               text,
    related_resource_type  text,
    related_resource_id    text,
    read_at                timestamptz,
    dismissed_at           timestamptz,
    cleared_at             timestamptz,
    snoozed_until          timestamptz,
    expires_at             timestamptz,
    actions                jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(actions) = 'array'),
    source_type            text,
    source_id              text,
    action_url             text,
    action_label           text,
    group_key              text,
    details                jsonb,
    task_id                uuid REFERENCES tasks (id) ON DELETE SET NULL,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL
);
CREATE INDEX notifications_user_created_idx ON notifications (user_id, created_at DESC, id DESC);
CREATE INDEX notifications_user_project_idx ON notifications (user_id, project_id) WHERE project_id IS NOT NULL;
CREATE INDEX notifications_expires_idx ON notifications (expires_at) WHERE expires_at IS NOT NULL;
CREATE UNIQUE INDEX notifications_open_group_key ON notifications (user_id, group_key)
    WHERE group_key IS NOT NULL AND read_at IS NULL AND dismissed_at IS NULL;

-- Recently used resources of a user: one row per resource, moved to the top
-- when used again; at most 500 per user (trimmed on insert).
CREATE TABLE user_activity (
    id                uuid PRIMARY KEY,
    user_id           uuid NOT NULL REFERENCES users (id),
    project_id        uuid NOT NULL REFERENCES projects (id),
    resource_type     text NOT NULL,
    resource_id       text NOT NULL,
    resource_name     text,
    resource_subtype  text,
    action_type       text NOT NULL,
    accessed_at       timestamptz NOT NULL,
    CONSTRAINT user_activity_resource_key UNIQUE (user_id, project_id, resource_type, resource_id)
);
CREATE INDEX user_activity_recent_idx ON user_activity (user_id, accessed_at DESC, id DESC);

-- +goose Down
DROP TABLE user_activity;
DROP TABLE notifications;
DROP TABLE tasks;
