package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/activity"
	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// stuckModel answers nothing until its run is cancelled or release is
// closed: a run stays running.
type stuckModel struct{ release chan struct{} }

func (stuckModel) Model() string          { return "stuck" }
func (stuckModel) Cost(llm.Usage) float64 { return 0 }
func (m stuckModel) Chat(ctx context.Context, _ llm.ChatRequest) (*llm.ChatResult, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-m.release:
		return nil, errors.New("released")
	}
}

// TestDeleteAgentPublishesLast: deleting an agent publishes its cancelled
// runs' events (the events publish lock) after its other writes, the
// agent's row and the users' recent-activity items of it (docs/decisions.md:
// the publish lock is taken last). A transaction holding one of those items
// and then publishing (the other side, which loses no deadlock check) is
// waited for, not deadlocked with; the events are published.
func TestDeleteAgentPublishesLast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	model := stuckModel{release: make(chan struct{})}
	svc, p, project, pool := newService(t, model, &echoToolbox{}, noNotifier{})
	t.Cleanup(func() { close(model.release) }) // before the job client stops
	a, err := svc.CreateAgent(ctx, p, project, agent.CreateParams{Name: "stuck", Instructions: "wait"})
	require.NoError(t, err)
	run, err := svc.StartRun(ctx, p, project, a.ID, "go")
	require.NoError(t, err)
	awaitRun(t, svc, project, p.UserID, run.ID, agent.StatusRunning)
	pgtest.Exec(t, pool, `INSERT INTO user_activity (id, user_id, project_id, resource_type, resource_id, action_type, accessed_at)
		VALUES (gen_random_uuid(), $1, $2, $3, $4, 'view', now())`, p.UserID, project, activity.ResourceAgent, a.ID.String())

	holder := pgtest.Hold(t, pool, `SELECT 1 FROM user_activity WHERE resource_id = $1 FOR UPDATE`, a.ID.String())
	done := make(chan error, 1)
	go func() { done <- svc.DeleteAgent(ctx, project, a.ID) }()
	require.Eventually(t, func() bool { return pgtest.LockWaits(t, pool) > 0 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, events.Lock(ctx, holder), "the holder takes the publish lock")
	require.NoError(t, holder.Commit(ctx))
	require.NoError(t, <-done, "the deletion was not the victim of a deadlock")

	var items, published int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM user_activity`).Scan(&items))
	require.Zero(t, items, "the agent's item is forgotten")
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE type = $1 AND payload->>'runId' = $2 AND payload->>'status' = $3`,
		agent.EventRunStatus, run.ID.String(), agent.StatusCancelled).Scan(&published))
	require.Equal(t, 1, published, "the cancelled run's status is published")
}
