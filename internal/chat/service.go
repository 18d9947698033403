package chat

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/displayname"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/search"
)

// Searcher runs the project's hybrid search (search.Service).
type Searcher interface {
	Search(ctx context.Context, project uuid.UUID, req search.Request) (search.Response, error)
}

// Graph reads the graph neighbourhood of the objects found (graph.Service).
type Graph interface {
	Neighbourhoods(ctx context.Context, project uuid.UUID, ids []uuid.UUID, per int) (map[uuid.UUID][]graph.Relationship, error)
	ObjectsByID(ctx context.Context, db postgres.DBTX, ids []uuid.UUID) ([]graph.Object, error)
}

// Model is a project's resolved generative model (provider.Handle): its
// calls are paced, recorded in the usage ledger and priced.
type Model interface {
	Chat(ctx context.Context, req llm.ChatRequest) (*llm.ChatResult, error)
	// Cost is the price in USD of usage.
	Cost(u llm.Usage) float64
	// InputTokenLimit is the model's input budget (0: unknown).
	InputTokenLimit() int
	// Model names the model.
	Model() string
}

// Activity removes the users' recent-activity items of deleted sessions
// (activity.Forgetter), in the deleting transaction.
type Activity interface {
	ForgetInTx(ctx context.Context, tx pgx.Tx, project uuid.UUID, ids ...uuid.UUID) error
}

// Agents reads the agents sessions talk to (agent.Service).
type Agents interface {
	// GetAgent is agent id of project; errs.NotFound when project has no
	// such agent.
	GetAgent(ctx context.Context, project, id uuid.UUID) (agent.Agent, error)
}

// Config wires a Service. Pool, Search, Graph, Agents and ModelFunc are
// required.
type Config struct {
	Pool   *pgxpool.Pool
	Search Searcher
	Graph  Graph
	Agents Agents
	// Activity forgets the users' uses of deleted sessions.
	Activity Activity
	// ModelFunc resolves project's generative model: the model named, or
	// the project's default when name is "". A name the project's
	// provider does not offer gives another model (the caller compares
	// Model()). ErrNoProvider when there is none.
	ModelFunc func(ctx context.Context, project uuid.UUID, name string) (Model, error)
	Logger    *slog.Logger
	Now       func() time.Time
}

// Service runs chat sessions.
type Service struct {
	cfg Config
}

// NewService builds the service.
func NewService(c Config) (*Service, error) {
	if c.Pool == nil || c.Search == nil || c.Graph == nil || c.Agents == nil || c.Activity == nil || c.ModelFunc == nil {
		return nil, errors.New("chat: Pool, Search, Graph, Agents, Activity and ModelFunc are required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Service{cfg: c}, nil
}

func newID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

// now is the clock's time as PostgreSQL stores it (microseconds, UTC).
func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }

// SessionProject is the project of session id (the routes' owner).
// Errors: not_found.
func (s *Service) SessionProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return sessionProject(ctx, s.cfg.Pool, id)
}

func checkTitle(title string) (string, error) {
	title = strings.TrimSpace(title)
	if len([]rune(title)) > TitleMax {
		return "", errs.Errorf(errs.Invalid, "title must be at most %d characters", TitleMax)
	}
	if err := displayname.Check("chat session title", title); err != nil {
		return "", err
	}
	return title, nil
}

// noAgent refuses a session's agent id that names no agent of its
// project.
func noAgent(id uuid.UUID) error {
	return errs.Errorf(errs.Invalid, "agentId: no agent with id %s in this project", id)
}

// agentOf reads agent id of project; ok is false when project has none
// (unknown, another project's, deleted).
func (s *Service) agentOf(ctx context.Context, project, id uuid.UUID) (a agent.Agent, ok bool, err error) {
	a, err = s.cfg.Agents.GetAgent(ctx, project, id)
	switch {
	case errs.CodeOf(err) == errs.NotFound:
		return agent.Agent{}, false, nil
	case err != nil:
		return agent.Agent{}, false, fmt.Errorf("read the chat session's agent: %w", err)
	}
	return a, true, nil
}

// insertSession stores a new session; an agent deleted since it was
// checked refuses it as an unknown one.
func insertSession(ctx context.Context, db postgres.DBTX, sess Session) error {
	err := sessionInsert(ctx, db, sess)
	if sess.AgentID != nil && postgres.IsForeignKeyViolation(err, "chat_sessions_agent_id_fkey") {
		return noAgent(*sess.AgentID)
	}
	return err
}

// CreateSession starts a session of user in project, with p's agent when
// set: an agent of project (the caller checked CheckAgentScope). Errors:
// invalid_argument.
func (s *Service) CreateSession(ctx context.Context, project, user uuid.UUID, p CreateParams) (Session, error) {
	title, err := checkTitle(p.Title)
	if err != nil {
		return Session{}, err
	}
	if p.AgentID != nil {
		if _, ok, err := s.agentOf(ctx, project, *p.AgentID); err != nil || !ok {
			return Session{}, cmp.Or(err, noAgent(*p.AgentID))
		}
	}
	now := s.now()
	sess := Session{ID: newID(), ProjectID: project, UserID: user, Title: title, AgentID: p.AgentID, CreatedAt: now, UpdatedAt: now}
	if err := insertSession(ctx, s.cfg.Pool, sess); err != nil {
		return Session{}, err
	}
	return sess, nil
}

// ListSessions lists user's sessions in project, newest first.
func (s *Service) ListSessions(ctx context.Context, project, user uuid.UUID, limit, offset int) ([]Session, int, error) {
	return sessionList(ctx, s.cfg.Pool, project, user, limit, offset)
}

// GetSession returns user's session id in project with its latest
// messages (EmbeddedMessagesMax). Errors: not_found (another user's
// session too).
func (s *Service) GetSession(ctx context.Context, project, user, id uuid.UUID) (SessionWithMessages, error) {
	r, err := sessionGet(ctx, s.cfg.Pool, project, user, id)
	if err != nil {
		return SessionWithMessages{}, err
	}
	total, err := messageCount(ctx, s.cfg.Pool, id)
	if err != nil {
		return SessionWithMessages{}, err
	}
	msgs, err := messagePage(ctx, s.cfg.Pool, id, EmbeddedMessagesMax, max(0, total-EmbeddedMessagesMax))
	if err != nil {
		return SessionWithMessages{}, err
	}
	return r.session().withMessages(msgs, total), nil
}

// ListMessages is a page of the messages of user's session id, oldest
// first, with their number. Errors: not_found.
func (s *Service) ListMessages(ctx context.Context, project, user, id uuid.UUID, limit, offset int) ([]Message, int, error) {
	if _, err := sessionGet(ctx, s.cfg.Pool, project, user, id); err != nil {
		return nil, 0, err
	}
	total, err := messageCount(ctx, s.cfg.Pool, id)
	if err != nil {
		return nil, 0, err
	}
	msgs, err := messagePage(ctx, s.cfg.Pool, id, limit, offset)
	return msgs, total, err
}

// RenameSession sets the title of user's session id. Errors: not_found,
// invalid_argument.
func (s *Service) RenameSession(ctx context.Context, project, user, id uuid.UUID, title string) (Session, error) {
	title, err := checkTitle(title)
	if err != nil {
		return Session{}, err
	}
	r, err := sessionSetTitle(ctx, s.cfg.Pool, project, user, id, title, s.now())
	if err != nil {
		return Session{}, err
	}
	return r.session(), nil
}

// DeleteSession deletes user's session id, its messages and the users'
// recent-activity items of it. Errors: not_found.
func (s *Service) DeleteSession(ctx context.Context, project, user, id uuid.UUID) error {
	return postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if err := sessionDelete(ctx, tx, project, user, id); err != nil {
			return err
		}
		// After the delete: a recording holding the session has committed.
		return s.cfg.Activity.ForgetInTx(ctx, tx, project, id)
	})
}

// HoldSessionInTx checks, in tx, that session id of project is user's,
// and keeps it from being deleted until tx ends (a key-share lock: a
// deletion in progress is waited for, then seen). Errors: not_found.
func (s *Service) HoldSessionInTx(ctx context.Context, tx pgx.Tx, project, user, id uuid.UUID) error {
	return sessionHold(ctx, tx, project, user, id)
}

// SendParams is one turn of a session.
type SendParams struct {
	Content string
	// OnDelta, when set, receives the reply as it is written, in order;
	// the deltas concatenate to the stored content. Its error ends the
	// turn (the client is gone): the reply is then not stored.
	OnDelta func(delta string) error
	// Timing, when set, receives the turn's retrieval time before the
	// first delta.
	Timing *Timing
}

// Timing is how long the parts of a turn took.
type Timing struct {
	// Retrieval is the whole retrieval; Keywords the choice of the
	// keyword query's words (their counts in the project), Search the
	// hybrid search: both parts of it.
	Retrieval, Keywords, Search time.Duration
}

// Turn bounds: a turn runs at most TurnTimeout; its lease on the session
// (turn_until) lasts TurnLease, a little longer, so that it never ends
// while the turn still runs, and a turn whose process died blocks the
// session no longer than that.
const (
	TurnTimeout = 2 * time.Minute
	TurnLease   = TurnTimeout + 15*time.Second
)

// turn is one turn being answered.
type turn struct {
	project, user uuid.UUID
	session       sessionRow
	// fresh: the session is new (SendNew), stored with the question and
	// the answer once the answer is ready.
	fresh bool
	// until is the turn's lease on the session (not fresh).
	until time.Time
	// agent is the session's agent as it is now (nil: a plain chat);
	// model is its model, or the project's default.
	agent    *agent.Agent
	model    Model
	system   string    // the system prompt
	history  []Message // answered messages before the question, after the stored summary
	question Message
	p        SendParams
	// usage and cost of every model call of the turn, and their number.
	usage llm.Usage
	cost  float64
	calls int
}

// begin checks the question, reads the session's agent (agentID; nil for
// none) and resolves the model: the agent's, else the project's default.
// Nothing is stored when any fails. An agent deleted since leaves the
// session a plain chat, but refuses a fresh session (SendNew).
func (s *Service) begin(ctx context.Context, project, user uuid.UUID, agentID *uuid.UUID, fresh bool, p SendParams) (*turn, error) {
	content := strings.TrimSpace(p.Content)
	if content == "" {
		return nil, ErrNoContent
	}
	if n := len([]rune(content)); n > ContentMax {
		// The API's maxLength as well: the console reaches here directly.
		return nil, errs.Errorf(errs.Invalid, "content must be at most %d characters (it has %d)", ContentMax, n)
	}
	t := &turn{project: project, user: user, p: p, fresh: fresh}
	name := ""
	if agentID != nil {
		a, ok, err := s.agentOf(ctx, project, *agentID)
		switch {
		case err != nil:
			return nil, err
		case ok:
			t.agent, name = &a, a.Model
		case fresh:
			return nil, noAgent(*agentID)
		}
	}
	model, err := s.cfg.ModelFunc(ctx, project, name)
	if err != nil {
		return nil, err
	}
	if name != "" && model.Model() != name {
		return nil, errs.Errorf(errs.FailedPrecondition,
			"the agent %q of this chat session uses the model %s, which this project's provider no longer offers: change the agent's model", t.agent.Name, name)
	}
	t.model = model
	t.question = Message{ID: newID(), Role: RoleUser, Content: content, Citations: []Citation{}, CreatedAt: s.now()}
	return t, nil
}

// Send answers content in user's session id: the question is stored at
// once, the answer once complete; one turn at a time per session.
// Errors: not_found, invalid_argument, conflict (a turn is running on the
// session), failed_precondition (no model), rate_limited and bad_gateway
// (the provider).
func (s *Service) Send(ctx context.Context, project, user, id uuid.UUID, p SendParams) (Message, error) {
	sess, err := sessionGet(ctx, s.cfg.Pool, project, user, id)
	if err != nil {
		return Message{}, err
	}
	t, err := s.begin(ctx, project, user, sess.AgentID, false, p)
	if err != nil {
		return Message{}, err
	}
	t.until = t.question.CreatedAt.Add(TurnLease)
	err = postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var err error
		if t.session, err = sessionLock(ctx, tx, project, user, id); err != nil {
			return err
		}
		if t.session.TurnUntil != nil && t.session.TurnUntil.After(t.question.CreatedAt) {
			return ErrTurnRunning
		}
		msgs, err := messagesAfter(ctx, tx, id, t.session.SummaryThrough)
		if err != nil {
			return err
		}
		t.history = answered(msgs)
		if err := messageInsert(ctx, tx, project, id, t.question); err != nil {
			return err
		}
		if t.session.Title == "" {
			if _, err := sessionSetTitle(ctx, tx, project, user, id, titleOf(t.question.Content), t.question.CreatedAt); err != nil {
				return err
			}
		}
		return sessionStartTurn(ctx, tx, id, t.question.CreatedAt, t.until)
	})
	if err != nil {
		return Message{}, err
	}
	reply, err := s.answer(ctx, t)
	if err != nil {
		// The question stays (the client may ask again); the session is free.
		if endErr := sessionEndTurn(context.WithoutCancel(ctx), s.cfg.Pool, id, t.until); endErr != nil {
			s.cfg.Logger.ErrorContext(ctx, "chat: end a failed turn", "session", id, "error", endErr)
		}
		return Message{}, err
	}
	return reply, nil
}

// SendNew starts a session of user in project with content as its first
// question and answers it. The session, the question and the answer are
// stored in one transaction once the answer is ready: a failure leaves no
// session behind. Errors: invalid_argument, failed_precondition,
// rate_limited and bad_gateway.
func (s *Service) SendNew(ctx context.Context, project, user uuid.UUID, c CreateParams, p SendParams) (Session, Message, error) {
	title, err := checkTitle(c.Title)
	if err != nil {
		return Session{}, Message{}, err
	}
	t, err := s.begin(ctx, project, user, c.AgentID, true, p)
	if err != nil {
		return Session{}, Message{}, err
	}
	if title == "" {
		title = titleOf(t.question.Content)
	}
	now := t.question.CreatedAt
	t.session = sessionRow{ID: newID(), ProjectID: project, UserID: user, Title: title, AgentID: c.AgentID, CreatedAt: now, UpdatedAt: now}
	reply, err := s.answer(ctx, t)
	if err != nil {
		return Session{}, Message{}, err
	}
	sess := t.session.session()
	sess.UpdatedAt = reply.CreatedAt
	return sess, reply, nil
}

// answered leaves out of msgs the questions that got no answer (their
// turn failed): the model is not sent them.
func answered(msgs []Message) []Message {
	var out []Message
	for i, m := range msgs {
		if m.Role == RoleUser && (i+1 == len(msgs) || msgs[i+1].Role != RoleAssistant) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// titleOf is a session's default title: the start of its first question,
// its words (displayname.Strip: a word of invisible characters only is
// dropped, leaving no doubled space) joined by single spaces.
func titleOf(content string) string {
	words := strings.Fields(content)
	kept := words[:0]
	for _, w := range words {
		if w = displayname.Strip(w); w != "" {
			kept = append(kept, w)
		}
	}
	content = strings.Join(kept, " ")
	if r := []rune(content); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return content
}

// answer retrieves, summarises the history when needed, asks the model
// and stores its reply.
func (s *Service) answer(ctx context.Context, t *turn) (Message, error) {
	ctx, cancel := context.WithTimeout(ctx, TurnTimeout)
	defer cancel()
	start := time.Now()
	found, err := s.retrieve(ctx, t.project, t.question.Content, t.p.Timing)
	if err != nil {
		return Message{}, modelError(err) // the query's embedding may fail upstream
	}
	if t.p.Timing != nil {
		t.p.Timing.Retrieval = time.Since(start)
	}
	if len(found) == 0 {
		// Nothing to ground an answer on: the model is not asked.
		return s.fixedReply(ctx, t, noSourcesAnswer)
	}
	limit := int64(t.model.InputTokenLimit())
	if limit <= 0 {
		limit = InputBudgetDefault
	}
	input := limit - ReplyTokens
	t.system = systemPromptOf(t.agent, input/SourceShareMin)
	msgs, err := s.history(ctx, t, limit/4) // the system prompt first
	if err != nil {
		return Message{}, err
	}
	msgs, question := fit(msgs, t.question.Content, input-input/SourceShareMin)
	var used int64
	for _, m := range msgs {
		used += llm.EstimateTokens(m.Text)
	}
	sources := pack(found, input-used-llm.EstimateTokens(questionPrompt(nil, question)))
	if len(sources) == 0 {
		// Found, but none fits the model's budget: said, not invented.
		return s.fixedReply(ctx, t, noRoomAnswer)
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Text: questionPrompt(sources, question)})

	filter := &markerFilter{sources: len(sources)}
	var content strings.Builder
	emit := func(text string) error {
		if text == "" {
			return nil
		}
		content.WriteString(text)
		if t.p.OnDelta != nil {
			return t.p.OnDelta(text)
		}
		return nil
	}
	res, err := t.model.Chat(ctx, llm.ChatRequest{
		Purpose: llm.PurposeGroundedAnswer, Messages: msgs, MaxOutputTokens: ReplyTokens,
		OnDelta: func(d string) error { return emit(filter.feed(d)) },
	})
	if err != nil {
		return Message{}, modelError(err)
	}
	if err := emit(filter.flush()); err != nil {
		return Message{}, err
	}
	t.add(res.Usage)
	reply := Message{ID: newID(), Role: RoleAssistant, Content: content.String()} // what the deltas concatenate to
	reply.Citations = citations(reply.Content, sources)
	model := res.Model
	if model == "" {
		model = t.model.Model()
	}
	reply.Model = &model
	return s.store(ctx, t, reply)
}

// fixedReply answers text without asking the model for it (its model is
// the summary's, when the turn made one).
func (s *Service) fixedReply(ctx context.Context, t *turn, text string) (Message, error) {
	reply := Message{ID: newID(), Role: RoleAssistant, Content: text, Citations: []Citation{}}
	if t.calls > 0 {
		model := t.model.Model()
		reply.Model = &model
	}
	if t.p.OnDelta != nil {
		if err := t.p.OnDelta(text); err != nil {
			return Message{}, err
		}
	}
	return s.store(ctx, t, reply)
}

// fit makes the system messages, history and question fit in budget
// tokens, leaving the rest of the input to the sources: the history goes
// first, oldest first (the summary is the oldest), then the question is
// cut (its start kept). It returns the messages and the question to send.
func fit(msgs []llm.Message, question string, budget int64) ([]llm.Message, string) {
	size := func() int64 {
		n := llm.EstimateTokens(questionPrompt(nil, question))
		for _, m := range msgs {
			n += llm.EstimateTokens(m.Text)
		}
		return n
	}
	for len(msgs) > 1 && size() > budget {
		msgs = slices.Delete(msgs, 1, 2) // after the system prompt: the summary, then the oldest message
	}
	if over := size() - budget; over > 0 {
		r := []rune(question)
		keep := max(0, len(r)-int(4*over)-1)
		question = string(r[:keep]) + "…"
	}
	return msgs, question
}

func (t *turn) add(u llm.Usage) {
	t.usage.InputText += u.InputText + u.InputImage + u.InputVideo + u.InputAudio
	t.usage.Output += u.Output
	t.cost += t.model.Cost(u)
	t.calls++
}

// store writes the reply with the turn's usage and ends the turn; for a
// fresh session, the session and the question with it.
func (s *Service) store(ctx context.Context, t *turn, reply Message) (Message, error) {
	reply.InputTokens, reply.OutputTokens, reply.CostUSD = t.usage.InputText, t.usage.Output, t.cost
	reply.CreatedAt = s.now()
	if !reply.CreatedAt.After(t.question.CreatedAt) {
		reply.CreatedAt = t.question.CreatedAt.Add(time.Microsecond) // listed after its question
	}
	id := t.session.ID
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if t.fresh {
			if err := insertSession(ctx, tx, t.session.session()); err != nil {
				return err
			}
			if err := messageInsert(ctx, tx, t.project, id, t.question); err != nil {
				return err
			}
		} else if _, err := sessionLock(ctx, tx, t.project, t.user, id); err != nil {
			return err // deleted meanwhile
		}
		if err := messageInsert(ctx, tx, t.project, id, reply); err != nil {
			return err
		}
		if t.fresh {
			return sessionTouch(ctx, tx, id, reply.CreatedAt)
		}
		if err := sessionEndTurn(ctx, tx, id, t.until); err != nil {
			return err
		}
		return sessionTouch(ctx, tx, id, reply.CreatedAt)
	})
	if err != nil {
		return Message{}, err
	}
	return reply, nil
}

// history is the conversation before the question as model messages: the
// system prompt (t.system), the stored summary, and the messages after it. When they
// exceed budget tokens, the whole history is summarised (one model call)
// and the summary stored on the session.
func (s *Service) history(ctx context.Context, t *turn, budget int64) ([]llm.Message, error) {
	msgs := []llm.Message{{Role: llm.RoleSystem, Text: t.system}}
	summary := ""
	if t.session.Summary != nil {
		summary = *t.session.Summary
	}
	var size int64
	for _, m := range t.history {
		size += llm.EstimateTokens(m.Content)
	}
	if size+llm.EstimateTokens(summary) > budget && len(t.history) > 0 {
		var err error
		if summary, err = s.summarise(ctx, t, summary, budget); err != nil {
			return nil, err
		}
		t.history = nil
	}
	if summary != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Text: "Summary of the earlier conversation:\n" + summary})
	}
	for _, m := range t.history {
		role := llm.RoleUser
		if m.Role == RoleAssistant {
			role = llm.RoleAssistant
		}
		msgs = append(msgs, llm.Message{Role: role, Text: stripMarkers(m.Content)})
	}
	return msgs, nil
}

// summaryInput is the transcript a summary is made of: the earlier
// summary and the messages, within 2×budget tokens. Every message is in
// it: one larger than its share (the bound split between the messages, the
// smaller ones keeping their whole size) is cut to its share, its start
// kept.
func summaryInput(earlier string, history []Message, budget int64) string {
	paras := make([]string, 0, len(history)+1)
	if earlier != "" {
		paras = append(paras, "summary: "+earlier)
	}
	for _, m := range history {
		paras = append(paras, m.Role+": "+stripMarkers(m.Content))
	}
	sizes := make([]int64, len(paras))
	for i, p := range paras {
		sizes[i] = llm.EstimateTokens(p)
	}
	share := fairShare(sizes, 2*budget)
	for i, p := range paras {
		if sizes[i] > share {
			paras[i] = cutTokens(p, share)
		}
	}
	return strings.Join(paras, "\n\n")
}

// fairShare is the largest share s such that the sizes, each cut to s,
// sum to at most total (every size when they fit).
func fairShare(sizes []int64, total int64) int64 {
	sorted := slices.Clone(sizes)
	slices.Sort(sorted)
	left := total
	for i, n := range sorted {
		share := left / int64(len(sorted)-i)
		if n > share {
			return share
		}
		left -= n
	}
	return math.MaxInt64
}

// summarise asks the model for a summary of the earlier summary and the
// history, and stores it on the session as covering the history's last
// message.
func (s *Service) summarise(ctx context.Context, t *turn, earlier string, budget int64) (string, error) {
	res, err := t.model.Chat(ctx, llm.ChatRequest{
		Purpose: llm.PurposeSummary, MaxOutputTokens: SummaryTokens,
		Messages: []llm.Message{{Role: llm.RoleSystem, Text: summaryPrompt}, {Role: llm.RoleUser, Text: summaryInput(earlier, t.history, budget)}},
	})
	if err != nil {
		return "", modelError(err)
	}
	t.add(res.Usage)
	summary := strings.TrimSpace(res.Text)
	if err := sessionSetSummary(ctx, s.cfg.Pool, t.session.ID, summary, t.history[len(t.history)-1].ID); err != nil {
		return "", err
	}
	return summary, nil
}

// modelError turns a provider failure (the model's, or the embedding of
// the question) into the API's vocabulary: the provider's rate limit, or
// a failed upstream call (its message is safe: llm errors carry no key
// material).
func modelError(err error) error {
	var le *llm.Error
	switch {
	case errors.As(err, &le) && le.Kind == llm.ErrorRateLimit:
		return errs.Errorf(errs.RateLimited, "the language model is rate limited: %s", le.Message)
	case errors.As(err, &le):
		return errs.Errorf(errs.BadGateway, "the language model failed: %s", le.Message)
	case errs.CodeOf(err) != errs.Internal:
		return err
	}
	return fmt.Errorf("chat model: %w", err)
}
