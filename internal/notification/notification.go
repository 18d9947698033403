// Package notification owns users' notifications: the inbox with its tabs,
// counts and flags, the service other domains call to notify a user (or
// every admin of a project) in the transaction of the change that caused
// it, grouping of repeated notifications, delivery on the event stream,
// and the system notifications about failed jobs and documents.
package notification

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// Tabs of the inbox (spec; DESIGN.md section 7a).
const (
	// TabAll is every notification not dismissed, snoozed ones included.
	TabAll = "all"
	// TabImportant is the non-dismissed notifications of importance
	// "important".
	TabImportant = "important"
	// TabOther is the non-dismissed notifications of importance "other".
	TabOther = "other"
	// TabSnoozed is the non-dismissed notifications snoozed until a future
	// time.
	TabSnoozed = "snoozed"
	// TabCleared is the dismissed notifications.
	TabCleared = "cleared"
)

// Importance values: they select the tab.
const (
	ImportanceImportant = "important"
	ImportanceOther     = "other"
)

// Severity values (the union of the spec's two lists).
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityError    = "error"
	SeverityCritical = "critical"
	SeveritySuccess  = "success"
)

// Limits.
const (
	TitleMax   = 500
	MessageMax = 10000
	FieldMax   = 2000
	SearchMax  = 200
)

// Notification is one notification of its owner.
type Notification struct {
	ID                  uuid.UUID       `json:"id" db:"id"`
	ProjectID           *uuid.UUID      `json:"projectId,omitempty" db:"project_id"`
	UserID              uuid.UUID       `json:"userId" db:"user_id" doc:"The owner."`
	Title               string          `json:"title" db:"title"`
	Message             string          `json:"message" db:"message"`
	Type                string          `json:"type,omitempty" db:"type"`
	Severity            string          `json:"severity" db:"severity" enum:"info,warning,error,critical,success"`
	Importance          string          `json:"importance" db:"importance" enum:"important,other" doc:"Selects the tab."`
	Category            string          `json:"category,omitempty" db:"category" doc:"Grouping label."`
	RelatedResourceType string          `json:"relatedResourceType,omitempty" db:"related_resource_type"`
	RelatedResourceID   string          `json:"relatedResourceId,omitempty" db:"related_resource_id"`
	Read                bool            `json:"read" db:"read"`
	Dismissed           bool            `json:"dismissed" db:"dismissed"`
	DismissedAt         *time.Time      `json:"dismissedAt,omitempty" db:"dismissed_at"`
	ReadAt              *time.Time      `json:"readAt,omitempty" db:"read_at"`
	ClearedAt           *time.Time      `json:"clearedAt,omitempty" db:"cleared_at" doc:"Set when clear-all moved it to the cleared tab."`
	SnoozedUntil        *time.Time      `json:"snoozedUntil,omitempty" db:"snoozed_until"`
	ExpiresAt           *time.Time      `json:"expiresAt,omitempty" db:"expires_at" doc:"After this time the notification is hidden everywhere."`
	Actions             json.RawMessage `json:"actions" db:"actions" doc:"Action buttons (a JSON array)."`
	SourceType          string          `json:"sourceType,omitempty" db:"source_type"`
	SourceID            string          `json:"sourceId,omitempty" db:"source_id"`
	ActionURL           string          `json:"actionUrl,omitempty" db:"action_url" doc:"Deep link to a UI page."`
	ActionLabel         string          `json:"actionLabel,omitempty" db:"action_label"`
	GroupKey            string          `json:"groupKey,omitempty" db:"group_key" doc:"Later notifications with this key update this one while it is unread."`
	Details             json.RawMessage `json:"details,omitempty" db:"details" doc:"Grouped notifications carry {\"count\": N} here."`
	TaskID              *uuid.UUID      `json:"taskId,omitempty" db:"task_id" doc:"The associated review task."`
	CreatedAt           time.Time       `json:"createdAt" db:"created_at" doc:"When it was created; for a grouped notification, its latest occurrence."`
	UpdatedAt           time.Time       `json:"updatedAt" db:"updated_at"`
}

// Stats are the badge numbers: unread (not dismissed), dismissed, and
// total (every notification, dismissed included). Expired ones never
// count.
type Stats struct {
	Unread    int64 `json:"unread"`
	Dismissed int64 `json:"dismissed"`
	Total     int64 `json:"total"`
}

// Counts are the numbers of notifications in each tab.
type Counts struct {
	All       int64 `json:"all"`
	Important int64 `json:"important"`
	Other     int64 `json:"other"`
	Snoozed   int64 `json:"snoozed"`
	Cleared   int64 `json:"cleared"`
}

// Params describes a notification to send. Severity defaults to info and
// Importance to other. With a GroupKey, an unread, non-dismissed
// notification of the same owner and key is updated instead of a new one
// being added: its count in Details grows by Occurrences (default 1), and
// it takes the new text, links and timestamp.
type Params struct {
	ProjectID           *uuid.UUID
	Title               string
	Message             string
	Type                string
	Severity            string
	Importance          string
	Category            string
	RelatedResourceType string
	RelatedResourceID   string
	Actions             []any
	SourceType          string
	SourceID            string
	ActionURL           string
	ActionLabel         string
	GroupKey            string
	Details             map[string]any
	TaskID              *uuid.UUID
	ExpiresAt           *time.Time
	Occurrences         int
}

// Owner selects whose notifications an operation acts on: a user's, and
// only those of one project when ProjectID is set.
type Owner = auth.OwnRecords

// Filter selects and pages a tab. Empty Tab means TabAll.
type Filter struct {
	Tab        string
	Category   string
	Search     string
	UnreadOnly bool
	Limit      int
	Offset     int
}

// Errors of this domain.
var (
	ErrNotFound    = errs.New(errs.NotFound, "notification not found")
	ErrBadTab      = errs.New(errs.Invalid, "tab must be all, important, other, snoozed or cleared")
	ErrSnoozePast  = errs.New(errs.Invalid, "until must be in the future")
	ErrSnoozeGone  = errs.New(errs.FailedPrecondition, "a dismissed notification cannot be snoozed")
	ErrTitle       = errs.Errorf(errs.Invalid, "a notification needs a title of at most %d characters", TitleMax)
	ErrSeverity    = errs.New(errs.Invalid, "severity must be info, warning, error, critical or success")
	ErrImportance  = errs.New(errs.Invalid, "importance must be important or other")
	ErrTooLong     = errs.New(errs.Invalid, "a notification field is too long")
	ErrNotJSON     = errs.New(errs.Invalid, "notification actions and details must be JSON-encodable")
	ErrExpired     = errs.New(errs.Invalid, "expiresAt must be in the future")
	ErrOccurrences = errs.New(errs.Invalid, "occurrences must not be negative")
)

// CheckTab refuses a tab that is not one of the Tab constants (empty
// is TabAll): ErrBadTab.
func CheckTab(t string) error {
	switch t {
	case "", TabAll, TabImportant, TabOther, TabSnoozed, TabCleared:
		return nil
	}
	return ErrBadTab
}
