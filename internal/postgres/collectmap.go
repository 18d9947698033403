package postgres

import "github.com/jackc/pgx/v5"

// CollectMap collects the rows of a query of two columns, a key and its
// value, as a map (a later row replaces an earlier one with the same key).
func CollectMap[K comparable, V any](rows pgx.Rows) (map[K]V, error) {
	out := map[K]V{}
	var k K
	var v V
	if _, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error {
		out[k] = v
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}
