package console

import (
	"context"
	"fmt"
	"time"

	"github.com/graphmill/graphmill/internal/postgres"
)

// revocations are the signed-out sessions (console_revoked_sessions,
// written by this package only): a session's cookie is the whole
// session, so a copy of it would outlive the browser's sign-out until
// the session's end; its id recorded here refuses it on every request.
type revocations struct {
	db postgres.DBTX
}

// revoke records that the session id ends now; the row lives until the
// session would have ended (expires).
func (v revocations) revoke(ctx context.Context, id string, expires time.Time) error {
	if _, err := v.db.Exec(ctx, `INSERT INTO console_revoked_sessions (id, expires_at) VALUES ($1, $2)
		ON CONFLICT (id) DO NOTHING`, id, expires.UTC()); err != nil {
		return fmt.Errorf("revoke console session: %w", err)
	}
	return nil
}

// revoked reports whether the session id was signed out: one primary key
// lookup.
func (v revocations) revoked(ctx context.Context, id string) (bool, error) {
	gone, err := postgres.One[bool](ctx, v.db, nil, `SELECT EXISTS (SELECT 1 FROM console_revoked_sessions WHERE id = $1)`, id)
	if err != nil {
		return false, fmt.Errorf("look up console session: %w", err)
	}
	return gone, nil
}

// DeleteExpiredRevocations removes the revocations of sessions that have
// ended anyway (their cookies are refused as expired); the scheduler runs
// it.
func DeleteExpiredRevocations(ctx context.Context, db postgres.DBTX, now time.Time) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM console_revoked_sessions WHERE expires_at < $1`, now.UTC())
	if err != nil {
		return 0, fmt.Errorf("delete expired console session revocations: %w", err)
	}
	return tag.RowsAffected(), nil
}
