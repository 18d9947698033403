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
// and other spellings of an existing one's id (upper case, braces, no
// hyphens, urn:uuid:, as uuid.Parse reads them): the first stay, the
// others spelled canonically (of two items of one resource, the more
// recent), with the items of free resource types; the rest go.
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

	hex := func(u uuid.UUID) string { return strings.ReplaceAll(u.String(), "-", "") }
	// Each item by its name: its type and id before, its id after ("":
	// gone). Ages are minutes ago (of two items of one resource, the more
	// recent stays).
	items := []struct {
		name, typ, before, after string
		age                      int
	}{
		{"doc", ResourceDocument, doc.String(), doc.String(), 5},
		{"unknown doc", ResourceDocument, id().String(), "", 1},
		{"doc shouting, older", ResourceDocument, strings.ToUpper(doc.String()), "", 9},
		{"object", ResourceGraphObject, object.String(), object.String(), 1},
		{"object braced", ResourceGraphObject, "{" + strings.ToUpper(object.String()) + "}", "", 2},
		{"deleted object", ResourceGraphObject, gone.String(), "", 1},
		{"deleted object bare", ResourceGraphObject, hex(gone), "", 1},
		{"far object", ResourceGraphObject, far.String(), "", 1},
		{"no object", ResourceGraphObject, "o1", "", 1},
		{"agent bare", ResourceAgent, hex(agent), agent.String(), 1},
		{"no agent", ResourceAgent, "a1", "", 1},
		{"session urn, newer", ResourceChatSession, "urn:uuid:" + session.String(), session.String(), 1},
		{"session, older", ResourceChatSession, session.String(), "", 3},
		{"their session", ResourceChatSession, theirs.String(), "", 1},
		{"report", "report", gone.String(), gone.String(), 1},
		{"report free", "report", "r1", "r1", 1},
		{"report shouting", "report", strings.ToUpper(doc.String()), strings.ToUpper(doc.String()), 1},
	}
	for _, it := range items {
		exec(`INSERT INTO user_activity (id, user_id, project_id, resource_type, resource_id, resource_name, action_type, accessed_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'view', now() - make_interval(mins => $7))`, id(), user, project, it.typ, it.before, it.name, it.age)
	}
	_, err := provider.UpTo(ctx, 41)
	require.NoError(t, err)

	rows, err := pool.Query(ctx, `SELECT resource_name, resource_id FROM user_activity`)
	require.NoError(t, err)
	left := map[string]string{}
	for rows.Next() {
		var name, rid string
		require.NoError(t, rows.Scan(&name, &rid))
		left[name] = rid
	}
	require.NoError(t, rows.Err())
	for _, it := range items {
		require.Equal(t, it.after, left[it.name], it.name)
	}
	_, err = provider.Down(ctx)
	require.NoError(t, err)
}
