package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// row is an integrations row with its organization and latest sync.
type row struct {
	ID                uuid.UUID       `db:"id"`
	ProjectID         uuid.UUID       `db:"project_id"`
	OrgID             uuid.UUID       `db:"org_id"`
	Name              string          `db:"name"`
	DisplayName       string          `db:"display_name"`
	ProviderType      string          `db:"provider_type"`
	ConfigSealed      string          `db:"config_sealed"`
	Status            string          `db:"status"`
	SyncInterval      *int            `db:"sync_interval_minutes"`
	MaxDeleteFraction float64         `db:"max_delete_fraction"`
	ConnectorState    json.RawMessage `db:"connector_state"`
	LastSyncAt        *time.Time      `db:"last_sync_at"`
	NextSyncAt        *time.Time      `db:"next_sync_at"`
	LastJobStatus     *string         `db:"last_job_status"`
	CreatedAt         time.Time       `db:"created_at"`
	UpdatedAt         time.Time       `db:"updated_at"`
}

const rowColumns = `i.id, i.project_id, p.org_id, i.name, i.display_name, i.provider_type, i.config_sealed, i.status,
	i.sync_interval_minutes, i.max_delete_fraction, i.connector_state, i.last_sync_at, i.next_sync_at,
	(SELECT j.status FROM integration_sync_jobs j WHERE j.integration_id = i.id ORDER BY j.created_at DESC, j.id DESC LIMIT 1) AS last_job_status,
	i.created_at, i.updated_at`

const rowFrom = ` FROM integrations i JOIN projects p ON p.id = i.project_id`

func integrationGet(ctx context.Context, db postgres.DBTX, project uuid.UUID, name string) (row, error) {
	r, err := postgres.One[row](ctx, db, ErrNotFound, `SELECT `+rowColumns+rowFrom+` WHERE i.project_id = $1 AND i.name = $2`, project, name)
	if err != nil {
		return row{}, fmt.Errorf("get integration: %w", err)
	}
	return r, nil
}

func integrationGetByID(ctx context.Context, db postgres.DBTX, id uuid.UUID) (row, error) {
	r, err := postgres.One[row](ctx, db, ErrNotFound, `SELECT `+rowColumns+rowFrom+` WHERE i.id = $1`, id)
	if err != nil {
		return row{}, fmt.Errorf("get integration: %w", err)
	}
	return r, nil
}

// integrationLock locks an integration row for a change and returns it.
func integrationLock(ctx context.Context, tx pgx.Tx, project uuid.UUID, name string) (row, error) {
	r, err := postgres.One[row](ctx, tx, ErrNotFound, `SELECT `+rowColumns+rowFrom+` WHERE i.project_id = $1 AND i.name = $2 FOR UPDATE OF i`, project, name)
	if err != nil {
		return row{}, fmt.Errorf("lock integration: %w", err)
	}
	return r, nil
}

type listRow struct {
	row
	postgres.Total
}

// integrationList pages project's integrations, by name, as records
// (without their config).
func integrationList(ctx context.Context, db postgres.DBTX, project uuid.UUID, limit, offset int) ([]Integration, int, error) {
	rows, _ := db.Query(ctx, `SELECT `+rowColumns+`, count(*) OVER () AS total`+rowFrom+`
		WHERE i.project_id = $1 ORDER BY i.name LIMIT $2 OFFSET $3`, project, limit, offset)
	list, total, err := postgres.CollectPage(rows, func(r listRow) Integration { return record(r.row) })
	if err != nil {
		return nil, 0, fmt.Errorf("list integrations: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(list), offset, total, `SELECT count(*) FROM integrations WHERE project_id = $1`, project); err != nil {
		return nil, 0, fmt.Errorf("count integrations: %w", err)
	}
	return list, total, nil
}

func integrationInsert(ctx context.Context, tx pgx.Tx, r row, createdBy *uuid.UUID) error {
	_, err := tx.Exec(ctx, `INSERT INTO integrations (id, project_id, name, display_name, provider_type, config_sealed, status,
		sync_interval_minutes, max_delete_fraction, next_sync_at, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)`,
		r.ID, r.ProjectID, r.Name, r.DisplayName, r.ProviderType, r.ConfigSealed, r.Status,
		r.SyncInterval, r.MaxDeleteFraction, r.NextSyncAt, createdBy, r.CreatedAt)
	if postgres.IsUniqueViolation(err, "integrations_project_name_key") {
		return ErrNameTaken
	}
	if err != nil {
		return fmt.Errorf("insert integration: %w", err)
	}
	return nil
}

func integrationUpdate(ctx context.Context, tx pgx.Tx, r row) error {
	_, err := tx.Exec(ctx, `UPDATE integrations SET display_name = $2, config_sealed = $3, status = $4, sync_interval_minutes = $5,
		max_delete_fraction = $6, next_sync_at = $7, updated_at = $8 WHERE id = $1`,
		r.ID, r.DisplayName, r.ConfigSealed, r.Status, r.SyncInterval, r.MaxDeleteFraction, r.NextSyncAt, r.UpdatedAt)
	if err != nil {
		return fmt.Errorf("update integration: %w", err)
	}
	return nil
}

func integrationDelete(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
	if _, err := tx.Exec(ctx, `DELETE FROM integrations WHERE id = $1`, id); err != nil {
		return fmt.Errorf("delete integration: %w", err)
	}
	return nil
}

// syncJobInsert queues a sync of integration unless one is queued or
// running (the unique index integration_sync_jobs_active_key decides, so
// concurrent requests cannot both queue one). It returns the new job's id,
// or the active one's with queued false.
func syncJobInsert(ctx context.Context, tx pgx.Tx, project, integration uuid.UUID, trigger string, opts SyncOptions, now time.Time) (uuid.UUID, bool, error) {
	raw, err := json.Marshal(opts)
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("encode sync options: %w", err)
	}
	id := uuid.Must(uuid.NewV7())
	// The active sync may finish between the insert and the select (each
	// statement sees what is committed when it starts): then the insert
	// is tried again.
	for range insertTries {
		tag, err := tx.Exec(ctx, `INSERT INTO integration_sync_jobs (id, project_id, run_at, created_at, updated_at, integration_id, trigger_type, options, trace_parent)
			VALUES ($1, $2, $3, $3, $3, $4, $5, $6, $7)
			ON CONFLICT (integration_id) WHERE status IN ('queued', 'running') DO NOTHING`,
			id, project, now, integration, trigger, raw, jobqueue.TraceParent(ctx))
		if err != nil {
			return uuid.Nil, false, fmt.Errorf("queue sync: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return id, true, nil
		}
		active, err := postgres.One[uuid.UUID](ctx, tx, errNoActiveSync,
			`SELECT id FROM integration_sync_jobs WHERE integration_id = $1 AND status IN ('queued', 'running')`, integration)
		if errors.Is(err, errNoActiveSync) {
			continue
		}
		if err != nil {
			return uuid.Nil, false, fmt.Errorf("find active sync: %w", err)
		}
		return active, false, nil
	}
	return uuid.Nil, false, fmt.Errorf("queue sync: the active sync kept changing (%d tries)", insertTries)
}

// insertTries bounds syncJobInsert's tries.
const insertTries = 3

// errNoActiveSync is syncJobInsert's select finding no active sync.
var errNoActiveSync = errors.New("no active sync")

// syncJob is a sync job's domain columns.
type syncJob struct {
	ID            uuid.UUID       `db:"id"`
	ProjectID     uuid.UUID       `db:"project_id"`
	IntegrationID uuid.UUID       `db:"integration_id"`
	Trigger       string          `db:"trigger_type"`
	Options       json.RawMessage `db:"options"`
	// Checkpoint is the connector state an earlier attempt of the job
	// last recorded; nil when none did.
	Checkpoint json.RawMessage `db:"connector_state"`
}

func syncJobGet(ctx context.Context, db postgres.DBTX, id uuid.UUID) (syncJob, error) {
	j, err := postgres.One[syncJob](ctx, db, ErrSyncNotFound, `SELECT id, project_id, integration_id, trigger_type, options, connector_state FROM integration_sync_jobs WHERE id = $1`, id)
	if err != nil {
		return syncJob{}, fmt.Errorf("load sync job: %w", err)
	}
	return j, nil
}

// counts are increments of a sync job's counters.
type counts struct {
	Total, Processed, Created, Updated, Unchanged, Deleted, Failed int
}

func (c counts) zero() bool { return c == counts{} }

func syncJobCount(ctx context.Context, tx pgx.Tx, id uuid.UUID, c counts, now time.Time) error {
	if c.zero() {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE integration_sync_jobs SET total_items = total_items + $2, processed_items = processed_items + $3,
		created_items = created_items + $4, updated_items = updated_items + $5, unchanged_items = unchanged_items + $6,
		deleted_items = deleted_items + $7, failed_items = failed_items + $8, updated_at = $9 WHERE id = $1`,
		id, c.Total, c.Processed, c.Created, c.Updated, c.Unchanged, c.Deleted, c.Failed, now)
	if err != nil {
		return fmt.Errorf("count sync items: %w", err)
	}
	return nil
}

// syncJobStartAttempt sets a sync job's phase to listing at the start of
// an attempt and takes the failed (and skipped) items an earlier attempt
// counted out of its counters: they have no document recording the job,
// so this attempt counts them again if it reaches them. The stored and
// unchanged items stay counted (a document records the job).
func syncJobStartAttempt(ctx context.Context, db postgres.DBTX, id uuid.UUID, now time.Time) error {
	_, err := db.Exec(ctx, `UPDATE integration_sync_jobs SET phase = $2, total_items = total_items - failed_items,
		processed_items = processed_items - failed_items, failed_items = 0, updated_at = $3 WHERE id = $1`, id, PhaseListing, now)
	if err != nil {
		return fmt.Errorf("start sync attempt: %w", err)
	}
	return nil
}

// syncJobCheckpoint saves the connector state a sync job's walk recorded
// so far: a retry of the job starts from it.
func syncJobCheckpoint(ctx context.Context, tx pgx.Tx, id uuid.UUID, state json.RawMessage) error {
	if _, err := tx.Exec(ctx, `UPDATE integration_sync_jobs SET connector_state = $2 WHERE id = $1`, id, state); err != nil {
		return fmt.Errorf("checkpoint sync job: %w", err)
	}
	return nil
}

func syncJobSetPhase(ctx context.Context, db postgres.DBTX, id uuid.UUID, phase string, state json.RawMessage, now time.Time) error {
	_, err := db.Exec(ctx, `UPDATE integration_sync_jobs SET phase = $2, connector_state = COALESCE($3, connector_state), updated_at = $4 WHERE id = $1`,
		id, phase, state, now)
	if err != nil {
		return fmt.Errorf("set sync phase: %w", err)
	}
	return nil
}

// syncCounts reads a sync job's counters.
func syncCounts(ctx context.Context, db postgres.DBTX, id uuid.UUID) (counts, error) {
	var c counts
	err := db.QueryRow(ctx, `SELECT total_items, processed_items, created_items, updated_items, unchanged_items, deleted_items, failed_items
		FROM integration_sync_jobs WHERE id = $1`, id).Scan(&c.Total, &c.Processed, &c.Created, &c.Updated, &c.Unchanged, &c.Deleted, &c.Failed)
	if err != nil {
		return counts{}, fmt.Errorf("read sync counters: %w", err)
	}
	return c, nil
}

// syncLogInsert writes a sync log entry. Its message and the strings of
// its details are the server's own or have passed redact, which cleans
// them (postgres.Text) before it hides the secrets: they are stored as
// they are.
func syncLogInsert(ctx context.Context, db postgres.DBTX, job, project uuid.UUID, level, message string, details map[string]any, now time.Time) error {
	var raw []byte
	if len(details) > 0 {
		var err error
		if raw, err = json.Marshal(details); err != nil {
			return fmt.Errorf("encode sync log details: %w", err)
		}
	}
	_, err := db.Exec(ctx, `INSERT INTO integration_sync_logs (id, job_id, project_id, level, message, details, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, uuid.Must(uuid.NewV7()), job, project, level, message, raw, now)
	if err != nil {
		return fmt.Errorf("write sync log: %w", err)
	}
	return nil
}

// integrationSynced records a successful sync on its integration: the
// connector's new state (nil keeps the old), the time, status active
// again after an error.
func integrationSynced(ctx context.Context, tx pgx.Tx, id uuid.UUID, state json.RawMessage, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE integrations SET connector_state = COALESCE($2, connector_state), last_sync_at = $3,
		status = CASE WHEN status = 'error' THEN 'active' ELSE status END WHERE id = $1`, id, state, now)
	if err != nil {
		return fmt.Errorf("record sync: %w", err)
	}
	return nil
}

// integrationFailed puts an integration whose sync gave up in status error.
func integrationFailed(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
	_, err := tx.Exec(ctx, `UPDATE integrations SET status = 'error' WHERE id = $1 AND status = 'active'`, id)
	if err != nil {
		return fmt.Errorf("record failed sync: %w", err)
	}
	return nil
}

// skippedItem is what a sync remembers of an item it skipped.
type skippedItem struct {
	Version string
	Job     uuid.UUID // the sync that last skipped it
}

// skippedItemsGet returns an integration's skipped items by external id.
func skippedItemsGet(ctx context.Context, db postgres.DBTX, integration uuid.UUID) (map[string]skippedItem, error) {
	rows, _ := db.Query(ctx, `SELECT external_id, version, sync_job_id FROM integration_skipped_items WHERE integration_id = $1`, integration)
	out := map[string]skippedItem{}
	var (
		ext string
		it  skippedItem
	)
	_, err := pgx.ForEachRow(rows, []any{&ext, &it.Version, &it.Job}, func() error {
		out[ext] = it
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list skipped items: %w", err)
	}
	return out, nil
}

// skippedItemPut records that job skipped an item at version.
func skippedItemPut(ctx context.Context, tx pgx.Tx, integration, job uuid.UUID, ext, version string, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO integration_skipped_items (integration_id, external_id, version, sync_job_id, skipped_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (integration_id, external_id) DO UPDATE SET version = EXCLUDED.version, sync_job_id = EXCLUDED.sync_job_id, skipped_at = EXCLUDED.skipped_at`,
		integration, ext, version, job, now)
	if err != nil {
		return fmt.Errorf("record skipped item: %w", err)
	}
	return nil
}

// skippedItemDelete forgets the skip of an item (stored as a document
// since, or skipped without a version).
func skippedItemDelete(ctx context.Context, tx pgx.Tx, integration uuid.UUID, ext string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM integration_skipped_items WHERE integration_id = $1 AND external_id = $2`, integration, ext); err != nil {
		return fmt.Errorf("forget skipped item: %w", err)
	}
	return nil
}

// skippedItemsPrune forgets the skipped items a complete listing by job
// did not report: the ones job skipped itself and the unchanged ones it
// was told of (kept) stay.
func skippedItemsPrune(ctx context.Context, tx pgx.Tx, integration, job uuid.UUID, kept []string) error {
	_, err := tx.Exec(ctx, `DELETE FROM integration_skipped_items WHERE integration_id = $1 AND sync_job_id <> $2 AND NOT (external_id = ANY($3))`,
		integration, job, append([]string{}, kept...)) // never NULL: ANY(NULL) would keep all
	if err != nil {
		return fmt.Errorf("prune skipped items: %w", err)
	}
	return nil
}
