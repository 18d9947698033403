// Package agent is the agents domain (issue 17): a project's agent
// definitions, their runs as durable jobs of the agent_run queue, the
// steps of each run (model calls and tool calls, each persisted as it
// completes) and the questions a run asks its starting user (ask_user, and
// the tools listed in requireApprovalFor). Tools come from a Toolbox (the
// built-in MCP server's tools and the project's external MCP servers'),
// checked when a definition is saved and again at every step against the
// starting user's current rights.
package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/llm"
)

// Queue is the run queue's name (DESIGN 6); its job table is agent_runs.
const Queue = "agent_run"

// Run statuses (the API's vocabulary). A run waiting for an answer is a
// queued job with an open question.
const (
	StatusQueued          = "queued"
	StatusRunning         = "running"
	StatusWaitingForInput = "waiting_for_input"
	StatusCompleted       = "completed"
	StatusFailed          = "failed"
	StatusCancelled       = "cancelled"
)

// Step kinds.
const (
	StepModel = "model"
	StepTool  = "tool"
)

// Run triggers.
const (
	TriggerManual      = "manual"
	TriggerSchedule    = "schedule"
	TriggerIntegration = "integration"
)

// Bounds and defaults of definitions.
const (
	MaxStepsDefault = 10
	MaxStepsMax     = 50
	// The API's bounds of a definition's fields (characters; items of
	// tools and requireApprovalFor), checked by the service too, so that
	// the console's form is refused the same (the name's, 200, and the
	// schedule's, ScheduleMax, were already).
	DescriptionMax  = 2000
	InstructionsMax = 100000
	ModelMax        = 200
	ToolsMax        = 100
	// QuestionTimeoutDefault is how long a question waits for its answer
	// (GRAPHMILL_AGENT_QUESTION_TIMEOUT).
	QuestionTimeoutDefault = 24 * time.Hour
	// ConcurrencyDefault is the runs in flight per process.
	ConcurrencyDefault = 4
	// QuestionMax bounds an ask_user question (in characters); a longer
	// one is cut, ending with Cut.
	QuestionMax = 4000
	// NotificationMessageMax bounds the message of a question's
	// notification (the question itself keeps the whole text); a longer
	// one is cut, ending with Cut.
	NotificationMessageMax = 1000
	// ToolResultMax bounds a tool result fed back to the model (in bytes
	// of its JSON); a longer one is given cut, as a string ending with
	// Cut.
	ToolResultMax = 32 << 10
	// InputMax bounds a run's input and a question's answer (in
	// characters), in the service: the API's maxLength and the console
	// agree.
	InputMax = 100000
	// Cut ends a text that was cut short.
	Cut = " … (truncated)"
)

// Event types of the event stream (DESIGN 8).
const (
	EventRunStatus = "agent_run.status"
	EventQuestion  = "agent.question"
)

// Errors.
var (
	ErrNotFound    = errs.New(errs.NotFound, "agent not found")
	ErrRunNotFound = errs.New(errs.NotFound, "agent run not found")
	ErrNameTaken   = errs.New(errs.Conflict, "an agent of this name already exists in the project")
	// ErrChanged refuses an Update whose UnchangedSince is not the agent's
	// updatedAt: someone changed it after the caller read it.
	ErrChanged = errs.New(errs.Conflict, "the agent was changed by someone else after you opened it: its current values are shown; save again to replace them with yours")
)

// Agent is a definition.
type Agent struct {
	ID                   uuid.UUID  `json:"id" db:"id"`
	ProjectID            uuid.UUID  `json:"projectId" db:"project_id"`
	Name                 string     `json:"name" db:"name"`
	Description          string     `json:"description" db:"description"`
	Instructions         string     `json:"instructions" db:"instructions"`
	Model                string     `json:"model,omitempty" db:"model" doc:"The generative model; the project's default when absent."`
	Tools                []string   `json:"tools" db:"tools" doc:"Tool names as the built-in MCP server lists them, server/tool for external ones."`
	MaxSteps             int        `json:"maxSteps" db:"max_steps"`
	RequireApprovalFor   []string   `json:"requireApprovalFor" db:"require_approval_for" doc:"Tools that ask the user before they run."`
	Schedule             string     `json:"schedule,omitempty" db:"schedule" doc:"A cron expression (minute hour day-of-month month day-of-week, UTC unless it starts with CRON_TZ=<zone>; or @hourly, @daily, @weekly, @monthly, @every <duration> of a minute or more): the scheduler starts a run at each of its times. With both day-of-month and day-of-week restricted, a day matching either fires, as in classic cron (0 9 1 * 1: the 1st and every Monday)."`
	NextRunAt            *time.Time `json:"nextRunAt,omitempty" db:"next_run_at" doc:"When the schedule starts the next run."`
	TriggerIntegrationID *uuid.UUID `json:"triggerIntegrationId,omitempty" db:"trigger_integration_id" format:"uuid" doc:"An integration of the project: every sync of it that ends (integration.sync.completed) starts a run."`
	OwnerID              *uuid.UUID `json:"ownerId,omitempty" db:"owner_id" format:"uuid" doc:"Whom the runs its schedule or trigger integration start act as, with the scopes of the credential they saved it with: who last changed its tools, instructions, schedule or trigger."`
	// OwnerScopes are the scopes of the credential OwnerID saved it with.
	OwnerScopes []string   `json:"-" db:"owner_scopes"`
	CreatedBy   *uuid.UUID `json:"createdBy,omitempty" db:"created_by"`
	CreatedAt   time.Time  `json:"createdAt" db:"created_at"`
	UpdatedAt   time.Time  `json:"updatedAt" db:"updated_at"`
}

// Named is an agent's id and name: a choice of the project's agents.
type Named struct {
	ID   uuid.UUID `db:"id"`
	Name string    `db:"name"`
}

// CreateParams defines an agent.
type CreateParams struct {
	Name, Description, Instructions, Model string
	Tools, RequireApprovalFor              []string
	MaxSteps                               int // 0: MaxStepsDefault
	// Schedule ("" for none) and TriggerIntegrationID (nil for none)
	// start runs without a caller (Agent).
	Schedule             string
	TriggerIntegrationID *uuid.UUID
}

// Update is a partial update: nil fields stay as they are.
type Update struct {
	Name, Description, Instructions, Model *string
	Tools, RequireApprovalFor              *[]string
	MaxSteps                               *int
	// Schedule "" and TriggerIntegrationID uuid.Nil remove them.
	Schedule             *string
	TriggerIntegrationID *uuid.UUID
	// UnchangedSince, when set, is the updatedAt the caller read: the
	// update is refused (ErrChanged) if the agent changed since, so that
	// a form sending every field does not undo another's change.
	UnchangedSince *time.Time
}

// ParseTrigger reads an update's trigger integration as a client gives
// it: an integration's id, or "" to remove the trigger (uuid.Nil, see
// Update). Errors: invalid_argument.
func ParseTrigger(raw string) (uuid.UUID, error) {
	if raw == "" {
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, errs.New(errs.Invalid, "triggerIntegrationId must be an integration's id (a UUID) or empty")
	}
	return id, nil
}

// Step is one step of a run.
type Step struct {
	Index      int             `json:"index"`
	Kind       string          `json:"kind" enum:"model,tool"`
	Tool       string          `json:"tool,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	IsError    bool            `json:"isError,omitempty" doc:"The tool reported a failure (its output describes it)."`
	DurationMs int64           `json:"durationMs"`
	StartedAt  time.Time       `json:"startedAt"`
}

// Question is what a waiting run asks.
type Question struct {
	ID        uuid.UUID       `json:"id"`
	Kind      string          `json:"kind" enum:"question,approval" doc:"question: answer with {answer}; approval: with {approve}."`
	Text      string          `json:"text"`
	Tool      string          `json:"tool,omitempty" doc:"The tool awaiting approval."`
	Arguments json.RawMessage `json:"arguments,omitempty" doc:"The arguments the tool would run with."`
	ExpiresAt time.Time       `json:"expiresAt"`
}

// Run is one run of an agent.
type Run struct {
	ID           uuid.UUID  `json:"id"`
	AgentID      uuid.UUID  `json:"agentId"`
	Status       string     `json:"status" enum:"queued,running,waiting_for_input,completed,failed,cancelled"`
	Trigger      string     `json:"trigger" enum:"manual,schedule,integration" doc:"What started the run: a caller, the agent's schedule, or a sync of its trigger integration."`
	Input        string     `json:"input"`
	Output       string     `json:"output,omitempty"`
	Error        string     `json:"error,omitempty"`
	Question     *Question  `json:"question,omitempty"`
	Steps        []Step     `json:"steps"`
	InputTokens  int64      `json:"inputTokens"`
	OutputTokens int64      `json:"outputTokens"`
	CostUSD      float64    `json:"costUsd"`
	CreatedAt    time.Time  `json:"createdAt"`
	StartedAt    *time.Time `json:"startedAt,omitempty"`
	CompletedAt  *time.Time `json:"completedAt,omitempty"`
}

// Answer answers a run's open question: Answer for a question, Approve
// for an approval.
type Answer struct {
	Answer  *string
	Approve *bool
}

// Toolbox gives runs their tools. The built-in MCP server implements it.
type Toolbox interface {
	// Tools lists the tools p may use in project: built-in MCP tools filtered by scopes, roles and tool settings, and the enabled tools of the project's enabled external MCP servers as "server/tool". A disabled tool is never listed.
	Tools(ctx context.Context, p *auth.Principal, project uuid.UUID) ([]llm.Tool, error)
	// Call runs tool name as p in project. A tool's own failure is (content describing it, true, nil); err is for infrastructure failures and for a tool p may not use (errs.PermissionDenied).
	Call(ctx context.Context, p *auth.Principal, project uuid.UUID, name string, args json.RawMessage) (content json.RawMessage, isError bool, err error)
}

type callKey struct{}

// call is what a tool call's context carries.
type call struct {
	key     string
	resumed bool
}

// WithCallKey returns ctx carrying the idempotency key of one tool call
// of a run, "<run id>/<step index>", and whether the call is resumed: a
// run killed after calling a tool and before recording its step calls it
// again after its restart, with the same key and arguments and resumed
// set. A tool that changes something records its effect under the key
// and, resumed, returns the recorded effect instead of acting again
// (Toolbox implementations read both with CallKeyFrom).
func WithCallKey(ctx context.Context, key string, resumed bool) context.Context {
	return context.WithValue(ctx, callKey{}, call{key: key, resumed: resumed})
}

// CallKeyFrom returns the idempotency key of the tool call ctx belongs to
// ("" outside a run's tool call) and whether the call is resumed.
func CallKeyFrom(ctx context.Context) (key string, resumed bool) {
	c, _ := ctx.Value(callKey{}).(call)
	return c.key, c.resumed
}
