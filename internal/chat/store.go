package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

const sessionColumns = `id, project_id, user_id, title, agent_id, created_at, updated_at`

// sessionRow is a chat_sessions row with its summary.
type sessionRow struct {
	ID             uuid.UUID  `db:"id"`
	ProjectID      uuid.UUID  `db:"project_id"`
	UserID         uuid.UUID  `db:"user_id"`
	Title          string     `db:"title"`
	AgentID        *uuid.UUID `db:"agent_id"`
	Summary        *string    `db:"summary"`
	SummaryThrough *uuid.UUID `db:"summary_through"`
	TurnUntil      *time.Time `db:"turn_until"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
}

func (r sessionRow) session() Session {
	return Session{
		ID: r.ID, ProjectID: r.ProjectID, UserID: r.UserID, Title: r.Title, AgentID: r.AgentID,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

func sessionInsert(ctx context.Context, db postgres.DBTX, s Session) error {
	_, err := db.Exec(ctx, `INSERT INTO chat_sessions (`+sessionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		s.ID, s.ProjectID, s.UserID, s.Title, s.AgentID, s.CreatedAt, s.UpdatedAt)
	if err != nil {
		return fmt.Errorf("insert chat session: %w", err)
	}
	return nil
}

// sessionGet reads the session id of user in project (ErrNotFound
// otherwise, another user's session included).
func sessionGet(ctx context.Context, db postgres.DBTX, project, user, id uuid.UUID) (sessionRow, error) {
	return postgres.One[sessionRow](ctx, db, ErrNotFound, `SELECT `+sessionColumns+`, summary, summary_through, turn_until
		FROM chat_sessions WHERE id = $1 AND project_id = $2 AND user_id = $3`, id, project, user)
}

// sessionLock reads and locks the session for a turn's writes.
func sessionLock(ctx context.Context, tx pgx.Tx, project, user, id uuid.UUID) (sessionRow, error) {
	return postgres.One[sessionRow](ctx, tx, ErrNotFound, `SELECT `+sessionColumns+`, summary, summary_through, turn_until
		FROM chat_sessions WHERE id = $1 AND project_id = $2 AND user_id = $3 FOR UPDATE`, id, project, user)
}

// sessionProject is the project of a session (the route's owner).
func sessionProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrNotFound, `SELECT project_id FROM chat_sessions WHERE id = $1`, id)
}

func sessionList(ctx context.Context, db postgres.DBTX, project, user uuid.UUID, limit, offset int) ([]Session, int, error) {
	rows, _ := db.Query(ctx, `SELECT `+sessionColumns+`, summary, summary_through, turn_until, count(*) OVER () AS total
		FROM chat_sessions WHERE project_id = $1 AND user_id = $2
		ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`, project, user, limit, offset)
	list, total, err := postgres.CollectPageOf[sessionRow](rows)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(list), offset, total,
			`SELECT count(*) FROM chat_sessions WHERE project_id = $1 AND user_id = $2`, project, user)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list chat sessions: %w", err)
	}
	out := make([]Session, len(list))
	for i, r := range list {
		out[i] = r.session()
	}
	return out, total, nil
}

func sessionSetTitle(ctx context.Context, db postgres.DBTX, project, user, id uuid.UUID, title string, now time.Time) (sessionRow, error) {
	return postgres.One[sessionRow](ctx, db, ErrNotFound, `UPDATE chat_sessions SET title = $4, updated_at = $5
		WHERE id = $1 AND project_id = $2 AND user_id = $3
		RETURNING `+sessionColumns+`, summary, summary_through, turn_until`, id, project, user, title, now)
}

func sessionTouch(ctx context.Context, db postgres.DBTX, id uuid.UUID, now time.Time) error {
	return sessionSet(ctx, db, "touch", id, `updated_at = $2`, now)
}

// sessionStartTurn marks a turn running on session id until until.
func sessionStartTurn(ctx context.Context, db postgres.DBTX, id uuid.UUID, now, until time.Time) error {
	return sessionSet(ctx, db, "start a turn on", id, `updated_at = $2, turn_until = $3`, now, until)
}

// sessionEndTurn clears the turn that runs until until (a later turn's
// lease, after this one's expired, is left alone).
func sessionEndTurn(ctx context.Context, db postgres.DBTX, id uuid.UUID, until time.Time) error {
	if _, err := db.Exec(ctx, `UPDATE chat_sessions SET turn_until = NULL WHERE id = $1 AND turn_until = $2`, id, until); err != nil {
		return fmt.Errorf("end the turn on chat session: %w", err)
	}
	return nil
}

func sessionSetSummary(ctx context.Context, db postgres.DBTX, id uuid.UUID, summary string, through uuid.UUID) error {
	return sessionSet(ctx, db, "store the summary of", id, `summary = $2, summary_through = $3`, summary, through)
}

// sessionSet updates session id's columns (assignments of $2...).
func sessionSet(ctx context.Context, db postgres.DBTX, what string, id uuid.UUID, assignments string, args ...any) error {
	if _, err := db.Exec(ctx, `UPDATE chat_sessions SET `+assignments+` WHERE id = $1`, append([]any{id}, args...)...); err != nil {
		return fmt.Errorf("%s chat session: %w", what, err)
	}
	return nil
}

// sessionHold key-share-locks user's session id of project. Errors:
// ErrNotFound.
func sessionHold(ctx context.Context, tx pgx.Tx, project, user, id uuid.UUID) error {
	_, err := postgres.One[int](ctx, tx, ErrNotFound,
		`SELECT 1 FROM chat_sessions WHERE id = $1 AND project_id = $2 AND user_id = $3 FOR KEY SHARE`, id, project, user)
	return err
}

func sessionDelete(ctx context.Context, db postgres.DBTX, project, user, id uuid.UUID) error {
	_, err := postgres.One[uuid.UUID](ctx, db, ErrNotFound, `DELETE FROM chat_sessions WHERE id = $1 AND project_id = $2 AND user_id = $3
		RETURNING id`, id, project, user)
	return err
}

// messageRow is a chat_messages row.
type messageRow struct {
	ID           uuid.UUID `db:"id"`
	ProjectID    uuid.UUID `db:"project_id"`
	SessionID    uuid.UUID `db:"session_id"`
	Role         string    `db:"role"`
	Content      string    `db:"content"`
	Citations    []byte    `db:"citations"`
	Model        *string   `db:"model"`
	InputTokens  int64     `db:"input_tokens"`
	OutputTokens int64     `db:"output_tokens"`
	CostUSD      float64   `db:"cost_usd"`
	CreatedAt    time.Time `db:"created_at"`
}

func (r messageRow) message() (Message, error) {
	m := Message{
		ID: r.ID, Role: r.Role, Content: r.Content, Citations: []Citation{}, Model: r.Model,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: r.CostUSD, CreatedAt: r.CreatedAt.UTC(),
	}
	if err := json.Unmarshal(r.Citations, &m.Citations); err != nil {
		return Message{}, fmt.Errorf("decode citations of message %s: %w", r.ID, err)
	}
	return m, nil
}

func messageInsert(ctx context.Context, db postgres.DBTX, project, session uuid.UUID, m Message) error {
	cites := m.Citations
	if cites == nil {
		cites = []Citation{}
	}
	raw, err := json.Marshal(cites)
	if err != nil {
		return fmt.Errorf("encode citations: %w", err)
	}
	_, err = db.Exec(ctx, `INSERT INTO chat_messages (id, project_id, session_id, role, content, citations, model,
		input_tokens, output_tokens, cost_usd, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		m.ID, project, session, m.Role, m.Content, raw, m.Model, m.InputTokens, m.OutputTokens, m.CostUSD, m.CreatedAt)
	if err != nil {
		return fmt.Errorf("insert chat message: %w", err)
	}
	return nil
}

const messageColumns = `id, project_id, session_id, role, content, citations, model, input_tokens, output_tokens, cost_usd, created_at`

// messagesAfter lists a session's messages after the message after
// (all of them when nil), oldest first.
func messagesAfter(ctx context.Context, db postgres.DBTX, session uuid.UUID, after *uuid.UUID) ([]Message, error) {
	rows, _ := db.Query(ctx, `SELECT `+messageColumns+` FROM chat_messages
		WHERE session_id = $1 AND ($2::uuid IS NULL OR (created_at, id) > (SELECT created_at, id FROM chat_messages WHERE id = $2))
		ORDER BY created_at, id`, session, after)
	list, err := postgres.TryCollectAs(rows, messageRow.message)
	if err != nil {
		return nil, fmt.Errorf("list chat messages: %w", err)
	}
	return list, nil
}

// messageCount is the number of a session's messages.
func messageCount(ctx context.Context, db postgres.DBTX, session uuid.UUID) (int, error) {
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM chat_messages WHERE session_id = $1`, session).Scan(&total); err != nil {
		return 0, fmt.Errorf("count chat messages: %w", err)
	}
	return total, nil
}

// messagePage is a page of a session's messages, oldest first.
func messagePage(ctx context.Context, db postgres.DBTX, session uuid.UUID, limit, offset int) ([]Message, error) {
	rows, _ := db.Query(ctx, `SELECT `+messageColumns+` FROM chat_messages WHERE session_id = $1
		ORDER BY created_at, id LIMIT $2 OFFSET $3`, session, limit, offset)
	list, err := postgres.TryCollectAs(rows, messageRow.message)
	if err != nil {
		return nil, fmt.Errorf("list chat messages: %w", err)
	}
	return list, nil
}
