// Package superadmin is platform administration across every tenant:
// listing and deleting users, organizations and projects, and creating
// local users and their tokens. Every route needs the superadmin grant.
package superadmin

import (
	"time"

	"github.com/google/uuid"
)

// Membership is a user's role in an organization.
type Membership struct {
	OrgID    uuid.UUID `json:"orgId"`
	OrgName  string    `json:"orgName"`
	Role     string    `json:"role"`
	JoinedAt time.Time `json:"joinedAt"`
}

// User is a user as superadmins see it.
type User struct {
	ID                     uuid.UUID    `json:"id" db:"id"`
	IdentityProviderUserID string       `json:"identityProviderUserId,omitempty" db:"oidc_subject"`
	FirstName              string       `json:"firstName,omitempty" db:"first_name"`
	LastName               string       `json:"lastName,omitempty" db:"last_name"`
	DisplayName            string       `json:"displayName,omitempty" db:"display_name"`
	PrimaryEmail           string       `json:"primaryEmail,omitempty" db:"primary_email"`
	LastActivityAt         *time.Time   `json:"lastActivityAt,omitempty" db:"last_activity_at"`
	CreatedAt              time.Time    `json:"createdAt" db:"created_at"`
	Organizations          []Membership `json:"organizations" db:"-"`
}

// Organization is an organization with its counts.
type Organization struct {
	ID           uuid.UUID  `json:"id" db:"id"`
	Name         string     `json:"name" db:"name"`
	MemberCount  int        `json:"memberCount" db:"member_count"`
	ProjectCount int        `json:"projectCount" db:"project_count"`
	CreatedAt    time.Time  `json:"createdAt" db:"created_at"`
	DeletedAt    *time.Time `json:"deletedAt,omitempty" db:"deleted_at"`
}

// Project is a project with its organization and document count.
type Project struct {
	ID               uuid.UUID  `json:"id" db:"id"`
	Name             string     `json:"name" db:"name"`
	OrganizationID   uuid.UUID  `json:"organizationId" db:"org_id"`
	OrganizationName string     `json:"organizationName" db:"org_name"`
	DocumentCount    int        `json:"documentCount" db:"-"`
	CreatedAt        time.Time  `json:"createdAt" db:"created_at"`
	DeletedAt        *time.Time `json:"deletedAt,omitempty" db:"deleted_at"`
}

// Meta is the pagination block of superadmin lists.
type Meta struct {
	Page       int  `json:"page"`
	Limit      int  `json:"limit"`
	Total      int  `json:"total"`
	TotalPages int  `json:"totalPages"`
	HasNext    bool `json:"hasNext"`
	HasPrev    bool `json:"hasPrev"`
}

// NewMeta computes the pagination block.
func NewMeta(page, limit, total int) Meta {
	pages := (total + limit - 1) / limit
	return Meta{Page: page, Limit: limit, Total: total, TotalPages: pages, HasNext: page < pages, HasPrev: page > 1}
}

// Paged is the envelope of superadmin lists; job lists add Stats.
type Paged[T any] struct {
	Data  []T       `json:"data"`
	Meta  Meta      `json:"meta"`
	Stats *JobStats `json:"stats,omitempty"`
}

// JobStats is the stats block of superadmin job lists, counted over the
// list's filters except status: the total, the failed jobs, the jobs
// carrying an error, and the count of every status of the list's
// vocabulary (zero included).
type JobStats struct {
	Total      int            `json:"total"`
	Failed     int            `json:"failed"`
	WithErrors int            `json:"withErrors"`
	ByStatus   map[string]int `json:"byStatus"`
}

// BulkRequest is the body of the superadmin bulk job actions. Type, when
// set, narrows the action to the jobs of that kind within the list: graph
// or chunk for embedding jobs, the job type for extraction jobs; parsing
// jobs have no kind (any type is refused).
type BulkRequest struct {
	IDs  []uuid.UUID `json:"ids" minItems:"1" maxItems:"1000" doc:"The jobs (at most 1,000); unknown ids count zero."`
	Type string      `json:"type,omitempty" maxLength:"50" doc:"Only the jobs of this kind within the list: graph or chunk (embedding jobs); full_extraction, reextraction or incremental (extraction jobs). Document parsing jobs have no kind."`
}

// RetryResult answers bulk retries.
type RetryResult struct {
	Success      bool   `json:"success"`
	RetriedCount int    `json:"retriedCount"`
	Message      string `json:"message"`
}

// CancelResult answers bulk cancels.
type CancelResult struct {
	Success        bool   `json:"success"`
	CancelledCount int    `json:"cancelledCount"`
	Message        string `json:"message"`
}

// DeleteResult answers bulk and single deletes.
type DeleteResult struct {
	Success      bool   `json:"success"`
	DeletedCount int    `json:"deletedCount"`
	Message      string `json:"message"`
}

// Filter narrows and pages a list.
type Filter struct {
	Search         string
	OrgID          *uuid.UUID
	IncludeDeleted bool
	PageParams
}
