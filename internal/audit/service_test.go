package audit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type testBundle struct {
	pool *pgxpool.Pool
	svc  *audit.Service
	now  time.Time // the service's clock
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{pool: pgtest.New(t), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	b.svc = audit.NewService(b.pool, func() time.Time { return b.now })
	return b
}

// write records e in a transaction of its own that then ends with then
// (nil: it commits).
func (b *testBundle) write(e audit.Event, then error) (audit.Event, error) {
	ctx := context.Background()
	var out audit.Event
	err := postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		if out, err = b.svc.Record(ctx, tx, e); err != nil {
			return err
		}
		return then
	})
	return out, err
}

// record writes e, at time at.
func (b *testBundle) record(t *testing.T, at time.Time, e audit.Event) audit.Event {
	t.Helper()
	b.now = at
	out, err := b.write(e, nil)
	require.NoError(t, err)
	return out
}

func (b *testBundle) count(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events`).Scan(&n))
	return n
}

func ids(list []audit.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(list))
	for i, e := range list {
		out[i] = e.ID
	}
	return out
}

func TestRecordWritesTheEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	actor, token, target := uuid.New(), uuid.New(), uuid.New()
	at := time.Date(2026, 3, 1, 12, 30, 0, 0, time.FixedZone("x", 3600))
	e := b.record(t, at, audit.Event{
		ActorID: actor, TokenID: &token, Action: audit.ExtractionJobsDelete,
		TargetIDs: []uuid.UUID{target}, Requested: 3, Affected: 1, RequestID: "req-1",
	})
	require.NotEqual(t, uuid.Nil, e.ID)
	require.Equal(t, at.UTC(), e.CreatedAt)

	list, total, err := b.svc.List(ctx, audit.Filter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Len(t, list, 1)
	got := list[0]
	require.Equal(t, e.ID, got.ID)
	require.Equal(t, actor, got.ActorID)
	require.Equal(t, &token, got.TokenID)
	require.Equal(t, audit.ExtractionJobsDelete, got.Action)
	require.Equal(t, []uuid.UUID{target}, got.TargetIDs)
	require.Equal(t, 3, got.Requested)
	require.Equal(t, 1, got.Affected)
	require.Equal(t, "req-1", got.RequestID)
	require.True(t, at.Equal(got.CreatedAt))
	require.Empty(t, got.ActorEmail, "the actor is no user of this database")

	// Without a token or targets: NULL token, empty array.
	b.record(t, at.Add(time.Second), audit.Event{ActorID: actor, Action: audit.EmbeddingJobsCleanupOrphans, Affected: 4})
	list, _, err = b.svc.List(ctx, audit.Filter{Limit: 1})
	require.NoError(t, err)
	require.Nil(t, list[0].TokenID)
	require.Equal(t, []uuid.UUID{}, list[0].TargetIDs)
	require.Equal(t, 0, list[0].Requested)
	require.Equal(t, 4, list[0].Affected)
}

func TestRecordRefusesIncompleteEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	actor := uuid.New()
	for name, e := range map[string]audit.Event{
		"unknown action": {ActorID: actor, Action: "users.nuke", Requested: 1},
		"no action":      {ActorID: actor, Requested: 1},
		"no actor":       {Action: audit.UserDelete, Requested: 1},
		"negative count": {ActorID: actor, Action: audit.UserDelete, Requested: 1, Affected: -1},
	} {
		_, err := b.write(e, nil)
		require.Error(t, err, name)
	}
	require.Zero(t, b.count(t))
}

// TestRecordCommand: an action of the command line is recorded with the
// nil UUID as its actor, no token, the command as its request and every
// target affected; an unknown action is refused.
func TestRecordCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	user, token := uuid.New(), uuid.New()
	require.NoError(t, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := b.svc.RecordCommand(ctx, tx, "graphmill admin token create", audit.UserTokenCreate, []uuid.UUID{user, token})
		return err
	}))
	list, _, err := b.svc.List(ctx, audit.Filter{ActorID: &uuid.Nil, Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1)
	got := list[0]
	require.Equal(t, uuid.Nil, got.ActorID)
	require.Nil(t, got.TokenID)
	require.Equal(t, audit.UserTokenCreate, got.Action)
	require.Equal(t, []uuid.UUID{user, token}, got.TargetIDs)
	require.Equal(t, 2, got.Requested)
	require.Equal(t, 2, got.Affected)
	require.Equal(t, "cli: graphmill admin token create", got.RequestID)

	err = postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := b.svc.RecordCommand(ctx, tx, "graphmill admin nuke", "users.nuke", nil)
		return err
	})
	require.Error(t, err)
	require.Equal(t, 1, b.count(t))
}

// TestRecordRollsBackWithTheChange: the event is part of the caller's
// transaction; a change that fails after recording leaves no row.
func TestRecordRollsBackWithTheChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failed := errors.New("the change failed")
	_, err := b.write(audit.Event{ActorID: uuid.New(), Action: audit.ProjectDelete, Requested: 1, Affected: 1}, failed)
	require.ErrorIs(t, err, failed)
	require.Zero(t, b.count(t))
}

func TestListFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	alice, bob := uuid.New(), uuid.New()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	// Four events, an hour apart: alice cancels, bob deletes a user, alice
	// deletes jobs, bob cancels.
	e := []audit.Event{
		b.record(t, t0, audit.Event{ActorID: alice, Action: audit.ExtractionJobsCancel, Requested: 1}),
		b.record(t, t0.Add(time.Hour), audit.Event{ActorID: bob, Action: audit.UserDelete, Requested: 1, Affected: 1}),
		b.record(t, t0.Add(2*time.Hour), audit.Event{ActorID: alice, Action: audit.ExtractionJobsDelete, Requested: 2, Affected: 2}),
		b.record(t, t0.Add(3*time.Hour), audit.Event{ActorID: bob, Action: audit.ExtractionJobsCancel, Requested: 5, Affected: 0}),
	}
	// Two events in the same instant are ordered by id (newest first).
	same := b.record(t, t0.Add(3*time.Hour), audit.Event{ActorID: alice, Action: audit.ProjectDelete, Requested: 1, Affected: 1})
	at := func(h int) *time.Time {
		v := t0.Add(time.Duration(h) * time.Hour)
		return &v
	}

	cases := []struct {
		name  string
		f     audit.Filter
		want  []uuid.UUID
		total int
	}{
		{"all, newest first", audit.Filter{}, []uuid.UUID{same.ID, e[3].ID, e[2].ID, e[1].ID, e[0].ID}, 5},
		{"actor", audit.Filter{ActorID: &alice}, []uuid.UUID{same.ID, e[2].ID, e[0].ID}, 3},
		{"action", audit.Filter{Action: audit.ExtractionJobsCancel}, []uuid.UUID{e[3].ID, e[0].ID}, 2},
		{"actor and action", audit.Filter{ActorID: &bob, Action: audit.ExtractionJobsCancel}, []uuid.UUID{e[3].ID}, 1},
		{"from, inclusive", audit.Filter{From: at(2)}, []uuid.UUID{same.ID, e[3].ID, e[2].ID}, 3},
		{"to, inclusive", audit.Filter{To: at(1)}, []uuid.UUID{e[1].ID, e[0].ID}, 2},
		{"from and to", audit.Filter{From: at(1), To: at(2)}, []uuid.UUID{e[2].ID, e[1].ID}, 2},
		{"from equals to", audit.Filter{From: at(2), To: at(2)}, []uuid.UUID{e[2].ID}, 1},
		{"nothing", audit.Filter{Action: audit.OrganizationDelete}, []uuid.UUID{}, 0},
		{"page 2", audit.Filter{Limit: 2, Offset: 2}, []uuid.UUID{e[2].ID, e[1].ID}, 5},
		{"last page", audit.Filter{Limit: 2, Offset: 4}, []uuid.UUID{e[0].ID}, 5},
	}
	for _, c := range cases {
		if c.f.Limit == 0 {
			c.f.Limit = 100
		}
		list, total, err := b.svc.List(ctx, c.f)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, ids(list), c.name)
		require.Equal(t, c.total, total, c.name)
	}
}

func TestListRefusesBadFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, _, err := b.svc.List(ctx, audit.Filter{Action: "extraction_jobs.explode", Limit: 10})
	require.ErrorIs(t, err, audit.ErrBadAction)
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.Contains(t, err.Error(), string(audit.ExtractionJobsCancel), "the message lists the known actions")
}

func TestListNamesTheActor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	user := uuid.New()
	_, err := b.pool.Exec(ctx, `INSERT INTO users (id, primary_email, created_at, updated_at) VALUES ($1, 'ops@example.com', now(), now())`, user)
	require.NoError(t, err)
	b.record(t, time.Now(), audit.Event{ActorID: user, Action: audit.OrganizationDelete, Requested: 1, Affected: 1})
	list, _, err := b.svc.List(ctx, audit.Filter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, "ops@example.com", list[0].ActorEmail)
}
