package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/postgres"
)

type notificationBody struct {
	ID                  string          `json:"id"`
	ProjectID           string          `json:"projectId"`
	UserID              string          `json:"userId"`
	Title               string          `json:"title"`
	Message             string          `json:"message"`
	Type                string          `json:"type"`
	Severity            string          `json:"severity"`
	Importance          string          `json:"importance"`
	Category            string          `json:"category"`
	RelatedResourceType string          `json:"relatedResourceType"`
	RelatedResourceID   string          `json:"relatedResourceId"`
	Read                bool            `json:"read"`
	Dismissed           bool            `json:"dismissed"`
	ReadAt              *time.Time      `json:"readAt"`
	DismissedAt         *time.Time      `json:"dismissedAt"`
	ClearedAt           *time.Time      `json:"clearedAt"`
	SnoozedUntil        *time.Time      `json:"snoozedUntil"`
	ExpiresAt           *time.Time      `json:"expiresAt"`
	Actions             json.RawMessage `json:"actions"`
	SourceType          string          `json:"sourceType"`
	SourceID            string          `json:"sourceId"`
	ActionURL           string          `json:"actionUrl"`
	ActionLabel         string          `json:"actionLabel"`
	GroupKey            string          `json:"groupKey"`
	Details             map[string]any  `json:"details"`
	TaskID              string          `json:"taskId"`
	CreatedAt           time.Time       `json:"createdAt"`
	UpdatedAt           time.Time       `json:"updatedAt"`
}

type notificationList struct {
	Data  []notificationBody `json:"data"`
	Total int                `json:"total"`
}

type notificationStats struct {
	Unread    int64 `json:"unread"`
	Dismissed int64 `json:"dismissed"`
	Total     int64 `json:"total"`
}

type notificationCounts struct {
	All       int64 `json:"all"`
	Important int64 `json:"important"`
	Other     int64 `json:"other"`
	Snoozed   int64 `json:"snoozed"`
	Cleared   int64 `json:"cleared"`
}

// notify sends a notification through the Go service API, as a domain
// would, in its own transaction.
func (s *testServer) notify(user string, p notification.Params) notificationBody {
	s.t.Helper()
	var n notification.Notification
	err := postgres.WithTx(context.Background(), s.m.db.pool, func(tx pgx.Tx) error {
		var err error
		n, err = s.m.notifs.Notify(context.Background(), tx, uuid.MustParse(user), p)
		return err
	})
	require.NoError(s.t, err)
	raw, err := json.Marshal(n)
	require.NoError(s.t, err)
	var b notificationBody
	require.NoError(s.t, json.Unmarshal(raw, &b))
	return b
}

func (s *testServer) notifications(token, query string, headers ...header) notificationList {
	s.t.Helper()
	var l notificationList
	s.must(200, "GET", "/api/notifications?limit=200&"+query, token, nil, headers...).Decode(s.t, &l)
	require.Len(s.t, l.Data, l.Total)
	return l
}

func (s *testServer) notificationStats(token string, headers ...header) notificationStats {
	s.t.Helper()
	var st notificationStats
	s.must(200, "GET", "/api/notifications/stats", token, nil, headers...).Decode(s.t, &st)
	return st
}

func (s *testServer) notificationCounts(token string, headers ...header) notificationCounts {
	s.t.Helper()
	var c struct {
		Data notificationCounts `json:"data"`
	}
	s.must(200, "GET", "/api/notifications/counts", token, nil, headers...).Decode(s.t, &c)
	return c.Data
}

func notificationIDs(l notificationList) []string {
	out := []string{}
	for _, n := range l.Data {
		out = append(out, n.ID)
	}
	sort.Strings(out)
	return out
}

// fixture flags of one notification.
type flags struct {
	read, dismissed bool
	snooze, expiry  string // "", "past" or "future"
	important       bool
}

// Every combination of read, dismissed, snoozed (no, past, future),
// expiry (none, past, future) and importance: tab membership, the tab
// counts, the stats and the bulk operations all agree with the rules.
func TestNotificationTabsFixture(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	userID, user := s.newUser("u@example.com", []string{"notifications:read", "notifications:write"}, "")
	ctx := context.Background()
	now := time.Now()
	at := map[string]*time.Time{"": nil, "past": ptr(now.Add(-time.Hour)), "future": ptr(now.Add(time.Hour))}

	var all []flags
	for _, read := range []bool{false, true} {
		for _, dismissed := range []bool{false, true} {
			for _, snooze := range []string{"", "past", "future"} {
				for _, expiry := range []string{"", "past", "future"} {
					for _, important := range []bool{false, true} {
						all = append(all, flags{read, dismissed, snooze, expiry, important})
					}
				}
			}
		}
	}
	require.Len(t, all, 72)
	byID := map[string]flags{}
	for i, f := range all {
		importance := "other"
		if f.important {
			importance = "important"
		}
		n := s.notify(userID, notification.Params{Title: fmt.Sprintf("n%d", i), Message: "m", Importance: importance})
		byID[n.ID] = f
		var readAt, dismissedAt *time.Time
		if f.read {
			readAt = ptr(now.Add(-time.Minute))
		}
		if f.dismissed {
			dismissedAt = ptr(now.Add(-time.Minute))
		}
		_, err := s.m.db.pool.Exec(ctx, `UPDATE notifications SET read_at = $2, dismissed_at = $3, snoozed_until = $4, expires_at = $5 WHERE id = $1`,
			n.ID, readAt, dismissedAt, at[f.snooze], at[f.expiry])
		require.NoError(t, err)
	}

	expect := func(keep func(f flags) bool) []string {
		out := []string{}
		for id, f := range byID {
			if f.expiry != "past" && keep(f) {
				out = append(out, id)
			}
		}
		sort.Strings(out)
		return out
	}
	tabs := map[string]func(f flags) bool{
		"all":       func(f flags) bool { return !f.dismissed },
		"important": func(f flags) bool { return !f.dismissed && f.important },
		"other":     func(f flags) bool { return !f.dismissed && !f.important },
		"snoozed":   func(f flags) bool { return !f.dismissed && f.snooze == "future" },
		"cleared":   func(f flags) bool { return f.dismissed },
	}
	for tab, keep := range tabs {
		require.Equal(t, expect(keep), notificationIDs(s.notifications(user, "tab="+tab)), tab)
		require.Equal(t, expect(func(f flags) bool { return keep(f) && !f.read }), notificationIDs(s.notifications(user, "tab="+tab+"&unread=true")), tab+" unread")
	}
	require.Equal(t, expect(tabs["all"]), notificationIDs(s.notifications(user, "")), "all is the default tab")
	counts := s.notificationCounts(user)
	require.Equal(t, notificationCounts{
		All: int64(len(expect(tabs["all"]))), Important: int64(len(expect(tabs["important"]))), Other: int64(len(expect(tabs["other"]))),
		Snoozed: int64(len(expect(tabs["snoozed"]))), Cleared: int64(len(expect(tabs["cleared"]))),
	}, counts)
	require.Equal(t, notificationCounts{All: 24, Important: 12, Other: 12, Snoozed: 8, Cleared: 24}, counts)
	stats := s.notificationStats(user)
	require.Equal(t, notificationStats{
		Unread:    int64(len(expect(func(f flags) bool { return !f.dismissed && !f.read }))),
		Dismissed: counts.Cleared,
		Total:     int64(len(expect(func(flags) bool { return true }))),
	}, stats)
	require.Equal(t, counts.All+counts.Cleared, stats.Total)

	// Expired notifications cannot be acted on either.
	for id, f := range byID {
		if f.expiry == "past" {
			s.must(404, "PATCH", "/api/notifications/"+id+"/read", user, nil)
			s.must(404, "DELETE", "/api/notifications/"+id+"/dismiss", user, nil)
			break
		}
	}

	// Mark-all-read changes exactly the unread ones of the all tab.
	var bulk struct {
		Status string `json:"status"`
		Count  int64  `json:"count"`
	}
	clearedUnread := len(expect(func(f flags) bool { return f.dismissed && !f.read }))
	s.must(200, "POST", "/api/notifications/mark-all-read", user, nil).Decode(t, &bulk)
	require.Equal(t, "ok", bulk.Status)
	require.Equal(t, stats.Unread, bulk.Count)
	require.Zero(t, s.notificationStats(user).Unread)
	require.Len(t, s.notifications(user, "tab=cleared&unread=true").Data, clearedUnread, "dismissed ones are left as they were")
	s.must(200, "POST", "/api/notifications/mark-all-read", user, nil).Decode(t, &bulk)
	require.Zero(t, bulk.Count, "nothing left to change")

	// Clear-all moves the whole all tab to cleared.
	s.must(200, "POST", "/api/notifications/clear-all", user, nil).Decode(t, &bulk)
	require.Equal(t, counts.All, bulk.Count)
	require.Equal(t, notificationCounts{Cleared: stats.Total}, s.notificationCounts(user))
	require.Equal(t, notificationStats{Dismissed: stats.Total, Total: stats.Total}, s.notificationStats(user))
	for _, n := range s.notifications(user, "tab=cleared").Data {
		require.True(t, n.Dismissed)
		require.NotNil(t, n.DismissedAt)
		require.Equal(t, byID[n.ID].dismissed, n.ClearedAt == nil, "clearedAt marks what clear-all moved")
	}
}

func ptr[T any](v T) *T { return &v }

func TestNotificationAuth(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	ownerID, owner := s.newUser("owner@example.com", []string{"notifications:read", "notifications:write"}, "")
	_, other := s.newUser("other@example.com", []string{"notifications:read", "notifications:write"}, "")
	_, reader := s.newUser("reader@example.com", []string{"notifications:read"}, "")
	_, noScope := s.newUser("noscope@example.com", []string{"documents:read"}, "")
	n := s.notify(ownerID, notification.Params{Title: "mine", Message: "m"})
	in := "/api/notifications/" + n.ID
	until := map[string]any{"until": time.Now().Add(time.Hour)}

	type route struct {
		method, path string
		body         any
		write, one   bool // needs notifications:write; acts on one notification
	}
	routes := []route{
		{"GET", "/api/notifications", nil, false, false},
		{"GET", "/api/notifications/stats", nil, false, false},
		{"GET", "/api/notifications/counts", nil, false, false},
		{"PATCH", in + "/read", nil, true, true},
		{"POST", "/api/notifications/mark-all-read", nil, true, false},
		{"DELETE", in + "/dismiss", nil, true, true},
		{"POST", in + "/snooze", until, true, true},
		{"POST", "/api/notifications/clear-all", nil, true, false},
	}
	for _, r := range routes {
		s.must(401, r.method, r.path, "", r.body)
		require.Contains(t, s.must(403, r.method, r.path, noScope, r.body).Detail(t), "notifications:")
		if r.write {
			require.Contains(t, s.must(403, r.method, r.path, reader, r.body).Detail(t), "notifications:write")
		}
		// An invisible project or organization in the headers.
		s.must(404, r.method, r.path, owner, r.body, header{"X-Project-ID", project})
		s.must(404, r.method, r.path, owner, r.body, header{"X-Org-ID", org})
	}
	// Another user's notification does not exist for the caller.
	for _, r := range routes {
		if r.one {
			s.must(404, r.method, r.path, other, r.body)
			s.must(404, r.method, r.path, s.admin, r.body)
		}
	}
	s.must(404, "PATCH", "/api/notifications/nope/read", owner, nil)
	require.Empty(t, s.notifications(other, "").Data)
	require.Equal(t, notificationCounts{}, s.notificationCounts(other))
	// Bulk calls of others leave the owner's notification alone.
	s.must(200, "POST", "/api/notifications/mark-all-read", other, nil)
	s.must(200, "POST", "/api/notifications/clear-all", other, nil)
	got := s.notifications(owner, "").Data
	require.Len(t, got, 1)
	require.False(t, got[0].Read)
	require.False(t, got[0].Dismissed)
	require.Equal(t, notificationStats{Unread: 1, Total: 1}, s.notificationStats(owner))
}

func TestNotificationActionsAndFilters(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	second := s.newProject(org, "second")
	userID, user := s.newMember("u@example.com", []string{"notifications:read", "notifications:write"}, project, "viewer")
	s.addMember(second, userID, "viewer")
	p1, p2 := uuid.MustParse(project), uuid.MustParse(second)
	hp := header{"X-Project-ID", project}

	disk := s.notify(userID, notification.Params{
		ProjectID: &p1, Title: "Disk full", Message: "no space left", Category: "ops", Severity: "warning", Importance: "important",
		Actions: []any{map[string]any{"label": "Open", "url": "/x"}}, ActionURL: "/x", ActionLabel: "Open", SourceType: "probe", SourceID: "p1",
	})
	pct := s.notify(userID, notification.Params{ProjectID: &p2, Title: "Import", Message: "50% done", Category: "jobs"})
	five := s.notify(userID, notification.Params{Title: "Import", Message: "500 done, the DISK is fine", Category: "jobs"})
	under := s.notify(userID, notification.Params{ProjectID: &p1, Title: "a_b", Message: "x"})
	require.Equal(t, "warning", disk.Severity)
	require.JSONEq(t, `[{"label": "Open", "url": "/x"}]`, string(disk.Actions))
	require.JSONEq(t, `[]`, string(pct.Actions))
	require.Equal(t, "info", pct.Severity, "default severity")
	require.Equal(t, "other", pct.Importance, "default importance")
	require.Equal(t, userID, disk.UserID)

	// Filters: category, search in title or message (case-insensitive,
	// wildcards literal), unread.
	require.Equal(t, sorted(pct.ID, five.ID), notificationIDs(s.notifications(user, "category=jobs")))
	require.Equal(t, sorted(disk.ID, five.ID), notificationIDs(s.notifications(user, "search=disk")))
	require.Equal(t, sorted(pct.ID), notificationIDs(s.notifications(user, "search="+url.QueryEscape("50%"))))
	require.Equal(t, sorted(under.ID), notificationIDs(s.notifications(user, "search=a_b")))
	require.Equal(t, sorted(five.ID), notificationIDs(s.notifications(user, "search=DISK&category=jobs")))
	list := s.notifications(user, "")
	require.Equal(t, []string{under.ID, five.ID, pct.ID, disk.ID}, []string{list.Data[0].ID, list.Data[1].ID, list.Data[2].ID, list.Data[3].ID}, "newest first")

	// A project in context narrows everything to it.
	require.Equal(t, sorted(disk.ID, under.ID), notificationIDs(s.notifications(user, "", hp)))
	require.Equal(t, notificationStats{Unread: 2, Total: 2}, s.notificationStats(user, hp))
	require.Equal(t, notificationCounts{All: 2, Important: 1, Other: 1}, s.notificationCounts(user, hp))
	s.must(404, "PATCH", "/api/notifications/"+pct.ID+"/read", user, nil, hp)
	require.Equal(t, sorted(disk.ID, pct.ID, five.ID, under.ID), notificationIDs(s.notifications(user, "", header{"X-Org-ID", org})), "an organization alone does not narrow")

	// Mark read: once; the first readAt stays.
	var n notificationBody
	s.must(200, "PATCH", "/api/notifications/"+disk.ID+"/read", user, nil).Decode(t, &n)
	require.True(t, n.Read)
	require.NotNil(t, n.ReadAt)
	first := *n.ReadAt
	s.must(200, "PATCH", "/api/notifications/"+disk.ID+"/read", user, nil).Decode(t, &n)
	require.Equal(t, first, *n.ReadAt)
	require.Equal(t, sorted(pct.ID, five.ID, under.ID), notificationIDs(s.notifications(user, "unread=true")))
	require.Equal(t, notificationStats{Unread: 3, Total: 4}, s.notificationStats(user))

	// Mark-all-read in a project context marks that project's only.
	var bulk struct {
		Count int64 `json:"count"`
	}
	s.must(200, "POST", "/api/notifications/mark-all-read", user, nil, hp).Decode(t, &bulk)
	require.EqualValues(t, 1, bulk.Count)
	require.Equal(t, sorted(pct.ID, five.ID), notificationIDs(s.notifications(user, "unread=true")))

	// Snooze: still in all, and in snoozed until the time passes.
	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Millisecond)
	s.must(200, "POST", "/api/notifications/"+pct.ID+"/snooze", user, map[string]any{"until": until}).Decode(t, &n)
	require.Equal(t, until, n.SnoozedUntil.UTC())
	require.Equal(t, sorted(pct.ID), notificationIDs(s.notifications(user, "tab=snoozed")))
	require.Contains(t, notificationIDs(s.notifications(user, "")), pct.ID)
	require.Contains(t, s.must(400, "POST", "/api/notifications/"+pct.ID+"/snooze", user, map[string]any{"until": time.Now().Add(-time.Minute)}).Detail(t), "future")
	require.Contains(t, s.must(400, "POST", "/api/notifications/"+pct.ID+"/snooze", user, map[string]any{}).Detail(t), "until")
	require.Contains(t, s.must(400, "POST", "/api/notifications/"+pct.ID+"/snooze", user, map[string]any{"until": "tomorrow"}).Detail(t), "until")

	// Dismiss: to the cleared tab; a dismissed one cannot be snoozed.
	s.must(200, "DELETE", "/api/notifications/"+five.ID+"/dismiss", user, nil).Decode(t, &n)
	require.True(t, n.Dismissed)
	require.NotNil(t, n.DismissedAt)
	require.Nil(t, n.ClearedAt)
	require.Equal(t, sorted(five.ID), notificationIDs(s.notifications(user, "tab=cleared")))
	require.NotContains(t, notificationIDs(s.notifications(user, "")), five.ID)
	r := s.must(409, "POST", "/api/notifications/"+five.ID+"/snooze", user, map[string]any{"until": until})
	require.Equal(t, "failed_precondition", r.JSON(t)["code"])
	require.Equal(t, notificationCounts{All: 3, Important: 1, Other: 2, Snoozed: 1, Cleared: 1}, s.notificationCounts(user))
	require.Equal(t, notificationStats{Unread: 1, Dismissed: 1, Total: 4}, s.notificationStats(user))

	// Bad input.
	require.Contains(t, s.must(400, "GET", "/api/notifications?tab=inbox", user, nil).Detail(t), "tab")
	require.Contains(t, s.must(400, "GET", "/api/notifications?unread=maybe", user, nil).Detail(t), "unread")
	require.Contains(t, s.must(400, "GET", "/api/notifications?limit=0", user, nil).Detail(t), "limit")
	s.must(400, "GET", "/api/notifications?search="+url.QueryEscape(string(make([]byte, 201))), user, nil)
}

func sorted(ids ...string) []string {
	sort.Strings(ids)
	return ids
}

// Notifications with the same group key collapse into one while it is
// unread; every change is published to the owner.
func TestNotificationGrouping(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	userID, user := s.newUser("u@example.com", []string{"notifications:read", "notifications:write"}, "")
	otherID, _ := s.newUser("o@example.com", []string{"notifications:read"}, "")
	frames, _ := s.openStream(user, 0)
	require.Eventually(t, func() bool { return s.m.hub.Clients() == 1 }, 5*time.Second, 10*time.Millisecond)

	var first notificationBody
	for i := 1; i <= 3; i++ {
		n := s.notify(userID, notification.Params{Title: "Sync failed", Message: fmt.Sprintf("attempt %d", i), GroupKey: "sync", Details: map[string]any{"last": i}})
		if i == 1 {
			first = n
		}
		require.Equal(t, first.ID, n.ID)
		f := nextEvent(t, frames)
		require.Equal(t, "notification", f.Data["type"])
		data := f.Data["data"].(map[string]any)
		require.Equal(t, "notification", data["type"])
		pushed := data["notification"].(map[string]any)
		require.Equal(t, first.ID, pushed["id"])
		require.EqualValues(t, i, pushed["details"].(map[string]any)["count"])
	}
	s.notify(otherID, notification.Params{Title: "Sync failed", Message: "elsewhere", GroupKey: "sync"})
	list := s.notifications(user, "")
	require.Len(t, list.Data, 1)
	g := list.Data[0]
	require.Equal(t, "attempt 3", g.Message)
	require.EqualValues(t, 3, g.Details["count"])
	require.EqualValues(t, 3, g.Details["last"])
	require.NotEmpty(t, g.Details["firstAt"])
	require.True(t, g.CreatedAt.After(first.CreatedAt), "the timestamp follows the latest occurrence")

	// Once read, the next occurrence starts a new notification.
	s.must(200, "PATCH", "/api/notifications/"+g.ID+"/read", user, nil)
	n := s.notify(userID, notification.Params{Title: "Sync failed", Message: "again", GroupKey: "sync"})
	require.NotEqual(t, g.ID, n.ID)
	require.EqualValues(t, 1, n.Details["count"])
	require.Len(t, s.notifications(user, "").Data, 2)
}

// failEmbeddingJobs makes n graph embedding jobs of project whose worker
// died on their last retry, waits until the reaper has failed them for
// good, and returns their ids.
func (s *testServer) failEmbeddingJobs(project string, n int) []string {
	s.t.Helper()
	object := s.insertObject(project, "")
	var wave []string
	for range n {
		wave = append(wave, s.insertCrashedJob("graph_embedding_jobs", project, map[string]any{"object_id": object}))
	}
	s.waitJobsFailed("graph_embedding_jobs", wave)
	return wave
}

// insertObject adds an accepted Concept named name (its id when empty)
// to project's graph and returns its id.
func (s *testServer) insertObject(project, name string) string {
	s.t.Helper()
	object := uuid.Must(uuid.NewV7()).String()
	if name == "" {
		name = object
	}
	_, err := s.m.db.pool.Exec(context.Background(), `INSERT INTO graph_objects (id, project_id, type, key, normalized_key, name, status, created_at, updated_at)
		VALUES ($1, $2, 'Concept', $3, lower($3), $3, 'accepted', now(), now())`, object, project, name)
	require.NoError(s.t, err)
	return object
}

// insertCrashedJob adds a job to table in project with the domain
// columns cols: running on its last attempt in a worker that crashed (its
// lease over, no retry left), which the reaper fails, a final failure of
// the job engine's own (JobOutcomes tells the project's admins). It
// returns the job's id.
func (s *testServer) insertCrashedJob(table, project string, cols map[string]any) string {
	s.t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	names := []string{"id", "project_id", "status", "run_at", "attempt", "retry_count", "max_retries", "locked_by", "locked_until", "started_at", "created_at", "updated_at"}
	past := time.Now().Add(-time.Minute)
	args := []any{id, project, "running", past, 4, 3, 3, "crashed-worker", past, past, past, past}
	for _, k := range slices.Sorted(maps.Keys(cols)) {
		names, args = append(names, k), append(args, cols[k])
	}
	marks := make([]string, len(args))
	for i := range marks {
		marks[i] = fmt.Sprintf("$%d", i+1)
	}
	_, err := s.m.db.pool.Exec(context.Background(), //nolint:gosec // G201: the test's own table and column names
		fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(names, ", "), strings.Join(marks, ", ")), args...)
	require.NoError(s.t, err)
	return id
}

// waitJobsFailed waits until the jobs ids of table are failed.
func (s *testServer) waitJobsFailed(table string, ids []string) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		var failed int
		require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), //nolint:gosec // G201: the test's own table name
			fmt.Sprintf(`SELECT count(*) FROM %s WHERE id = ANY($1) AND status = 'failed'`, table), ids).Scan(&failed))
		return failed == len(ids)
	}, 20*time.Second, 20*time.Millisecond)
}

// A burst of job failures in one queue and project becomes one grouped
// notification per project admin, counting them all; other members hear
// nothing.
func TestJobFailureBurstNotifiesAdminsOnce(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	_, admin := s.newMember("admin2@example.com", []string{"notifications:read"}, project, "admin")
	_, viewer := s.newMember("viewer@example.com", []string{"notifications:read"}, project, "viewer")

	// Four waves, so the group spans several transactions.
	jobs := map[string]bool{}
	for range 4 {
		for _, id := range s.failEmbeddingJobs(project, 25) {
			jobs[id] = true
		}
	}

	for _, token := range []string{s.admin, admin} {
		list := s.notifications(token, "category=jobs")
		require.Len(t, list.Data, 1, "one notification for the whole burst")
		n := list.Data[0]
		require.EqualValues(t, 100, n.Details["count"])
		require.Equal(t, "graph_embedding", n.Details["queue"])
		require.Equal(t, "Graph embedding job failed", n.Title)
		require.Contains(t, n.Message, "lease expired")
		require.Equal(t, "error", n.Severity)
		require.Equal(t, "important", n.Importance)
		require.Equal(t, "job_failed", n.Type)
		require.Equal(t, project, n.ProjectID)
		require.Equal(t, "job", n.RelatedResourceType)
		require.True(t, jobs[n.RelatedResourceID], "points at one of the failed jobs")
		require.Equal(t, "/projects/"+project+"/jobs/graph_embedding/"+n.RelatedResourceID, n.ActionURL)
		require.Equal(t, notification.JobFailedGroupKey("graph_embedding", uuid.MustParse(project)), n.GroupKey)
		require.Equal(t, notificationCounts{All: 1, Important: 1}, s.notificationCounts(token))
	}
	require.Empty(t, s.notifications(viewer, "").Data)
}

// End to end: a corrupt PDF fails its parsing job; its uploader finds a
// notification in the inbox and receives it live on the event stream,
// while another member's stream never carries it; the project's admins
// are told about the failed job.
func TestCorruptUploadNotifiesUploader(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	uploaderID, uploader := s.newMember("up@example.com", []string{"documents:read", "documents:write", "notifications:read", "notifications:write"}, project, "editor")
	bystanderID, bystander := s.newMember("by@example.com", []string{"notifications:read"}, project, "viewer")
	upFrames, _ := s.openStream(uploader, 0)
	byFrames, _ := s.openStream(bystander, 0)
	require.Eventually(t, func() bool { return s.m.hub.Clients() == 2 }, 5*time.Second, 10*time.Millisecond)

	r := s.uploadFile(uploader, project, "broken.pdf", "application/pdf", []byte("%PDF-1.4\nthis is not really a pdf"))
	require.Equal(t, 201, r.Status, "%s", r.Body)
	var d docBody
	r.Decode(t, &d)
	require.Equal(t, "failed", s.waitDocument(project, d.ID).Status)

	// Live, to the uploader.
	var pushed map[string]any
	for pushed == nil {
		f := nextEvent(t, upFrames)
		if f.Data["type"] == "notification" {
			require.Equal(t, uploaderID, f.Data["userId"])
			data := f.Data["data"].(map[string]any)
			require.Equal(t, "notification", data["type"])
			pushed = data["notification"].(map[string]any)
		}
	}
	require.Equal(t, d.ID, pushed["relatedResourceId"])

	// In the inbox.
	list := s.notifications(uploader, "")
	require.Len(t, list.Data, 1)
	n := list.Data[0]
	require.Equal(t, pushed["id"], n.ID)
	require.Equal(t, uploaderID, n.UserID)
	require.Equal(t, project, n.ProjectID)
	require.Equal(t, "Document could not be parsed", n.Title)
	require.Contains(t, n.Message, "broken.pdf")
	require.Equal(t, "document_parse_failed", n.Type)
	require.Equal(t, "error", n.Severity)
	require.Equal(t, "important", n.Importance)
	require.Equal(t, "documents", n.Category)
	require.Equal(t, "document", n.RelatedResourceType)
	require.Equal(t, d.ID, n.RelatedResourceID)
	require.Equal(t, "/projects/"+project+"/documents/"+d.ID, n.ActionURL)
	require.False(t, n.Read)
	require.Equal(t, notificationStats{Unread: 1, Total: 1}, s.notificationStats(uploader))

	// The bystander's stream carries project events but not the
	// notification: everything before this marker was checked.
	marker := s.publish("test.marker", nil, ptr(uuid.MustParse(bystanderID)), map[string]any{})
	for {
		f := nextEvent(t, byFrames)
		require.NotEqual(t, "notification", f.Data["type"], "another user's notification leaked: %v", f.Data)
		if f.ID == marker {
			break
		}
	}
	require.Empty(t, s.notifications(bystander, "").Data)

	// The project's admin hears of the failed job, not of the document.
	admin := s.notifications(s.admin, "")
	require.Len(t, admin.Data, 1)
	require.Equal(t, "job_failed", admin.Data[0].Type)
	require.Equal(t, "document_parsing", admin.Data[0].Details["queue"])
	require.EqualValues(t, 1, admin.Data[0].Details["count"])
}
