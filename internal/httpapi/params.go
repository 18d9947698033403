package httpapi

import "github.com/google/uuid"

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
