-- +goose Up
-- State of the periodic tasks (internal/scheduler), written by the leader
-- and read by any process for /api/metrics/scheduler.
CREATE TABLE scheduler_tasks (
    name              text PRIMARY KEY,
    interval_ms       bigint NOT NULL,
    last_run_at       timestamptz,
    last_duration_ms  bigint,
    last_error        text,
    next_run_at       timestamptz NOT NULL,
    runs              bigint NOT NULL DEFAULT 0,
    failures          bigint NOT NULL DEFAULT 0,
    leader            text,
    updated_at        timestamptz NOT NULL
);

-- +goose Down
DROP TABLE scheduler_tasks;
