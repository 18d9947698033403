package notification

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// CountsEnvelope is the spec's counts response: {data: counts}.
type CountsEnvelope struct {
	Data Counts `json:"data"`
}

// BulkResult answers mark-all-read and clear-all: count is the number of
// notifications the call changed.
type BulkResult struct {
	Status string `json:"status"`
	Count  int64  `json:"count"`
}

// bulkOK is BulkResult's status.
const bulkOK = "ok"

type (
	listIn struct {
		Tab      string `query:"tab" enum:"all,important,other,snoozed,cleared" default:"all" doc:"Which tab to list."`
		Category string `query:"category" maxLength:"2000" doc:"Only this category."`
		Search   string `query:"search" maxLength:"200" doc:"Only notifications whose title or message contains this (case-insensitive)."`
		Unread   bool   `query:"unread" doc:"true: only unread notifications."`
		httpapi.PageParams
	}
	contextIn struct{}
	idIn      struct {
		ID string `path:"id"`
	}
	preferencesIn struct {
		Body struct {
			EmailImportant *bool   `json:"emailImportant,omitempty" doc:"Email each important notification; absent: unchanged."`
			Digest         *string `json:"digest,omitempty" enum:"off,daily" doc:"off or daily; absent: unchanged."`
		}
	}
	snoozeIn struct {
		ID   string `path:"id"`
		Body struct {
			Until time.Time `json:"until" doc:"Snoozed until this time (RFC 3339, in the future)."`
		}
	}
)

// Register adds the notification routes. Each acts on the caller's own
// notifications; X-Project-ID (or a project-scoped token) narrows them to
// one project.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.NotificationsRead, Resource: auth.Personal, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.NotificationsWrite, Resource: auth.Personal, ProjectRole: auth.ProjectViewer}
	mine := write.WithOwner(&auth.Owner{Param: "id", Kind: "notification", Resolve: svc.Recipient, NotFound: ErrNotFound})
	h := handlers{svc: svc}
	// Email choices are the account's, not a project's: Self routes (a
	// project-bound token is refused).
	prefsRead := auth.Rule{Scope: auth.NotificationsRead, Resource: auth.Self}
	prefsWrite := auth.Rule{Scope: auth.NotificationsWrite, Resource: auth.Self}
	huma.Register(api, httpapi.Op("get-notification-preferences", http.MethodGet, "/api/me/notification-preferences",
		"Your email choices: important notifications by email, and the daily digest (both off by default)", prefsRead), h.notificationPreferences)
	huma.Register(api, httpapi.Op("set-notification-preferences", http.MethodPut, "/api/me/notification-preferences",
		"Change your email choices; an absent field is unchanged", prefsWrite), h.setNotificationPreferences)

	huma.Register(api, httpapi.Op("list-notifications", http.MethodGet, "/api/notifications",
		"List your notifications in a tab, newest first; expired ones never show", read), h.listNotifications)
	huma.Register(api, httpapi.Op("notification-stats", http.MethodGet, "/api/notifications/stats",
		"Your unread, dismissed and total notifications", read), h.notificationStats)
	huma.Register(api, httpapi.Op("notification-counts", http.MethodGet, "/api/notifications/counts",
		"Your notifications per tab", read), h.notificationCounts)
	huma.Register(api, httpapi.Op("mark-notification-read", http.MethodPatch, "/api/notifications/{id}/read",
		"Mark one of your notifications read", mine), h.markNotificationRead)
	huma.Register(api, httpapi.Op("mark-all-notifications-read", http.MethodPost, "/api/notifications/mark-all-read",
		"Mark read every unread notification of your all tab; count is how many changed", write), h.markAllNotificationsRead)
	huma.Register(api, httpapi.Op("dismiss-notification", http.MethodDelete, "/api/notifications/{id}/dismiss",
		"Dismiss one of your notifications: it moves to the cleared tab", mine), h.dismissNotification)
	huma.Register(api, httpapi.Op("snooze-notification", http.MethodPost, "/api/notifications/{id}/snooze",
		"Snooze one of your notifications until a future time (409 when dismissed)", mine), h.snoozeNotification)
	huma.Register(api, httpapi.Op("clear-all-notifications", http.MethodPost, "/api/notifications/clear-all",
		"Dismiss every notification of your all tab; count is how many moved to the cleared tab", write), h.clearAllNotifications)
}

// handlers are the notification routes' handlers: each decodes, calls the
// service with what the middleware authorised (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

func (h handlers) listNotifications(ctx context.Context, in *listIn) (*httpapi.Out[httpapi.List[Notification]], error) {
	list, total, err := h.svc.List(ctx, auth.OwnRecordsFrom(ctx), Filter{
		Tab: in.Tab, Category: in.Category, Search: in.Search, UnreadOnly: in.Unread, Limit: in.Limit, Offset: in.Offset,
	})
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) notificationStats(ctx context.Context, _ *contextIn) (*httpapi.Out[Stats], error) {
	return httpapi.Reply(h.svc.Stats(ctx, auth.OwnRecordsFrom(ctx)))
}

func (h handlers) notificationCounts(ctx context.Context, _ *contextIn) (*httpapi.Out[CountsEnvelope], error) {
	c, err := h.svc.Counts(ctx, auth.OwnRecordsFrom(ctx))
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[CountsEnvelope]{Body: CountsEnvelope{Data: c}}, nil
}

func (h handlers) markNotificationRead(ctx context.Context, _ *idIn) (*httpapi.Out[Notification], error) {
	return httpapi.Reply(h.svc.MarkRead(ctx, auth.OwnRecordsFrom(ctx), auth.AccessFrom(ctx).ResourceID))
}

func (h handlers) markAllNotificationsRead(ctx context.Context, _ *contextIn) (*httpapi.Out[BulkResult], error) {
	n, err := h.svc.MarkAllRead(ctx, auth.OwnRecordsFrom(ctx))
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[BulkResult]{Body: BulkResult{Status: bulkOK, Count: n}}, nil
}

func (h handlers) dismissNotification(ctx context.Context, _ *idIn) (*httpapi.Out[Notification], error) {
	return httpapi.Reply(h.svc.Dismiss(ctx, auth.OwnRecordsFrom(ctx), auth.AccessFrom(ctx).ResourceID))
}

func (h handlers) notificationPreferences(ctx context.Context, _ *contextIn) (*httpapi.Out[Preferences], error) {
	return httpapi.Reply(h.svc.Preferences(ctx, auth.PrincipalFrom(ctx).UserID))
}

func (h handlers) setNotificationPreferences(ctx context.Context, in *preferencesIn) (*httpapi.Out[Preferences], error) {
	return httpapi.Reply(h.svc.SetPreferences(ctx, auth.PrincipalFrom(ctx).UserID,
		PreferencesUpdate{EmailImportant: in.Body.EmailImportant, Digest: in.Body.Digest}))
}

func (h handlers) snoozeNotification(ctx context.Context, in *snoozeIn) (*httpapi.Out[Notification], error) {
	return httpapi.Reply(h.svc.Snooze(ctx, auth.OwnRecordsFrom(ctx), auth.AccessFrom(ctx).ResourceID, in.Body.Until))
}

func (h handlers) clearAllNotifications(ctx context.Context, _ *contextIn) (*httpapi.Out[BulkResult], error) {
	n, err := h.svc.ClearAll(ctx, auth.OwnRecordsFrom(ctx))
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[BulkResult]{Body: BulkResult{Status: bulkOK, Count: n}}, nil
}
