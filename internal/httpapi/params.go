package httpapi

import (
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// ParseID reads an id given in a path or body; a malformed one names
// nothing, so it is notFound (DESIGN 5: a malformed id in a path answers
// 404). Ids a route's Owner names arrive parsed in auth.Access instead.
func ParseID(raw string, notFound error) (uuid.UUID, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, notFound
	}
	return id, nil
}

// ParseTime reads an optional RFC 3339 time given as query parameter
// name: nil when raw is empty, invalid_argument naming it when malformed.
func ParseTime(name, raw string) (*time.Time, error) {
	if raw == "" {
		return nil, nil //nolint:nilnil // not given
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "%s must be an RFC 3339 time, for example 2026-01-02T15:04:05Z", name)
	}
	return &t, nil
}
