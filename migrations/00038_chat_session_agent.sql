-- +goose Up
-- A chat session's agent (issue 17) is an agent of the session's project:
-- the foreign key 00029 left out while the agents table was written in
-- parallel. Ids that name no agent of the session's project (unknown,
-- deleted, another project's) are cleared first: those sessions were plain
-- chats anyway. Deleting an agent leaves its sessions plain chats.
UPDATE chat_sessions s SET agent_id = NULL
WHERE agent_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = s.agent_id AND a.project_id = s.project_id);

ALTER TABLE chat_sessions
    ADD CONSTRAINT chat_sessions_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE SET NULL;
-- Deleting an agent finds its sessions by this index.
CREATE INDEX chat_sessions_agent_idx ON chat_sessions (agent_id) WHERE agent_id IS NOT NULL;

-- +goose Down
DROP INDEX chat_sessions_agent_idx;
ALTER TABLE chat_sessions DROP CONSTRAINT chat_sessions_agent_id_fkey;
