package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

const agentColumns = `id, project_id, name, description, instructions, COALESCE(model, '') AS model, tools, max_steps,
	require_approval_for, COALESCE(schedule, '') AS schedule, next_run_at, trigger_integration_id, owner_id, owner_scopes,
	created_by, created_at, updated_at`

func agentInsert(ctx context.Context, db postgres.DBTX, a Agent) error {
	_, err := db.Exec(ctx, `INSERT INTO agents (id, project_id, name, description, instructions, model, tools, max_steps,
		require_approval_for, schedule, next_run_at, trigger_integration_id, created_by, created_at, updated_at, owner_id, owner_scopes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15, $16)`,
		a.ID, a.ProjectID, a.Name, a.Description, a.Instructions, postgres.NullIfEmpty(a.Model), a.Tools, a.MaxSteps,
		a.RequireApprovalFor, postgres.NullIfEmpty(a.Schedule), a.NextRunAt, a.TriggerIntegrationID, a.CreatedBy, a.CreatedAt,
		a.OwnerID, ownerScopes(a))
	return agentWriteErr(err)
}

func agentWriteErr(err error) error {
	if postgres.IsUniqueViolation(err, "agents_project_name_key") {
		return ErrNameTaken
	}
	if err != nil {
		return fmt.Errorf("write agent: %w", err)
	}
	return nil
}

// agentGet reads an agent of project; lock takes the row for an update.
func agentGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID, lock bool) (Agent, error) {
	q := `SELECT ` + agentColumns + ` FROM agents WHERE project_id = $1 AND id = $2`
	if lock {
		q += ` FOR NO KEY UPDATE`
	}
	return postgres.One[Agent](ctx, db, ErrNotFound, q, project, id)
}

func agentProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrNotFound, `SELECT project_id FROM agents WHERE id = $1`, id)
}

func agentList(ctx context.Context, db postgres.DBTX, project uuid.UUID, limit, offset int) ([]Agent, int, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentColumns+`, count(*) OVER () AS total FROM agents
		WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, project, limit, offset)
	list, total, err := postgres.CollectPageOf[Agent](rows)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(list), offset, total, `SELECT count(*) FROM agents WHERE project_id = $1`, project)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list agents: %w", err)
	}
	return list, total, nil
}

// agentNames lists the ids and names of project's agents by name (the
// project and name key's order), at most limit, with their number.
func agentNames(ctx context.Context, db postgres.DBTX, project uuid.UUID, limit int) ([]Named, int, error) {
	rows, _ := db.Query(ctx, `SELECT id, name, count(*) OVER () AS total FROM agents
		WHERE project_id = $1 ORDER BY name LIMIT $2`, project, limit)
	list, total, err := postgres.CollectPageOf[Named](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list agent names: %w", err)
	}
	return list, total, nil
}

// agentNamesOf is the name of each of ids that is an agent of project.
func agentNamesOf(ctx context.Context, db postgres.DBTX, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	rows, _ := db.Query(ctx, `SELECT id, name FROM agents WHERE project_id = $1 AND id = ANY($2)`, project, ids)
	out, err := postgres.CollectMap[uuid.UUID, string](rows)
	if err != nil {
		return nil, fmt.Errorf("read agent names: %w", err)
	}
	return out, nil
}

func agentUpdate(ctx context.Context, db postgres.DBTX, a Agent) error {
	_, err := db.Exec(ctx, `UPDATE agents SET name = $3, description = $4, instructions = $5, model = $6, tools = $7,
		max_steps = $8, require_approval_for = $9, schedule = $10, next_run_at = $11, trigger_integration_id = $12, updated_at = $13,
		owner_id = $14, owner_scopes = $15
		WHERE project_id = $1 AND id = $2`,
		a.ProjectID, a.ID, a.Name, a.Description, a.Instructions, postgres.NullIfEmpty(a.Model), a.Tools, a.MaxSteps,
		a.RequireApprovalFor, postgres.NullIfEmpty(a.Schedule), a.NextRunAt, a.TriggerIntegrationID, a.UpdatedAt,
		a.OwnerID, ownerScopes(a))
	return agentWriteErr(err)
}

// ownerScopes are a's owner scopes as stored (never NULL).
func ownerScopes(a Agent) []string {
	if a.OwnerScopes == nil {
		return []string{}
	}
	return a.OwnerScopes
}

// agentHold key-share-locks agent id of project. Errors: ErrNotFound.
func agentHold(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error {
	_, err := postgres.One[int](ctx, tx, ErrNotFound, `SELECT 1 FROM agents WHERE project_id = $1 AND id = $2 FOR KEY SHARE`, project, id)
	return err
}

func agentDelete(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM agents WHERE project_id = $1 AND id = $2`, project, id)
	if err != nil {
		return fmt.Errorf("delete agent: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// definition is what a run keeps of its agent (agent_runs.definition).
type definition struct {
	Name               string   `json:"name"`
	Instructions       string   `json:"instructions"`
	Model              string   `json:"model,omitempty"`
	Tools              []string `json:"tools"`
	MaxSteps           int      `json:"maxSteps"`
	RequireApprovalFor []string `json:"requireApprovalFor"`
}

// runRow is a run as the worker and the services read it.
type runRow struct {
	ID           uuid.UUID       `db:"id"`
	ProjectID    uuid.UUID       `db:"project_id"`
	AgentID      uuid.UUID       `db:"agent_id"`
	CreatedBy    uuid.UUID       `db:"created_by"`
	Scopes       []string        `db:"scopes"`
	Trigger      string          `db:"trigger_type"`
	JobStatus    string          `db:"job_status"`
	Status       string          `db:"status"`
	Input        string          `db:"input"`
	Output       string          `db:"output"`
	Error        string          `db:"error"`
	Definition   json.RawMessage `db:"definition"`
	InputTokens  int64           `db:"input_tokens"`
	OutputTokens int64           `db:"output_tokens"`
	CostUSD      float64         `db:"cost_usd"`
	CreatedAt    time.Time       `db:"created_at"`
	StartedAt    *time.Time      `db:"started_at"`
	CompletedAt  *time.Time      `db:"completed_at"`
}

// runColumns map the job's status to the run's: a queued job with an
// open question waits for input; requires_review is never used. A run
// started when its first step did (a woken job's started_at is its
// latest start: jobqueue.Wake).
const runColumns = `r.id, r.project_id, r.agent_id, r.created_by, r.scopes, r.trigger_type, r.status AS job_status,
	CASE WHEN r.status = 'queued' AND EXISTS (SELECT 1 FROM agent_run_questions q WHERE q.run_id = r.id AND q.status = 'open')
	     THEN 'waiting_for_input' ELSE r.status END AS status,
	r.input, COALESCE(r.output, '') AS output, CASE WHEN r.status = 'failed' THEN COALESCE(r.error_msg, '') ELSE '' END AS error,
	r.definition, r.input_tokens, r.output_tokens, r.cost_usd, r.created_at,
	COALESCE((SELECT min(s.started_at) FROM agent_run_steps s WHERE s.run_id = r.id), r.started_at) AS started_at, r.completed_at`

func (r runRow) def() (definition, error) {
	var d definition
	if err := json.Unmarshal(r.Definition, &d); err != nil {
		return d, fmt.Errorf("decode the definition of run %s: %w", r.ID, err)
	}
	return d, nil
}

func (r runRow) run() Run {
	return Run{
		ID: r.ID, AgentID: r.AgentID, Status: r.Status, Trigger: r.Trigger, Input: r.Input, Output: r.Output, Error: r.Error, Steps: []Step{},
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: r.CostUSD, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, CompletedAt: r.CompletedAt,
	}
}

type runInsertValues struct {
	ID, ProjectID, AgentID, CreatedBy uuid.UUID
	Scopes                            []string
	Trigger, Input                    string
	Definition                        definition
	Now                               time.Time
}

func runInsert(ctx context.Context, db postgres.DBTX, v runInsertValues) error {
	def, err := json.Marshal(v.Definition)
	if err != nil {
		return fmt.Errorf("encode definition: %w", err)
	}
	// trace_parent: the run's job span continues the trace that started it
	// (the request, or the job whose hook starts it).
	_, err = db.Exec(ctx, `INSERT INTO agent_runs (id, project_id, status, run_at, created_at, updated_at, agent_id, created_by,
		scopes, trigger_type, input, definition, trace_parent)
		VALUES ($1, $2, 'queued', $3, $3, $3, $4, $5, $6, $7, $8, $9, $10)`,
		v.ID, v.ProjectID, v.Now, v.AgentID, v.CreatedBy, v.Scopes, v.Trigger, v.Input, def, jobqueue.TraceParent(ctx))
	if err != nil {
		return fmt.Errorf("insert agent run: %w", err)
	}
	return nil
}

// runByID reads a run by id alone (the worker, the outcome hook).
func runByID(ctx context.Context, db postgres.DBTX, id uuid.UUID) (runRow, error) {
	return postgres.One[runRow](ctx, db, ErrRunNotFound, `SELECT `+runColumns+` FROM agent_runs r WHERE r.id = $1`, id)
}

// runOf reads a run of project started by user; lock takes the row.
func runOf(ctx context.Context, db postgres.DBTX, project, user, id uuid.UUID, lock bool) (runRow, error) {
	q := `SELECT ` + runColumns + ` FROM agent_runs r WHERE r.project_id = $1 AND r.created_by = $2 AND r.id = $3`
	if lock {
		q += ` FOR NO KEY UPDATE`
	}
	return postgres.One[runRow](ctx, db, ErrRunNotFound, q, project, user, id)
}

func runProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrRunNotFound, `SELECT project_id FROM agent_runs WHERE id = $1`, id)
}

type runPageRow struct {
	runRow
	postgres.Total
}

func runList(ctx context.Context, db postgres.DBTX, project, agent, user uuid.UUID, limit, offset int) ([]runRow, int, error) {
	// The page first, then its columns: the status and start subqueries
	// run for the page's rows only, not for every row the offset skips.
	rows, _ := db.Query(ctx, `SELECT `+runColumns+`, r.total FROM (
		SELECT *, count(*) OVER () AS total FROM agent_runs
		WHERE project_id = $1 AND agent_id = $2 AND created_by = $3
		ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5) r
		ORDER BY r.created_at DESC, r.id DESC`, project, agent, user, limit, offset)
	list, total, err := postgres.CollectPage(rows, func(r runPageRow) runRow { return r.runRow })
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(list), offset, total, `SELECT count(*) FROM agent_runs
			WHERE project_id = $1 AND agent_id = $2 AND created_by = $3`, project, agent, user)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list agent runs: %w", err)
	}
	return list, total, nil
}

// runLockRunning locks run id while it is running at attempt under
// worker: a step of a cancelled or reaped run writes nothing.
func runLockRunning(ctx context.Context, tx pgx.Tx, id uuid.UUID, attempt int, worker string) error {
	_, err := postgres.One[uuid.UUID](ctx, tx, errNotRunning, `SELECT id FROM agent_runs
		WHERE id = $1 AND status = 'running' AND attempt = $2 AND locked_by = $3 FOR NO KEY UPDATE`, id, attempt, worker)
	return err
}

func runAddUsage(ctx context.Context, tx pgx.Tx, id uuid.UUID, in, out int64, cost float64, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE agent_runs SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3,
		cost_usd = cost_usd + $4, updated_at = $5 WHERE id = $1`, id, in, out, cost, now)
	if err != nil {
		return fmt.Errorf("add run usage: %w", err)
	}
	return nil
}

func runSetOutput(ctx context.Context, tx pgx.Tx, id uuid.UUID, output string, now time.Time) error {
	if _, err := tx.Exec(ctx, `UPDATE agent_runs SET output = $2, updated_at = $3 WHERE id = $1`, id, output, now); err != nil {
		return fmt.Errorf("set run output: %w", err)
	}
	return nil
}

// stepRow is a step as stored.
type stepRow struct {
	Index        int             `db:"step_index"`
	Kind         string          `db:"kind"`
	Tool         string          `db:"tool"`
	CallID       string          `db:"call_id"`
	Input        json.RawMessage `db:"input"`
	Output       json.RawMessage `db:"output"`
	IsError      bool            `db:"is_error"`
	InputTokens  int64           `db:"input_tokens"`
	OutputTokens int64           `db:"output_tokens"`
	CostUSD      float64         `db:"cost_usd"`
	StartedAt    time.Time       `db:"started_at"`
	CompletedAt  *time.Time      `db:"completed_at"`
	DurationMs   int64           `db:"duration_ms"`
}

// step is s as the API shows it; a model step's output in its public
// form (publicModelOutput) with the tools named as def names them.
func (s stepRow) step(def definition) Step {
	out := s.Output
	if s.Kind == StepModel {
		out = publicModelOutput(def, s.Output)
	}
	return Step{
		Index: s.Index, Kind: s.Kind, Tool: s.Tool, Input: s.Input, Output: out, IsError: s.IsError,
		DurationMs: s.DurationMs, StartedAt: s.StartedAt,
	}
}

func stepsOf(ctx context.Context, db postgres.DBTX, run uuid.UUID) ([]stepRow, error) {
	rows, _ := db.Query(ctx, `SELECT step_index, kind, COALESCE(tool, '') AS tool, COALESCE(call_id, '') AS call_id, input, output,
		is_error, input_tokens, output_tokens, cost_usd, started_at, completed_at, duration_ms
		FROM agent_run_steps WHERE run_id = $1 ORDER BY step_index`, run)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[stepRow])
	if err != nil {
		return nil, fmt.Errorf("read run steps: %w", err)
	}
	return list, nil
}

// stepInsert writes a step; a tool step is written before its call
// (CompletedAt nil) and completed by stepComplete.
func stepInsert(ctx context.Context, tx pgx.Tx, run, project uuid.UUID, s stepRow) error {
	_, err := tx.Exec(ctx, `INSERT INTO agent_run_steps (run_id, step_index, project_id, kind, tool, call_id, input, output,
		is_error, input_tokens, output_tokens, cost_usd, started_at, completed_at, duration_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		run, s.Index, project, s.Kind, postgres.NullIfEmpty(s.Tool), postgres.NullIfEmpty(s.CallID), nullJSON(s.Input),
		nullJSON(s.Output), s.IsError, s.InputTokens, s.OutputTokens, s.CostUSD, s.StartedAt, s.CompletedAt, s.DurationMs)
	if err != nil {
		return fmt.Errorf("insert run step %d: %w", s.Index, err)
	}
	return nil
}

func stepComplete(ctx context.Context, tx pgx.Tx, run uuid.UUID, s stepRow) error {
	tag, err := tx.Exec(ctx, `UPDATE agent_run_steps SET output = $3, is_error = $4, completed_at = $5, duration_ms = $6
		WHERE run_id = $1 AND step_index = $2 AND completed_at IS NULL`,
		run, s.Index, nullJSON(s.Output), s.IsError, s.CompletedAt, s.DurationMs)
	if err != nil {
		return fmt.Errorf("complete run step %d: %w", s.Index, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("complete run step %d: not pending", s.Index)
	}
	return nil
}

func nullJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

// questionRow is a question as stored.
type questionRow struct {
	ID        uuid.UUID       `db:"id"`
	CallID    string          `db:"call_id"`
	StepIndex int             `db:"step_index"`
	Kind      string          `db:"kind"`
	Tool      string          `db:"tool"`
	Arguments json.RawMessage `db:"arguments"`
	Question  string          `db:"question"`
	Status    string          `db:"status"`
	Answer    string          `db:"answer"`
	Approved  *bool           `db:"approved"`
	ExpiresAt time.Time       `db:"expires_at"`
}

// Question kinds and states.
const (
	kindQuestion     = "question"
	kindApproval     = "approval"
	questionOpen     = "open"
	questionAnswered = "answered"
)

func (q questionRow) question() *Question {
	out := &Question{ID: q.ID, Kind: q.Kind, Text: q.Question, ExpiresAt: q.ExpiresAt}
	if q.Kind == kindApproval {
		out.Tool, out.Arguments = q.Tool, q.Arguments
	}
	return out
}

// asks reports whether q asks what o asks: the same kind, tool and
// arguments (as JSON values) or question text.
func (q questionRow) asks(o questionRow) bool {
	if q.Kind != o.Kind || q.Tool != o.Tool {
		return false
	}
	if q.Kind == kindQuestion {
		return q.Question == o.Question
	}
	return sameJSON(q.Arguments, o.Arguments)
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

const questionColumns = `id, call_id, step_index, kind, tool, arguments, question, status, COALESCE(answer, '') AS answer, approved, expires_at`

// questionOfStep is the latest question asked for the pending tool step
// index of run (zero ID: none).
func questionOfStep(ctx context.Context, db postgres.DBTX, run uuid.UUID, index int) (questionRow, error) {
	return postgres.One[questionRow](ctx, db, nil, `SELECT `+questionColumns+` FROM agent_run_questions
		WHERE run_id = $1 AND step_index = $2 ORDER BY created_at DESC, id DESC LIMIT 1`, run, index)
}

// questionOpenOf is the run's open question (zero ID: none).
func questionOpenOf(ctx context.Context, db postgres.DBTX, run uuid.UUID) (questionRow, error) {
	return postgres.One[questionRow](ctx, db, nil, `SELECT `+questionColumns+` FROM agent_run_questions
		WHERE run_id = $1 AND status = 'open'`, run)
}

func questionInsert(ctx context.Context, tx pgx.Tx, run, project uuid.UUID, q questionRow, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO agent_run_questions (id, project_id, run_id, call_id, step_index, kind, tool, arguments,
		question, expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		q.ID, project, run, q.CallID, q.StepIndex, q.Kind, q.Tool, nullJSON(q.Arguments), q.Question, q.ExpiresAt, now)
	if err != nil {
		return fmt.Errorf("insert run question: %w", err)
	}
	return nil
}

func questionAnswer(ctx context.Context, tx pgx.Tx, id uuid.UUID, a Answer, user uuid.UUID, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE agent_run_questions SET status = 'answered', answer = $2, approved = $3, answered_by = $4,
		answered_at = $5 WHERE id = $1 AND status = 'open'`, id, a.Answer, a.Approve, user, now)
	if err != nil {
		return fmt.Errorf("answer run question: %w", err)
	}
	return nil
}

// questionsClose ends the open question of a run that ended: expired when
// its time has come, else cancelled.
func questionsClose(ctx context.Context, tx pgx.Tx, run uuid.UUID, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE agent_run_questions SET status = CASE WHEN expires_at <= $2 THEN 'expired' ELSE 'cancelled' END
		WHERE run_id = $1 AND status = 'open'`, run, now)
	if err != nil {
		return fmt.Errorf("close run questions: %w", err)
	}
	return nil
}

// errNotRunning: the run is no longer running at this attempt here.
var errNotRunning = errs.New(errs.FailedPrecondition, "the run is no longer running here")
