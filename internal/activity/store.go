package activity

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// itemColumns are Item's columns (a NULL name or subtype is empty).
const itemColumns = `id, project_id, resource_type, resource_id, COALESCE(resource_name, '') AS resource_name,
	COALESCE(resource_subtype, '') AS resource_subtype, action_type, accessed_at`

// mine selects an Owner's items: $1 user, $2 project (NULL: any).
const mine = `user_id = $1 AND ($2::uuid IS NULL OR project_id = $2)`

// owned selects the items of an Owner's that they see: those of the
// projects they can see now (not one they left, nor a deleted one). $1
// user, $2 project (NULL: any).
func owned() string {
	return mine + ` AND ` + tenancy.SeesProject("$1", "user_activity.project_id")
}

// activityUpsert records a use: a new item, or the resource's existing
// item moved to the top with the new action (and name and subtype, when
// given).
func activityUpsert(ctx context.Context, db postgres.DBTX, id uuid.UUID, r Record, now time.Time) (Item, error) {
	rows, _ := db.Query(ctx, `INSERT INTO user_activity (id, user_id, project_id, resource_type, resource_id, resource_name,
		resource_subtype, action_type, accessed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT ON CONSTRAINT user_activity_resource_key DO UPDATE SET
		  action_type = EXCLUDED.action_type, accessed_at = EXCLUDED.accessed_at,
		  resource_name = COALESCE(EXCLUDED.resource_name, user_activity.resource_name),
		  resource_subtype = COALESCE(EXCLUDED.resource_subtype, user_activity.resource_subtype)
		RETURNING `+itemColumns,
		id, r.UserID, r.ProjectID, r.ResourceType, r.ResourceID, postgres.NullIfEmpty(r.ResourceName), postgres.NullIfEmpty(r.ResourceSubtype), r.ActionType, now)
	it, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Item])
	if err != nil {
		return Item{}, fmt.Errorf("record activity: %w", err)
	}
	return it, nil
}

// activityTrim keeps a user's keep most recent items and deletes the rest.
func activityTrim(ctx context.Context, db postgres.DBTX, user uuid.UUID, keep int) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM user_activity WHERE id IN (
		SELECT id FROM user_activity WHERE user_id = $1 ORDER BY accessed_at DESC, id DESC OFFSET $2)`, user, keep)
	if err != nil {
		return 0, fmt.Errorf("trim activity: %w", err)
	}
	return tag.RowsAffected(), nil
}

// activityList lists an Owner's most recent items, of one resource type
// when typ is not empty.
func activityList(ctx context.Context, db postgres.DBTX, o Owner, typ string, limit int) ([]Item, error) {
	rows, _ := db.Query(ctx, `SELECT `+itemColumns+` FROM user_activity
		WHERE `+owned()+` AND ($3 = '' OR resource_type = $3)
		ORDER BY accessed_at DESC, id DESC LIMIT $4`, o.UserID, o.ProjectID, typ, limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Item])
	if err != nil {
		return nil, fmt.Errorf("list activity: %w", err)
	}
	return list, nil
}

// activityDelete deletes an Owner's items of one resource, named by any
// of ids (one per project), and returns how many it deleted.
func activityDelete(ctx context.Context, db postgres.DBTX, o Owner, typ string, ids []string) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM user_activity WHERE `+owned()+` AND resource_type = $3 AND resource_id = ANY($4)`,
		o.UserID, o.ProjectID, typ, ids)
	if err != nil {
		return 0, fmt.Errorf("delete activity: %w", err)
	}
	return tag.RowsAffected(), nil
}

// activityClear deletes all of an Owner's items, those they do not see
// included (clearing a history clears it all).
func activityClear(ctx context.Context, db postgres.DBTX, o Owner) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM user_activity WHERE `+mine, o.UserID, o.ProjectID)
	if err != nil {
		return 0, fmt.Errorf("clear activity: %w", err)
	}
	return tag.RowsAffected(), nil
}

// activityForget deletes every user's items of the resources ids of one
// type in project and returns how many it deleted.
func activityForget(ctx context.Context, db postgres.DBTX, project uuid.UUID, typ string, ids []string) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM user_activity WHERE project_id = $1 AND resource_type = $2 AND resource_id = ANY($3)`,
		project, typ, ids)
	if err != nil {
		return 0, fmt.Errorf("forget activity: %w", err)
	}
	return tag.RowsAffected(), nil
}
