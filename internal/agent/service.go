package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/displayname"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Model is a resolved generative model (provider.Handle): every call is
// paced and recorded in the usage ledger.
type Model interface {
	Model() string
	Chat(ctx context.Context, req llm.ChatRequest) (*llm.ChatResult, error)
	Cost(u llm.Usage) float64
}

// Models resolves the model a project's agent uses: name, or the
// project's default generative model when name is empty. A name the
// project's provider does not have gives another model (the caller
// compares Model()); no model at all is errs.FailedPrecondition.
type Models func(ctx context.Context, project uuid.UUID, name string) (Model, error)

// Principals rebuilds a user's current rights (tenancy.Directory).
type Principals interface {
	// PrincipalOfUser is user with their memberships and superadmin grant
	// as of now, and no scopes; a deleted user is errs.Unauthenticated.
	PrincipalOfUser(ctx context.Context, user uuid.UUID) (*auth.Principal, error)
	// ProjectOrg is the organization of a live project (errs.NotFound
	// otherwise).
	ProjectOrg(ctx context.Context, project uuid.UUID) (uuid.UUID, error)
}

// Activity removes the users' recent-activity items of deleted agents
// (activity.Forgetter), in the deleting transaction.
type Activity interface {
	ForgetInTx(ctx context.Context, tx pgx.Tx, project uuid.UUID, ids ...uuid.UUID) error
}

// Notifier notifies a user (notification.Service).
type Notifier interface {
	Notify(ctx context.Context, tx pgx.Tx, user uuid.UUID, p notification.Params) (notification.Notification, error)
	// ExpireSource expires the notifications source raised (a run's
	// question, once closed).
	ExpireSource(ctx context.Context, tx pgx.Tx, sourceType, sourceID string) error
}

// Config configures a Service.
type Config struct {
	Pool *pgxpool.Pool
	Jobs *jobqueue.Client
	// Toolbox gives runs their tools; nil: only ask_user.
	Toolbox Toolbox
	// Integrations checks an agent's trigger integration; nil: agents
	// cannot have one.
	Integrations Integrations
	Models       Models
	Principals   Principals
	Notifier     Notifier
	// Activity forgets the users' uses of deleted agents.
	Activity Activity
	// QuestionTimeout is how long a question waits for its answer
	// (QuestionTimeoutDefault when 0).
	QuestionTimeout time.Duration
	// Backoff and Lease of the queue (jobqueue defaults when zero).
	Backoff func(retry int) time.Duration
	Lease   time.Duration
	Logger  *slog.Logger
	Now     func() time.Time
}

// Service is the agents domain.
type Service struct {
	cfg Config
}

// NewService returns the agents service.
func NewService(c Config) (*Service, error) {
	if c.Pool == nil || c.Jobs == nil || c.Models == nil || c.Principals == nil || c.Notifier == nil || c.Activity == nil {
		return nil, errors.New("agent: incomplete configuration")
	}
	if c.QuestionTimeout <= 0 {
		c.QuestionTimeout = QuestionTimeoutDefault
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Service{cfg: c}, nil
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// AddQueue registers the agent_run queue and its worker.
func (s *Service) AddQueue(concurrency, projectMax int) error {
	return s.cfg.Jobs.AddQueue(jobqueue.QueueConfig{
		Name: Queue, Table: "agent_runs", Concurrency: concurrency, BatchSize: 1, ProjectMax: projectMax,
		Handler: jobqueue.EachFunc(s.work), BackoffFunc: s.cfg.Backoff, OutcomeFunc: s.outcomes, Lease: s.cfg.Lease, AnnounceStarted: true,
	})
}

// AgentProject is the project of agent id (auth.Owner).
func (s *Service) AgentProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return agentProject(ctx, s.cfg.Pool, id)
}

// RunProject is the project of run id (auth.Owner). Whose run it is is
// decided by the run's services: another user's run is not found.
func (s *Service) RunProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return runProject(ctx, s.cfg.Pool, id)
}

// CreateAgent defines an agent in project. Its tools must be tools p may
// use there, and its model one the project has. Errors: invalid_argument,
// conflict (the name is taken).
func (s *Service) CreateAgent(ctx context.Context, p *auth.Principal, project uuid.UUID, in CreateParams) (Agent, error) {
	now := s.now()
	a := Agent{
		ID: uuid.Must(uuid.NewV7()), ProjectID: project, Name: strings.TrimSpace(in.Name), Description: in.Description,
		Instructions: in.Instructions, Model: strings.TrimSpace(in.Model), Tools: in.Tools, MaxSteps: in.MaxSteps,
		RequireApprovalFor: in.RequireApprovalFor, CreatedAt: now, UpdatedAt: now,
	}
	if p != nil && p.UserID != uuid.Nil {
		a.CreatedBy = &p.UserID
	}
	if a.MaxSteps == 0 {
		a.MaxSteps = MaxStepsDefault
	}
	a.Schedule, a.TriggerIntegrationID = strings.TrimSpace(in.Schedule), in.TriggerIntegrationID
	if err := check(&a, true); err != nil {
		return Agent{}, err
	}
	if err := s.checkTools(ctx, p, a.ProjectID, a.Tools); err != nil {
		return Agent{}, err
	}
	if err := s.checkModel(ctx, &a); err != nil {
		return Agent{}, err
	}
	if err := s.checkTriggers(ctx, &a, true, true); err != nil {
		return Agent{}, err
	}
	own(&a, p)
	if err := agentInsert(ctx, s.cfg.Pool, a); err != nil {
		return Agent{}, err
	}
	return a, nil
}

// GetAgent returns an agent of project. Errors: not_found.
func (s *Service) GetAgent(ctx context.Context, project, id uuid.UUID) (Agent, error) {
	return agentGet(ctx, s.cfg.Pool, project, id, false)
}

// ListAgents lists project's agents, newest first.
func (s *Service) ListAgents(ctx context.Context, project uuid.UUID, limit, offset int) ([]Agent, int, error) {
	return agentList(ctx, s.cfg.Pool, project, limit, offset)
}

// ListNames lists the ids and names of project's agents by name, at
// most limit, with their number (a choice of agents: no definitions read).
func (s *Service) ListNames(ctx context.Context, project uuid.UUID, limit int) ([]Named, int, error) {
	return agentNames(ctx, s.cfg.Pool, project, limit)
}

// Names returns the name of each of ids that is an agent of project, in
// one query; ids of no agent of project (deleted ones too) are absent.
func (s *Service) Names(ctx context.Context, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	return agentNamesOf(ctx, s.cfg.Pool, project, ids)
}

// UpdateAgent changes an agent; the tools it adds and a new model are
// checked as for CreateAgent (what it leaves as it was is not checked
// again). An update that changes the tools, instructions, schedule or
// trigger integration makes p the agent's owner (Agent.OwnerID). Runs in
// flight keep the definition they started with.
// Errors: not_found, invalid_argument, conflict.
func (s *Service) UpdateAgent(ctx context.Context, p *auth.Principal, project, id uuid.UUID, u Update) (Agent, error) {
	var a Agent
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var err error
		if a, err = agentGet(ctx, tx, project, id, true); err != nil {
			return err
		}
		if u.UnchangedSince != nil && !a.UpdatedAt.Equal(*u.UnchangedSince) {
			return ErrChanged
		}
		was := a
		set(&a.Name, u.Name, strings.TrimSpace)
		set(&a.Description, u.Description, nil)
		set(&a.Instructions, u.Instructions, nil)
		set(&a.Model, u.Model, strings.TrimSpace)
		set(&a.Tools, u.Tools, nil)
		set(&a.RequireApprovalFor, u.RequireApprovalFor, nil)
		set(&a.MaxSteps, u.MaxSteps, nil)
		set(&a.Schedule, u.Schedule, strings.TrimSpace)
		if u.TriggerIntegrationID != nil {
			a.TriggerIntegrationID = u.TriggerIntegrationID
			if *u.TriggerIntegrationID == uuid.Nil {
				a.TriggerIntegrationID = nil
			}
		}
		if err := check(&a, a.Name != was.Name); err != nil {
			return err
		}
		// Only what the update changes is checked against p: the tools
		// it adds, the model when it is another.
		var added []string
		for _, t := range a.Tools {
			if !slices.Contains(was.Tools, t) {
				added = append(added, t)
			}
		}
		if err := s.checkTools(ctx, p, a.ProjectID, added); err != nil {
			return err
		}
		if a.Model != was.Model {
			if err := s.checkModel(ctx, &a); err != nil {
				return err
			}
		}
		rescheduled, retriggered := a.Schedule != was.Schedule, !equalID(a.TriggerIntegrationID, was.TriggerIntegrationID)
		if err := s.checkTriggers(ctx, &a, rescheduled, retriggered); err != nil {
			return err
		}
		if rescheduled || retriggered || a.Instructions != was.Instructions || !slices.Equal(a.Tools, was.Tools) {
			own(&a, p)
		}
		a.UpdatedAt = s.now()
		return agentUpdate(ctx, tx, a)
	})
	if err != nil {
		return Agent{}, err
	}
	return a, nil
}

// set applies an optional field of a partial update.
func set[T any](dst *T, v *T, norm func(T) T) {
	if v == nil {
		return
	}
	*dst = *v
	if norm != nil {
		*dst = norm(*dst)
	}
}

// DeleteAgent deletes an agent, its runs and the users' recent-activity
// items of it; its queued, waiting and running runs are cancelled first
// (a running one stops within a second). Errors: not_found.
func (s *Service) DeleteAgent(ctx context.Context, project, id uuid.UUID) error {
	return postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := agentGet(ctx, tx, project, id, true); err != nil {
			return err
		}
		cancelled, err := s.cfg.Jobs.CancelWhere(ctx, tx, Queue, jobqueue.Where{ProjectID: &project, Column: "agent_id", Equals: id})
		if err != nil {
			return err
		}
		runs := make([]runRow, len(cancelled))
		for i, ch := range cancelled {
			if runs[i], err = s.closeCancelled(ctx, tx, ch); err != nil {
				return err
			}
		}
		if err := agentDelete(ctx, tx, project, id); err != nil {
			return err
		}
		// After the delete: a recording holding the agent has committed.
		if err := s.cfg.Activity.ForgetInTx(ctx, tx, project, id); err != nil {
			return err
		}
		// The events last: the publish lock is taken last.
		for i, ch := range cancelled {
			if err := s.publishCancelled(ctx, tx, runs[i], ch); err != nil {
				return err
			}
		}
		return nil
	})
}

// HoldInTx checks, in tx, that agent id of project exists, and keeps it
// from being deleted until tx ends (a key-share lock: a deletion in
// progress is waited for, then seen). Errors: not_found.
func (s *Service) HoldInTx(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error {
	return agentHold(ctx, tx, project, id)
}

// own makes p the owner of a (Agent.OwnerID): the user whom the runs
// without a caller act as, with the scopes of the credential p holds.
func own(a *Agent, p *auth.Principal) {
	if p == nil || p.UserID == uuid.Nil {
		return
	}
	a.OwnerID, a.OwnerScopes = &p.UserID, p.Scopes.Names()
}

// equalID reports whether two optional ids are the same.
func equalID(a, b *uuid.UUID) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// check validates a definition and normalises its lists: name, sizes,
// maxSteps, requireApprovalFor (among the tools). The name's characters
// are checked when it is new (created or renamed: nameChanged): an agent
// stored before names refused control characters stays updatable.
func check(a *Agent, nameChanged bool) error {
	switch {
	case a.Name == "" || utf8.RuneCountInString(a.Name) > 200:
		return errs.New(errs.Invalid, "name must be 1 to 200 characters")
	case strings.TrimSpace(a.Instructions) == "":
		return errs.New(errs.Invalid, "instructions must not be empty")
	case a.MaxSteps < 1 || a.MaxSteps > MaxStepsMax:
		return errs.Errorf(errs.Invalid, "maxSteps must be between 1 and %d", MaxStepsMax)
	case len(a.Tools) > ToolsMax:
		return errs.Errorf(errs.Invalid, "tools must name at most %d tools", ToolsMax)
	case len(a.RequireApprovalFor) > ToolsMax:
		return errs.Errorf(errs.Invalid, "requireApprovalFor must name at most %d tools", ToolsMax)
	}
	if nameChanged {
		if err := displayname.Check("agent name", a.Name); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name, value string
		most        int
	}{{"description", a.Description, DescriptionMax}, {"instructions", a.Instructions, InstructionsMax}, {"model", a.Model, ModelMax}} {
		if n := utf8.RuneCountInString(f.value); n > f.most {
			return errs.Errorf(errs.Invalid, "%s must be at most %d characters (it has %d)", f.name, f.most, n)
		}
	}
	a.Tools = dedupe(a.Tools)
	a.RequireApprovalFor = dedupe(a.RequireApprovalFor)
	for _, t := range a.RequireApprovalFor {
		if !slices.Contains(a.Tools, t) || t == llm.ToolAskUser {
			return errs.Errorf(errs.Invalid, "requireApprovalFor: %s is not one of the agent's tools", errs.Quoted(t))
		}
	}
	return nil
}

// checkTools checks that p may use each of tools in project (ask_user
// is every run's).
func (s *Service) checkTools(ctx context.Context, p *auth.Principal, project uuid.UUID, tools []string) error {
	available := map[string]bool{llm.ToolAskUser: true}
	if s.cfg.Toolbox != nil && len(tools) > 0 {
		list, err := s.cfg.Toolbox.Tools(ctx, p, project)
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		for _, t := range list {
			available[t.Name] = true
		}
	}
	for _, t := range tools {
		if !available[t] {
			return errs.Errorf(errs.Invalid, "tools: %s is not a tool you may use in this project (unknown, disabled, or it needs a scope or role you lack)", errs.Quoted(t))
		}
	}
	return nil
}

// checkModel checks that a's model, when it names one, is one the
// project's provider offers.
func (s *Service) checkModel(ctx context.Context, a *Agent) error {
	if a.Model == "" {
		return nil
	}
	m, err := s.cfg.Models(ctx, a.ProjectID, a.Model)
	if err != nil {
		return fmt.Errorf("resolve model: %w", err)
	}
	if m.Model() != a.Model {
		return errs.Errorf(errs.Invalid, "model: %q is not a model this project's provider offers (it would use %s)", a.Model, m.Model())
	}
	return nil
}

// dedupe drops repeated and empty names, keeping the first order; never nil.
func dedupe(names []string) []string {
	out := []string{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// StartRun queues a run of agent id with input, as p (its user and the
// scopes of its credential). Errors: not_found, invalid_argument.
func (s *Service) StartRun(ctx context.Context, p *auth.Principal, project, id uuid.UUID, input string) (Run, error) {
	if strings.TrimSpace(input) == "" {
		return Run{}, errs.New(errs.Invalid, "input must not be empty")
	}
	if n := utf8.RuneCountInString(input); n > InputMax {
		return Run{}, errs.Errorf(errs.Invalid, "input must be at most %d characters (it has %d)", InputMax, n)
	}
	var r runRow
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		a, err := agentGet(ctx, tx, project, id, false)
		if err != nil {
			return err
		}
		r, err = s.startInTx(ctx, tx, a, p.UserID, p.Scopes.Names(), TriggerManual, input)
		return err
	})
	if err != nil {
		return Run{}, err
	}
	return r.run(), nil
}

// startInTx queues, in tx, a run of a with input as user with scopes, and
// publishes its status.
func (s *Service) startInTx(ctx context.Context, tx pgx.Tx, a Agent, user uuid.UUID, scopes []string, trigger, input string) (runRow, error) {
	v := runInsertValues{
		ID: uuid.Must(uuid.NewV7()), ProjectID: a.ProjectID, AgentID: a.ID, CreatedBy: user, Scopes: scopes,
		Trigger: trigger, Input: input, Now: s.now(),
		Definition: definition{
			Name: a.Name, Instructions: a.Instructions, Model: a.Model, Tools: a.Tools, MaxSteps: a.MaxSteps,
			RequireApprovalFor: a.RequireApprovalFor,
		},
	}
	if err := runInsert(ctx, tx, v); err != nil {
		return runRow{}, err
	}
	if err := jobqueue.Notify(ctx, tx, Queue); err != nil {
		return runRow{}, err
	}
	r, err := runByID(ctx, tx, v.ID)
	if err != nil {
		return runRow{}, err
	}
	return r, s.publishStatus(ctx, tx, r)
}

// GetRun returns a run of project started by user, with its steps and
// its open question. Errors: not_found (also another user's run).
func (s *Service) GetRun(ctx context.Context, project, user, id uuid.UUID) (Run, error) {
	r, err := runOf(ctx, s.cfg.Pool, project, user, id, false)
	if err != nil {
		return Run{}, err
	}
	return s.full(ctx, s.cfg.Pool, r)
}

// full is r with its completed steps and its open question.
func (s *Service) full(ctx context.Context, db postgres.DBTX, r runRow) (Run, error) {
	out := r.run()
	steps, err := stepsOf(ctx, db, r.ID)
	if err != nil {
		return Run{}, err
	}
	def, err := r.def()
	if err != nil {
		return Run{}, err
	}
	for _, st := range steps {
		if st.CompletedAt != nil {
			out.Steps = append(out.Steps, st.step(def))
		}
	}
	if r.Status == StatusWaitingForInput {
		q, err := questionOpenOf(ctx, db, r.ID)
		if err != nil {
			return Run{}, err
		}
		if q.ID != uuid.Nil {
			out.Question = q.question()
		}
	}
	return out, nil
}

// ListRuns lists the runs of agent id that user started, newest first
// (without their steps). Errors: not_found (the agent).
func (s *Service) ListRuns(ctx context.Context, project, user, id uuid.UUID, limit, offset int) ([]Run, int, error) {
	if _, err := agentGet(ctx, s.cfg.Pool, project, id, false); err != nil {
		return nil, 0, err
	}
	rows, total, err := runList(ctx, s.cfg.Pool, project, id, user, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = r.run()
	}
	return out, total, nil
}

// CancelRun cancels a run of user that has not ended, whatever its status
// (queued, running, waiting for input); a running one stops within a
// second. Errors: not_found, failed_precondition (the run ended).
func (s *Service) CancelRun(ctx context.Context, project, user, id uuid.UUID) (Run, error) {
	var out Run
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := runOf(ctx, tx, project, user, id, false); err != nil {
			return err
		}
		ch, err := s.cfg.Jobs.Cancel(ctx, tx, Queue, id)
		if err != nil {
			if errs.CodeOf(err) != errs.FailedPrecondition {
				return err
			}
			// Read after the cancel: the run may have ended while it
			// waited for it.
			r, err := runByID(ctx, tx, id)
			if err != nil {
				return err
			}
			return errs.Errorf(errs.FailedPrecondition, "agent run %s is %s; only a run that has not ended can be cancelled", id, r.Status)
		}
		r, err := s.closeCancelled(ctx, tx, ch)
		if err != nil {
			return err
		}
		if err := s.publishCancelled(ctx, tx, r, ch); err != nil {
			return err
		}
		out, err = s.full(ctx, tx, r)
		return err
	})
	return out, err
}

// AnswerRun answers the open question of a run of user and queues the run
// to go on: a question takes Answer, an approval Approve. Errors:
// not_found, invalid_argument (the wrong kind of answer), failed_precondition
// (the run is not waiting for input), conflict (the question expired: it
// is marked expired, and the run fails when a worker next takes it).
func (s *Service) AnswerRun(ctx context.Context, project, user, id uuid.UUID, a Answer) (Run, error) {
	if a.Answer != nil {
		if n := utf8.RuneCountInString(*a.Answer); n > InputMax {
			return Run{}, errs.Errorf(errs.Invalid, "answer must be at most %d characters (it has %d)", InputMax, n)
		}
	}
	var out Run
	var late error
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := runOf(ctx, tx, project, user, id, true); err != nil {
			return err
		}
		// Read again once locked: the locking statement's status comes
		// from its snapshot, taken before it waited for an answer
		// given at the same time.
		r, err := runByID(ctx, tx, id)
		if err != nil {
			return err
		}
		q, err := questionOpenOf(ctx, tx, id)
		if err != nil {
			return err
		}
		if r.JobStatus != string(jobqueue.StatusQueued) || q.ID == uuid.Nil {
			return errs.Errorf(errs.FailedPrecondition,
				"agent run %s is %s and has no open question (answered already, or the run ended); only a run waiting for input can be answered", id, r.Status)
		}
		switch q.Kind {
		case kindQuestion:
			if a.Answer == nil || strings.TrimSpace(*a.Answer) == "" || a.Approve != nil {
				return errs.New(errs.Invalid, "the run asks a question: answer it with a non-empty answer (not approve)")
			}
		case kindApproval:
			if a.Approve == nil || a.Answer != nil {
				return errs.New(errs.Invalid, "the run asks for approval to run a tool: answer it with approve true or false")
			}
		}
		now := s.now()
		if !now.Before(q.ExpiresAt) {
			// Too late, whether or not a worker has seen it yet: the
			// question expires now (the run fails when next claimed).
			late = errs.Errorf(errs.Conflict, "the question of agent run %s expired at %s", id, q.ExpiresAt.Format(time.RFC3339))
			return s.closeQuestions(ctx, tx, id, now)
		}
		if err := questionAnswer(ctx, tx, q.ID, a, user, now); err != nil {
			return err
		}
		if err := s.cfg.Notifier.ExpireSource(ctx, tx, notificationSource, id.String()); err != nil {
			return err
		}
		if _, err := s.cfg.Jobs.Wake(ctx, tx, Queue, id); err != nil {
			return err
		}
		if r, err = runByID(ctx, tx, id); err != nil {
			return err
		}
		if err := s.publishStatus(ctx, tx, r); err != nil {
			return err
		}
		out, err = s.full(ctx, tx, r)
		return err
	})
	if err == nil && late != nil {
		return Run{}, late
	}
	return out, err
}

// closeCancelled closes, in tx, the open question of a cancelled run (ch)
// and returns the run.
func (s *Service) closeCancelled(ctx context.Context, tx pgx.Tx, ch jobqueue.Changed) (runRow, error) {
	if err := s.closeQuestions(ctx, tx, ch.ID, ch.UpdatedAt); err != nil {
		return runRow{}, err
	}
	return runByID(ctx, tx, ch.ID)
}

// publishCancelled publishes, in tx, the status (cancelled) and
// job.completed of run r, cancelled by ch.
func (s *Service) publishCancelled(ctx context.Context, tx pgx.Tx, r runRow, ch jobqueue.Changed) error {
	if err := s.publishStatus(ctx, tx, r); err != nil {
		return err
	}
	o := jobqueue.Outcome{Job: jobqueue.Job{ID: ch.ID, ProjectID: &r.ProjectID}, Status: jobqueue.StatusCancelled}
	return o.PublishCompleted(ctx, tx, Queue, ch.UpdatedAt)
}

// closeQuestions ends the open question of run (questionsClose) and
// expires its notification.
func (s *Service) closeQuestions(ctx context.Context, tx pgx.Tx, run uuid.UUID, now time.Time) error {
	if err := questionsClose(ctx, tx, run, now); err != nil {
		return err
	}
	return s.cfg.Notifier.ExpireSource(ctx, tx, notificationSource, run.String())
}

// statusEvent is the data of agent_run.status.
type statusEvent struct {
	RunID   uuid.UUID `json:"runId"`
	AgentID uuid.UUID `json:"agentId"`
	Status  string    `json:"status"`
	Error   string    `json:"error,omitempty"`
}

// publishStatus publishes r's status to the project's members (the
// starting user among them), in tx.
func (s *Service) publishStatus(ctx context.Context, tx pgx.Tx, r runRow) error {
	_, err := events.Publish(ctx, tx, EventRunStatus, &r.ProjectID, nil,
		statusEvent{RunID: r.ID, AgentID: r.AgentID, Status: r.Status, Error: r.Error}, s.now())
	return err
}

// outcomes is the queue's OutcomeFunc: in the transaction that records an
// attempt's outcome (the worker's FinishInTx and WaitInTx, the engine's
// failures and retries, the reaper), it closes the open question of a run
// that ended and publishes the run's new status, and job.completed for a
// run that ended.
func (s *Service) outcomes(ctx context.Context, tx pgx.Tx, outs []jobqueue.Outcome) error {
	now := s.now()
	for _, o := range outs {
		if o.Status.Final() {
			if err := s.closeQuestions(ctx, tx, o.Job.ID, now); err != nil {
				return err
			}
		}
		r, err := runByID(ctx, tx, o.Job.ID)
		if err != nil {
			return err
		}
		if err := s.publishStatus(ctx, tx, r); err != nil {
			return err
		}
		if err := o.PublishCompleted(ctx, tx, Queue, now); err != nil {
			return err
		}
	}
	return nil
}
