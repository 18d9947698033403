package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Service records and lists audit events.
type Service struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// NewService returns a Service.
func NewService(pool *pgxpool.Pool, now func() time.Time) *Service {
	return &Service{pool: pool, now: now}
}

// Record writes e, a user's action, in tx, the transaction of the change
// it records, with a new id and the current time, and returns it as
// written. The caller fills in who acted and what they asked; a change
// rolled back takes its event with it.
func (s *Service) Record(ctx context.Context, tx pgx.Tx, e Event) (Event, error) {
	if e.ActorID == uuid.Nil {
		return Event{}, fmt.Errorf("record audit event %s: no actor", e.Action)
	}
	return s.write(ctx, tx, e)
}

// RecordCommand writes in tx the row of an action graphmill's command
// line (graphmill admin) took directly in the database, every one of
// targetIDs affected. No user acted and no token was used: the actor is
// the nil UUID, which no user has, so no action of the API (always by its
// calling user) can pass for one of the command line's (a request id
// can: the API takes the caller's X-Request-ID); no token; the request
// is the command ("cli: graphmill admin user create").
func (s *Service) RecordCommand(ctx context.Context, tx pgx.Tx, command string, action Action, targetIDs []uuid.UUID) (Event, error) {
	return s.write(ctx, tx, Event{
		ActorID: uuid.Nil, Action: action, TargetIDs: targetIDs,
		Requested: len(targetIDs), Affected: len(targetIDs), RequestID: "cli: " + command,
	})
}

// write checks e and writes it in tx with a new id and the current time.
func (s *Service) write(ctx context.Context, tx pgx.Tx, e Event) (Event, error) {
	switch {
	case !e.Action.Valid():
		return Event{}, fmt.Errorf("record audit event: unknown action %q", e.Action)
	case e.Requested < 0 || e.Affected < 0:
		return Event{}, fmt.Errorf("record audit event %s: negative count", e.Action)
	}
	e.ID = uuid.Must(uuid.NewV7())
	e.CreatedAt = s.now().UTC()
	if e.TargetIDs == nil {
		e.TargetIDs = []uuid.UUID{}
	}
	if err := eventInsert(ctx, tx, e); err != nil {
		return Event{}, err
	}
	return e, nil
}

// List lists the events f selects, newest first, and how many there are.
// Errors: invalid_argument (unknown action).
func (s *Service) List(ctx context.Context, f Filter) ([]Event, int, error) {
	if f.Action != "" && !f.Action.Valid() {
		return nil, 0, ErrBadAction
	}
	return eventList(ctx, s.pool, f)
}
