package console

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/superadmin"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// QueueEvent is the SSE event the queue stream sends when a job of the
// queue started or ended: the job table reloads its rows.
const QueueEvent = "queue"

// The rules of the superadmin pages: the API's (superadmin.Register).
//
//nolint:gochecknoglobals // constant rules
var (
	superRead  = auth.Rule{Scope: auth.AdminRead, Resource: auth.Superadmin}
	superWrite = auth.Rule{Scope: auth.AdminWrite, Resource: auth.Superadmin}
)

// mountOps adds the superadmin pages' routes.
func (h *Handler) mountOps(p pages) {
	p.get("/admin/queues", h.queues)
	p.post("/admin/queues/{queue}/pause", h.pauseQueue)
	p.post("/admin/queues/{queue}/resume", h.resumeQueue)
	p.get("/admin/queues/{queue}", h.queue)
	p.get("/admin/queues/{queue}/rows", h.queueRows)
	p.post("/admin/queues/{queue}/cancel", h.cancelQueueJobs)
	p.post("/admin/queues/{queue}/retry", h.retryQueueJobs)
	p.get("/admin/queues/{queue}/jobs/{id}", h.queueJob)
	p.get(StreamPrefix+"admin/queues/{queue}", h.queueStream)
	p.get("/admin/users", h.users)
	p.post("/admin/users", h.createUser)
	p.post("/admin/users/{id}/tokens", h.createUserToken)
	p.get("/admin/organizations", h.organizations)
	p.get("/admin/audit", h.auditLog)
}

// OpsQueue is a queue as the superadmin pages know it: the superadmin
// API's job list and bulk actions for it, where the API has them. The
// wiring (cmd/graphmill) names the queues: their names stay with their
// owners.
type OpsQueue struct {
	Name string
	// List is the API's job list ("": none); Kind its type filter.
	List, Kind string
	// Cancel and Retry are the API's bulk actions ("": none).
	Cancel, Retry string
	// Logs is the API's log of a job (with {id}), "" when none.
	Logs string
	// Pausable: the API's worker control pauses and resumes it (the ops
	// address's /api/embeddings/pause and resume).
	Pausable bool
	// ProjectJobs: its jobs have the project's job page (with the log).
	ProjectJobs bool
	// EndEvent is the event type its domain publishes when a job ends,
	// when it is not job.completed.
	EndEvent string
}

// opsQueue is the configured queue named name (a queue without a page
// when none is).
func (h *Handler) opsQueue(name string) OpsQueue {
	for _, q := range h.cfg.OpsQueues {
		if q.Name == name {
			return q
		}
	}
	return OpsQueue{Name: name}
}

// queueURL is the console page of a queue's jobs.
func queueURL(name string) string { return "/admin/queues/" + url.PathEscape(name) }

// isSuperadmin reports whether the signed-in caller of ctx is a superadmin
// (as the API's /api/superadmin/me answers), for the navigation.
func isSuperadmin(ctx context.Context) bool {
	p := auth.PrincipalFrom(ctx)
	return p != nil && p.Superadmin && p.BoundProject == uuid.Nil
}

// callAPI runs an API request in process with the session's token (the
// API's route, rules, limits, audit rows and answers, unchanged) and
// decodes its JSON answer into out. An answer of 400 and more is
// returned as an error of the same status and detail.
func (h *Handler) callAPI(r *http.Request, c caller, method, path string, query url.Values, body, out any) error {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return err
		}
	}
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	// A fresh routing context: the API's router routes the request anew.
	ctx := context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil))
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(raw)) //nolint:gosec // G704: served in process by the API's handler, never sent
	if err != nil {
		return err
	}
	req.RemoteAddr = r.RemoteAddr
	req.Header.Set("Authorization", "Bearer "+c.sess.Token)
	if id := httpapi.RequestID(r.Context()); id != "" {
		// The console's request id: the API's log line and audit row name
		// the browser's request.
		req.Header.Set("X-Request-ID", id)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	h.cfg.API.ServeHTTP(rec, req)
	if rec.status >= http.StatusBadRequest {
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(rec.body.Bytes(), &p)
		if p.Detail == "" {
			p.Detail = http.StatusText(rec.status)
		}
		return errs.New(httpapi.CodeOfStatus(rec.status), p.Detail)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(rec.body.Bytes(), out)
}

// recorder keeps an in-process API answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rc *recorder) Header() http.Header         { return rc.header }
func (rc *recorder) Write(p []byte) (int, error) { return rc.body.Write(p) }
func (rc *recorder) WriteHeader(status int)      { rc.status = status }

// queueLine is one queue of the queues page.
type queueLine struct {
	jobqueue.QueueStats
	OpsQueue
	Paused bool
}

// queues lists every queue of the job engine: its jobs by status and
// whether it is paused, with pause and resume where the API has them.
func (h *Handler) queues(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderQueues(w, r, c, http.StatusOK, "")
}

// renderQueues answers the queues page with status and problem, why a
// pause or resume was refused.
func (h *Handler) renderQueues(w http.ResponseWriter, r *http.Request, c caller, status int, problem string) {
	if _, err := h.check(r, c, superRead, ""); err != nil {
		h.fail(w, r, err)
		return
	}
	stats, err := h.cfg.Jobs.Stats(r.Context(), nil)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rows := make([]queueLine, 0, len(stats))
	for _, s := range stats {
		set, err := h.cfg.Jobs.Settings(s.Queue)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		rows = append(rows, queueLine{QueueStats: s, OpsQueue: h.opsQueue(s.Queue), Paused: set.Paused})
	}
	h.render(w, r, status, queuesPage(c.sess.CSRF, rows, h.can(r, c, superWrite), problem))
}

// pauseQueue and resumeQueue pause and resume a queue the API's worker
// control governs, for every process.
func (h *Handler) pauseQueue(w http.ResponseWriter, r *http.Request, c caller) {
	h.setPaused(w, r, c, h.cfg.Jobs.Pause)
}

func (h *Handler) resumeQueue(w http.ResponseWriter, r *http.Request, c caller) {
	h.setPaused(w, r, c, h.cfg.Jobs.Resume)
}

func (h *Handler) setPaused(w http.ResponseWriter, r *http.Request, c caller, set func(context.Context, string) error) {
	if _, err := h.check(r, c, superWrite, ""); err != nil {
		h.fail(w, r, err)
		return
	}
	q := h.opsQueue(chi.URLParam(r, "queue"))
	var err error = errs.Errorf(errs.Invalid, "queue %s cannot be paused or resumed here", q.Name)
	if q.Pausable {
		err = set(r.Context(), q.Name)
	}
	if err != nil {
		h.formRefusedOn(superRead, w, r, c, err, func(status int, problem string) { h.renderQueues(w, r, c, status, problem) })
		return
	}
	http.Redirect(w, r, "/admin/queues", http.StatusSeeOther)
}

// adminJob is a job of a superadmin job list: the fields every list has,
// and those that name what it works on.
type adminJob struct {
	jobqueue.Record
	DocumentID      *uuid.UUID `json:"documentId"`
	ChunkID         *uuid.UUID `json:"chunkId"`
	ObjectID        *uuid.UUID `json:"objectId"`
	ObjectType      *string    `json:"objectType"`
	FileName        *string    `json:"fileName"`
	IntegrationName string     `json:"integrationName"`
	JobType         string     `json:"jobType"`
	Type            string     `json:"type"`
	ObjectName      string     `json:"objectName"`
	ToEmail         string     `json:"toEmail"`
	Subject         string     `json:"subject"`
}

// What names what the job works on.
func (j adminJob) What() string {
	switch {
	case j.FileName != nil:
		return *j.FileName
	case j.IntegrationName != "":
		return j.IntegrationName
	case j.ObjectName != "":
		return j.ObjectName
	case j.ToEmail != "":
		return j.ToEmail + ": " + j.Subject
	}
	return ""
}

// queueFilter is a queue page's filter, from its query.
type queueFilter struct {
	Status, Project string
}

func (f queueFilter) values() url.Values {
	return filterQuery("status", f.Status, "projectId", f.Project)
}

// queueView is a queue's job page: the queue, its page of jobs, the
// list's statuses (the API's vocabulary, with their counts) and what the
// caller may do.
type queueView struct {
	Queue    OpsQueue
	Jobs     []adminJob
	Filter   queueFilter
	Statuses []string
	Counts   map[string]int
	Pager    pager
	CanWrite bool
	// JobPages: the queue's jobs of a project have the project's job page
	// (Config.JobPages), at their notification's link.
	JobPages bool
}

// queueJobs reads a page of the path's queue through the API's list.
func (h *Handler) queueJobs(r *http.Request, c caller) (queueView, error) {
	q := h.opsQueue(chi.URLParam(r, "queue"))
	if _, err := h.check(r, c, superRead, ""); err != nil {
		return queueView{}, err
	}
	if q.List == "" {
		return queueView{}, errs.Errorf(errs.NotFound, "queue %s has no job list", q.Name)
	}
	qs := r.URL.Query()
	f := queueFilter{Status: qs.Get("status"), Project: qs.Get("projectId")}
	query := f.values()
	offset := pageQuery(r, query)
	if q.Kind != "" {
		query.Set("type", q.Kind)
	}
	var page superadmin.Paged[adminJob]
	if err := h.callAPI(r, c, http.MethodGet, q.List, query, nil, &page); err != nil {
		return queueView{}, err
	}
	v := queueView{
		Queue: q, Jobs: page.Data, Filter: f, CanWrite: h.can(r, c, superWrite), JobPages: h.cfg.JobPages[q.Name] != NoJobPage,
		Pager: pager{Offset: offset, Total: page.Meta.Total, Base: queueURL(q.Name), Params: f.values()},
	}
	if page.Stats != nil {
		v.Counts, v.Statuses = page.Stats.ByStatus, slices.Sorted(maps.Keys(page.Stats.ByStatus))
	}
	return v, nil
}

func (h *Handler) queue(w http.ResponseWriter, r *http.Request, c caller) {
	v, err := h.queueJobs(r, c)
	h.show(w, r, queuePage(c.sess.CSRF, v, ""), err)
}

func (h *Handler) queueRows(w http.ResponseWriter, r *http.Request, c caller) {
	v, err := h.queueJobs(r, c)
	h.show(w, r, queueRowList(v), err)
}

// cancelQueueJobs and retryQueueJobs run the API's bulk cancel or retry
// on the jobs the form names (field ids, one or many), then answer the
// table's rows and the API's message.
func (h *Handler) cancelQueueJobs(w http.ResponseWriter, r *http.Request, c caller) {
	h.bulkQueueAction(w, r, c, func(q OpsQueue) string { return q.Cancel })
}

func (h *Handler) retryQueueJobs(w http.ResponseWriter, r *http.Request, c caller) {
	h.bulkQueueAction(w, r, c, func(q OpsQueue) string { return q.Retry })
}

func (h *Handler) bulkQueueAction(w http.ResponseWriter, r *http.Request, c caller, action func(OpsQueue) string) {
	q := h.opsQueue(chi.URLParam(r, "queue"))
	if _, err := h.check(r, c, superWrite, ""); err != nil {
		h.fail(w, r, err)
		return
	}
	path := action(q)
	if path == "" {
		h.fail(w, r, errs.Errorf(errs.Invalid, "the jobs of %s cannot be cancelled or retried here", q.Name))
		return
	}
	ids, err := chosen(r, "ids", "select at least one job")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var res struct {
		Message string `json:"message"`
	}
	if err := h.callAPI(r, c, http.MethodPost, path, nil, map[string]any{"ids": ids}, &res); err != nil {
		h.fail(w, r, err)
		return
	}
	v, err := h.queueJobs(r, c)
	h.show(w, r, queueActionAnswer(v, res.Message), err)
}

// queueJob is a job's log, for the queues whose API has one.
func (h *Handler) queueJob(w http.ResponseWriter, r *http.Request, c caller) {
	q := h.opsQueue(chi.URLParam(r, "queue"))
	if _, err := h.check(r, c, superRead, ""); err != nil {
		h.fail(w, r, err)
		return
	}
	if q.Logs == "" {
		h.fail(w, r, errs.Errorf(errs.NotFound, "the jobs of %s have no log", q.Name))
		return
	}
	id := chi.URLParam(r, "id")
	var log integration.SyncJobLog
	if err := h.callAPI(r, c, http.MethodGet, strings.Replace(q.Logs, "{id}", url.PathEscape(id), 1), nil, nil, &log); err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, queueJobPage(c.sess.CSRF, q, log))
}

// queueStream is the live status of a queue's jobs: it passes on, as
// QueueEvent, the events of jobs of the queue that started or ended.
func (h *Handler) queueStream(w http.ResponseWriter, r *http.Request, c caller) {
	q := h.opsQueue(chi.URLParam(r, "queue"))
	h.stream(w, r, c, superRead, func(uuid.UUID) func(streamEvent) (string, bool) { return queueEvents(q) })
}

// queueEvents selects the events of every project that start or end a
// job of q: job.started, job.completed or q's own end event.
func queueEvents(q OpsQueue) func(e streamEvent) (string, bool) {
	return func(e streamEvent) (string, bool) {
		switch {
		case (e.Type == events.TypeJobStarted || e.Type == events.TypeJobCompleted) && e.Data.Queue == q.Name:
			return QueueEvent, true
		case q.EndEvent != "" && e.Type == q.EndEvent:
			return QueueEvent, true
		}
		return "", false
	}
}

// pageQuery is the API's page and limit for the console's offset.
func pageQuery(r *http.Request, q url.Values) int {
	offset := pageOffset(r) / PageSize * PageSize
	q.Set("limit", strconv.Itoa(PageSize))
	q.Set("page", strconv.Itoa(offset/PageSize+1))
	return offset
}

// usersView is the users page.
type usersView struct {
	Users  []superadmin.User
	Search string
	Pager  pager
	// Created is a user just created; Token a token just minted (shown
	// once); Message what was done.
	Created *tenancy.User
	Token   *tenancy.Token
	Message string
	// Scopes are the scopes a token may be given.
	Scopes   []string
	CanWrite bool
	// Problem is why a form was refused; Create and Mint are the forms'
	// values (as typed when refused; Mint for the user Mint.User).
	Problem string
	Create  userForm
	Mint    mintForm
}

// mintOf is the mint form's values for user: as typed when its form was
// refused, else empty.
func (v usersView) mintOf(user uuid.UUID) mintForm {
	if v.Mint.User != user.String() {
		return mintForm{}
	}
	return v.Mint
}

// userForm is the create-user form's values.
type userForm struct{ Email, DisplayName string }

// mintForm is a user's mint-token form's values.
type mintForm struct {
	User, Name, Days string
	Scopes           []string
}

func (h *Handler) userList(r *http.Request, c caller) (usersView, error) {
	search := r.URL.Query().Get("search")
	q := filterQuery("search", search)
	params := maps.Clone(q)
	offset := pageQuery(r, q)
	var page superadmin.Paged[superadmin.User]
	if err := h.callAPI(r, c, http.MethodGet, "/api/superadmin/users", q, nil, &page); err != nil {
		return usersView{}, err
	}
	return usersView{
		Users: page.Data, Search: search, Scopes: auth.AllScopes.Names(), CanWrite: h.can(r, c, superWrite),
		Pager: pager{Offset: offset, Total: page.Meta.Total, Base: "/admin/users", Params: params},
	}, nil
}

func (h *Handler) users(w http.ResponseWriter, r *http.Request, c caller) {
	v, err := h.userList(r, c)
	h.show(w, r, usersPage(c.sess.CSRF, v), err)
}

// createUser creates a local user through the API's route.
func (h *Handler) createUser(w http.ResponseWriter, r *http.Request, c caller) {
	var u tenancy.User
	f := userForm{Email: r.PostFormValue("primaryEmail"), DisplayName: r.PostFormValue("displayName")}
	body := map[string]any{"primaryEmail": f.Email, "displayName": f.DisplayName}
	h.userAction(w, r, c, "/api/superadmin/users", body, nil, &u, func(v *usersView, err error) {
		if err != nil {
			v.Create = f
			return
		}
		v.Created, v.Message = &u, "User "+u.PrimaryEmail+" created."
	})
}

// userAction posts body to the API's route at path (unless checked, the
// form's own check, refused it), decoding its answer into out, and
// answers the users page with what done adds to it (given the action's
// error: a fixable one shows the page with the form's values again).
func (h *Handler) userAction(w http.ResponseWriter, r *http.Request, c caller, path string, body map[string]any, checked error, out any, done func(*usersView, error)) {
	// The API's rule first, as any page's: a refusal of it is no form's.
	if _, err := h.check(r, c, superWrite, ""); err != nil {
		h.fail(w, r, err)
		return
	}
	err := checked
	if err == nil {
		err = h.callAPI(r, c, http.MethodPost, path, nil, body, out)
	}
	answer := func(status int, problem string) {
		v, lerr := h.userList(r, c)
		if lerr != nil {
			h.fail(w, r, lerr)
			return
		}
		v.Problem = problem
		done(&v, err)
		h.render(w, r, status, usersPage(c.sess.CSRF, v))
	}
	if err != nil {
		h.formRefusedOn(superRead, w, r, c, err, answer)
		return
	}
	answer(http.StatusCreated, "")
}

// createUserToken mints a token for the path's user through the API's
// route and shows it once.
func (h *Handler) createUserToken(w http.ResponseWriter, r *http.Request, c caller) {
	user := chi.URLParam(r, "id")
	f := mintForm{User: user, Name: r.PostFormValue("name"), Days: strings.TrimSpace(r.PostFormValue("expiresInDays"))}
	scopes, err := chosen(r, "scopes", "choose at least one scope")
	f.Scopes = scopes
	body := map[string]any{"name": f.Name, "scopes": scopes}
	if err == nil && f.Days != "" {
		n, perr := strconv.Atoi(f.Days)
		if perr != nil || n < 1 || n > 3650 {
			err = errs.New(errs.Invalid, "expiresInDays must be a number of days from 1 to 3650")
		} else {
			body["expiresAt"] = h.cfg.Now().Add(time.Duration(n) * 24 * time.Hour).UTC()
		}
	}
	var t tenancy.Token
	path := "/api/superadmin/users/" + url.PathEscape(user) + "/tokens"
	h.userAction(w, r, c, path, body, err, &t, func(v *usersView, err error) {
		if err != nil {
			v.Mint = f
			return
		}
		v.Token, v.Message = &t, "Token "+t.Name+" minted. Copy it now: it is not shown again."
	})
}

// organizations lists the organizations through the API's list.
func (h *Handler) organizations(w http.ResponseWriter, r *http.Request, c caller) {
	list, f, pg, err := adminList[superadmin.Organization](h, r, c, "/api/superadmin/organizations", "/admin/organizations", "search", "includeDeleted")
	h.show(w, r, organizationsPage(c.sess.CSRF, list, f, pg), err)
}

// auditLog lists the superadmin actions through the API's list.
func (h *Handler) auditLog(w http.ResponseWriter, r *http.Request, c caller) {
	list, f, pg, err := adminList[audit.Event](h, r, c, "/api/superadmin/audit", "/admin/audit", "action", "actorId", "fromDate", "toDate")
	h.show(w, r, auditPage(c.sess.CSRF, list, f, pg), err)
}

// adminList reads a page of the API's superadmin list at path with the
// request's filters named (the API's names), for the console page at
// base: the page's records, its filters and its pager.
func adminList[T any](h *Handler, r *http.Request, c caller, path, base string, filters ...string) ([]T, url.Values, pager, error) {
	qs := r.URL.Query()
	f := url.Values{}
	for _, k := range filters {
		if v := strings.TrimSpace(qs.Get(k)); v != "" {
			f.Set(k, v)
		}
	}
	q := maps.Clone(f)
	offset := pageQuery(r, q)
	var page superadmin.Paged[T]
	if err := h.callAPI(r, c, http.MethodGet, path, q, nil, &page); err != nil {
		return nil, nil, pager{}, err
	}
	return page.Data, f, pager{Offset: offset, Total: page.Meta.Total, Base: base, Params: f}, nil
}

// auditActions are the actions the audit filter offers.
func auditActions() []string {
	var out []string
	for _, a := range audit.Actions() {
		out = append(out, string(a))
	}
	return out
}
