package audit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

func eventInsert(ctx context.Context, db postgres.DBTX, e Event) error {
	_, err := db.Exec(ctx, `INSERT INTO audit_events (id, actor_id, token_id, action, target_ids, requested, affected, request_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		e.ID, e.ActorID, e.TokenID, string(e.Action), e.TargetIDs, e.Requested, e.Affected, e.RequestID, e.CreatedAt)
	if err != nil {
		return fmt.Errorf("record audit event %s: %w", e.Action, err)
	}
	return nil
}

func eventList(ctx context.Context, db postgres.DBTX, f Filter) ([]Event, int, error) {
	// The total is its own count: a window count over the page is 0 on a
	// page past the end.
	const where = `($1::uuid IS NULL OR e.actor_id = $1) AND ($2 = '' OR e.action = $2)
		  AND ($3::timestamptz IS NULL OR e.created_at >= $3) AND ($4::timestamptz IS NULL OR e.created_at <= $4)`
	rows, _ := db.Query(ctx, `
		SELECT e.id, e.actor_id, COALESCE(u.primary_email, '') AS actor_email, e.token_id, e.action, e.target_ids,
		       e.requested, e.affected, e.request_id, e.created_at
		FROM audit_events e LEFT JOIN users u ON u.id = e.actor_id
		WHERE `+where+`
		ORDER BY e.created_at DESC, e.id DESC LIMIT $5 OFFSET $6`,
		f.ActorID, string(f.Action), f.From, f.To, f.Limit, f.Offset)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Event])
	if err != nil {
		return nil, 0, fmt.Errorf("list audit events: %w", err)
	}
	var total int
	err = db.QueryRow(ctx, `SELECT count(*) FROM audit_events e WHERE `+where, f.ActorID, string(f.Action), f.From, f.To).Scan(&total)
	if err != nil {
		return nil, 0, fmt.Errorf("count audit events: %w", err)
	}
	return list, total, nil
}
