package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
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
