package activity

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
)

// TestMigrationForgetsGoneResources applies migration 00041 over items of
// each of Graphmill's own resource types naming an existing resource, a
// deleted or unknown one, another project's, another user's chat session
// and a non-canonical spelling: only the first stay, with the items of
// free resource types.
func TestMigrationForgetsGoneResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, provider := pgtest.NewAtVersion(t, 39)

	id := func() uuid.UUID { return uuid.Must(uuid.NewV7()) }
	org, project, other, user, someone := id(), id(), id(), id(), id()
	doc, object, gone, agent, session, theirs, far := id(), id(), id(), id(), id(), id(), id()
	exec := func(sql string, args ...any) { pgtest.Exec(t, pool, sql, args...) }
	exec(`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, org)
	exec(`INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $3, 'p', now(), now()), ($2, $3, 'q', now(), now())`, project, other, org)
	exec(`INSERT INTO users (id, created_at, updated_at) VALUES ($1, now(), now()), ($2, now(), now())`, user, someone)
	exec(`INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, sha256, content, status, created_at, updated_at)
		VALUES ($1, $2, 'd.md', 'text/markdown', 1, '\x00', 'x', 'parsed', now(), now())`, doc, project)
	exec(`INSERT INTO graph_objects (id, project_id, type, key, normalized_key, name, properties, status, created_at, updated_at, deleted_at)
		VALUES ($1, $3, 'Person', 'a', 'a', 'a', '{}', 'accepted', now(), now(), NULL),
		       ($2, $3, 'Person', 'b', 'b', 'b', '{}', 'accepted', now(), now(), now()),
		       ($4, $5, 'Person', 'c', 'c', 'c', '{}', 'accepted', now(), now(), NULL)`, object, gone, project, far, other)
	exec(`INSERT INTO agents (id, project_id, name, instructions, created_at, updated_at) VALUES ($1, $2, 'a', 'i', now(), now())`, agent, project)
	exec(`INSERT INTO chat_sessions (id, project_id, user_id, created_at, updated_at) VALUES ($1, $3, $4, now(), now()), ($2, $3, $5, now(), now())`,
		session, theirs, project, user, someone)

	items := map[string]bool{ // type/id: kept
		ResourceDocument + "/" + doc.String():                  true,
		ResourceDocument + "/" + id().String():                 false,
		ResourceDocument + "/" + strings.ToUpper(doc.String()): false,
		ResourceGraphObject + "/" + object.String():            true,
		ResourceGraphObject + "/" + gone.String():              false,
		ResourceGraphObject + "/" + far.String():               false,
		ResourceGraphObject + "/o1":                            false,
		ResourceAgent + "/" + agent.String():                   true,
		ResourceAgent + "/a1":                                  false,
		ResourceChatSession + "/" + session.String():           true,
		ResourceChatSession + "/" + theirs.String():            false,
		ResourceChatSession + "/urn:uuid:" + session.String():  false,
		"report/" + gone.String():                              true,
		"report/r1":                                            true,
	}
	for item := range items {
		typ, rid, _ := strings.Cut(item, "/")
		exec(`INSERT INTO user_activity (id, user_id, project_id, resource_type, resource_id, action_type, accessed_at)
			VALUES ($1, $2, $3, $4, $5, 'view', now())`, id(), user, project, typ, rid)
	}
	_, err := provider.UpTo(ctx, 41)
	require.NoError(t, err)

	rows, err := pool.Query(ctx, `SELECT resource_type || '/' || resource_id FROM user_activity`)
	require.NoError(t, err)
	left := map[string]bool{}
	for rows.Next() {
		var item string
		require.NoError(t, rows.Scan(&item))
		left[item] = true
	}
	require.NoError(t, rows.Err())
	for item, kept := range items {
		require.Equal(t, kept, left[item], item)
	}

	_, err = provider.Down(ctx)
	require.NoError(t, err)
}
