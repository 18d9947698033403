package postgres

import (
	"context"
	"fmt"
)

// ExecOne runs a statement that changes at most one row (a delete, an
// update or an insert of one row by its key) and reports whether it
// changed one; an error is wrapped with what ("delete member: ...").
func ExecOne(ctx context.Context, db DBTX, what, query string, args ...any) (bool, error) {
	tag, err := db.Exec(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return tag.RowsAffected() == 1, nil
}
