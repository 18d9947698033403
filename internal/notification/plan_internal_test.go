package notification

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// explainer is a postgres.DBTX that records the plan of each query it
// runs (EXPLAIN, same arguments) before running it.
type explainer struct {
	postgres.DBTX
	plans *[]string
}

func (e explainer) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, _ := e.DBTX.Query(ctx, `EXPLAIN `+sql, args...)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	*e.plans = append(*e.plans, strings.Join(lines, "\n"))
	return e.DBTX.Query(ctx, sql, args...)
}

// TestDigestDueReadsEachUsersNotificationsByIndex: the query of the users
// due a digest looks each one's notifications up by the user's index and
// stops at the first they see, not a sequential scan of every user's
// notifications (1,000 users with the daily digest and 100 notifications
// each, some of a deleted project): the visibility condition names the
// notification's own user, so that it is a filter of that index scan.
func TestDigestDueReadsEachUsersNotificationsByIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	for _, s := range []string{
		`INSERT INTO users (id, created_at, updated_at)
		 SELECT ('00000000-0000-0000-0000-' || lpad(to_hex(g), 12, '0'))::uuid, now(), now() FROM generate_series(1, 1000) g`,
		`INSERT INTO orgs (id, name, created_at, updated_at)
		 SELECT ('00000000-0000-0000-0001-' || lpad(to_hex(g), 12, '0'))::uuid, 'o' || g, now(), now() FROM generate_series(1, 100) g`,
		`INSERT INTO projects (id, org_id, name, created_at, updated_at, deleted_at)
		 SELECT ('00000000-0000-0000-0002-' || lpad(to_hex(g), 12, '0'))::uuid, ('00000000-0000-0000-0001-' || lpad(to_hex(1 + g % 100), 12, '0'))::uuid,
		   'p' || g, now(), now(), CASE WHEN g % 13 = 0 THEN now() END FROM generate_series(1, 1000) g`,
		`INSERT INTO project_members (project_id, user_id, role, created_at)
		 SELECT ('00000000-0000-0000-0002-' || lpad(to_hex(1 + (u * 7 + k) % 1000), 12, '0'))::uuid, ('00000000-0000-0000-0000-' || lpad(to_hex(u), 12, '0'))::uuid,
		   'viewer', now() FROM generate_series(1, 1000) u, generate_series(0, 4) k`,
		`INSERT INTO notification_preferences (user_id, email_important, digest, created_at, updated_at) SELECT id, false, 'daily', now(), now() FROM users`,
		`INSERT INTO notifications (id, user_id, project_id, title, message, severity, importance, created_at, updated_at)
		 SELECT gen_random_uuid(), ('00000000-0000-0000-0000-' || lpad(to_hex(u), 12, '0'))::uuid,
		   ('00000000-0000-0000-0002-' || lpad(to_hex(1 + (u * 7 + n % 5) % 1000), 12, '0'))::uuid,
		   't', 'm', 'info', 'other', now() - n * interval '1 minute', now()
		 FROM generate_series(1, 1000) u, generate_series(1, 100) n`,
		`ANALYZE`,
	} {
		_, err := pool.Exec(ctx, s)
		require.NoError(t, err)
	}
	var plans []string
	users, err := digestDue(ctx, explainer{DBTX: pool, plans: &plans}, time.Now(), DigestUsersPerRun)
	require.NoError(t, err)
	require.Len(t, users, DigestUsersPerRun)
	require.Len(t, plans, 1)
	require.NotContains(t, plans[0], "Seq Scan on notifications", plans[0])
	require.Contains(t, plans[0], "notifications_user_created_idx", plans[0])
}
