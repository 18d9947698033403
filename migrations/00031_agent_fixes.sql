-- +goose Up
-- Agents, review fixes (issue 17).

-- A question belongs to the pending tool step it was asked for (run,
-- step index), not to the provider's call id, which providers repeat
-- across responses; the worker uses an answer only when the question's
-- kind, tool and arguments match the call.
ALTER TABLE agent_run_questions DROP CONSTRAINT agent_run_questions_call_key;
ALTER TABLE agent_run_questions ADD COLUMN step_index int;
UPDATE agent_run_questions SET step_index = -1;
ALTER TABLE agent_run_questions ALTER COLUMN step_index SET NOT NULL;
CREATE INDEX agent_run_questions_step_idx ON agent_run_questions (run_id, step_index, created_at DESC);

-- The owner of an agent's runs without a caller (schedule, trigger
-- integration): the user who last saved a change to its tools,
-- instructions, schedule or trigger, with the scopes of the credential
-- they saved it with (such a run's scopes are these, bounded by the
-- owner's roles at every step).
ALTER TABLE agents ADD COLUMN owner_id uuid REFERENCES users (id);
ALTER TABLE agents ADD COLUMN owner_scopes text[] NOT NULL DEFAULT '{}';
UPDATE agents SET owner_id = created_by;

-- What a graph create made for one tool call of an agent run (its call
-- key "<run>/<step>"), written in the create's transaction: a call
-- repeated after a crash returns it instead of creating again.
CREATE TABLE graph_call_effects (
    call_key        text PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects (id),
    kind            text NOT NULL CHECK (kind IN ('object', 'relationship')),
    target_id       uuid NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX graph_call_effects_project_idx ON graph_call_effects (project_id);

-- The MCP annotations of an external tool (readOnlyHint, idempotentHint,
-- ...) as its server lists them.
ALTER TABLE mcp_server_tools ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';

-- A question's notification expires when the question closes (found by
-- its source, the run).
CREATE INDEX notifications_source_idx ON notifications (source_type, source_id) WHERE source_id IS NOT NULL;

-- +goose Down
DROP INDEX notifications_source_idx;
ALTER TABLE mcp_server_tools DROP COLUMN annotations;
DROP TABLE graph_call_effects;
ALTER TABLE agents DROP COLUMN owner_scopes;
ALTER TABLE agents DROP COLUMN owner_id;
DROP INDEX agent_run_questions_step_idx;
ALTER TABLE agent_run_questions DROP COLUMN step_index;
ALTER TABLE agent_run_questions ADD CONSTRAINT agent_run_questions_call_key UNIQUE (run_id, call_id);
