package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/postgres"
)

// notificationSource is the source type of a question's notification
// (its source id is the run's).
const notificationSource = "agent_run"

// errWaiting ends an attempt that committed a wait for an answer.
var errWaiting = errors.New("the run waits for input")

// askUserTool is the built-in ask_user tool every run is offered.
func askUserTool() llm.Tool {
	return llm.Tool{
		Name:        llm.ToolAskUser,
		Description: "Ask the user who started this run a question and wait for the answer. Use it when you need information or a decision only the user has.",
		Parameters: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"question": map[string]any{"type": "string", "maxLength": QuestionMax, "description": "The question, in full."}},
			"required":             []string{"question"},
			"additionalProperties": false,
		},
	}
}

// modelOutput is a model step's output: the text and the calls it made,
// as the provider returned them (model-facing names, ids, signatures).
type modelOutput struct {
	Text      string         `json:"text,omitempty"`
	ToolCalls []llm.ToolCall `json:"toolCalls,omitempty"`
}

// publicCall is a tool call of a model step as the API shows it.
type publicCall struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// publicModelOutput is a model step's output as the API shows it:
// {text, toolCalls: [{id, tool, arguments}]}, each tool by its real name
// (server/tool for external ones, not the name the model was given),
// without the provider's state (signatures). The stored form (modelOutput)
// is the conversation's, for replay.
func publicModelOutput(def definition, stored json.RawMessage) json.RawMessage {
	var in modelOutput
	if json.Unmarshal(stored, &in) != nil {
		return stored
	}
	real := map[string]string{}
	for _, t := range def.Tools {
		if n := toolName(t); real[n] == "" {
			real[n] = t
		}
	}
	out := struct {
		Text      string       `json:"text"`
		ToolCalls []publicCall `json:"toolCalls"`
	}{Text: in.Text, ToolCalls: make([]publicCall, len(in.ToolCalls))}
	for i, c := range in.ToolCalls {
		name := real[c.Name]
		if name == "" {
			name = c.Name // ask_user, or a tool the run did not offer
		}
		args := c.Arguments
		if len(args) == 0 || !json.Valid(args) {
			args = json.RawMessage(`{}`)
		}
		out.ToolCalls[i] = publicCall{ID: c.ID, Tool: name, Arguments: args}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return stored
	}
	return b
}

// worker runs one attempt of one run.
type worker struct {
	s   *Service
	job jobqueue.Job
	run runRow
	def definition
}

// work is the agent_run handler. A run is a loop of model steps and tool
// steps, each committed as it completes (a tool step also before its call);
// an attempt starts from the committed steps, so a run resumed after a
// crash, a retry or an answer repeats no completed step. See worker.call
// for the one window a crash can leave.
func (s *Service) work(ctx context.Context, j jobqueue.Job) error {
	r, err := runByID(ctx, s.cfg.Pool, j.ID)
	if err != nil {
		return jobqueue.Permanent(err)
	}
	def, err := r.def()
	if err != nil {
		return jobqueue.Permanent(err)
	}
	w := &worker{s: s, job: j, run: r, def: def}
	err = w.tx(ctx, func(tx pgx.Tx) error {
		now, err := runByID(ctx, tx, j.ID)
		if err != nil {
			return err
		}
		return s.publishStatus(ctx, tx, now)
	})
	if err == nil {
		err = w.loop(ctx)
	}
	switch {
	case err == nil, errors.Is(err, errWaiting):
		return nil
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.Is(err, errNotRunning):
		return jobqueue.ErrCancelled
	}
	return err
}

// tx runs fn in a transaction that holds the run while it is running at
// this attempt here (a cancelled or reaped run writes nothing), and again
// when it loses a deadlock (in the outcome hook FinishInTx or WaitInTx
// calls, say): fn works from its inputs and the database only.
func (w *worker) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return postgres.WithTxRetryDeadlock(ctx, w.s.cfg.Pool, func(tx pgx.Tx) error {
		if err := runLockRunning(ctx, tx, w.run.ID, w.job.Attempt, w.s.cfg.Jobs.WorkerID()); err != nil {
			return err
		}
		return fn(tx)
	})
}

func (w *worker) loop(ctx context.Context) error {
	model, err := w.s.cfg.Models(ctx, w.run.ProjectID, w.def.Model)
	if err != nil {
		if errs.CodeOf(err) == errs.FailedPrecondition {
			return jobqueue.Permanent(err)
		}
		return fmt.Errorf("resolve the agent's model: %w", err)
	}
	if w.def.Model != "" && model.Model() != w.def.Model {
		return jobqueue.Permanent(fmt.Errorf("model %s is no longer available to this project", w.def.Model))
	}
	steps, err := stepsOf(ctx, w.s.cfg.Pool, w.run.ID)
	if err != nil {
		return err
	}
	for {
		p, err := w.principal(ctx)
		if err != nil {
			return err
		}
		tools, err := w.tools(ctx, p)
		if err != nil {
			return err
		}
		st := replay(w.def, w.run.Input, steps)
		if len(st.pending) > 0 {
			s, err := w.call(ctx, p, tools, steps, st.pending[0])
			if err != nil {
				return err
			}
			steps = setStep(steps, s)
			continue
		}
		if st.answered {
			return w.finish(ctx, st.text)
		}
		if st.modelSteps >= w.def.MaxSteps {
			return jobqueue.Permanent(fmt.Errorf("the run reached its limit of %d model steps without an answer", w.def.MaxSteps))
		}
		s, err := w.model(ctx, model, st.messages, tools, st.modelSteps == w.def.MaxSteps-1, len(steps))
		if err != nil {
			return err
		}
		steps = append(steps, s)
	}
}

// setStep puts s in steps at its index.
func setStep(steps []stepRow, s stepRow) []stepRow {
	if s.Index < len(steps) {
		steps[s.Index] = s
		return steps
	}
	return append(steps, s)
}

// principal rebuilds the starting user's rights as of now (rights). A
// run without a caller (schedule, integration) fails once its user, the
// agent's owner, may no longer run agents in the project.
func (w *worker) principal(ctx context.Context) (*auth.Principal, error) {
	p, reason, err := w.s.rights(ctx, w.run.CreatedBy, w.run.ProjectID, w.run.Scopes, w.run.Trigger != TriggerManual)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return nil, jobqueue.Permanent(errors.New(reason))
	}
	return p, nil
}

// toolSet is what a step offers the model: the agent's tools the
// Toolbox lists for the starting user, each under the name a model is
// given (toolName: server/tool becomes server:tool), and the real name
// of each, which the Toolbox is called with and the steps record.
type toolSet struct {
	list []llm.Tool
	real map[string]string // model-facing name -> real name
}

// tools are the agent's tools that p may use now, plus ask_user. A tool
// whose model-facing name another one took already is left out.
func (w *worker) tools(ctx context.Context, p *auth.Principal) (toolSet, error) {
	set := toolSet{list: []llm.Tool{askUserTool()}, real: map[string]string{llm.ToolAskUser: llm.ToolAskUser}}
	if w.s.cfg.Toolbox == nil {
		return set, nil
	}
	all, err := w.s.cfg.Toolbox.Tools(ctx, p, w.run.ProjectID)
	if err != nil {
		return toolSet{}, fmt.Errorf("list tools: %w", err)
	}
	for _, t := range all {
		name := toolName(t.Name)
		if !slices.Contains(w.def.Tools, t.Name) || set.real[name] != "" {
			continue
		}
		set.real[name] = t.Name
		t.Name = name
		set.list = append(set.list, t)
	}
	return set, nil
}

// replayed is a run's conversation rebuilt from its steps.
type replayed struct {
	messages   []llm.Message
	pending    []llm.ToolCall // calls of the last model step not answered by a completed tool step
	modelSteps int
	answered   bool // the last step is a model step that called nothing
	text       string
}

// replay rebuilds the conversation from the committed steps: the system
// instructions, the input, then each model step as an assistant message
// and the tool steps after it as one tool message of results.
func replay(def definition, input string, steps []stepRow) replayed {
	st := replayed{messages: []llm.Message{
		{Role: llm.RoleSystem, Text: def.Instructions + "\n\nCall ask_user when you need information or a decision only the user has."},
		{Role: llm.RoleUser, Text: input},
	}}
	var calls []llm.ToolCall
	var results []llm.ToolResult
	flush := func() {
		if len(results) > 0 {
			st.messages = append(st.messages, llm.Message{Role: llm.RoleTool, ToolResults: results})
			results = nil
		}
	}
	for _, s := range steps {
		switch s.Kind {
		case StepModel:
			flush()
			var out modelOutput
			_ = json.Unmarshal(s.Output, &out) // written by model()
			st.messages = append(st.messages, llm.Message{Role: llm.RoleAssistant, Text: out.Text, ToolCalls: out.ToolCalls})
			st.modelSteps++
			calls = out.ToolCalls
			st.answered, st.text = len(out.ToolCalls) == 0, out.Text
		case StepTool:
			if s.CompletedAt == nil {
				continue // started, not answered: its call is still pending
			}
			i := slices.IndexFunc(calls, func(c llm.ToolCall) bool { return c.ID == s.CallID })
			if i < 0 {
				continue
			}
			results = append(results, llm.ToolResult{CallID: s.CallID, Name: calls[i].Name, Content: s.Output, IsError: s.IsError})
			calls = slices.Delete(slices.Clone(calls), i, i+1)
		}
	}
	flush()
	st.pending = calls
	return st
}

// model makes one model step and commits it with its usage. The last
// step a run may take offers no tools, so that the model answers.
func (w *worker) model(ctx context.Context, m Model, msgs []llm.Message, tools toolSet, last bool, index int) (stepRow, error) {
	req := llm.ChatRequest{Messages: msgs, Tools: tools.list}
	if last {
		req.Tools = nil
		req.Messages = append(slices.Clone(msgs), llm.Message{Role: llm.RoleSystem, Text: "This is your last step: answer now, without calling tools."})
	}
	start := w.s.now()
	res, err := m.Chat(ctx, req)
	if err != nil {
		return stepRow{}, fmt.Errorf("model step %d: %w", index, err)
	}
	out, err := json.Marshal(modelOutput{Text: res.Text, ToolCalls: res.ToolCalls})
	if err != nil {
		return stepRow{}, fmt.Errorf("encode model step: %w", err)
	}
	done := w.s.now()
	u := res.Usage
	s := stepRow{
		Index: index, Kind: StepModel, Output: out, InputTokens: u.InputText + u.InputImage + u.InputVideo + u.InputAudio,
		OutputTokens: u.Output, CostUSD: m.Cost(u), StartedAt: start, CompletedAt: &done, DurationMs: done.Sub(start).Milliseconds(),
	}
	err = w.tx(ctx, func(tx pgx.Tx) error {
		if err := stepInsert(ctx, tx, w.run.ID, w.run.ProjectID, s); err != nil {
			return err
		}
		return runAddUsage(ctx, tx, w.run.ID, s.InputTokens, s.OutputTokens, s.CostUSD, done)
	})
	if err != nil {
		return stepRow{}, err
	}
	if last && len(res.ToolCalls) > 0 {
		return stepRow{}, jobqueue.Permanent(fmt.Errorf("the run reached its limit of %d model steps without an answer", w.def.MaxSteps))
	}
	return s, nil
}

// call answers one pending call with a tool step. ask_user and tools that
// need approval first ask (the run then waits: errWaiting); an answered
// question becomes the step's output. A tool is called after its step was
// committed as started; if the process dies after the tool's effect and
// before the step's completion commits, the next attempt finds the
// started step and calls the tool again with the same arguments and the
// same idempotency key (WithCallKey: "<run>/<step index>", marked
// resumed): the graph creates return what the key created, an external
// tool is called again only when its annotations say it is read-only or
// idempotent, else the step completes as an error saying its outcome is
// unknown (Toolbox).
func (w *worker) call(ctx context.Context, p *auth.Principal, tools toolSet, steps []stepRow, c llm.ToolCall) (stepRow, error) {
	s := stepRow{Index: len(steps), Kind: StepTool, CallID: c.ID, Input: c.Arguments, StartedAt: w.s.now()}
	started := false
	if n := len(steps); n > 0 && steps[n-1].Kind == StepTool && steps[n-1].CompletedAt == nil && steps[n-1].CallID == c.ID {
		s, started = steps[n-1], true
	}
	real := tools.real[c.Name]
	s.Tool = real
	if s.Tool == "" {
		s.Tool = c.Name
	}
	switch {
	case real == llm.ToolAskUser:
		q, err := w.question(ctx, c, s.Index, kindQuestion, "")
		if err != nil {
			return stepRow{}, err
		}
		out, _ := json.Marshal(map[string]string{"answer": q.Answer}) //nolint:errchkjson // a string
		return w.complete(ctx, s, started, out, false)
	case real == "":
		return w.complete(ctx, s, started, errorContent("tool %s is not available to this run", c.Name), true)
	case slices.Contains(w.def.RequireApprovalFor, real) && !started:
		q, err := w.question(ctx, c, s.Index, kindApproval, real)
		if err != nil {
			return stepRow{}, err
		}
		if q.Approved == nil || !*q.Approved {
			return w.complete(ctx, s, started, errorContent("the user declined to run %s", real), true)
		}
	}
	if !started {
		if err := w.tx(ctx, func(tx pgx.Tx) error { return stepInsert(ctx, tx, w.run.ID, w.run.ProjectID, s) }); err != nil {
			return stepRow{}, err
		}
	}
	key := fmt.Sprintf("%s/%d", w.run.ID, s.Index)
	content, isError, err := w.s.cfg.Toolbox.Call(WithCallKey(ctx, key, started), p, w.run.ProjectID, real, s.Input)
	if err != nil {
		if errs.CodeOf(err) != errs.PermissionDenied {
			return stepRow{}, fmt.Errorf("tool %s: %w", real, err)
		}
		content, isError = errorContent("%s", errs.MessageOf(err)), true
	}
	return w.complete(ctx, s, true, content, isError)
}

// bounded is a tool result as the model is given it (and the step
// keeps it): as it is up to ToolResultMax bytes, else its first bytes as
// a JSON string ending with Cut.
func bounded(out json.RawMessage) json.RawMessage {
	if len(out) <= ToolResultMax {
		return out
	}
	text := string(out[:ToolResultMax-len(Cut)])
	for !utf8.ValidString(text) {
		text = text[:len(text)-1]
	}
	raw, _ := json.Marshal(text + Cut) //nolint:errchkjson // a string
	return raw
}

// errorContent is a tool step's output describing a failure.
func errorContent(format string, args ...any) json.RawMessage {
	out, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, args...)}) //nolint:errchkjson // a string
	return out
}

// complete commits tool step s with its output, bounded and with its
// NULs dropped (postgres.JSONB: an external tool's result may hold
// them), inserting it or completing the started one.
func (w *worker) complete(ctx context.Context, s stepRow, started bool, out json.RawMessage, isError bool) (stepRow, error) {
	if len(out) == 0 || !json.Valid(out) {
		raw, _ := json.Marshal(string(out)) //nolint:errchkjson // a string
		out = raw
	}
	out = postgres.JSONB(bounded(out))
	done := w.s.now()
	s.Output, s.IsError, s.CompletedAt, s.DurationMs = out, isError, &done, done.Sub(s.StartedAt).Milliseconds()
	err := w.tx(ctx, func(tx pgx.Tx) error {
		if started {
			return stepComplete(ctx, tx, w.run.ID, s)
		}
		return stepInsert(ctx, tx, w.run.ID, w.run.ProjectID, s)
	})
	if err != nil {
		return stepRow{}, err
	}
	return s, nil
}

// question returns the answered question of call c, the pending tool
// step index, asking it first (and then waiting: errWaiting). A question
// is used only for the call it was asked for: the latest question of the
// step whose kind, tool and arguments are the call's (providers repeat
// call ids across responses, so the id proves nothing); any other is
// asked again. An open question past its time fails the run.
func (w *worker) question(ctx context.Context, c llm.ToolCall, index int, kind, tool string) (questionRow, error) {
	q, err := questionOfStep(ctx, w.s.cfg.Pool, w.run.ID, index)
	if err != nil {
		return questionRow{}, err
	}
	now := w.s.now()
	asked := questionRow{ID: uuid.Must(uuid.NewV7()), CallID: c.ID, StepIndex: index, Kind: kind, Tool: tool, ExpiresAt: now.Add(w.s.cfg.QuestionTimeout)}
	if kind == kindQuestion {
		asked.Tool, asked.Question = llm.ToolAskUser, askedQuestion(c.Arguments)
	} else {
		asked.Arguments = c.Arguments
		asked.Question = fmt.Sprintf("May the agent run the tool %s with these arguments: %s", tool, compact(c.Arguments))
	}
	switch {
	case q.ID == uuid.Nil || !q.asks(asked):
		return questionRow{}, w.wait(ctx, asked, true)
	case q.Status == questionOpen && !now.Before(q.ExpiresAt):
		return questionRow{}, jobqueue.Permanent(fmt.Errorf("the question was not answered within %s", w.s.cfg.QuestionTimeout))
	case q.Status == questionOpen:
		return questionRow{}, w.wait(ctx, q, false)
	case q.Status == questionAnswered:
		return q, nil
	}
	return questionRow{}, jobqueue.Permanent(fmt.Errorf("the run's question is %s", q.Status))
}

// askedQuestion is the question of an ask_user call: its question
// argument, else its first string argument.
func askedQuestion(args json.RawMessage) string {
	var m map[string]any
	_ = json.Unmarshal(args, &m)
	if q, ok := m["question"].(string); ok && strings.TrimSpace(q) != "" {
		return cut(q, QuestionMax)
	}
	for _, v := range m {
		if q, ok := v.(string); ok && strings.TrimSpace(q) != "" {
			return cut(q, QuestionMax)
		}
	}
	return "(the agent asked without a question)"
}

// cut is text bounded to max characters: cut short, ending with Cut,
// when longer.
func cut(text string, limit int) string {
	if utf8.RuneCountInString(text) <= limit {
		return text
	}
	r := []rune(text)
	return string(r[:limit-utf8.RuneCountInString(Cut)]) + Cut
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// wait commits the run's wait for the answer to q: the question (when
// new), the job back in the queue until the question expires, and, for a
// new question, the agent.question event and a notification to the
// starting user with a link to the run.
func (w *worker) wait(ctx context.Context, q questionRow, ask bool) error {
	user, project := w.run.CreatedBy, w.run.ProjectID
	err := w.tx(ctx, func(tx pgx.Tx) error {
		now := w.s.now()
		if ask {
			// An open question of another call of the step gives way.
			if err := w.s.closeQuestions(ctx, tx, w.run.ID, now); err != nil {
				return err
			}
			if err := questionInsert(ctx, tx, w.run.ID, project, q, now); err != nil {
				return err
			}
		}
		if err := w.s.cfg.Jobs.WaitInTx(ctx, tx, Queue, w.job, q.ExpiresAt); err != nil {
			return err
		}
		if !ask {
			return nil
		}
		data := map[string]any{"runId": w.run.ID, "agentId": w.run.AgentID, "question": q.question()}
		if _, err := events.Publish(ctx, tx, EventQuestion, &project, &user, data, now); err != nil {
			return err
		}
		_, err := w.s.cfg.Notifier.Notify(ctx, tx, user, notification.Params{
			ProjectID: &project, Title: fmt.Sprintf("Agent %s has a question", w.def.Name), Message: cut(q.Question, NotificationMessageMax),
			Severity: "info", Importance: "important", Category: "agents",
			RelatedResourceType: "agent-run", RelatedResourceID: w.run.ID.String(), SourceType: notificationSource, SourceID: w.run.ID.String(),
			ActionURL: fmt.Sprintf("/projects/%s/agent-runs/%s", project, w.run.ID), ActionLabel: "Answer",
			ExpiresAt: &q.ExpiresAt,
		})
		return err
	})
	if err != nil {
		if errors.Is(err, jobqueue.ErrCancelled) {
			return errNotRunning
		}
		return err
	}
	return errWaiting
}

// finish commits the run's answer with its completion.
func (w *worker) finish(ctx context.Context, text string) error {
	err := w.tx(ctx, func(tx pgx.Tx) error {
		if err := runSetOutput(ctx, tx, w.run.ID, text, w.s.now()); err != nil {
			return err
		}
		return w.s.cfg.Jobs.FinishInTx(ctx, tx, Queue, w.job, jobqueue.StatusCompleted)
	})
	if errors.Is(err, jobqueue.ErrCancelled) {
		return errNotRunning
	}
	return err
}
