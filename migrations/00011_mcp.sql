-- +goose Up
-- The registry of MCP servers of each project (external ones and the
-- project's built-in record), their mirrored tool catalogues, and the
-- settings of the built-in tools at project and organization level. The
-- env and headers objects and the tools' config are sealed by
-- internal/secrets, bound to their table, column and row id.

CREATE TABLE mcp_servers (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    enabled         boolean NOT NULL,
    type            text NOT NULL CHECK (type IN ('stdio', 'sse', 'http', 'builtin')),
    command         text,
    args            text[] NOT NULL DEFAULT '{}',
    env_sealed      text,
    url             text,
    headers_sealed  text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    CHECK (type <> 'stdio' OR command IS NOT NULL),
    CHECK (type NOT IN ('sse', 'http') OR url IS NOT NULL)
);
CREATE INDEX mcp_servers_project ON mcp_servers (project_id, created_at);
CREATE UNIQUE INDEX mcp_servers_builtin ON mcp_servers (project_id) WHERE type = 'builtin';

CREATE TABLE mcp_server_tools (
    id            uuid PRIMARY KEY,
    server_id     uuid NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    tool_name     text NOT NULL,
    description   text NOT NULL DEFAULT '',
    input_schema  jsonb NOT NULL DEFAULT '{}',
    enabled       boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL,
    UNIQUE (server_id, tool_name)
);

CREATE TABLE mcp_project_tool_settings (
    id             uuid PRIMARY KEY,
    project_id     uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    tool_name      text NOT NULL,
    enabled        boolean NOT NULL,
    config_sealed  text,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    UNIQUE (project_id, tool_name)
);

CREATE TABLE mcp_org_tool_settings (
    id             uuid PRIMARY KEY,
    org_id         uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    tool_name      text NOT NULL,
    enabled        boolean NOT NULL,
    config_sealed  text,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    UNIQUE (org_id, tool_name)
);

-- +goose Down
DROP TABLE mcp_org_tool_settings;
DROP TABLE mcp_project_tool_settings;
DROP TABLE mcp_server_tools;
DROP TABLE mcp_servers;
