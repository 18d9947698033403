package drills

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// TestAgentKillDuringToolDrill: graphmill serve runs an agent whose model
// calls graph_create_object, and is killed with SIGKILL inside the tool
// step: the object's create committed (with its call key), the step's
// completion did not (held by a trigger on agent_run_steps that waits for
// an advisory lock the drill holds). Restarted on the same data
// directory, the run resumes the started step: the resumed call finds what
// its key created and returns it, so the object exists once, the step
// reports it created (not a conflict), and the model is not asked again
// for the call.
func TestAgentKillDuringToolDrill(t *testing.T) {
	t.Parallel()
	// The model's requests before the tool's result, and after it.
	var first, second atomic.Int32
	fake := llmtest.NewOpenAI(t)
	fake.SetChatStream(func(c llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		for _, m := range c.Messages {
			if m.Role == "tool" {
				second.Add(1)
				return []llmtest.OpenAIDelta{{Content: "Recorded: " + m.Content}}
			}
		}
		first.Add(1)
		args, _ := json.Marshal(map[string]any{"type": "Person", "name": "Dorothy Vaughan"})
		return []llmtest.OpenAIDelta{{Call: &llmtest.OpenAICall{ID: "call-create", Name: "graph_create_object", Arguments: string(args)}}}
	})

	d := agentServe(t, fake)
	srv, db, project := d.srv, d.db, d.project
	ctx := context.Background()

	// Hold every completion of a tool step until the drill lets go.
	const hold = 7317
	holder, err := db.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, hold)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `CREATE FUNCTION drill_hold_step() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_xact_lock(7317); RETURN NEW; END $$`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `CREATE TRIGGER drill_hold_step BEFORE UPDATE ON agent_run_steps
		FOR EACH ROW WHEN (OLD.completed_at IS NULL AND NEW.completed_at IS NOT NULL) EXECUTE FUNCTION drill_hold_step()`)
	require.NoError(t, err)
	run := d.start(t, "graph_create_object", "Record Dorothy Vaughan.")

	const objects = `SELECT count(*) FROM graph_objects WHERE project_id = $1 AND name = 'Dorothy Vaughan' AND deleted_at IS NULL`
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'
			AND query LIKE 'UPDATE agent_run_steps%'`) == 1
	}, time.Minute, 50*time.Millisecond, "the tool step's completion never waited")
	require.Equal(t, 1, count(t, db, objects, project), "the tool's effect committed before the kill")
	require.Equal(t, 1, count(t, db, `SELECT count(*) FROM graph_call_effects WHERE call_key = $1 || '/1'`, run), "under the call's key")
	require.Equal(t, 1, count(t, db, `SELECT count(*) FROM agent_run_steps WHERE run_id = $1 AND step_index = 1 AND completed_at IS NULL`, run))
	srv.kill()

	// Let the orphaned completion go (its client is gone: it rolls back),
	// then remove the hold.
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, hold)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'UPDATE agent_run_steps%' AND state <> 'idle'`) == 0
	}, time.Minute, 50*time.Millisecond)
	_, err = db.Exec(ctx, `DROP TRIGGER drill_hold_step ON agent_run_steps; DROP FUNCTION drill_hold_step()`)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, db, `SELECT count(*) FROM agent_run_steps WHERE run_id = $1 AND step_index = 1 AND completed_at IS NULL`, run),
		"the completion did not commit")
	srv.start()

	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Steps  []struct {
			Kind    string          `json:"kind"`
			Tool    string          `json:"tool"`
			IsError bool            `json:"isError"`
			Output  json.RawMessage `json:"output"`
		} `json:"steps"`
	}
	d.ended(t, run, &out)
	require.Equal(t, "completed", out.Status, out.Error)
	require.Len(t, out.Steps, 3)
	require.Equal(t, "graph_create_object", out.Steps[1].Tool)
	require.False(t, out.Steps[1].IsError, string(out.Steps[1].Output))
	var made struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	require.NoError(t, json.Unmarshal(out.Steps[1].Output, &made))
	require.Equal(t, "Dorothy Vaughan", made.Name)
	require.Equal(t, 1, count(t, db, objects, project), "the object exists once")
	require.Equal(t, 1, count(t, db, `SELECT count(*) FROM graph_call_effects e JOIN graph_objects o ON o.id = e.target_id
		WHERE e.call_key = $1 || '/1' AND o.id::text = $2`, run, made.ID), "the resumed call returned what its key created")
	require.Equal(t, int32(1), first.Load(), "the model was not asked again for the started call")
	require.Equal(t, int32(1), second.Load())
	srv.stop()
	t.Logf("agent kill -9 drill: killed inside graph_create_object after its create committed; resumed, object created once")
}
