package notification_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/tenancy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type testBundle struct {
	pool    *pgxpool.Pool
	svc     *notification.Service
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
	b := &testBundle{pool: pool, svc: notification.NewService(pool, ten, time.Now)}
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM users`).Scan(&b.user))
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM projects`).Scan(&b.project))
	return b
}

func (b *testBundle) notify(ctx context.Context, user uuid.UUID, p notification.Params) (notification.Notification, error) {
	var n notification.Notification
	err := postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		n, err = b.svc.Notify(ctx, tx, user, p)
		return err
	})
	return n, err
}

func TestNotifyValidates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Minute)
	long := make([]rune, notification.TitleMax+1)
	for i := range long {
		long[i] = 'x'
	}
	cases := []struct {
		name string
		p    notification.Params
		want error
	}{
		{"NoTitle", notification.Params{Title: "  "}, notification.ErrTitle},
		{"LongTitle", notification.Params{Title: string(long)}, notification.ErrTitle},
		{"BadSeverity", notification.Params{Title: "t", Severity: "fatal"}, notification.ErrSeverity},
		{"BadImportance", notification.Params{Title: "t", Importance: "urgent"}, notification.ErrImportance},
		{"AlreadyExpired", notification.Params{Title: "t", ExpiresAt: &past}, notification.ErrExpired},
		{"NegativeOccurrences", notification.Params{Title: "t", Occurrences: -1}, notification.ErrOccurrences},
		{"ActionsNotJSON", notification.Params{Title: "t", Actions: []any{func() {}}}, notification.ErrNotJSON},
	}
	for _, c := range cases {
		_, err := b.notify(ctx, b.user, c.p)
		require.ErrorIs(t, err, c.want, c.name)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), c.name)
	}
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM notifications) + (SELECT count(*) FROM events)`).Scan(&n))
	require.Zero(t, n, "nothing was written")
}

// Occurrences of one group key committed by concurrent transactions end up
// in one notification counting them all, with one event per occurrence,
// and no transaction deadlocks.
func TestConcurrentGroupedNotify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const workers, each = 8, 5
	var wg sync.WaitGroup
	errc := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				// Another key in the same transaction, in an order that
				// differs between workers, to provoke lock-order trouble.
				keys := []string{"burst", "side"}
				if w%2 == 1 {
					keys = []string{"side", "burst"}
				}
				errc <- postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
					for _, k := range keys {
						if _, err := b.svc.Notify(ctx, tx, b.user, notification.Params{Title: k, Message: "m", GroupKey: k, ProjectID: &b.project}); err != nil {
							return err
						}
					}
					return nil
				})
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	list, total, err := b.svc.List(ctx, notification.Owner{UserID: b.user}, notification.Filter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	for _, n := range list {
		require.JSONEq(t, `40`, string(mustCount(t, n)), n.Title)
	}
	var events int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE type = 'notification' AND user_id = $1 AND project_id = $2`, b.user, b.project).Scan(&events))
	require.Equal(t, 2*workers*each, events)
}

func mustCount(t *testing.T, n notification.Notification) []byte {
	t.Helper()
	var d map[string]any
	require.NoError(t, json.Unmarshal(n.Details, &d))
	raw, err := json.Marshal(d["count"])
	require.NoError(t, err)
	return raw
}

func TestNotifyProjectAdminsAndExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// A second admin through the project, a viewer, and a deleted admin.
	now := time.Now()
	admin2, viewer, gone := uuid.New(), uuid.New(), uuid.New()
	for _, u := range []uuid.UUID{admin2, viewer, gone} {
		_, err := b.pool.Exec(ctx, `INSERT INTO users (id, created_at, updated_at) VALUES ($1, $2, $2)`, u, now)
		require.NoError(t, err)
	}
	for u, role := range map[uuid.UUID]string{admin2: "admin", viewer: "viewer", gone: "admin"} {
		_, err := b.pool.Exec(ctx, `INSERT INTO project_members (project_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)`, b.project, u, role, now)
		require.NoError(t, err)
	}
	_, err := b.pool.Exec(ctx, `UPDATE users SET deleted_at = $2 WHERE id = $1`, gone, now)
	require.NoError(t, err)

	soon := now.Add(time.Hour)
	var sent []notification.Notification
	require.NoError(t, postgres.WithTx(ctx, b.pool, func(tx pgx.Tx) error {
		sent, err = b.svc.NotifyProjectAdmins(ctx, tx, b.project, notification.Params{Title: "t", Message: "m", ExpiresAt: &soon})
		return err
	}))
	owners := []uuid.UUID{}
	for _, n := range sent {
		owners = append(owners, n.UserID)
		require.Equal(t, b.project, *n.ProjectID)
	}
	require.ElementsMatch(t, []uuid.UUID{b.user, admin2}, owners, "the org owner and the project admin, not the viewer or a deleted user")

	// Expired notifications are deleted by DeleteExpired, others stay.
	_, err = b.pool.Exec(ctx, `UPDATE notifications SET expires_at = $2 WHERE user_id = $1`, admin2, now.Add(-time.Second))
	require.NoError(t, err)
	n, err := b.svc.DeleteExpired(ctx, b.pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	var left int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM notifications`).Scan(&left))
	require.Equal(t, 1, left)
}
