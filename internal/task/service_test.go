package task_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/task"
	"github.com/graphmill/graphmill/internal/tenancy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type testBundle struct {
	pool    *pgxpool.Pool
	svc     *task.Service
	user    uuid.UUID
	project uuid.UUID
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	ten := tenancy.NewService(pool, nil, time.Now)
	_, err := ten.Bootstrap(ctx, "")
	require.NoError(t, err)
	b := &testBundle{pool: pool, svc: task.NewService(pool, ten, time.Now)}
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM users`).Scan(&b.user))
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM projects`).Scan(&b.project))
	return b
}

func (b *testBundle) create(t *testing.T, p task.CreateParams) (task.Task, error) {
	t.Helper()
	var out task.Task
	err := postgres.WithTx(context.Background(), b.pool, func(tx pgx.Tx) error {
		var err error
		out, err = b.svc.Create(context.Background(), tx, p)
		return err
	})
	return out, err
}

func TestCreateValidates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ok := task.CreateParams{ProjectID: b.project, Title: "t", Type: "review"}
	with := func(f func(p *task.CreateParams)) task.CreateParams {
		p := ok
		f(&p)
		return p
	}
	cases := []struct {
		name string
		p    task.CreateParams
		want error
	}{
		{"NoProject", with(func(p *task.CreateParams) { p.ProjectID = uuid.Nil }), task.ErrProjectRequired},
		{"NoTitle", with(func(p *task.CreateParams) { p.Title = " " }), task.ErrTitleRequired},
		{"NoType", with(func(p *task.CreateParams) { p.Type = "" }), task.ErrTypeRequired},
		{"LongTitle", with(func(p *task.CreateParams) { p.Title = strings.Repeat("t", task.TitleMax+1) }), task.ErrFieldTooLong},
		{"LongSourceID", with(func(p *task.CreateParams) { p.SourceID = strings.Repeat("s", task.SourceMax+1) }), task.ErrFieldTooLong},
		{"MetadataNotJSON", with(func(p *task.CreateParams) { p.Metadata = make(chan int) }), task.ErrMetadataNotJSON},
	}
	for _, c := range cases {
		_, err := b.create(t, c.p)
		require.ErrorIs(t, err, c.want, c.name)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), c.name)
	}
	created, err := b.create(t, with(func(p *task.CreateParams) {
		p.Metadata = map[string]any{"objects": []string{"a"}}
		p.SourceType = "extraction"
	}))
	require.NoError(t, err)
	got, err := b.svc.Get(context.Background(), b.project, created.ID)
	require.NoError(t, err)
	require.Equal(t, created, got)
	require.JSONEq(t, `{"objects": ["a"]}`, string(got.Metadata))
	require.Equal(t, task.StatusPending, got.Status)
	_, err = b.svc.Get(context.Background(), uuid.New(), created.ID)
	require.ErrorIs(t, err, task.ErrNotFound, "a task is found in its own project only")
}

// The task a transaction creates does not exist if that transaction rolls
// back: creation belongs to the caller's transaction.
func TestCreateJoinsCallerTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var id uuid.UUID
	boom := errors.New("the caller's change failed")
	err := postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		tk, err := b.svc.Create(ctx, tx, task.CreateParams{ProjectID: b.project, Title: "t", Type: "review"})
		id = tk.ID
		if err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	_, err = b.svc.Get(ctx, b.project, id)
	require.ErrorIs(t, err, task.ErrNotFound)
	counts, err := b.svc.CountsAll(ctx, &auth.Principal{UserID: b.user, Superadmin: true}, nil)
	require.NoError(t, err)
	require.Equal(t, task.Counts{}, counts)
}

// A resolver sees the resolved row inside the transaction, and its writes
// commit with the resolution.
func TestResolverSeesResolvedRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.svc.RegisterResolver("probe", func(ctx context.Context, tx pgx.Tx, tk task.Task, resolution string) error {
		var status string
		if err := tx.QueryRow(ctx, `SELECT status FROM tasks WHERE id = $1`, tk.ID).Scan(&status); err != nil {
			return err
		}
		if status != resolution {
			return errs.Errorf(errs.Internal, "resolver saw %s", status)
		}
		_, err := tx.Exec(ctx, `UPDATE tasks SET resolution_notes = 'seen by resolver' WHERE id = $1`, tk.ID)
		return err
	})
	tk, err := b.create(t, task.CreateParams{ProjectID: b.project, Title: "t", Type: "suggestion", SourceType: "probe"})
	require.NoError(t, err)
	_, err = b.svc.Resolve(ctx, b.project, tk.ID, b.user, "maybe", "")
	require.ErrorIs(t, err, task.ErrBadResolution)
	_, err = b.svc.Resolve(ctx, b.project, tk.ID, b.user, task.StatusAccepted, strings.Repeat("n", task.NotesMax+1))
	require.ErrorIs(t, err, task.ErrNotesTooLong)
	for _, bad := range []string{"a\x00b", "a\xffb"} {
		_, err = b.svc.Resolve(ctx, b.project, tk.ID, b.user, task.StatusAccepted, bad)
		require.ErrorIs(t, err, task.ErrNotesInvalid, "%q", bad)
	}
	resolved, err := b.svc.Resolve(ctx, b.project, tk.ID, b.user, task.StatusAccepted, "")
	require.NoError(t, err)
	require.Equal(t, b.user, *resolved.ResolvedBy)
	got, err := b.svc.Get(ctx, b.project, tk.ID)
	require.NoError(t, err)
	require.Equal(t, "seen by resolver", got.ResolutionNotes)
	_, err = b.svc.Cancel(ctx, b.project, tk.ID)
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err))
	_, err = b.svc.Cancel(ctx, b.project, uuid.New())
	require.ErrorIs(t, err, task.ErrNotFound)
}
