package httpapi

import (
	"time"

	"github.com/danielgtaylor/huma/v2"
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

// ParseOptionalID reads the optional id of the parameter or argument
// name, a filter or an optional reference (nil when raw is empty): a
// malformed one is a bad request, not a missing resource. Errors:
// invalid_argument.
func ParseOptionalID(name, raw string) (*uuid.UUID, error) {
	if raw == "" {
		return nil, nil //nolint:nilnil // none given
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "%s must be a UUID", name)
	}
	return &id, nil
}

// ParseTime reads the optional RFC 3339 time of the query parameter name
// (nil when raw is empty). Errors: invalid_argument.
func ParseTime(name, raw string) (*time.Time, error) {
	if raw == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "%s must be an RFC 3339 time such as 2026-01-31T00:00:00Z", name)
	}
	return &t, nil
}

// ParseTimeRange reads a range filter's two optional RFC 3339 bounds,
// the query parameters fromName and toName: the one rule of every date
// range (the same instant is a range). Errors: invalid_argument
// (malformed, or from after to).
func ParseTimeRange(fromName, fromRaw, toName, toRaw string) (from, to *time.Time, err error) {
	if from, err = ParseTime(fromName, fromRaw); err != nil {
		return nil, nil, err
	}
	if to, err = ParseTime(toName, toRaw); err != nil {
		return nil, nil, err
	}
	if from != nil && to != nil && from.After(*to) {
		return nil, nil, errs.Errorf(errs.Invalid, "%s must not be after %s", fromName, toName)
	}
	return from, to, nil
}

// IDsMax is the most ids an ids filter of a list route takes: a page's
// most (PageParams).
const IDsMax = 200

// ParseIDs reads the ids of the list filter of the query parameter name
// (nil when none is given: no filter). Errors: invalid_argument (a
// malformed id, more than IDsMax).
func ParseIDs(name string, raw []string) ([]uuid.UUID, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > IDsMax {
		return nil, errs.Errorf(errs.Invalid, "%s takes at most %d ids, not %d", name, IDsMax, len(raw))
	}
	ids := make([]uuid.UUID, len(raw))
	for i, s := range raw {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, errs.Errorf(errs.Invalid, "%s must be UUIDs separated by commas: %s is not one", name, errs.Quoted(s))
		}
		ids[i] = id
	}
	return ids, nil
}

// QueryOnce refuses a query parameter given more than once (ids=a&ids=b):
// huma reads only the first of a comma-separated list's values, so the
// others would be dropped without a word. An input with an ids filter
// calls it from its Resolve.
func QueryOnce(ctx huma.Context, name string) []error {
	u := ctx.URL()
	if values := u.Query()[name]; len(values) > 1 {
		return []error{&huma.ErrorDetail{Location: "query." + name, Message: "given more than once: separate its values by commas", Value: values}}
	}
	return nil
}
