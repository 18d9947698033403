-- +goose Up
-- The recent-activity items of Graphmill's own resources (document,
-- graph-object, agent, chat-session) name an existing resource of the
-- item's project (a chat session: the item's user's own) by its canonical
-- id (session 10: recording checks it, a deletion removes the resource's
-- items). Items recorded before that name a resource deleted since,
-- another project's or user's, none, or one in another spelling: they are
-- removed (the user records a resource in use again). Free resource types
-- keep their items.
DELETE FROM user_activity u
WHERE (u.resource_type = 'document'
       AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.project_id = u.project_id AND d.id::text = u.resource_id))
   OR (u.resource_type = 'graph-object'
       AND NOT EXISTS (SELECT 1 FROM graph_objects o
                       WHERE o.project_id = u.project_id AND o.id::text = u.resource_id AND o.deleted_at IS NULL))
   OR (u.resource_type = 'agent'
       AND NOT EXISTS (SELECT 1 FROM agents a WHERE a.project_id = u.project_id AND a.id::text = u.resource_id))
   OR (u.resource_type = 'chat-session'
       AND NOT EXISTS (SELECT 1 FROM chat_sessions s
                       WHERE s.project_id = u.project_id AND s.user_id = u.user_id AND s.id::text = u.resource_id));

-- A deletion finds every user's items of the resource by this index.
CREATE INDEX user_activity_resource_idx ON user_activity (project_id, resource_type, resource_id);

-- +goose Down
DROP INDEX user_activity_resource_idx;
