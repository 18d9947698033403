package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/agent"
)

// agentDef is an agent definition as the API answers it.
type agentDef struct {
	ID                   string     `json:"id"`
	Schedule             string     `json:"schedule"`
	NextRunAt            *time.Time `json:"nextRunAt"`
	TriggerIntegrationID string     `json:"triggerIntegrationId"`
	OwnerID              string     `json:"ownerId"`
	CreatedBy            string     `json:"createdBy"`
}

func (s *testServer) agentGet(token, id string) agentDef {
	s.t.Helper()
	var a agentDef
	s.must(200, "GET", "/api/agents/"+id, token, nil).Decode(s.t, &a)
	return a
}

// agentRuns lists token's runs of agent, newest first.
func (s *testServer) agentRuns(token, agentID string) []agentRun {
	s.t.Helper()
	var l struct {
		Data  []agentRun `json:"data"`
		Total int        `json:"total"`
	}
	s.must(200, "GET", "/api/agents/"+agentID+"/runs?limit=100", token, nil).Decode(s.t, &l)
	require.Len(s.t, l.Data, l.Total)
	return l.Data
}

// agentCount runs a count query on the server's database.
func (s *testServer) agentCount(q string, args ...any) int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// schedulerTaskRuns is how many times the scheduler task name has run.
func (s *testServer) schedulerTaskRuns(name string) int {
	s.t.Helper()
	return s.agentCount(`SELECT coalesce((SELECT runs FROM scheduler_tasks WHERE name = $1), 0)::int`, name)
}

// runSchedulerTask moves the clocks of s and others (servers on the same
// database) forward by d (at least the task's interval) and waits for the
// scheduler leader, whichever it is, to run the task name at the new
// time, without error.
func (s *testServer) runSchedulerTask(name string, d time.Duration, others ...*testServer) {
	s.t.Helper()
	// The run at start-up first, so that it is not taken for this one.
	require.Eventually(s.t, func() bool { return s.schedulerTaskRuns(name) > 0 }, 20*time.Second, 20*time.Millisecond)
	before := s.schedulerTaskRuns(name)
	s.clock.Advance(d)
	for _, o := range others {
		o.clock.Advance(d)
	}
	require.Eventually(s.t, func() bool { return s.schedulerTaskRuns(name) > before }, 20*time.Second, 20*time.Millisecond,
		"%s did not run", name)
	var lastErr string
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(),
		`SELECT coalesce(last_error, '') FROM scheduler_tasks WHERE name = $1`, name).Scan(&lastErr))
	require.Empty(s.t, lastErr)
}

// TestAgentSchedule: a schedule is a cron expression checked when saved
// (400 naming the problem); the scheduler leader of two processes starts
// one run per due time as the agent's creator, never a second while the
// last scheduled run has not ended; removing the schedule stops it.
func TestAgentSchedule(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	other := startServer(t, s.dbURL)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	def := func(schedule string) map[string]any {
		return map[string]any{"name": "Digest " + schedule, "instructions": "Summarise the project.", "tools": []string{"search"}, "schedule": schedule}
	}
	for expr, want := range map[string]string{
		"61 * * * *":             "schedule must be a cron expression",
		"every day":              "schedule must be a cron expression",
		"* * * * * *":            "schedule must be a cron expression",
		"@every 30s":             "schedule: @every must be at least 1m0s",
		"0 0 30 2 *":             `schedule "0 0 30 2 *" never fires`,
		strings.Repeat("*", 201): "",
	} {
		p := requireProblem(t, s.do("POST", "/api/agents", s.admin, def(expr), hp), 400, "invalid_argument", expr)
		require.Contains(t, p["detail"], want, expr)
	}
	require.Zero(t, s.agentCount(`SELECT count(*) FROM agents`))

	id := s.agentCreate(s.admin, project, def("*/5 * * * *"))
	a := s.agentGet(s.admin, id)
	require.Equal(t, "*/5 * * * *", a.Schedule)
	require.NotNil(t, a.NextRunAt)
	require.True(t, a.NextRunAt.After(time.Now().Add(-time.Second)) && !a.NextRunAt.After(time.Now().Add(5*time.Minute)), "%s", a.NextRunAt)
	require.Zero(t, a.NextRunAt.Minute()%5)
	require.Zero(t, a.NextRunAt.Second())
	requireProblem(t, s.do("PATCH", "/api/agents/"+id, s.admin, map[string]any{"schedule": "0 25 * * *"}), 400, "invalid_argument")
	unscheduled := s.agentCreate(s.admin, project, map[string]any{"name": "Manual", "instructions": "x", "tools": []string{"search"}})
	require.Nil(t, s.agentGet(s.admin, unscheduled).NextRunAt)

	// Due: one run, started by the scheduler as the agent's creator.
	s.runSchedulerTask("agent-schedule", 6*time.Minute, other)
	runs := s.agentRuns(s.admin, id)
	require.Len(t, runs, 1, "one run, whichever process leads")
	require.True(t, strings.HasPrefix(runs[0].Input, `Scheduled run (schedule "*/5 * * * *") at `), runs[0].Input)
	require.Equal(t, "schedule", runs[0].Trigger)
	done := s.agentWait(s.admin, runs[0].ID, "completed", "failed")
	require.Equal(t, "completed", done.Status, done.Error)
	require.Equal(t, []string{"model", "tool:search", "model"}, done.stepKinds())
	next := s.agentGet(s.admin, id).NextRunAt
	require.True(t, next.After(*a.NextRunAt), "moved on: %s", next)
	require.Empty(t, s.agentRuns(s.admin, unscheduled))

	// A scheduled run that has not ended holds the next ones back.
	ctx := context.Background()
	require.NoError(t, s.m.jobs.Pause(ctx, agent.Queue))
	s.runSchedulerTask("agent-schedule", 6*time.Minute, other)
	require.Len(t, s.agentRuns(s.admin, id), 2)
	s.runSchedulerTask("agent-schedule", 6*time.Minute, other)
	runs = s.agentRuns(s.admin, id)
	require.Len(t, runs, 2, "the queued one holds the next back")
	require.Equal(t, "queued", runs[0].Status)
	require.NoError(t, s.m.jobs.Resume(ctx, agent.Queue))
	require.Equal(t, "completed", s.agentWait(s.admin, runs[0].ID, "completed", "failed").Status)

	// Without a schedule: no more runs.
	var patched agentDef
	s.must(200, "PATCH", "/api/agents/"+id, s.admin, map[string]any{"schedule": ""}).Decode(t, &patched)
	require.Empty(t, patched.Schedule)
	require.Nil(t, patched.NextRunAt)
	s.runSchedulerTask("agent-schedule", 6*time.Minute, other)
	require.Len(t, s.agentRuns(s.admin, id), 2)
}

// TestAgentIntegrationTrigger: an agent's trigger integration must be one
// of its project's (400 otherwise); every sync of it that ends starts
// exactly one run, with two processes syncing, whose input reports the
// sync; other agents get none; removing the trigger stops it.
func TestAgentIntegrationTrigger(t *testing.T) {
	t.Parallel()
	site := newTestSite(t, map[string]string{
		"/": htmlPage("Orbit handbook", "Orbit is a job scheduler started by Maria Gonzalez at Northwind Labs in Berlin."),
	})
	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	startServer(t, s.dbURL, withEgressAllow("127.0.0.0/8"))
	project, org := s.defaultProject()
	hp := header{"X-Project-ID", project}
	in := s.createIntegration(project, "site", "web", map[string]any{"start_urls": []string{site.srv.URL + "/"}})
	elsewhere := s.graphNewProject(org, "elsewhere")
	theirs := s.createIntegration(elsewhere, "theirs", "web", map[string]any{"start_urls": []string{site.srv.URL + "/"}})

	body := func(name, trigger string) map[string]any {
		return map[string]any{"name": name, "instructions": "Summarise what changed.", "tools": []string{"search"}, "triggerIntegrationId": trigger}
	}
	for _, bad := range []string{theirs.id, uuid.NewString()} {
		p := requireProblem(t, s.do("POST", "/api/agents", s.admin, body("bad", bad), hp), 400, "invalid_argument")
		require.Equal(t, "triggerIntegrationId: no integration with id "+bad+" in this project", p["detail"])
	}
	requireProblem(t, s.do("POST", "/api/agents", s.admin, body("bad", "not-a-uuid"), hp), 400, "invalid_argument")
	id := s.agentCreate(s.admin, project, body("After sync", in.id))
	require.Equal(t, in.id, s.agentGet(s.admin, id).TriggerIntegrationID)
	bystander := s.agentCreate(s.admin, project, map[string]any{"name": "Bystander", "instructions": "x", "tools": []string{"search"}})
	p := requireProblem(t, s.do("PATCH", "/api/agents/"+bystander, s.admin, map[string]any{"triggerIntegrationId": theirs.id}), 400, "invalid_argument")
	require.Contains(t, p["detail"], "no integration with id")
	requireProblem(t, s.do("PATCH", "/api/agents/"+bystander, s.admin, map[string]any{"triggerIntegrationId": "nope"}), 400, "invalid_argument")

	// Three syncs, three runs: one per sync, each reporting its sync.
	jobs := map[string]bool{}
	for i := range 3 {
		var res struct {
			JobID string `json:"job_id"`
		}
		s.must(200, "POST", "/api/integrations/site/sync", s.admin, nil, hp).Decode(t, &res)
		in.waitSync(res.JobID)
		jobs[res.JobID] = true
		require.Eventually(t, func() bool { return len(s.agentRuns(s.admin, id)) == i+1 }, 20*time.Second, 20*time.Millisecond)
	}
	// The sync on the other project's integration starts nothing here.
	theirs.sync(nil)
	runs := s.agentRuns(s.admin, id)
	require.Len(t, runs, 3, "exactly one run per sync")
	for _, run := range runs {
		require.True(t, strings.HasPrefix(run.Input, "The integration "+in.id+" finished a sync (status completed)."), run.Input)
		require.Equal(t, "integration", run.Trigger)
		n := 0
		for job := range jobs {
			if strings.Contains(run.Input, `"jobId":"`+job+`"`) {
				n++
			}
		}
		require.Equal(t, 1, n, run.Input)
		done := s.agentWait(s.admin, run.ID, "completed", "failed")
		require.Equal(t, "completed", done.Status, done.Error)
	}
	require.Equal(t, 3, s.agentCount(`SELECT count(DISTINCT input) FROM agent_runs WHERE agent_id = $1 AND trigger_type = 'integration'`, id))
	require.Empty(t, s.agentRuns(s.admin, bystander))

	// Without the trigger: a sync starts nothing.
	var patched agentDef
	s.must(200, "PATCH", "/api/agents/"+id, s.admin, map[string]any{"triggerIntegrationId": ""}).Decode(t, &patched)
	require.Empty(t, patched.TriggerIntegrationID)
	in.sync(nil)
	require.Len(t, s.agentRuns(s.admin, id), 3)
}
