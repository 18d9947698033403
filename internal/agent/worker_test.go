package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/activity"
	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// scriptModel calls tool (make_thing when empty) first, then answers;
// it records the tools each request declared.
type scriptModel struct {
	mu       sync.Mutex
	tool     string
	calls    int
	declared [][]string
}

func (m *scriptModel) Model() string          { return "script" }
func (m *scriptModel) Cost(llm.Usage) float64 { return 0.001 }
func (m *scriptModel) Chat(_ context.Context, req llm.ChatRequest) (*llm.ChatResult, error) {
	m.mu.Lock()
	m.calls++
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	m.declared = append(m.declared, names)
	tool := m.tool
	m.mu.Unlock()
	if tool == "" {
		tool = "make_thing"
	}
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleTool {
			return &llm.ChatResult{Text: "made", Usage: llm.Usage{InputText: 10, Output: 1}}, nil
		}
	}
	return &llm.ChatResult{
		ToolCalls: []llm.ToolCall{{ID: "c1", Name: tool, Arguments: json.RawMessage(`{"n":1}`)}},
		Usage:     llm.Usage{InputText: 5, Output: 2},
	}, nil
}

// dyingToolbox has one tool, make_thing, whose first call takes effect and
// then fails as a crash would leave it: the effect is there, the step's
// completion is not.
type dyingToolbox struct {
	mu    sync.Mutex
	calls []string // "key args"
	made  map[string]bool
}

func (b *dyingToolbox) Tools(context.Context, *auth.Principal, uuid.UUID) ([]llm.Tool, error) {
	return []llm.Tool{{Name: "make_thing", Parameters: map[string]any{"type": "object"}}}, nil
}

func (b *dyingToolbox) Call(ctx context.Context, _ *auth.Principal, _ uuid.UUID, name string, args json.RawMessage) (json.RawMessage, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key, resumed := agent.CallKeyFrom(ctx)
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return nil, false, err
	}
	b.calls = append(b.calls, key+" "+name+" "+compact.String())
	if len(b.calls) == 1 {
		b.made[key] = true
		return nil, false, errors.New("connection lost after the tool's effect")
	}
	if !resumed {
		return nil, false, errors.New("the second call is not marked resumed")
	}
	created := !b.made[key] // the key tells the tool it has done this already
	b.made[key] = true
	out, _ := json.Marshal(map[string]any{"created": created})
	return out, false, nil
}

type directory struct{ org, project uuid.UUID }

func (d directory) PrincipalOfUser(_ context.Context, user uuid.UUID) (*auth.Principal, error) {
	return &auth.Principal{UserID: user, ProjectRoles: map[uuid.UUID]auth.ProjectRole{d.project: auth.ProjectEditor}}, nil
}

func (d directory) ProjectOrg(context.Context, uuid.UUID) (uuid.UUID, error) { return d.org, nil }

type noNotifier struct{}

func (noNotifier) ExpireSource(context.Context, pgx.Tx, string, string) error { return nil }

func (noNotifier) Notify(context.Context, pgx.Tx, uuid.UUID, notification.Params) (notification.Notification, error) {
	return notification.Notification{}, errors.New("no question in this test")
}

func tenant(t *testing.T, pool *pgxpool.Pool) (org, project, user uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	org, project, user = uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, now(), now())`, org, org.String())
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO users (id, created_at, updated_at) VALUES ($1, now(), now())`, user)
	require.NoError(t, err)
	return org, project, user
}

// TestRunResumesStartedToolCall: the window a crash can leave inside a
// step, between a tool's effect and the commit of its step. The tool step
// was committed as started before the call, so the next attempt calls the
// tool again with the same idempotency key ("<run>/<step>") and the same
// arguments, without asking the model again; the tool, told by the key,
// does not repeat its effect. Tokens and cost are the model steps' sums.
func TestRunResumesStartedToolCall(t *testing.T) {
	t.Parallel()
	model, box := &scriptModel{}, &dyingToolbox{made: map[string]bool{}}
	svc, project, user, run := startRun(t, model, box, []string{"make_thing"})
	r := waitRun(t, svc, project, user, run)
	require.Equal(t, agent.StatusCompleted, r.Status, r.Error)
	require.Len(t, r.Steps, 3)
	require.Equal(t, "make_thing", r.Steps[1].Tool)
	require.JSONEq(t, `{"created":false}`, string(r.Steps[1].Output), "the repeated call found its effect")

	key := run.String() + "/1"
	require.Equal(t, []string{key + ` make_thing {"n":1}`, key + ` make_thing {"n":1}`}, box.calls)
	require.Equal(t, 2, model.calls, "the model was not asked again for the started call")
	require.Equal(t, int64(15), r.InputTokens)
	require.Equal(t, int64(3), r.OutputTokens)
	require.InDelta(t, 0.002, r.CostUSD, 1e-9)
}

// echoToolbox lists an external tool and a built-in one the agent does
// not name; it answers every call with its name.
type echoToolbox struct {
	mu    sync.Mutex
	names []string
}

func (b *echoToolbox) Tools(context.Context, *auth.Principal, uuid.UUID) ([]llm.Tool, error) {
	return []llm.Tool{{Name: "files/read file"}, {Name: "ext/echo"}, {Name: "search"}}, nil
}

func (b *echoToolbox) Call(_ context.Context, _ *auth.Principal, _ uuid.UUID, name string, _ json.RawMessage) (json.RawMessage, bool, error) {
	b.mu.Lock()
	b.names = append(b.names, name)
	b.mu.Unlock()
	out, _ := json.Marshal(name)
	return out, false, nil
}

// TestRunExternalToolNames: an external tool server/tool is offered to
// the model as server:tool (a name every provider accepts; one that still
// breaks the rule gets a hashed name), called by its own name, and
// recorded by it; a tool the agent does not name is not offered.
func TestRunExternalToolNames(t *testing.T) {
	t.Parallel()
	model, box := &scriptModel{tool: "ext:echo"}, &echoToolbox{}
	svc, project, user, run := startRun(t, model, box, []string{"ext/echo", "files/read file"})
	r := waitRun(t, svc, project, user, run)
	require.Equal(t, agent.StatusCompleted, r.Status, r.Error)
	require.Equal(t, "ext/echo", r.Steps[1].Tool)
	require.JSONEq(t, `"ext/echo"`, string(r.Steps[1].Output))
	require.Equal(t, []string{"ext/echo"}, box.names)
	require.Len(t, model.declared, 2)
	for _, d := range model.declared {
		require.Len(t, d, 3)
		require.Equal(t, []string{"ask_user", "files_read_file:"}, []string{d[0], d[1][:len("files_read_file:")]})
		require.Len(t, d[1], len("files_read_file:")+8)
		require.Equal(t, "ext:echo", d[2])
	}
}

// startRun starts a run of an agent with tools, on a job client of its
// own, with model and box.
func startRun(t *testing.T, model agent.Model, box agent.Toolbox, tools []string) (*agent.Service, uuid.UUID, uuid.UUID, uuid.UUID) {
	t.Helper()
	svc, p, project, _ := newService(t, model, box, noNotifier{})
	ctx := context.Background()
	a, err := svc.CreateAgent(ctx, p, project, agent.CreateParams{Name: "maker", Instructions: "make", Tools: tools})
	require.NoError(t, err)
	run, err := svc.StartRun(ctx, p, project, a.ID, "make one")
	require.NoError(t, err)
	return svc, project, p.UserID, run.ID
}

// newService is an agents service with model, box and notes, its queue
// running on a job client of its own, and an editor of its project with
// every scope, and its pool.
func newService(t *testing.T, model agent.Model, box agent.Toolbox, notes agent.Notifier) (*agent.Service, *auth.Principal, uuid.UUID, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.New(t)
	org, project, user := tenant(t, pool)
	jobs, err := jobqueue.NewClient(pool, jobqueue.Config{PollInterval: 20 * time.Millisecond, ReapInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	svc, err := agent.NewService(agent.Config{
		Pool: pool, Jobs: jobs, Toolbox: box, Principals: directory{org: org, project: project}, Notifier: notes,
		Activity: activity.ForgetterOf(activity.ResourceAgent),
		Models:   func(context.Context, uuid.UUID, string) (agent.Model, error) { return model, nil },
		Backoff:  func(int) time.Duration { return 10 * time.Millisecond },
	})
	require.NoError(t, err)
	require.NoError(t, svc.AddQueue(1, 0))
	require.NoError(t, jobs.Start(context.Background()))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = jobs.Stop(sctx)
	})
	p := &auth.Principal{UserID: user, Scopes: auth.AllScopes, ProjectRoles: map[uuid.UUID]auth.ProjectRole{project: auth.ProjectEditor}}
	return svc, p, project, pool
}

// waitRun waits until the run ended and returns it.
func waitRun(t *testing.T, svc *agent.Service, project, user, run uuid.UUID) agent.Run {
	t.Helper()
	return awaitRun(t, svc, project, user, run, agent.StatusCompleted, agent.StatusFailed)
}

// awaitRun waits until the run has one of statuses and returns it.
func awaitRun(t *testing.T, svc *agent.Service, project, user, run uuid.UUID, statuses ...string) agent.Run {
	t.Helper()
	var r agent.Run
	require.Eventually(t, func() bool {
		var err error
		r, err = svc.GetRun(context.Background(), project, user, run)
		require.NoError(t, err)
		return slices.Contains(statuses, r.Status)
	}, 10*time.Second, 10*time.Millisecond)
	return r
}
