-- +goose Up
-- Runtime settings of the job engine's queues (internal/jobqueue). A NULL
-- column means "the value the code configures"; rows are written by the
-- SetConcurrency/SetBatchSize/Pause/Resume operations and broadcast with
-- NOTIFY jobqueue_settings so every process applies them.
CREATE TABLE jobqueue_settings (
    queue        text PRIMARY KEY,
    concurrency  int CHECK (concurrency BETWEEN 1 AND 1000),
    batch_size   int CHECK (batch_size BETWEEN 1 AND 1000),
    paused       boolean NOT NULL DEFAULT false,
    updated_at   timestamptz NOT NULL
);

-- +goose Down
DROP TABLE jobqueue_settings;
