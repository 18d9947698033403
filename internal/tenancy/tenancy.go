// Package tenancy owns organizations, projects, users, memberships and API
// tokens: who exists and who may act where. It also answers the auth
// package's identity look-ups.
package tenancy

import (
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// Org is an organization.
type Org struct {
	ID        uuid.UUID `json:"id" db:"id"`
	Name      string    `json:"name" db:"name"`
	Role      string    `json:"role,omitempty" db:"role" doc:"The caller's role in the organization."`
	CreatedAt time.Time `json:"createdAt" db:"created_at"`
	UpdatedAt time.Time `json:"updatedAt" db:"updated_at"`
}

// Project is a project of an organization: the unit every document, job and
// graph object belongs to.
type Project struct {
	ID        uuid.UUID `json:"id" db:"id"`
	OrgID     uuid.UUID `json:"orgId" db:"org_id"`
	Name      string    `json:"name" db:"name"`
	Role      string    `json:"role,omitempty" db:"-" doc:"The caller's effective role in the project."`
	CreatedAt time.Time `json:"createdAt" db:"created_at"`
	UpdatedAt time.Time `json:"updatedAt" db:"updated_at"`
}

// Member is a user's membership of a project.
type Member struct {
	UserID       uuid.UUID `json:"userId" db:"user_id"`
	Role         string    `json:"role" db:"role"`
	DisplayName  string    `json:"displayName,omitempty" db:"display_name"`
	PrimaryEmail string    `json:"primaryEmail,omitempty" db:"primary_email"`
	CreatedAt    time.Time `json:"createdAt" db:"created_at"`
}

// Token is an API token's metadata; Token (the secret) is set only in the
// response that creates it.
type Token struct {
	ID        uuid.UUID  `json:"id" db:"id"`
	Name      string     `json:"name" db:"name"`
	Prefix    string     `json:"prefix" db:"prefix" doc:"The first characters of the token, to recognise it."`
	Scopes    []string   `json:"scopes" db:"scopes"`
	ProjectID *uuid.UUID `json:"projectId,omitempty" db:"project_id"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty" db:"expires_at"`
	CreatedAt time.Time  `json:"createdAt" db:"created_at"`
	Token     string     `json:"token,omitempty" db:"-" doc:"The token itself; shown once, at creation."`
}

// User is a local or OIDC user.
type User struct {
	ID           uuid.UUID `json:"id"`
	DisplayName  string    `json:"displayName,omitempty"`
	PrimaryEmail string    `json:"primaryEmail,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
}

// CreateTokenParams describes a new token. ProjectID binds it to one
// project; nil makes an account-level token.
type CreateTokenParams struct {
	UserID    uuid.UUID
	ProjectID *uuid.UUID
	Name      string
	Scopes    []string
	ExpiresAt *time.Time
}

// Page is a limit/offset window.
type Page struct {
	Limit  int
	Offset int
}

// Errors of this domain.
var (
	ErrOrgNotFound     = errs.New(errs.NotFound, "organization not found")
	ErrProjectNotFound = errs.New(errs.NotFound, "project not found")
	ErrUserNotFound    = errs.New(errs.NotFound, "user not found")
	ErrTokenNotFound   = errs.New(errs.NotFound, "token not found")
	ErrMemberNotFound  = errs.New(errs.NotFound, "membership not found")
	ErrOrgExists       = errs.New(errs.Conflict, "an organization with this name already exists")
	ErrProjectExists   = errs.New(errs.Conflict, "a project with this name already exists in the organization")
	ErrEmailTaken      = errs.New(errs.Conflict, "a user with this email already exists")
)

// Names of the bootstrap records.
const (
	DefaultOrgName     = "default"
	DefaultProjectName = "default"
	AdminDisplayName   = "admin"
	AdminEmail         = "admin@localhost"
)

// ExtractionSettings are the extraction settings kept on a project; the
// extraction package gives them their meaning and bounds.
type ExtractionSettings struct {
	ReviewThreshold           float64 `db:"review_threshold"`
	ReextractionIntervalHours int     `db:"reextraction_interval_hours"`
}

// ReextractionInterval is the age, in hours, at which the extraction of a
// project's documents is redone.
type ReextractionInterval struct {
	ProjectID uuid.UUID
	Hours     int
}
