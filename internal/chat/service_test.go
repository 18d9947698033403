package chat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/activity"
	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/search"
)

// fakeSearch finds the chunks it is given, in order.
type fakeSearch struct{ chunks []uuid.UUID }

func (f fakeSearch) Search(context.Context, uuid.UUID, search.Request) (search.Response, error) {
	res := search.Response{Mode: search.ModeHybrid}
	for _, c := range f.chunks {
		res.Data = append(res.Data, search.Hit{Target: "chunk", ID: c})
	}
	return res, nil
}

// noGraph is a graph without objects.
type noGraph struct{}

func (noGraph) Neighbourhoods(context.Context, uuid.UUID, []uuid.UUID, int) (map[uuid.UUID][]graph.Relationship, error) {
	return nil, nil
}

func (noGraph) ObjectsByID(context.Context, postgres.DBTX, []uuid.UUID) ([]graph.Object, error) {
	return nil, nil
}

// noAgents is a project without agents.
type noAgents struct{}

func (noAgents) GetAgent(context.Context, uuid.UUID, uuid.UUID) (agent.Agent, error) {
	return agent.Agent{}, agent.ErrNotFound
}

// fakeModel answers with answer (or fails with its error), recording
// every request; limit is its input budget.
type fakeModel struct {
	mu     sync.Mutex
	limit  int
	reqs   []llm.ChatRequest
	answer func(req llm.ChatRequest) (string, error)
}

func (m *fakeModel) Chat(_ context.Context, req llm.ChatRequest) (*llm.ChatResult, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	answer := m.answer
	m.mu.Unlock()
	text := "The sources say so [1]."
	if answer != nil {
		var err error
		if text, err = answer(req); err != nil {
			return nil, err
		}
	}
	if req.OnDelta != nil {
		if err := req.OnDelta(text); err != nil {
			return nil, err
		}
	}
	return &llm.ChatResult{Text: text, Model: "fake-1", Usage: llm.Usage{InputText: req.EstimatedInputTokens(), Output: llm.EstimateTokens(text)}}, nil
}

// fail makes the model's calls fail with a provider error of kind.
func (m *fakeModel) fail(kind llm.ErrorKind, message string) {
	m.answer = func(llm.ChatRequest) (string, error) { return "", &llm.Error{Kind: kind, Message: message} }
}

func (m *fakeModel) requests() []llm.ChatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.ChatRequest(nil), m.reqs...)
}

func (*fakeModel) Cost(llm.Usage) float64 { return 0 }
func (m *fakeModel) InputTokenLimit() int { return m.limit }
func (*fakeModel) Model() string          { return "fake-1" }

// chatEnv is a project with one user, one document of chunks, and a
// service over them with a fake model.
type chatEnv struct {
	pool                    *pgxpool.Pool
	svc                     *Service
	model                   *fakeModel
	project, user, document uuid.UUID
	chunks                  []uuid.UUID
	noModel                 bool
}

func newChatEnv(t *testing.T, texts ...string) *chatEnv {
	t.Helper()
	ctx := context.Background()
	pool, err := postgres.Open(ctx, pgtest.NewURL(t), 4)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	e := &chatEnv{pool: pool, model: &fakeModel{}, project: uuid.New(), user: uuid.New(), document: uuid.New()}
	org, now := uuid.New(), time.Now()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)`, []any{org, now}},
		{`INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', $3, $3)`, []any{e.project, org, now}},
		{`INSERT INTO users (id, created_at, updated_at) VALUES ($1, $2, $2)`, []any{e.user, now}},
		{`INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, sha256, content, status, created_at, updated_at)
			VALUES ($1, $2, 'd.txt', 'text/plain', 1, '\x00', '\x00', 'parsed', $3, $3)`, []any{e.document, e.project, now}},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err)
	}
	for i, text := range texts {
		id := uuid.New()
		_, err := pool.Exec(ctx, `INSERT INTO document_chunks (id, project_id, document_id, chunk_index, text, start_offset, end_offset, token_count, created_at)
			VALUES ($1, $2, $3, $4, $5, 0, $6, 8, $7)`, id, e.project, e.document, i, text, len(text), now)
		require.NoError(t, err)
		e.chunks = append(e.chunks, id)
	}
	e.svc, err = NewService(Config{
		Pool: pool, Search: fakeSearch{chunks: e.chunks}, Graph: noGraph{}, Agents: noAgents{},
		Activity: activity.ForgetterOf(activity.ResourceChatSession),
		ModelFunc: func(context.Context, uuid.UUID, string) (Model, error) {
			if e.noModel {
				return nil, ErrNoProvider
			}
			return e.model, nil
		},
	})
	require.NoError(t, err)
	return e
}

// session starts a session of the user.
func (e *chatEnv) session(t *testing.T) Session {
	t.Helper()
	sess, err := e.svc.CreateSession(context.Background(), e.project, e.user, CreateParams{})
	require.NoError(t, err)
	return sess
}

func (e *chatEnv) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// TestTurnsAreSerialised: while a turn runs on a session, another message
// on it is a conflict and is not stored; the session is free again once
// the answer is stored, and a lease left by a dead process stops blocking
// once it has passed.
func TestTurnsAreSerialised(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newChatEnv(t, "The turbine was designed in 1921.")
	sess := e.session(t)
	called, release := make(chan struct{}), make(chan struct{})
	e.model.answer = func(llm.ChatRequest) (string, error) {
		close(called)
		<-release
		return "Designed in 1921 [1].", nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "When was it designed?"})
		done <- err
	}()
	<-called
	_, err := e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "And who designed it?"})
	require.ErrorIs(t, err, ErrTurnRunning)
	require.Equal(t, errs.Conflict, errs.CodeOf(err))
	close(release)
	require.NoError(t, <-done)
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM chat_messages WHERE session_id = $1`, sess.ID), "the refused question is not stored")
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM chat_sessions WHERE id = $1 AND turn_until IS NOT NULL`, sess.ID))

	e.model.answer = nil
	_, err = e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "Once more?"})
	require.NoError(t, err, "free after the answer")

	// A turn whose process died: blocking until its lease ends.
	_, err = e.pool.Exec(ctx, `UPDATE chat_sessions SET turn_until = now() + interval '1 minute' WHERE id = $1`, sess.ID)
	require.NoError(t, err)
	_, err = e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "Blocked?"})
	require.ErrorIs(t, err, ErrTurnRunning)
	_, err = e.pool.Exec(ctx, `UPDATE chat_sessions SET turn_until = now() - interval '1 second' WHERE id = $1`, sess.ID)
	require.NoError(t, err)
	_, err = e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "Free?"})
	require.NoError(t, err)

	// A failed turn frees the session too.
	e.model.fail(llm.ErrorTransient, "overloaded")
	_, err = e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "Fails?"})
	require.Equal(t, errs.BadGateway, errs.CodeOf(err))
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM chat_sessions WHERE id = $1 AND turn_until IS NOT NULL`, sess.ID))
}

// TestFailedQuestionsLeftOutOfHistory: without a model nothing is stored;
// a question whose turn failed stays in the session but is not sent to
// the model in later turns.
func TestFailedQuestionsLeftOutOfHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newChatEnv(t, "The turbine was designed in 1921.")
	sess := e.session(t)

	e.noModel = true
	_, err := e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "Stored without a model?"})
	require.ErrorIs(t, err, ErrNoProvider)
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM chat_messages WHERE session_id = $1`, sess.ID), "the model is resolved first")
	e.noModel = false

	_, err = e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "First question?"})
	require.NoError(t, err)
	e.model.fail(llm.ErrorRateLimit, "slow down")
	_, err = e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "Failed question?"})
	require.Equal(t, errs.RateLimited, errs.CodeOf(err))
	e.model.answer = nil
	_, err = e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: "Third question?"})
	require.NoError(t, err)

	got, err := e.svc.GetSession(ctx, e.project, e.user, sess.ID)
	require.NoError(t, err)
	require.Len(t, got.Messages, 5, "the failed question stays visible")
	require.Equal(t, "Failed question?", got.Messages[2].Content)
	reqs := e.model.requests()
	last := reqs[len(reqs)-1]
	var texts []string
	for _, m := range last.Messages[1 : len(last.Messages)-1] {
		texts = append(texts, m.Text)
	}
	require.Equal(t, []string{"First question?", "The sources say so ."}, texts, "the failed question is not sent")
	require.Contains(t, last.Messages[len(last.Messages)-1].Text, "Third question?")
}

// TestSendNewLeavesNothingOnFailure: a new session is stored with its
// question and answer at once; a refused or failed turn leaves no session.
func TestSendNewLeavesNothingOnFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newChatEnv(t, "The turbine was designed in 1921.")
	sessions := func() int {
		return e.count(t, `SELECT count(*) FROM chat_sessions WHERE project_id = $1`, e.project)
	}
	_, _, err := e.svc.SendNew(ctx, e.project, e.user, CreateParams{}, SendParams{Content: "  \n "})
	require.ErrorIs(t, err, ErrNoContent)
	_, _, err = e.svc.SendNew(ctx, e.project, e.user, CreateParams{Title: strings.Repeat("t", TitleMax+1)}, SendParams{Content: "Hello?"})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	e.noModel = true
	_, _, err = e.svc.SendNew(ctx, e.project, e.user, CreateParams{}, SendParams{Content: "Hello?"})
	require.ErrorIs(t, err, ErrNoProvider)
	e.noModel = false
	e.model.fail(llm.ErrorTransient, "down")
	_, _, err = e.svc.SendNew(ctx, e.project, e.user, CreateParams{}, SendParams{Content: "Hello?"})
	require.Equal(t, errs.BadGateway, errs.CodeOf(err))
	e.model.fail(llm.ErrorRateLimit, "slow")
	_, _, err = e.svc.SendNew(ctx, e.project, e.user, CreateParams{}, SendParams{Content: "Hello?"})
	require.Equal(t, errs.RateLimited, errs.CodeOf(err))
	require.Equal(t, 0, sessions(), "no empty session left behind")
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM chat_messages WHERE project_id = $1`, e.project))

	e.model.answer = nil
	sess, msg, err := e.svc.SendNew(ctx, e.project, e.user, CreateParams{}, SendParams{Content: "  When was the turbine designed?  "})
	require.NoError(t, err)
	require.Equal(t, "When was the turbine designed?", sess.Title)
	got, err := e.svc.GetSession(ctx, e.project, e.user, sess.ID)
	require.NoError(t, err)
	require.Len(t, got.Messages, 2)
	require.Equal(t, "When was the turbine designed?", got.Messages[0].Content)
	require.Equal(t, msg.ID, got.Messages[1].ID)
	require.Equal(t, 1, sessions())
}

// TestSummaryKeepsEveryMessage: a message larger than twice the history
// budget is cut to its share of the summary's input, not left out.
func TestSummaryKeepsEveryMessage(t *testing.T) {
	t.Parallel()
	huge := "How often do bearings need grease? " + strings.Repeat("Consider the schedule. ", 2000)
	history := []Message{
		{Role: RoleUser, Content: huge},
		{Role: RoleAssistant, Content: "Every quarter [1]."},
		{Role: RoleUser, Content: strings.Repeat("Another long question. ", 1000)},
	}
	const budget = 1000
	in := summaryInput("Earlier they spoke of turbines.", history, budget)
	require.LessOrEqual(t, llm.EstimateTokens(in), int64(2*budget+10))
	require.Contains(t, in, "summary: Earlier they spoke of turbines.")
	require.Contains(t, in, "user: How often do bearings need grease?")
	require.Contains(t, in, "assistant: Every quarter .")
	require.Contains(t, in, "user: Another long question.")
	require.Equal(t, 4, len(strings.Split(in, "\n\n")))
	small := summaryInput("", []Message{{Role: RoleUser, Content: "a"}, {Role: RoleAssistant, Content: "b"}}, budget)
	require.Equal(t, "user: a\n\nassistant: b", small, "what fits is whole")
}

// TestBudgetKeepsRoomForSources: with a small model budget, a long
// history and a long question are cut so that sources still fit; when no
// source fits at all, the answer says so without a model call.
func TestBudgetKeepsRoomForSources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newChatEnv(t, "The turbine was designed in 1921 by Ottoline.")
	e.model.limit = 3000 // input budget 3000-1024
	sess := e.session(t)
	for range 2 {
		_, err := e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: strings.Repeat("history words ", 120)})
		require.NoError(t, err)
	}
	question := "Who designed the turbine? " + strings.Repeat("Please explain at length. ", 400) // ~2,600 tokens
	msg, err := e.svc.Send(ctx, e.project, e.user, sess.ID, SendParams{Content: question})
	require.NoError(t, err)
	require.Len(t, msg.Citations, 1)
	reqs := e.model.requests()
	last := reqs[len(reqs)-1]
	require.Equal(t, llm.PurposeGroundedAnswer, last.Purpose)
	prompt := last.Messages[len(last.Messages)-1].Text
	require.Contains(t, prompt, `<source index="1"`)
	require.Contains(t, prompt, "<question>\nWho designed the turbine?")
	require.Less(t, strings.Count(prompt, "Please explain"), 400, "the question is cut")
	require.LessOrEqual(t, last.EstimatedInputTokens(), int64(3000-ReplyTokens))
	require.Len(t, last.Messages, 2, "the history went first: system prompt and the question")

	// A source larger than the whole budget: said, without a model call.
	big := newChatEnv(t, strings.Repeat("A very long chunk. ", 1000))
	big.model.limit = 2000
	calls := len(big.model.requests())
	_, m, err := big.svc.SendNew(ctx, big.project, big.user, CreateParams{}, SendParams{Content: "What is in the chunk?"})
	require.NoError(t, err)
	require.Equal(t, noRoomAnswer, m.Content)
	require.Nil(t, m.Model)
	require.Empty(t, m.Citations)
	require.Len(t, big.model.requests(), calls)
}

// TestMessagesPaged: the session embeds its latest EmbeddedMessagesMax
// messages and their number; ListMessages pages through all, oldest
// first; a turn reads only the messages after the summary.
func TestMessagesPaged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newChatEnv(t, "Fact.")
	sess := e.session(t)
	base := time.Now().UTC().Truncate(time.Microsecond)
	rows := make([][]any, 0, 130)
	ids := make([]uuid.UUID, 130)
	for i := range 130 {
		ids[i] = uuid.New()
		role := map[bool]string{true: RoleUser, false: RoleAssistant}[i%2 == 0]
		rows = append(rows, []any{ids[i], e.project, sess.ID, role, fmt.Sprintf("m%d", i), []byte("[]"), base.Add(time.Duration(i) * time.Millisecond)})
	}
	_, err := e.pool.CopyFrom(ctx, pgx.Identifier{"chat_messages"}, []string{"id", "project_id", "session_id", "role", "content", "citations", "created_at"}, pgx.CopyFromRows(rows))
	require.NoError(t, err)

	got, err := e.svc.GetSession(ctx, e.project, e.user, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 130, got.MessagesTotal)
	require.Len(t, got.Messages, EmbeddedMessagesMax)
	require.Equal(t, "m30", got.Messages[0].Content)
	require.Equal(t, "m129", got.Messages[99].Content)
	page, total, err := e.svc.ListMessages(ctx, e.project, e.user, sess.ID, 10, 5)
	require.NoError(t, err)
	require.Equal(t, 130, total)
	require.Len(t, page, 10)
	require.Equal(t, "m5", page[0].Content)
	_, _, err = e.svc.ListMessages(ctx, e.project, uuid.New(), sess.ID, 10, 0)
	require.ErrorIs(t, err, ErrNotFound, "another user's session")

	after, err := messagesAfter(ctx, e.pool, sess.ID, &ids[127])
	require.NoError(t, err)
	require.Equal(t, []string{"m128", "m129"}, []string{after[0].Content, after[1].Content})
	all, err := messagesAfter(ctx, e.pool, sess.ID, nil)
	require.NoError(t, err)
	require.Len(t, all, 130)
}

// TestAnswered: questions without an answer are left out.
func TestAnswered(t *testing.T) {
	t.Parallel()
	q := func(c string) Message { return Message{Role: RoleUser, Content: c} }
	a := func(c string) Message { return Message{Role: RoleAssistant, Content: c} }
	got := answered([]Message{q("1"), a("1"), q("failed"), q("2"), a("2"), q("last failed")})
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Role+m.Content)
	}
	require.Equal(t, []string{"user1", "assistant1", "user2", "assistant2"}, texts)
}
