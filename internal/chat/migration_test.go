package chat

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// TestMigrationKeysSessionAgents applies migration 00038 over sessions
// naming an agent of their project, an unknown id and another project's
// agent: only the first keeps its agent. Deleting that agent then makes
// the session a plain chat, and a session naming no agent is refused.
func TestMigrationKeysSessionAgents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, provider := pgtest.NewAtVersion(t, 37)

	id := func() uuid.UUID { return uuid.Must(uuid.NewV7()) }
	org, project, other, user := id(), id(), id(), id()
	agent, otherAgent := id(), id()
	kept, unknown, foreign, plain, nowhere := id(), id(), id(), id(), id()
	exec := func(sql string, args ...any) { pgtest.Exec(t, pool, sql, args...) }
	exec(`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, org)
	exec(`INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $3, 'p', now(), now()), ($2, $3, 'q', now(), now())`, project, other, org)
	exec(`INSERT INTO users (id, created_at, updated_at) VALUES ($1, now(), now())`, user)
	exec(`INSERT INTO agents (id, project_id, name, instructions, created_at, updated_at) VALUES ($1, $2, 'a', 'i', now(), now()), ($3, $4, 'b', 'i', now(), now())`,
		agent, project, otherAgent, other)
	for s, a := range map[uuid.UUID]*uuid.UUID{kept: &agent, unknown: &nowhere, foreign: &otherAgent, plain: nil} {
		exec(`INSERT INTO chat_sessions (id, project_id, user_id, agent_id, created_at, updated_at) VALUES ($1, $2, $3, $4, now(), now())`, s, project, user, a)
	}
	_, err := provider.UpTo(ctx, 38)
	require.NoError(t, err)

	agentOf := func(session uuid.UUID) *uuid.UUID {
		t.Helper()
		var a *uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `SELECT agent_id FROM chat_sessions WHERE id = $1`, session).Scan(&a))
		return a
	}
	require.Equal(t, &agent, agentOf(kept))
	for _, s := range []uuid.UUID{unknown, foreign, plain} {
		require.Nil(t, agentOf(s))
	}

	_, err = pool.Exec(ctx, `INSERT INTO chat_sessions (id, project_id, user_id, agent_id, created_at, updated_at) VALUES ($1, $2, $3, $4, now(), now())`,
		id(), project, user, id())
	require.True(t, postgres.IsForeignKeyViolation(err, "chat_sessions_agent_id_fkey"), "%v", err)
	exec(`DELETE FROM agents WHERE id = $1`, agent)
	require.Nil(t, agentOf(kept))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM chat_sessions WHERE id = $1`, kept).Scan(&n))
	require.Equal(t, 1, n, "the session stays")

	_, err = provider.Down(ctx)
	require.NoError(t, err)
}
