-- +goose Up
-- Email about notifications (internal/notification): each user's choices
-- (no row: both off), and one row per user and UTC day a digest was
-- queued. The primary key is the rule that a user gets at most one digest
-- a day, whichever process or restart runs the task.
CREATE TABLE notification_preferences (
    user_id          uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    email_important  boolean NOT NULL DEFAULT false,
    digest           text NOT NULL DEFAULT 'off' CHECK (digest IN ('off', 'daily')),
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX notification_preferences_daily_idx ON notification_preferences (user_id) WHERE digest = 'daily';

CREATE TABLE notification_digests (
    user_id             uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    day                 date NOT NULL,
    email_job_id        uuid,
    notification_count  int NOT NULL,
    created_at          timestamptz NOT NULL,
    PRIMARY KEY (user_id, day)
);

-- +goose Down
DROP TABLE notification_digests;
DROP TABLE notification_preferences;
