package drills

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// TestAgentKillNineDrill: graphmill serve runs an agent whose model (the
// OpenAI-compatible fake) creates a graph object, then is killed with
// SIGKILL while its next model call is in flight, after the tool step
// committed, and restarted on the same data directory. Once the lease
// ends the run resumes from its last completed step: the first model
// step and the tool step are not repeated, the object exists once, and
// the run completes with every step recorded once.
func TestAgentKillNineDrill(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		first    int // requests of the first model step (no tool result yet)
		second   int // requests of the step after the tool's result
		inFlight = make(chan struct{})
		release  = make(chan struct{})
	)
	fake := llmtest.NewOpenAI(t)
	fake.SetChatStream(func(c llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		results := 0
		for _, m := range c.Messages {
			if m.Role == "tool" {
				results++
			}
		}
		mu.Lock()
		if results == 0 {
			first++
			mu.Unlock()
			args, _ := json.Marshal(map[string]any{"type": "Person", "name": "Katherine Johnson"})
			return []llmtest.OpenAIDelta{{Call: &llmtest.OpenAICall{ID: "call-create", Name: "graph_create_object", Arguments: string(args)}}}
		}
		second++
		n := second
		mu.Unlock()
		if n == 1 {
			close(inFlight)
			<-release // the server is killed meanwhile
		}
		return []llmtest.OpenAIDelta{{Content: "Katherine Johnson is recorded."}}
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	d := agentServe(t, fake)
	srv, db, project := d.srv, d.db, d.project
	run := d.start(t, "graph_create_object", "Record Katherine Johnson.")

	select {
	case <-inFlight:
	case <-time.After(time.Minute):
		t.Fatal("the second model step never started")
	}
	const objects = `SELECT count(*) FROM graph_objects WHERE project_id = $1 AND name = 'Katherine Johnson' AND deleted_at IS NULL`
	require.Equal(t, 1, count(t, db, objects, project), "the tool ran before the kill")
	require.Equal(t, 2, count(t, db, `SELECT count(*) FROM agent_run_steps WHERE run_id = $1 AND completed_at IS NOT NULL`, run))
	srv.kill()
	require.Equal(t, 1, count(t, db, `SELECT count(*) FROM agent_runs WHERE id = $1 AND status = 'running'`, run), "killed while running")
	close(release)
	srv.start()

	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Output string `json:"output"`
		Steps  []struct {
			Index int    `json:"index"`
			Kind  string `json:"kind"`
			Tool  string `json:"tool"`
		} `json:"steps"`
	}
	d.ended(t, run, &out)
	require.Equal(t, "completed", out.Status, out.Error)
	require.Equal(t, "Katherine Johnson is recorded.", out.Output)
	require.Len(t, out.Steps, 3)
	for i, kind := range []string{"model", "tool", "model"} {
		require.Equal(t, i, out.Steps[i].Index)
		require.Equal(t, kind, out.Steps[i].Kind)
	}
	require.Equal(t, "graph_create_object", out.Steps[1].Tool)
	require.Equal(t, 1, count(t, db, objects, project), "the object exists once")
	require.Equal(t, 1, count(t, db, `SELECT retry_count FROM agent_runs WHERE id = $1`, run), "the killed attempt's lease expired")
	mu.Lock()
	require.Equal(t, 1, first, "the first model step was not repeated")
	require.Equal(t, 2, second, "the step in flight at the kill ran again")
	mu.Unlock()
	srv.stop()
	t.Logf("agent kill -9 drill: killed during model step 2 after the tool step; resumed after the lease, object created once, 3 steps")
}

// agentDrill is graphmill serve on a new data directory with the
// OpenAI-compatible fake as its provider.
type agentDrill struct {
	srv                  *proc
	db                   *pgxpool.Pool
	base, token, project string
}

// agentServe starts an agentDrill with fake.
func agentServe(t *testing.T, fake *llmtest.OpenAI) agentDrill {
	t.Helper()
	dir := dataDir(t)
	d := agentDrill{token: newToken()}
	d.srv = newProc(t, dir, "serve", "serve", "GRAPHMILL_DATA_DIR="+dir, "GRAPHMILL_BOOTSTRAP_TOKEN="+d.token,
		"GRAPHMILL_OPENAI_BASE_URL="+fake.URL(), "GRAPHMILL_OPENAI_MODEL=llama3.1:8b", "GRAPHMILL_OPENAI_EMBEDDING_MODEL=nomic-embed-text")
	d.srv.start()
	d.db = openDB(t, embeddedURL(t, dir))
	d.base = "http://" + d.srv.api
	d.project = defaultProject(t, d.base, d.token)
	return d
}

// start defines an agent with tool and starts a run of it with input;
// it returns the run's id.
func (d agentDrill) start(t *testing.T, tool, input string) string {
	t.Helper()
	var agent, run struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(mustCall(t, 201, d.base, d.token, "POST", "/api/agents", map[string]any{
		"name": "recorder", "instructions": "Record the person.", "tools": []string{tool},
	}, "X-Project-ID", d.project), &agent))
	require.NoError(t, json.Unmarshal(mustCall(t, 201, d.base, d.token, "POST", "/api/agents/"+agent.ID+"/runs",
		map[string]any{"input": input}), &run))
	return run.ID
}

// ended waits until run ended (after a restart: once the killed attempt's
// lease is over) and reads it into out.
func (d agentDrill) ended(t *testing.T, run string, out any) {
	t.Helper()
	require.Eventually(t, func() bool {
		return count(t, d.db, `SELECT count(*) FROM agent_runs WHERE id = $1 AND status IN ('completed', 'failed')`, run) == 1
	}, 3*time.Minute, 200*time.Millisecond)
	require.NoError(t, json.Unmarshal(mustCall(t, 200, d.base, d.token, "GET", "/api/agent-runs/"+run, nil), out))
}
