package integration_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/integration"
)

// listener records the syncs that ended and the status each had in the
// transaction it was told in; it fails while fail is set, after a write.
type listener struct {
	mu     sync.Mutex
	ended  []integration.SyncEnded
	status []string
	fail   bool
}

func (l *listener) SyncEnded(ctx context.Context, tx pgx.Tx, e integration.SyncEnded) error {
	var status string
	if err := tx.QueryRow(ctx, `SELECT status FROM integration_sync_jobs WHERE id = $1`, e.JobID).Scan(&status); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE integrations SET display_name = 'touched by the listener' WHERE id = $1`, e.IntegrationID); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = append(l.ended, e)
	l.status = append(l.status, status)
	if l.fail {
		return errors.New("listener failed")
	}
	return nil
}

func (l *listener) calls() ([]integration.SyncEnded, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]integration.SyncEnded(nil), l.ended...), append([]string(nil), l.status...)
}

// TestSyncListenerInTheFinishingTransaction: the listener is told of each
// sync that ended, once, in the transaction that records its end (it sees
// the final status); its failure loses only its own writes.
func TestSyncListenerInTheFinishingTransaction(t *testing.T) {
	t.Parallel()
	l := &listener{}
	b := setup(t, setupOpts{start: true, listener: l})
	b.src.put("a", "# a\n\ntext a")
	i := b.create(t, "docs", nil)
	res, err := b.svc.Sync(context.Background(), b.project, "docs", integration.TriggerManual, integration.SyncOptions{})
	require.NoError(t, err)
	require.Equal(t, "completed", b.wait(t, res.JobID).Status)
	require.Eventually(t, func() bool { e, _ := l.calls(); return len(e) == 1 }, 10*time.Second, 10*time.Millisecond)
	ended, status := l.calls()
	require.Equal(t, b.project, ended[0].ProjectID)
	require.Equal(t, i.ID, ended[0].IntegrationID)
	require.Equal(t, res.JobID, ended[0].JobID)
	require.Equal(t, "completed", ended[0].Status)
	require.EqualValues(t, 1, ended[0].Data["created"])
	require.Equal(t, []string{"completed"}, status, "told in the transaction that ends the sync")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integrations WHERE display_name = 'touched by the listener'`))

	// A failing listener: the sync still ends with its event; the
	// listener's write is gone.
	_, err = b.pool.Exec(context.Background(), `UPDATE integrations SET display_name = 'Source docs'`)
	require.NoError(t, err)
	l.mu.Lock()
	l.fail = true
	l.mu.Unlock()
	b.src.put("b", "# b\n\ntext b")
	require.Equal(t, "completed", b.syncAndWait(t, "docs", integration.SyncOptions{}).Status)
	require.Eventually(t, func() bool { e, _ := l.calls(); return len(e) == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM events WHERE type = 'integration.sync.completed' AND project_id = $1`, b.project))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integrations WHERE display_name = 'touched by the listener'`))
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs WHERE status = 'completed'`))
}
