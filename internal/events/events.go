package events

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/postgres"
)

// Event types emitted so far.
const (
	TypeNotification = "notification"
	TypeJobCompleted = "job.completed"
	// TypeJobStarted announces a claimed batch of a queue's jobs (one
	// event per project of the batch): they are running.
	TypeJobStarted        = "job.started"
	TypeDocumentConverted = "document.converted"
	// TypeIntegrationSyncCompleted ends every sync, successful or not,
	// with its counts.
	TypeIntegrationSyncCompleted = "integration.sync.completed"
	// TypeDiscoveryProgress carries a discovery job's progress as it goes.
	TypeDiscoveryProgress = "discovery.progress"
)

// Channel carries the id of each committed event to every process.
const Channel = "graphmill_events"

// Retention is how long events are kept for replay.
const Retention = 24 * time.Hour

// publishLock serialises event inserts until commit, so ids become visible
// in increasing order (a reader never sees 11 before 10 commits).
const publishLock = 0x67726576 // "grev"

// Event is one entry of the stream. ProjectID makes it visible to the
// project's members; UserID to one user only (and, with ProjectID too, only
// while that user can see the project). At least one is set. A user event
// without a project is not shown to project-scoped tokens, which are
// confined to their project.
type Event struct {
	ID        int64           `json:"-"`
	Type      string          `json:"type"`
	ProjectID *uuid.UUID      `json:"projectId,omitempty"`
	UserID    *uuid.UUID      `json:"userId,omitempty"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"createdAt"`
}

// Publish records an event in tx; it is delivered once tx commits. Call it
// late in the transaction: it takes a lock that is held until commit.
func Publish(ctx context.Context, tx postgres.DBTX, typ string, project, user *uuid.UUID, data any, now time.Time) (int64, error) {
	if project == nil && user == nil {
		return 0, fmt.Errorf("publish %s: an event needs a project or a user", typ)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return 0, fmt.Errorf("publish %s: encode: %w", typ, err)
	}
	raw = postgres.JSONB(raw)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, publishLock); err != nil {
		return 0, fmt.Errorf("publish %s: lock: %w", typ, err)
	}
	var id int64
	err = tx.QueryRow(ctx, `INSERT INTO events (project_id, user_id, type, payload, created_at)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, project, user, typ, raw, now.UTC()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("publish %s: %w", typ, err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, strconv.FormatInt(id, 10)); err != nil {
		return 0, fmt.Errorf("publish %s: notify: %w", typ, err)
	}
	return id, nil
}

// ProjectEvent is one event of PublishProjects: its type, its project and
// its data.
type ProjectEvent struct {
	Type    string
	Project uuid.UUID
	Data    any
}

// PublishProjects records project events in one statement on db (a pool:
// the statement is its own transaction, the events are delivered when it
// ends; or the caller's transaction), taking the publish lock before it
// draws any id, as Publish does. It costs one round trip.
func PublishProjects(ctx context.Context, db postgres.DBTX, evs []ProjectEvent, now time.Time) error {
	if len(evs) == 0 {
		return nil
	}
	projects, types, payloads := make([]uuid.UUID, len(evs)), make([]string, len(evs)), make([]string, len(evs))
	for i, e := range evs {
		raw, err := json.Marshal(e.Data)
		if err != nil {
			return fmt.Errorf("publish %s: encode: %w", e.Type, err)
		}
		projects[i], types[i], payloads[i] = e.Project, e.Type, string(postgres.JSONB(raw))
	}
	// The lock is a CTE that every inserted row joins: no row, so no id,
	// exists before the lock is held.
	_, err := db.Exec(ctx, `WITH l AS (SELECT pg_advisory_xact_lock($1)),
e AS (
    INSERT INTO events (project_id, type, payload, created_at)
    SELECT p, t, d::jsonb, $5 FROM unnest($2::uuid[], $3::text[], $4::text[]) WITH ORDINALITY AS u(p, t, d, n), l
    ORDER BY n
    RETURNING id)
SELECT pg_notify($6, id::text) FROM e`, publishLock, projects, types, payloads, now.UTC(), Channel)
	if err != nil {
		return fmt.Errorf("publish %d events: %w", len(evs), err)
	}
	return nil
}

// Lock takes the publish lock now instead of at Publish; it is held until
// commit. A transaction that will lock rows which other publishing
// transactions lock too (a grouped notification, updated by every
// occurrence) takes it first, so that all of them take their locks in the
// same order and none can deadlock.
func Lock(ctx context.Context, tx postgres.DBTX) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, publishLock); err != nil {
		return fmt.Errorf("lock events: %w", err)
	}
	return nil
}

// LockHeld reports whether the transaction of db holds the publish lock
// (it published, or called Lock): its events, and those of transactions
// that waited for the lock after it, come after the events of every
// transaction that held the lock before.
func LockHeld(ctx context.Context, db postgres.DBTX) (bool, error) {
	var held bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
    AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1)`, publishLock).Scan(&held)
	if err != nil {
		return false, fmt.Errorf("events lock held: %w", err)
	}
	return held, nil
}

// DeleteExpired removes events older than Retention; the scheduler runs it.
func DeleteExpired(ctx context.Context, db postgres.DBTX, now time.Time) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM events WHERE created_at < $1`, now.Add(-Retention))
	if err != nil {
		return 0, fmt.Errorf("delete expired events: %w", err)
	}
	return tag.RowsAffected(), nil
}

const eventColumns = `id, type, project_id, user_id, payload, created_at`

func scanEvents(ctx context.Context, db postgres.DBTX, sql string, args ...any) ([]Event, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		if err := rows.Scan(&e.ID, &e.Type, &e.ProjectID, &e.UserID, &e.Data, &e.CreatedAt); err != nil {
			return nil, err
		}
		e.CreatedAt = e.CreatedAt.UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}
