package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/notification"
)

// NotificationsEvent is the SSE event the notifications stream sends when
// the caller is notified: the inbox and the badge reload.
const NotificationsEvent = "notifications"

// notificationsChanged is the htmx event (HX-Trigger) an inbox action
// answers with: the badge reloads its count.
const notificationsChanged = "notifications-changed"

// The rules of the notification pages: the API's (notification.Register),
// on the caller's own notifications (of the token's project, for a
// project-bound token).
//
//nolint:gochecknoglobals // constant rules
var (
	notificationsRule     = auth.Rule{Scope: auth.NotificationsRead, Resource: auth.Personal, ProjectRole: auth.ProjectViewer}
	notificationWriteRule = auth.Rule{Scope: auth.NotificationsWrite, Resource: auth.Personal, ProjectRole: auth.ProjectViewer}
)

// notificationRoutes adds the inbox pages.
func (h *Handler) notificationRoutes(p pages) {
	p.get("/notifications", h.notifications)
	p.get("/notifications/panel", h.notificationPanel)
	p.get("/notifications/badge", h.notificationBadge)
	p.post("/notifications/mark-all-read", h.markAllNotificationsRead)
	p.post("/notifications/{id}/read", h.markNotificationRead)
	p.post("/notifications/{id}/dismiss", h.dismissNotification)
	p.get(StreamPrefix+"notifications", h.notificationStream)
}

// notificationOwner is the API's owner of a notification path.
func (h *Handler) notificationOwner() *auth.Owner {
	return &auth.Owner{Param: "id", Kind: "notification", Resolve: h.cfg.Notifications.Recipient, NotFound: notification.ErrNotFound}
}

// inboxOwner is whose notifications a request acts on, as for the API:
// the caller's, of the project its token is bound to.
func inboxOwner(c caller, a auth.Access) notification.Owner {
	return auth.OwnRecordsOf(c.p, a)
}

// inboxQuery is the inbox's tab, unread filter and offset.
type inboxQuery struct {
	Tab    string
	Unread bool
	Offset int
}

func inboxQueryOf(r *http.Request) inboxQuery {
	q := r.URL.Query()
	tab := q.Get("tab")
	if tab == "" {
		tab = notification.TabAll
	}
	unread, _ := strconv.ParseBool(q.Get("unread"))
	return inboxQuery{Tab: tab, Unread: unread, Offset: pageOffset(r)}
}

// values is the query's parameters (the offset apart).
func (q inboxQuery) values() url.Values {
	v := url.Values{"tab": {q.Tab}}
	if q.Unread {
		v.Set("unread", "true")
	}
	return v
}

// url is path with the query (offset included).
func (q inboxQuery) url(path string) string {
	v := q.values()
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	return path + "?" + v.Encode()
}

// inbox is what the inbox panel shows.
type inbox struct {
	Query    inboxQuery
	Counts   notification.Counts
	List     []notification.Notification
	Pager    pager
	CanWrite bool
}

func (h *Handler) inbox(r *http.Request, c caller) (inbox, error) {
	a, err := h.check(r, c, notificationsRule, "")
	if err != nil {
		return inbox{}, err
	}
	q, o := inboxQueryOf(r), inboxOwner(c, a)
	list, total, err := h.cfg.Notifications.List(r.Context(), o, notification.Filter{Tab: q.Tab, UnreadOnly: q.Unread, Limit: PageSize, Offset: q.Offset})
	if err != nil {
		return inbox{}, err
	}
	counts, err := h.cfg.Notifications.Counts(r.Context(), o)
	if err != nil {
		return inbox{}, err
	}
	return inbox{
		Query: q, Counts: counts, List: list, CanWrite: h.can(r, c, notificationWriteRule),
		Pager: pager{Offset: q.Offset, Total: total, Base: "/notifications", Params: q.values()},
	}, nil
}

// notifications is the inbox: the tabs with their counts, the unread
// filter, the list with its actions, live.
func (h *Handler) notifications(w http.ResponseWriter, r *http.Request, c caller) {
	in, err := h.inbox(r, c)
	h.show(w, r, notificationsPage(c.sess.CSRF, in), err)
}

// notificationPanel is the inbox's panel, reloaded on NotificationsEvent.
func (h *Handler) notificationPanel(w http.ResponseWriter, r *http.Request, c caller) {
	in, err := h.inbox(r, c)
	h.show(w, r, inboxPanel(in), err)
}

// notificationBadge is the layout's link to the inbox with the unread
// count, live; nothing for a caller who may not read notifications.
func (h *Handler) notificationBadge(w http.ResponseWriter, r *http.Request, c caller) {
	a, err := h.check(r, c, notificationsRule, "")
	if err != nil {
		if code := errs.CodeOf(err); code == errs.PermissionDenied || code == errs.NotFound {
			h.render(w, r, http.StatusOK, noBadge())
			return
		}
		h.fail(w, r, err)
		return
	}
	st, err := h.cfg.Notifications.Stats(r.Context(), inboxOwner(c, a))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if r.URL.Query().Get("count") != "" {
		h.render(w, r, http.StatusOK, unreadCount(st.Unread))
		return
	}
	h.render(w, r, http.StatusOK, notificationBadge(st.Unread))
}

func (h *Handler) markNotificationRead(w http.ResponseWriter, r *http.Request, c caller) {
	h.actOnNotification(w, r, c, func(a auth.Access) error {
		_, err := h.cfg.Notifications.MarkRead(r.Context(), inboxOwner(c, a), a.ResourceID)
		return err
	})
}

func (h *Handler) dismissNotification(w http.ResponseWriter, r *http.Request, c caller) {
	h.actOnNotification(w, r, c, func(a auth.Access) error {
		_, err := h.cfg.Notifications.Dismiss(r.Context(), inboxOwner(c, a), a.ResourceID)
		return err
	})
}

// actOnNotification runs act on the path's notification with the API's
// rule (another user's is not found) and answers the inbox's panel.
func (h *Handler) actOnNotification(w http.ResponseWriter, r *http.Request, c caller, act func(auth.Access) error) {
	a, err := h.checkOwned(r, c, notificationWriteRule, h.notificationOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := act(a); err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerInbox(w, r, c)
}

// markAllNotificationsRead marks read every unread notification of the
// caller's all tab, as the API's route.
func (h *Handler) markAllNotificationsRead(w http.ResponseWriter, r *http.Request, c caller) {
	a, err := h.check(r, c, notificationWriteRule, "")
	if err == nil {
		// The answer is the tab's panel: a bad tab is refused before
		// anything is marked, not after.
		err = notification.CheckTab(inboxQueryOf(r).Tab)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if _, err := h.cfg.Notifications.MarkAllRead(r.Context(), inboxOwner(c, a)); err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerInbox(w, r, c)
}

// answerInbox answers an action with the inbox's panel for the request's
// query, and tells the badge to reload.
func (h *Handler) answerInbox(w http.ResponseWriter, r *http.Request, c caller) {
	in, err := h.inbox(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("HX-Trigger", notificationsChanged)
	h.render(w, r, http.StatusOK, inboxPanel(in))
}

// notificationStream passes on NotificationsEvent when the caller is
// notified (the API's stream delivers a notification to its user only).
func (h *Handler) notificationStream(w http.ResponseWriter, r *http.Request, c caller) {
	h.stream(w, r, c, notificationsRule, func(uuid.UUID) func(streamEvent) (string, bool) {
		return func(e streamEvent) (string, bool) {
			return NotificationsEvent, e.Type == events.TypeNotification
		}
	})
}

// inboxTabs are the inbox's tabs with their counts.
func inboxTabs(c notification.Counts) []struct {
	Name  string
	Count int64
} {
	return []struct {
		Name  string
		Count int64
	}{
		{notification.TabAll, c.All},
		{notification.TabImportant, c.Important},
		{notification.TabOther, c.Other},
		{notification.TabSnoozed, c.Snoozed},
		{notification.TabCleared, c.Cleared},
	}
}

// localLink is a notification's action URL when it is a path of this
// server (never another site's, nor a script).
func localLink(u string) string {
	// A browser strips tabs and newlines from a URL and reads "\" as "/":
	// "/\t/evil.example" is //evil.example. So: no control characters nor
	// backslashes, one leading "/", no scheme, no host.
	if !strings.HasPrefix(u, "/") || strings.HasPrefix(u, "//") || strings.Contains(u, `\`) ||
		strings.ContainsFunc(u, unicode.IsControl) {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "" || p.Host != "" || p.User != nil || !strings.HasPrefix(p.Path, "/") || strings.HasPrefix(p.Path, "//") {
		return ""
	}
	return u
}
