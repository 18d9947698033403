package integration

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
)

// ScheduleInterval is how often the scheduler looks for due integrations.
const ScheduleInterval = time.Minute

// scheduleBatch bounds the syncs one scheduler run queues.
const scheduleBatch = 500

// QueueScheduled queues, in tx (the scheduler's run), a scheduled sync of
// every active integration, or one in status error (its next successful
// sync puts it back to active), of a live project whose next_sync_at has come,
// and moves its next_sync_at one interval on. An integration whose sync is
// still queued or running gets none (the one-active rule) and waits for
// its next time. It is the scheduler task integration-sync-schedule.
//
// The active sync is read, not waited for: the insert of another would
// wait for its transaction in progress (the one-active index), which may
// be waiting for this one's lock on the integration (a sync's final
// transaction holds its job row, then records the sync on the
// integration), a deadlock. The lock is no key update (only next_sync_at
// changes), so a sync's documents, which reference the integration, go
// on meanwhile.
func (s *Service) QueueScheduled(ctx context.Context, tx pgx.Tx) error {
	now := s.now()
	rows, err := tx.Query(ctx, `SELECT i.id, i.project_id, i.sync_interval_minutes,
			EXISTS (SELECT 1 FROM integration_sync_jobs j WHERE j.integration_id = i.id AND j.status IN ('queued', 'running')) AS busy
		FROM integrations i JOIN projects p ON p.id = i.project_id
		WHERE i.next_sync_at <= $1 AND i.status IN ('active', 'error') AND i.sync_interval_minutes IS NOT NULL AND p.deleted_at IS NULL
		ORDER BY i.next_sync_at LIMIT $2 FOR NO KEY UPDATE OF i SKIP LOCKED`, now, scheduleBatch)
	if err != nil {
		return fmt.Errorf("find due integrations: %w", err)
	}
	type due struct {
		id, project uuid.UUID
		minutes     int
		busy        bool
	}
	var list []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.project, &d.minutes, &d.busy); err != nil {
			rows.Close()
			return fmt.Errorf("find due integrations: %w", err)
		}
		list = append(list, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("find due integrations: %w", err)
	}
	queued := 0
	for _, d := range list {
		if !d.busy {
			_, ok, err := syncJobInsert(ctx, tx, d.project, d.id, TriggerScheduled, SyncOptions{}, now)
			if err != nil {
				return err
			}
			if ok {
				queued++
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE integrations SET next_sync_at = $2 WHERE id = $1`,
			d.id, now.Add(time.Duration(d.minutes)*time.Minute)); err != nil {
			return fmt.Errorf("schedule next sync: %w", err)
		}
	}
	if queued > 0 {
		return jobqueue.Notify(ctx, tx, Queue)
	}
	return nil
}
