package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

// agentNotificationLive counts the run's question notifications not
// expired at the server's clock.
func (s *testServer) agentNotificationLive(run string) int {
	s.t.Helper()
	return s.agentCount(`SELECT count(*) FROM notifications WHERE source_type = 'agent_run' AND source_id = $1
		AND (expires_at IS NULL OR expires_at > $2)`, run, s.clock.Now())
}

// TestAgentAnswerAfterExpiry: an answer given once the question's time
// is over is refused (409) even while no worker has taken the run again
// (its queue paused), and the question is expired with its notification
// in that same request; the run then fails when a worker takes it.
func TestAgentAnswerAfterExpiry(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *config.Config) { c.AgentQuestionTimeout = time.Hour })
	project, _ := s.defaultProject()
	id := s.agentCreate(s.admin, project, map[string]any{"name": "asker", "instructions": "i", "tools": []string{}})
	run := s.agentStart(s.admin, id, "ASK: Anyone there?")
	s.agentWait(s.admin, run.ID, "waiting_for_input")
	require.Equal(t, 1, s.agentNotificationLive(run.ID))
	ctx := context.Background()
	require.NoError(t, s.m.jobs.Pause(ctx, "agent_run"))
	s.clock.Advance(time.Hour)
	p := requireProblem(t, s.do("POST", "/api/agent-runs/"+run.ID+"/answer", s.admin, map[string]any{"answer": "me"}), 409, "conflict")
	require.Contains(t, p["detail"], "expired")
	require.Equal(t, []string{"expired"}, s.agentQuestionStatus(run.ID))
	require.Equal(t, 0, s.agentNotificationLive(run.ID))
	require.Equal(t, 0, s.agentCount(`SELECT count(*) FROM agent_run_questions WHERE run_id = $1 AND answer IS NOT NULL`, run.ID))

	require.NoError(t, s.m.jobs.Resume(ctx, "agent_run"))
	done := s.agentWait(s.admin, run.ID, "failed")
	require.Contains(t, done.Error, "expired")
}

// TestAgentDeletePublishesCancelled: deleting an agent cancels its
// waiting run as CancelRun does: agent_run.status cancelled and
// job.completed are published, and the question's notification expires.
func TestAgentDeletePublishesCancelled(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	id := s.agentCreate(s.admin, project, map[string]any{"name": "asker", "instructions": "i", "tools": []string{}})
	run := s.agentStart(s.admin, id, "ASK: Anyone there?")
	s.agentWait(s.admin, run.ID, "waiting_for_input")
	require.Equal(t, 1, s.agentNotificationLive(run.ID))
	s.must(204, "DELETE", "/api/agents/"+id, s.admin, nil)
	require.Equal(t, 1, s.agentCount(`SELECT count(*) FROM events WHERE type = 'agent_run.status'
		AND payload->>'status' = 'cancelled' AND payload->>'runId' = $1`, run.ID))
	require.Equal(t, 1, s.agentCount(`SELECT count(*) FROM events WHERE type = 'job.completed'
		AND payload->>'jobId' = $1 AND payload->>'status' = 'cancelled'`, run.ID))
	require.Equal(t, 0, s.agentNotificationLive(run.ID))
	require.Equal(t, 0, s.agentCount(`SELECT count(*) FROM agent_runs WHERE id = $1`, run.ID))
}

// TestAgentScheduleZonePrefix: a time zone prefix the cron parser would
// panic on, an unknown zone and Local are 400 with a clear detail; a
// named zone is taken.
func TestAgentScheduleZonePrefix(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	for expr, detail := range map[string]string{
		"TZ=0":                      "followed by a space and the cron expression",
		"CRON_TZ=UTC":               "followed by a space and the cron expression",
		"TZ=":                       "followed by a space and the cron expression",
		"CRON_TZ=Local 0 6 * * *":   "CRON_TZ=Local is not accepted",
		"TZ=Mars/Olympus 0 6 * * *": `unknown time zone "Mars/Olympus"`,
	} {
		p := requireProblem(t, s.do("POST", "/api/agents", s.admin, map[string]any{"name": "tz", "instructions": "i", "tools": []string{}, "schedule": expr}, hp), 400, "invalid_argument", expr)
		require.Contains(t, p["detail"], detail, expr)
	}
	require.Equal(t, 0, s.agentCount(`SELECT count(*) FROM agents WHERE project_id = $1`, project))
	id := s.agentCreate(s.admin, project, map[string]any{"name": "tz", "instructions": "i", "tools": []string{}, "schedule": "CRON_TZ=Europe/Paris 0 6 * * *"})
	require.NotNil(t, s.agentGet(s.admin, id).NextRunAt)
}

// TestAgentCreateOfExistingObjectConflicts: an agent's (first, not
// resumed) graph_create_object of an object that exists is a conflict the
// model sees, not the existing object passed off as created; the object
// keeps its values.
func TestAgentCreateOfExistingObjectConflicts(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	s.must(201, "POST", "/api/graph/objects", s.admin, map[string]any{"type": "Person", "name": "Ada Lovelace", "description": "old"}, hp)
	id := s.agentCreate(s.admin, project, map[string]any{"name": "c", "instructions": "i", "tools": []string{"graph_create_object"}})
	run := s.agentStart(s.admin, id, `CALL: graph_create_object {"type":"Person","name":"Ada Lovelace","description":"new"}`)
	done := s.agentWait(s.admin, run.ID, "completed", "failed")
	require.Equal(t, "completed", done.Status, done.Error)
	require.True(t, done.Steps[1].IsError, string(done.Steps[1].Output))
	require.Contains(t, string(done.Steps[1].Output), "already exists")
	require.Equal(t, 1, s.agentCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1 AND name = 'Ada Lovelace' AND description = 'old'`, project))
	require.Equal(t, 0, s.agentCount(`SELECT count(*) FROM graph_call_effects WHERE project_id = $1`, project))

	run = s.agentStart(s.admin, id, `CALL: graph_create_object {"type":"Person","name":"Charles Babbage"}`)
	done = s.agentWait(s.admin, run.ID, "completed", "failed")
	require.False(t, done.Steps[1].IsError, string(done.Steps[1].Output))
	require.Equal(t, 1, s.agentCount(`SELECT count(*) FROM graph_call_effects e JOIN graph_objects o ON o.id = e.target_id
		WHERE e.call_key = $1 || '/1' AND o.name = 'Charles Babbage'`, run.ID))
}

// TestAgentScheduledRunActsAsOwner: a run its schedule starts acts as the
// agent's owner, the user who last changed its tools, instructions,
// schedule or trigger, with the scopes of the credential they saved it
// with: A's credential cannot give the agent graph_create_object; the
// project admin adds it with a schedule and becomes the owner, and the
// scheduled run's object is the admin's, not A's. A's later change of the
// instructions makes A the owner: the next run cannot use the tool A's
// credential lacks.
func TestAgentScheduledRunActsAsOwner(t *testing.T) {
	t.Parallel()
	o := llmtest.NewOpenAI(t)
	o.SetChatStream(func(c llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		for _, m := range c.Messages {
			if m.Role == "tool" {
				return []llmtest.OpenAIDelta{{Content: "done: " + m.Content}}
			}
		}
		name := "Mallory"
		if strings.Contains(c.Messages[0].Content, "second") {
			name = "Trent"
		}
		return []llmtest.OpenAIDelta{{Call: &llmtest.OpenAICall{ID: "c1", Name: "graph_create_object", Arguments: `{"type":"Person","name":"` + name + `"}`}}}
	})
	s := newServer(t, withOpenAI(o.URL(), "", "llama3.1:8b", "nomic-embed-text"), withoutLocalProvider)
	project, _ := s.defaultProject()
	aID, aTok := s.newMember("a@example.com", []string{"agents:read", "agents:run", "search:read"}, project, "editor")
	id := s.agentCreate(aTok, project, map[string]any{"name": "a's", "instructions": "first", "tools": []string{"search"}})
	require.Equal(t, aID, s.agentGet(aTok, id).OwnerID)
	requireProblem(t, s.do("PATCH", "/api/agents/"+id, aTok, map[string]any{"tools": []string{"search", "graph_create_object"}}), 400, "invalid_argument")
	s.must(200, "PATCH", "/api/agents/"+id, s.admin, map[string]any{"tools": []string{"search", "graph_create_object"}, "schedule": "*/5 * * * *"})
	def := s.agentGet(aTok, id)
	require.Equal(t, def.CreatedBy, aID)
	adminID := s.agentGet(s.admin, s.agentCreate(s.admin, project, map[string]any{"name": "x", "instructions": "i", "tools": []string{}})).CreatedBy
	require.Equal(t, adminID, def.OwnerID)

	s.runSchedulerTask("agent-schedule", 6*time.Minute)
	require.Empty(t, s.agentRuns(aTok, id), "the run is the owner's")
	runs := s.agentRuns(s.admin, id)
	require.Len(t, runs, 1)
	done := s.agentWait(s.admin, runs[0].ID, "completed", "failed")
	require.Equal(t, "completed", done.Status, done.Error)
	require.Equal(t, 1, s.agentCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1 AND name = 'Mallory' AND created_by = $2`, project, adminID))

	// A renames: not a change of what runs do, A does not become the owner.
	s.must(200, "PATCH", "/api/agents/"+id, aTok, map[string]any{"name": "renamed"})
	require.Equal(t, adminID, s.agentGet(aTok, id).OwnerID)
	// A changes the instructions: A owns the agent, with A's scopes.
	s.must(200, "PATCH", "/api/agents/"+id, aTok, map[string]any{"instructions": "second"})
	require.Equal(t, aID, s.agentGet(aTok, id).OwnerID)
	s.runSchedulerTask("agent-schedule", 6*time.Minute)
	runs = s.agentRuns(aTok, id)
	require.Len(t, runs, 1)
	done = s.agentWait(aTok, runs[0].ID, "completed", "failed")
	require.Equal(t, "completed", done.Status, done.Error)
	require.True(t, done.Steps[1].IsError, string(done.Steps[1].Output))
	require.Contains(t, string(done.Steps[1].Output), "not available")
	require.Zero(t, s.agentCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1 AND name = 'Trent'`, project))
}

// TestAgentTriggeredRunOwnerDemoted: an owner who may no longer run
// agents (demoted to viewer) gets no scheduled run; a run already queued
// fails, saying why, when a worker takes it.
func TestAgentTriggeredRunOwnerDemoted(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	ctx := context.Background()
	aID, aTok := s.newMember("v@example.com", allScopes, project, "editor")
	id := s.agentCreate(aTok, project, map[string]any{"name": "v", "instructions": "i", "tools": []string{"search"}, "schedule": "*/5 * * * *"})

	require.NoError(t, s.m.jobs.Pause(ctx, "agent_run"))
	s.runSchedulerTask("agent-schedule", 6*time.Minute)
	queued := s.agentRuns(aTok, id)
	require.Len(t, queued, 1)
	s.addMember(project, aID, "viewer")
	require.NoError(t, s.m.jobs.Resume(ctx, "agent_run"))
	done := s.agentWait(aTok, queued[0].ID, "failed")
	require.Contains(t, done.Error, "may no longer run agents in this project")
	require.Len(t, done.Steps, 0, "no step taken")

	requireProblem(t, s.do("POST", "/api/agents/"+id+"/runs", aTok, map[string]any{"input": "x"}), 403, "permission_denied")
	s.runSchedulerTask("agent-schedule", 6*time.Minute)
	require.Len(t, s.agentRuns(aTok, id), 1, "no new run for a viewer")
	require.NotNil(t, s.agentGet(aTok, id).NextRunAt, "the schedule moves on")
}

// TestAgentPatchChecksOnlyChanges: an editor whose credential lacks
// graph:write may stop the schedule of an agent with
// graph_create_object (the tools are not checked again; the editor becomes
// the owner), but not add a tool they may not use; the model is checked
// only when it changes.
func TestAgentPatchChecksOnlyChanges(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	id := s.agentCreate(s.admin, project, map[string]any{"name": "w", "instructions": "i", "tools": []string{"graph_create_object"}, "schedule": "@hourly"})
	edID, ed := s.newMember("ed@example.com", []string{"agents:read", "agents:run"}, project, "editor")
	s.must(200, "PATCH", "/api/agents/"+id, ed, map[string]any{"schedule": ""})
	a := s.agentGet(ed, id)
	require.Empty(t, a.Schedule)
	require.Nil(t, a.NextRunAt)
	require.Equal(t, edID, a.OwnerID)
	p := requireProblem(t, s.do("PATCH", "/api/agents/"+id, ed, map[string]any{"tools": []string{"graph_create_object", "search"}}), 400, "invalid_argument")
	require.Contains(t, p["detail"], `"search" is not a tool you may use`)
	s.must(200, "PATCH", "/api/agents/"+id, ed, map[string]any{"tools": []string{}})
	require.Equal(t, 1, s.agentCount(`SELECT count(*) FROM agents WHERE id = $1 AND tools = '{}'`, id))
}

// TestAgentResumedExternalTool: the completion of a tool step fails once
// after the external tool ran (a trigger raises, as a crash in that window
// leaves it: the call made, the step started, not completed); the retried
// attempt resumes the step. echo (no annotations) is not called again: the
// step is an error the model sees, saying the outcome is unknown. add
// (readOnlyHint) is called again and its result used.
func TestAgentResumedExternalTool(t *testing.T) {
	t.Parallel()
	external := mcptest.Streamable(t, mcptest.NewServer("echo", "add"), "", "")
	s := newServer(t, mcpRegWith(func(*config.Config) {}))
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	var srv struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/admin/mcp-servers", s.admin, map[string]any{"name": "calc", "type": "http", "url": external.URL}, hp).Decode(t, &srv)
	s.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/sync", s.admin, nil)
	ctx := context.Background()
	_, err := s.m.db.pool.Exec(ctx, `CREATE SEQUENCE fail_once;
		CREATE FUNCTION fail_step_once() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF nextval('fail_once') = 1 THEN RAISE EXCEPTION 'lost before the step completed'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER fail_step_once BEFORE UPDATE ON agent_run_steps
		FOR EACH ROW WHEN (OLD.completed_at IS NULL AND NEW.completed_at IS NOT NULL) EXECUTE FUNCTION fail_step_once()`)
	require.NoError(t, err)

	resumed := func(tool, args string) agentRun {
		t.Helper()
		_, err := s.m.db.pool.Exec(ctx, `SELECT setval('fail_once', 1, false)`)
		require.NoError(t, err)
		id := s.agentCreate(s.admin, project, map[string]any{"name": tool, "instructions": "i", "tools": []string{"calc/" + tool}})
		run := s.agentStart(s.admin, id, "CALL: calc:"+tool+" "+args)
		require.Eventually(t, func() bool {
			// The retry's backoff: the clock moves to the run's next try
			// only while the run waits for it. Moved while the run is in
			// flight, it would put the run's heartbeated lease in the past
			// and the reaper would take the run back (a lost attempt).
			var status string
			var runAt time.Time
			require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT status, run_at FROM agent_runs WHERE id = $1`, run.ID).Scan(&status, &runAt))
			if d := runAt.Sub(s.clock.Now()); status == "queued" && d > 0 {
				s.clock.Advance(d)
			}
			return slices.Contains([]string{"completed", "failed"}, s.agentRunGet(s.admin, run.ID).Status)
		}, 30*time.Second, 100*time.Millisecond)
		done := s.agentRunGet(s.admin, run.ID)
		require.Equal(t, "completed", done.Status, done.Error)
		require.Equal(t, 1, s.agentCount(`SELECT retry_count FROM agent_runs WHERE id = $1`, run.ID), "the first attempt failed")
		require.Equal(t, []string{"model", "tool:calc/" + tool, "model"}, done.stepKinds())
		return done
	}
	echo := resumed("echo", `{"text":"hello"}`)
	require.True(t, echo.Steps[1].IsError, string(echo.Steps[1].Output))
	require.Contains(t, string(echo.Steps[1].Output), "unknown after a restart; it was not repeated")
	add := resumed("add", `{"a":2,"b":40}`)
	require.False(t, add.Steps[1].IsError, string(add.Steps[1].Output))
	require.Contains(t, string(add.Steps[1].Output), "42")
}
