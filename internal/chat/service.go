package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
	ListObjectRelationships(ctx context.Context, project, id uuid.UUID, d graph.Direction, typ string, limit, offset int) ([]graph.Relationship, int, error)
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

// Config wires a Service. Pool, Search, Graph and ModelFunc are required.
type Config struct {
	Pool   *pgxpool.Pool
	Search Searcher
	Graph  Graph
	// ModelFunc resolves project's generative model; ErrNoProvider when
	// there is none.
	ModelFunc func(ctx context.Context, project uuid.UUID) (Model, error)
	Logger    *slog.Logger
	Now       func() time.Time
}

// Service runs chat sessions.
type Service struct {
	cfg Config
}

// NewService builds the service.
func NewService(c Config) (*Service, error) {
	if c.Pool == nil || c.Search == nil || c.Graph == nil || c.ModelFunc == nil {
		return nil, errors.New("chat: Pool, Search, Graph and ModelFunc are required")
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
	return title, nil
}

// CreateSession starts a session of user in project. Errors:
// invalid_argument.
func (s *Service) CreateSession(ctx context.Context, project, user uuid.UUID, p CreateParams) (Session, error) {
	title, err := checkTitle(p.Title)
	if err != nil {
		return Session{}, err
	}
	now := s.now()
	sess := Session{ID: newID(), ProjectID: project, UserID: user, Title: title, AgentID: p.AgentID, CreatedAt: now, UpdatedAt: now}
	if err := sessionInsert(ctx, s.cfg.Pool, sess); err != nil {
		return Session{}, err
	}
	return sess, nil
}

// ListSessions lists user's sessions in project, newest first.
func (s *Service) ListSessions(ctx context.Context, project, user uuid.UUID, limit, offset int) ([]Session, int, error) {
	return sessionList(ctx, s.cfg.Pool, project, user, limit, offset)
}

// GetSession returns user's session id in project with its messages.
// Errors: not_found (another user's session too).
func (s *Service) GetSession(ctx context.Context, project, user, id uuid.UUID) (SessionWithMessages, error) {
	r, err := sessionGet(ctx, s.cfg.Pool, project, user, id)
	if err != nil {
		return SessionWithMessages{}, err
	}
	msgs, err := messageList(ctx, s.cfg.Pool, id)
	if err != nil {
		return SessionWithMessages{}, err
	}
	return r.session().withMessages(msgs), nil
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

// DeleteSession deletes user's session id and its messages. Errors:
// not_found.
func (s *Service) DeleteSession(ctx context.Context, project, user, id uuid.UUID) error {
	return sessionDelete(ctx, s.cfg.Pool, project, user, id)
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
	// Retrieval is the whole retrieval; Search its hybrid search.
	Retrieval, Search time.Duration
}

// turn is one turn being answered.
type turn struct {
	project, user uuid.UUID
	session       sessionRow
	history       []Message // before the question, after the stored summary
	question      Message
	p             SendParams
	// usage and cost of every model call of the turn.
	usage llm.Usage
	cost  float64
}

// Send answers content in user's session id: the question is stored at
// once, the answer once complete. Errors: not_found, invalid_argument,
// failed_precondition (no model), rate_limited and bad_gateway (the
// provider).
func (s *Service) Send(ctx context.Context, project, user, id uuid.UUID, p SendParams) (Message, error) {
	content := strings.TrimSpace(p.Content)
	if content == "" {
		return Message{}, ErrNoContent
	}
	t := &turn{project: project, user: user, p: p}
	t.question = Message{ID: newID(), Role: RoleUser, Content: content, Citations: []Citation{}, CreatedAt: s.now()}
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var err error
		if t.session, err = sessionLock(ctx, tx, project, user, id); err != nil {
			return err
		}
		all, err := messageList(ctx, tx, id)
		if err != nil {
			return err
		}
		t.history = afterSummary(all, t.session.SummaryThrough)
		if err := messageInsert(ctx, tx, project, id, t.question); err != nil {
			return err
		}
		if t.session.Title == "" {
			_, err = sessionSetTitle(ctx, tx, project, user, id, titleOf(content), t.question.CreatedAt)
			return err
		}
		return sessionTouch(ctx, tx, id, t.question.CreatedAt)
	})
	if err != nil {
		return Message{}, err
	}
	return s.answer(ctx, t)
}

// afterSummary is the part of a session's messages that its summary does
// not cover.
func afterSummary(all []Message, through *uuid.UUID) []Message {
	if through == nil {
		return all
	}
	for i, m := range all {
		if m.ID == *through {
			return all[i+1:]
		}
	}
	return all
}

// titleOf is a session's default title: the start of its first question.
func titleOf(content string) string {
	content = strings.Join(strings.Fields(content), " ")
	if r := []rune(content); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return content
}

// answer retrieves, summarises the history when needed, asks the model
// and stores its reply.
func (s *Service) answer(ctx context.Context, t *turn) (Message, error) {
	start := time.Now()
	found, err := s.retrieve(ctx, t.project, t.question.Content, t.p.Timing)
	if err != nil {
		return Message{}, modelError(err) // the query's embedding may fail upstream
	}
	if t.p.Timing != nil {
		t.p.Timing.Retrieval = time.Since(start)
	}
	reply := Message{ID: newID(), Role: RoleAssistant, Citations: []Citation{}}
	if len(found) == 0 {
		// Nothing to ground an answer on: the model is not asked.
		reply.Content = noSourcesAnswer
		if t.p.OnDelta != nil {
			if err := t.p.OnDelta(reply.Content); err != nil {
				return Message{}, err
			}
		}
		return s.store(ctx, t, reply)
	}
	model, err := s.cfg.ModelFunc(ctx, t.project)
	if err != nil {
		return Message{}, err
	}
	limit := int64(model.InputTokenLimit())
	if limit <= 0 {
		limit = InputBudgetDefault
	}
	question := llm.EstimateTokens(t.question.Content)
	msgs, err := s.history(ctx, t, model, limit/4) // the system prompt first
	if err != nil {
		return Message{}, err
	}
	var used int64
	for _, m := range msgs {
		used += llm.EstimateTokens(m.Text)
	}
	sources := pack(found, limit-ReplyTokens-question-used)
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Text: questionPrompt(sources, t.question.Content)})

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
	res, err := model.Chat(ctx, llm.ChatRequest{
		Purpose: llm.PurposeGroundedAnswer, Messages: msgs, MaxOutputTokens: ReplyTokens,
		OnDelta: func(d string) error { return emit(filter.feed(d)) },
	})
	if err != nil {
		return Message{}, modelError(err)
	}
	if err := emit(filter.flush()); err != nil {
		return Message{}, err
	}
	t.add(model, res.Usage)
	reply.Content = content.String() // what the deltas concatenate to
	reply.Citations = citations(reply.Content, sources)
	reply.Model = res.Model
	if reply.Model == "" {
		reply.Model = model.Model()
	}
	return s.store(ctx, t, reply)
}

func (t *turn) add(m Model, u llm.Usage) {
	t.usage.InputText += u.InputText + u.InputImage + u.InputVideo + u.InputAudio
	t.usage.Output += u.Output
	t.cost += m.Cost(u)
}

// store writes the reply with the turn's usage.
func (s *Service) store(ctx context.Context, t *turn, reply Message) (Message, error) {
	reply.InputTokens, reply.OutputTokens, reply.CostUSD = t.usage.InputText, t.usage.Output, t.cost
	reply.CreatedAt = s.now()
	if !reply.CreatedAt.After(t.question.CreatedAt) {
		reply.CreatedAt = t.question.CreatedAt.Add(time.Microsecond) // listed after its question
	}
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := sessionLock(ctx, tx, t.project, t.user, t.session.ID); err != nil {
			return err // deleted meanwhile
		}
		if err := messageInsert(ctx, tx, t.project, t.session.ID, reply); err != nil {
			return err
		}
		return sessionTouch(ctx, tx, t.session.ID, reply.CreatedAt)
	})
	if err != nil {
		return Message{}, err
	}
	return reply, nil
}

// history is the conversation before the question as model messages: the
// system prompt, the stored summary, and the messages after it. When they
// exceed budget tokens, the whole history is summarised (one model call)
// and the summary stored on the session.
func (s *Service) history(ctx context.Context, t *turn, model Model, budget int64) ([]llm.Message, error) {
	msgs := []llm.Message{{Role: llm.RoleSystem, Text: systemPrompt}}
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
		if summary, err = s.summarise(ctx, t, model, summary, budget); err != nil {
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

// summarise asks the model for a summary of the earlier summary and the
// history (its most recent part, within 2×budget tokens), and stores it on
// the session as covering the history's last message.
func (s *Service) summarise(ctx context.Context, t *turn, model Model, earlier string, budget int64) (string, error) {
	var paras []string
	size := int64(0)
	for i := len(t.history) - 1; i >= 0; i-- {
		m := t.history[i]
		p := m.Role + ": " + stripMarkers(m.Content)
		size += llm.EstimateTokens(p)
		if size > 2*budget && len(paras) > 0 {
			break
		}
		paras = append(paras, p)
	}
	if earlier != "" {
		paras = append(paras, "summary: "+earlier)
	}
	for i, j := 0, len(paras)-1; i < j; i, j = i+1, j-1 {
		paras[i], paras[j] = paras[j], paras[i]
	}
	res, err := model.Chat(ctx, llm.ChatRequest{
		Purpose: llm.PurposeSummary, MaxOutputTokens: SummaryTokens,
		Messages: []llm.Message{{Role: llm.RoleSystem, Text: summaryPrompt}, {Role: llm.RoleUser, Text: strings.Join(paras, "\n\n")}},
	})
	if err != nil {
		return "", modelError(err)
	}
	t.add(model, res.Usage)
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
