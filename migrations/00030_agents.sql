-- +goose Up
-- Agents (issue 17): a project's agent definitions, their runs on the
-- agent_run queue, each run's steps and the questions a run asks.

-- Definitions. tools and require_approval_for hold the names the built-in
-- MCP server lists (search, graph_create_object, ...) and server/tool for
-- the tools of external MCP servers. schedule (a cron expression),
-- next_run_at and trigger_integration_id start runs without a caller (the
-- scheduler leader; an integration's integration.sync.completed).
CREATE TABLE agents (
    id                     uuid PRIMARY KEY,
    project_id             uuid NOT NULL REFERENCES projects (id),
    name                   text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description            text NOT NULL DEFAULT '',
    instructions           text NOT NULL CHECK (length(instructions) BETWEEN 1 AND 100000),
    model                  text,
    tools                  text[] NOT NULL DEFAULT '{}',
    max_steps              int NOT NULL DEFAULT 10 CHECK (max_steps BETWEEN 1 AND 50),
    require_approval_for   text[] NOT NULL DEFAULT '{}',
    schedule               text,
    next_run_at            timestamptz,
    trigger_integration_id uuid REFERENCES integrations (id) ON DELETE SET NULL,
    created_by             uuid REFERENCES users (id),
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL,
    CONSTRAINT agents_project_name_key UNIQUE (project_id, name)
);
CREATE INDEX agents_project_created_idx ON agents (project_id, created_at DESC, id DESC);
CREATE INDEX agents_next_run_idx ON agents (next_run_at) WHERE next_run_at IS NOT NULL;
CREATE INDEX agents_trigger_integration_idx ON agents (trigger_integration_id) WHERE trigger_integration_id IS NOT NULL;

-- The agent_run queue (DESIGN 6): jobqueue.CommonColumns verbatim
-- (project_id NOT NULL with its foreign key, a tenant queue), then the run.
-- A run waiting for an answer is a queued job whose run_at is the
-- question's expiry, with an open question (agent_run_questions). The run
-- keeps what it was started with: the definition (definition, so that an
-- edit does not change a run in flight), the starting user and the scopes
-- of the credential that started it (its rights are rebuilt from them at
-- every step). Tokens and cost are the sums of its model steps.
CREATE TABLE agent_runs (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id),
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled','requires_review')),
    priority      int NOT NULL DEFAULT 0,
    run_at        timestamptz NOT NULL,
    attempt       int NOT NULL DEFAULT 0,
    retry_count   int NOT NULL DEFAULT 0,
    max_retries   int NOT NULL DEFAULT 3,
    locked_by     text,
    locked_until  timestamptz,
    heartbeat_at  timestamptz,
    error_msg     text,
    started_at    timestamptz,
    completed_at  timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    agent_id      uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    created_by    uuid NOT NULL REFERENCES users (id),
    scopes        text[] NOT NULL,
    trigger_type  text NOT NULL DEFAULT 'manual' CHECK (trigger_type IN ('manual', 'schedule', 'integration')),
    input         text NOT NULL,
    output        text,
    definition    jsonb NOT NULL CHECK (jsonb_typeof(definition) = 'object'),
    input_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cost_usd      double precision NOT NULL DEFAULT 0
);
CREATE INDEX agent_runs_queued_idx ON agent_runs (priority DESC, run_at, id) WHERE status = 'queued';
CREATE INDEX agent_runs_running_idx ON agent_runs (locked_until) WHERE status = 'running';
CREATE INDEX agent_runs_agent_idx ON agent_runs (agent_id, created_by, created_at DESC, id DESC);
CREATE INDEX agent_runs_created_idx ON agent_runs (created_at DESC, id DESC);

-- One row per step, written as the step completes. A tool step is written
-- first without completed_at, before the tool is called (its arguments and
-- call id fixed), so that a run resumed after a crash calls it again with
-- the same arguments and idempotency key rather than asking the model anew.
CREATE TABLE agent_run_steps (
    run_id        uuid NOT NULL REFERENCES agent_runs (id) ON DELETE CASCADE,
    step_index    int NOT NULL CHECK (step_index >= 0),
    project_id    uuid NOT NULL REFERENCES projects (id),
    kind          text NOT NULL CHECK (kind IN ('model', 'tool')),
    tool          text,
    call_id       text,
    input         jsonb,
    output        jsonb,
    is_error      boolean NOT NULL DEFAULT false,
    input_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cost_usd      double precision NOT NULL DEFAULT 0,
    started_at    timestamptz NOT NULL,
    completed_at  timestamptz,
    duration_ms   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, step_index)
);

-- A question a run asks its starting user: ask_user (kind question) or a
-- tool of require_approval_for (kind approval, with the call's arguments).
-- At most one is open per run.
CREATE TABLE agent_run_questions (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id),
    run_id      uuid NOT NULL REFERENCES agent_runs (id) ON DELETE CASCADE,
    call_id     text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('question', 'approval')),
    tool        text NOT NULL,
    arguments   jsonb,
    question    text NOT NULL,
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'answered', 'expired', 'cancelled')),
    answer      text,
    approved    boolean,
    answered_by uuid REFERENCES users (id),
    answered_at timestamptz,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL,
    CONSTRAINT agent_run_questions_call_key UNIQUE (run_id, call_id)
);
CREATE UNIQUE INDEX agent_run_questions_open_key ON agent_run_questions (run_id) WHERE status = 'open';

-- +goose Down
DROP TABLE agent_run_questions;
DROP TABLE agent_run_steps;
DROP TABLE agent_runs;
DROP TABLE agents;
