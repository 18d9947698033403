package auth

import (
	"strings"

	"github.com/google/uuid"
)

// maxChangePayload keeps a change's notification payload under
// PostgreSQL's NOTIFY limit (8000 bytes); a larger change is announced
// as a change of everything.
const maxChangePayload = 7000

// Change names what an authorization change concerns, so that only the
// cached credentials and open connections it can affect are verified again.
type Change struct {
	// All: anything may have changed (every cache entry and connection).
	All bool
	// Users whose tokens, memberships, roles or account changed.
	Users []uuid.UUID
	// Projects deleted (or otherwise made invisible).
	Projects []uuid.UUID
	// Orgs deleted, with their projects.
	Orgs []uuid.UUID
}

// ChangeUsers is a change of users' credentials or memberships.
func ChangeUsers(users ...uuid.UUID) Change { return Change{Users: users} }

// Payload is the change as sent on InvalidateChannel: "*" for a change of
// everything, else comma-separated "u:<id>", "p:<id>" and "o:<id>".
func (c Change) Payload() string {
	if c.All {
		return "*"
	}
	var b strings.Builder
	add := func(kind string, ids []uuid.UUID) {
		for _, id := range ids {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(kind)
			b.WriteString(id.String())
		}
	}
	add("u:", c.Users)
	add("p:", c.Projects)
	add("o:", c.Orgs)
	if b.Len() == 0 || b.Len() > maxChangePayload {
		return "*"
	}
	return b.String()
}

// ParseChange reads a payload of InvalidateChannel. "*", an empty payload
// (sent by versions before targeted invalidation) and anything it cannot
// read are a change of everything: when in doubt, verify everything.
func ParseChange(payload string) Change {
	if payload == "" || payload == "*" {
		return Change{All: true}
	}
	var c Change
	for part := range strings.SplitSeq(payload, ",") {
		kind, raw, ok := strings.Cut(part, ":")
		id, err := uuid.Parse(raw)
		if !ok || err != nil {
			return Change{All: true}
		}
		switch kind {
		case "u":
			c.Users = append(c.Users, id)
		case "p":
			c.Projects = append(c.Projects, id)
		case "o":
			c.Orgs = append(c.Orgs, id)
		default:
			return Change{All: true}
		}
	}
	return c
}
