package auth

import (
	"context"

	"github.com/google/uuid"
)

// OwnRecords selects whose records a Personal route acts on
// (notifications, recent activity): a user's, and only those of one
// project when ProjectID is set.
type OwnRecords struct {
	UserID    uuid.UUID
	ProjectID *uuid.UUID
}

// OwnRecordsOf is what a request of p authorised for a acts on: p's
// records, of a's project when the request names one (or the token is
// bound to one).
func OwnRecordsOf(p *Principal, a Access) OwnRecords {
	o := OwnRecords{UserID: p.UserID}
	if a.ProjectID != uuid.Nil {
		project := a.ProjectID
		o.ProjectID = &project
	}
	return o
}

// OwnRecordsFrom is OwnRecordsOf the caller and access ctx carries.
func OwnRecordsFrom(ctx context.Context) OwnRecords {
	return OwnRecordsOf(PrincipalFrom(ctx), AccessFrom(ctx))
}
