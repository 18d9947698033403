package document

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// failingNotifier writes a row in the notification's savepoint, then
// answers err.
type failingNotifier struct{ err error }

func (n failingNotifier) DocumentParseFailed(ctx context.Context, tx pgx.Tx, _, _, _ uuid.UUID, _, _ string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO notify_probe VALUES (1)`); err != nil {
		return err
	}
	return n.err
}

// TestNotifyFailedConflictRunsAgain: a parse failure's notification that
// loses a deadlock or serialization conflict answers it (the finishing
// transaction runs again, jobqueue's outcome hooks), where any other
// error is logged and only the notification's writes are undone.
func TestNotifyFailedConflictRunsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		err      error
		conflict bool
		kept     int
	}{
		{"written", nil, false, 1},
		{"deadlock", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}, true, 0},
		{"serialization", &pgconn.PgError{Code: "40001", Message: "could not serialize access"}, true, 0},
		{"other", errors.New("mail server down"), false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tx := pgtest.Tx(t)
			_, err := tx.Exec(ctx, `CREATE TEMP TABLE notify_probe (n int) ON COMMIT DROP`)
			require.NoError(t, err)
			s := &Service{notifier: failingNotifier{c.err}, logger: slog.New(slog.DiscardHandler)}
			err = s.notifyFailed(ctx, tx, uuid.New(), uuid.New(), uuid.New(), "a.pdf", "corrupt")
			require.Equal(t, c.conflict, postgres.IsTxConflict(err), "%v", err)
			if !c.conflict {
				require.NoError(t, err)
				var n int
				require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM notify_probe`).Scan(&n), "the transaction goes on")
				require.Equal(t, c.kept, n)
			}
		})
	}
}
