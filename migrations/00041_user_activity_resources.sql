-- +goose Up
-- The recent-activity items of Graphmill's own resources (document,
-- graph-object, agent, chat-session) name an existing resource of the
-- item's project (a chat session: the item's user's own) by its canonical
-- id (session 10: recording checks it, a deletion removes the resource's
-- items). Items recorded before that may spell an id otherwise (upper
-- case, braces, no hyphens, urn:uuid:, as uuid.Parse reads it): they take
-- the canonical spelling, and of a user's items of one resource the most
-- recent stays. Items naming a resource deleted since, another project's
-- or user's, or none are then removed (the user records a resource in use
-- again). Free resource types keep their items as they are.
DELETE FROM user_activity u
USING (
    SELECT id, row_number() OVER (
            PARTITION BY user_id, project_id, resource_type, canonical
            ORDER BY accessed_at DESC, resource_id = canonical DESC, id DESC) AS n
    FROM (SELECT *, CASE WHEN resource_id ~* '^(urn:uuid:)?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\}|[0-9a-f]{32})$'
                     THEN regexp_replace(resource_id, '^urn:uuid:', '', 'i')::uuid::text END AS canonical
          FROM user_activity
          WHERE resource_type IN ('document', 'graph-object', 'agent', 'chat-session')) AS s
    WHERE canonical IS NOT NULL
) AS spelled
WHERE u.id = spelled.id AND spelled.n > 1;

UPDATE user_activity u
SET resource_id = s.canonical
FROM (SELECT id, CASE WHEN resource_id ~* '^(urn:uuid:)?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\}|[0-9a-f]{32})$'
                  THEN regexp_replace(resource_id, '^urn:uuid:', '', 'i')::uuid::text END AS canonical
      FROM user_activity
      WHERE resource_type IN ('document', 'graph-object', 'agent', 'chat-session')) AS s
WHERE u.id = s.id AND s.canonical <> u.resource_id;

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
