-- +goose Up
-- Chat (issue 17): sessions per project and user, and their messages.
-- agent_id names the agent a session talks to; it has no foreign key yet
-- (the agents table is written in parallel, migration 00030), only the
-- uuid format is checked. summary is the model's summary of the
-- conversation up to and including the message summary_through, made when
-- the history outgrew the model's budget.
CREATE TABLE chat_sessions (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL REFERENCES projects (id),
    user_id          uuid NOT NULL REFERENCES users (id),
    title            text NOT NULL DEFAULT '' CHECK (length(title) <= 200),
    agent_id         uuid,
    summary          text,
    summary_through  uuid,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
-- A user's sessions in a project, newest first.
CREATE INDEX chat_sessions_user_idx ON chat_sessions (project_id, user_id, created_at DESC, id DESC);

CREATE TABLE chat_messages (
    id             uuid PRIMARY KEY,
    project_id     uuid NOT NULL REFERENCES projects (id),
    session_id     uuid NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    role           text NOT NULL CHECK (role IN ('user', 'assistant')),
    content        text NOT NULL,
    citations      jsonb NOT NULL DEFAULT '[]',
    model          text,
    input_tokens   bigint NOT NULL DEFAULT 0,
    output_tokens  bigint NOT NULL DEFAULT 0,
    cost_usd       double precision NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL
);
CREATE INDEX chat_messages_session_idx ON chat_messages (session_id, created_at, id);

-- +goose Down
DROP TABLE chat_messages;
DROP TABLE chat_sessions;
