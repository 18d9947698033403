// Package console is the web console: server-rendered pages (templ, htmx
// and its SSE extension, vendored under static/) served by graphmill serve
// at / beside the API. A browser signs in with an API token, which is kept
// sealed in an HttpOnly cookie; every page authenticates it with the API's
// guard and authorises the request with the API's rules for the same
// reads, then calls the services, never the database.
package console

//go:generate go tool -modfile=../../tools/go.mod templ generate

import (
	"context"
	"embed"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/chat"
	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/search"
	"github.com/graphmill/graphmill/internal/secrets"
	"github.com/graphmill/graphmill/internal/task"
	"github.com/graphmill/graphmill/internal/tenancy"
)

//go:embed static
var staticFS embed.FS

// ContentSecurityPolicy is the policy of every console response: scripts
// and styles only from the console's own static files (no inline script,
// no eval: htmx runs with allowEval off), connections only to itself.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// StreamPrefix is the path prefix of the console's event streams, which
// the router serves without a deadline.
const StreamPrefix = "/stream/"

// PageSize is the number of rows of a list page.
const PageSize = 50

// Config wires the console to the guard, the services and the API.
type Config struct {
	Guard     *auth.Guard
	Projects  *tenancy.Service
	Documents *document.Service
	// Search is the projects' keyword, vector and hybrid search.
	Search *search.Service
	// Tasks are the projects' review tasks.
	Tasks *task.Service
	// Graph is the projects' objects and relationships (the explorer).
	Graph *graph.Service
	// Extraction is the object_extraction queue's jobs.
	Extraction *extraction.Service
	// Providers are the projects' provider policies, model catalog and
	// usage ledger.
	Providers *provider.Service
	// Jobs is the job engine: the queues page's counts, paused states,
	// pause and resume.
	Jobs *jobqueue.Client
	// OpsQueues are the queues with superadmin pages (their API lists and
	// actions), named by the wiring.
	OpsQueues []OpsQueue
	// JobPages names, by queue, the project page of a job of the queues
	// that have one (a notification's job link goes there); the wiring
	// names the queues, which stay with their owners elsewhere.
	JobPages map[string]JobPage
	// Chat is the users' chat sessions; Agents the agent definitions and
	// runs; Notifications the users' inboxes.
	Chat          *chat.Service
	Agents        *agent.Service
	Notifications *notification.Service
	// MCP is the projects' external MCP servers and built-in tool settings.
	MCP *mcpregistry.Service
	// Integrations are the projects' integrations and their syncs.
	Integrations *integration.Service
	// Discovery is schema discovery's jobs and finalize.
	Discovery *discovery.Service
	// Embedding and Email read a project's embedding and email jobs for
	// their job pages (JobPages).
	Embedding *embedding.Service
	Email     *email.Service
	// Events is the API's event stream (events.Hub); the console's
	// streams run it for the signed-in caller and turn its events into
	// HTML fragments.
	Events http.Handler
	// API serves requests the console forwards with the session's token
	// (uploads), so they take the API's own path: limits, spooling,
	// authorisation.
	API    http.Handler
	Box    *secrets.Box
	Logger *slog.Logger
	Now    func() time.Time
	// Pool holds the console's own table, the signed-out sessions
	// (console_revoked_sessions).
	Pool *pgxpool.Pool

	// OIDC, when set, offers sign-in with the identity provider besides
	// API tokens.
	OIDC *OIDCClient
	// SecureCookie says when cookies are Secure; PublicURL (may be empty)
	// is the server's public base URL, https behind a TLS-terminating
	// proxy.
	SecureCookie CookieSecurity
	PublicURL    string
}

// Handler serves the console.
type Handler struct {
	cfg      Config
	sessions sessions
	revoked  revocations
	oidc     *oidcLogin // nil: API tokens only
	static   http.Handler
}

// New returns the console handler.
func New(c Config) (*Handler, error) {
	if c.Guard == nil || c.Projects == nil || c.Documents == nil || c.Extraction == nil || c.Tasks == nil || c.Search == nil || c.Providers == nil || c.Graph == nil || c.Jobs == nil ||
		c.Chat == nil || c.Agents == nil || c.Notifications == nil || c.MCP == nil || c.Integrations == nil || c.Discovery == nil || c.Embedding == nil || c.Email == nil ||
		c.Events == nil || c.API == nil || c.Box == nil || c.Logger == nil || c.Pool == nil {
		return nil, errors.New("console: incomplete config")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	static := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") { // no directory listings
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
	secure, err := c.SecureCookie.secureFunc(c.PublicURL)
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: c, sessions: sessions{box: c.Box, now: c.Now, secure: secure}, revoked: revocations{db: c.Pool}, static: static}
	if c.OIDC != nil {
		h.oidc = newOIDCLogin(*c.OIDC, c.Now)
	}
	return h, nil
}

// The rules of the console's pages: those of the API routes that read the
// same records (tenancy.Register, document.Register, the event stream in
// cmd/graphmill).
//
//nolint:gochecknoglobals // constant rules
var (
	projectsRule  = auth.Rule{Scope: auth.AdminRead, Resource: auth.Authenticated}
	projectRule   = auth.Rule{Scope: auth.AdminRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	documentsRule = auth.Rule{Scope: auth.DocumentsRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	uploadRule    = auth.Rule{Scope: auth.DocumentsWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
	streamRule    = auth.Rule{Scope: auth.NotificationsRead, Resource: auth.Authenticated}
)

// Mount adds the console's routes to r (the API's router: its middleware
// logs, measures and bounds them like API requests).
func (h *Handler) Mount(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(securityHeaders, http.NewCrossOriginProtection().Handler)
		r.Handle("/static/*", h.static)
		r.Get("/signin", h.signinForm)
		r.Post("/signin", h.signin)
		r.Get(OIDCPath, h.oidcStart)
		r.Get(OIDCCallbackPath, h.oidcCallback)
		p := pages{r: r, h: h}
		p.post("/signout", h.signout)
		p.get("/", h.projects)
		p.get("/projects/{project}", h.project)
		p.get("/projects/{project}/documents", h.documents)
		p.get("/projects/{project}/documents/rows", h.documentRows)
		p.upload("/projects/{project}/documents", h.upload)
		p.get("/projects/{project}/documents/{id}", h.document)
		p.get(StreamPrefix+"projects/{project}/documents", h.documentStream)
		p.get("/projects/{project}/jobs", h.jobs)
		p.get("/projects/{project}/jobs/rows", h.jobRows)
		p.get("/projects/{project}/jobs/{id}", h.job)
		p.get("/projects/{project}/jobs/{queue}/{id}", h.jobLink)
		p.post("/projects/{project}/jobs/{id}/cancel", h.cancelJob)
		p.post("/projects/{project}/jobs/{id}/retry", h.retryJob)
		p.get(StreamPrefix+"projects/{project}/jobs", h.jobStream)
		p.get("/projects/{project}/tasks", h.tasks)
		p.get("/projects/{project}/tasks/{taskID}", h.task)
		p.post("/projects/{project}/tasks/{taskID}/resolve", h.resolveTask)
		p.get("/projects/{project}/search", h.searchPage)
		h.mountOps(p)
		p.get("/projects/{project}/graph", h.graphPage)
		p.get("/projects/{project}/graph/objects/{id}", h.objectPage)
		h.chatRoutes(p)
		h.agentRoutes(p)
		h.notificationRoutes(p)
		h.mountIntegrations(p)
		h.mountProjectAdmin(p)
	})
	// An unknown path outside /api asked for as a page (a browser's
	// navigation) is a console address: a page, not the API's problem
	// body, which every other client gets (the service's paths outside
	// /api, such as /debug, answer JSON).
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		if httpapi.IsAPIPath(req.URL.Path) || !strings.Contains(req.Header.Get("Accept"), "text/html") {
			httpapi.NotFound(w, req)
			return
		}
		securityHeaders(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			h.render(w, req, http.StatusNotFound, errorPage(http.StatusNotFound, "There is no page at this address."))
		})).ServeHTTP(w, req)
	})
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			hd.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// caller is the signed-in browser: its session and the principal its
// token authenticates as now.
type caller struct {
	sess session
	p    *auth.Principal
}

type pageFunc func(w http.ResponseWriter, r *http.Request, c caller)

// signedIn authenticates the session's token with the guard (so that a
// revoked or expired token signs the browser out at once), reads the
// request's form (body: formBody or uploadBody, see readForm), checks the
// CSRF token of unsafe requests, and runs page.
func (h *Handler) signedIn(page pageFunc, body requestBody) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, err := h.sessions.get(r)
		var p *auth.Principal
		if err == nil {
			err = h.live(r.Context(), sess)
		}
		if err == nil {
			p, err = h.cfg.Guard.Authenticate(r.Context(), "Bearer "+sess.Token)
			if err != nil && errs.CodeOf(err) == errs.Unauthenticated && sess.Refresh != "" {
				sess, p, err = h.reauthenticate(w, r, sess) // an expired OIDC access token
			}
			if code := errs.CodeOf(err); err != nil && (code == errs.Internal || code == errs.Unavailable) {
				h.fail(w, r, err) // the session may be fine: kept
				return
			}
		}
		if err != nil {
			h.sessions.clearCookie(w, r, SessionCookie, "/")
			if r.Header.Get("HX-Request") != "" || r.Method != http.MethodGet {
				w.Header().Set("HX-Redirect", "/signin")
				http.Error(w, "signed out", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		if err := readForm(w, r, body); err != nil {
			h.fail(w, r, err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameToken(sess.CSRF, submittedCSRF(r)) {
			http.Error(w, "invalid or missing CSRF token", http.StatusForbidden)
			return
		}
		if err := textInput(r); err != nil {
			h.fail(w, r, err)
			return
		}
		page(w, r.WithContext(auth.WithPrincipal(r.Context(), p)), caller{sess: sess, p: p})
	}
}

// check authorises c for rule on the request's project (and resource):
// the API's guard, the API's answers (not found before forbidden).
func (h *Handler) check(r *http.Request, c caller, rule auth.Rule, resource string) (auth.Access, error) {
	return h.cfg.Guard.Check(r.Context(), c.p, rule, auth.Request{ProjectID: chi.URLParam(r, "project"), ResourceID: resource})
}

// render writes a page or fragment.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		h.logFailure(r, "render console page", err)
	}
}

// logFailure logs a request's failure as an ERROR, or at INFO when its
// browser went away (the request's context ended: a closed tab, a chat
// turn left), which is not the server's failure.
func (h *Handler) logFailure(r *http.Request, msg string, err error) {
	if r.Context().Err() != nil {
		h.cfg.Logger.InfoContext(r.Context(), msg+": the browser went away", "path", r.URL.Path, "err", err)
		return
	}
	h.cfg.Logger.ErrorContext(r.Context(), msg, "path", r.URL.Path, "err", err)
}

// fail answers an error as a page: the API's status for the error's code,
// and its message for the client's errors only.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := statusOf(err)
	if status >= http.StatusInternalServerError {
		h.logFailure(r, "console request failed", err)
	}
	if r.Header.Get("HX-Request") != "" {
		// An htmx action: the message alone, which the page shows.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, msg) //nolint:gosec // G705: text/plain with nosniff, shown by textContent
		return
	}
	h.render(w, r, status, errorPage(status, msg))
}

// statusOf is the API's status for err (httpapi.StatusOf), with the
// error's message for the client's errors only.
func statusOf(err error) (int, string) {
	status, msg, ok := httpapi.ClientError(err)
	if !ok || status >= http.StatusInternalServerError {
		return httpapi.StatusOf(errs.CodeOf(err)), "internal error"
	}
	return status, msg
}

// FormMax bounds a console form's body, whatever its encoding: the
// largest field a form sends (an agent run's input, 100,000 characters)
// fits with room.
const FormMax = 1 << 20

// requestBody is what a console route's request body is: a form, parsed
// under FormMax whatever its encoding, or the upload's multipart body,
// streamed by its handler to the API under the API's own limit.
type requestBody int

// The bodies of console routes.
const (
	formBody requestBody = iota
	uploadBody
)

// readForm parses a form body under FormMax (413 beyond it, 400 when it
// does not parse): urlencoded or, unless body is uploadBody (then left to
// the handler, which streams it), multipart, its values in r.PostForm as
// an urlencoded form's, files counted in the bound. A form is never left
// for PostFormValue to parse: it would read a multipart body up to 32 MiB
// in memory and the rest to disk. Other bodies are no form: nothing reads
// them.
func readForm(w http.ResponseWriter, r *http.Request, body requestBody) error {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	multipart := ct == "multipart/form-data"
	if r.Body == nil || !multipart && ct != "application/x-www-form-urlencoded" || multipart && body == uploadBody {
		return nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, FormMax)
	var err error
	if multipart {
		// The whole body fits in memory: no file part reaches the disk.
		err = r.ParseMultipartForm(FormMax) //nolint:gosec // G120: r.Body is bounded above (gosec 2.29's rule has no sanitizer, MaxBytesReader included)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		if _, big := errors.AsType[*http.MaxBytesError](err); big {
			return errs.Errorf(errs.PayloadTooLarge, "the form is larger than %d bytes", FormMax)
		}
		if multipart {
			// The reader's errors quote the client's text (a part's header line).
			return errs.New(errs.Invalid, "the form does not parse: "+httpapi.MultipartDetail(err))
		}
		return errs.Errorf(errs.Invalid, "the form does not parse: %v", err)
	}
	return nil
}

// textInput refuses a query or form value (or name) that PostgreSQL
// could not store as text, a NUL or invalid UTF-8, naming the field: the
// API refuses both at its boundary (400), so the console does too.
func textInput(r *http.Request) error {
	if err := storableValues("query", r.URL.Query()); err != nil {
		return err
	}
	return storableValues("form", r.PostForm)
}

// storableValues checks the names and values of one set of parameters.
func storableValues(where string, v url.Values) error {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !postgres.ValidText(k) {
			return errs.Errorf(errs.Invalid, "%s (a parameter name): must be valid UTF-8 without the NUL character (U+0000)", where)
		}
		for _, s := range v[k] {
			if !postgres.ValidText(s) {
				return errs.Errorf(errs.Invalid, "%s.%s: must be valid UTF-8 without the NUL character (U+0000)", where, k)
			}
		}
	}
	return nil
}

// pageOffset is the offset query parameter (0 when absent or invalid).
func pageOffset(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("offset"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (h *Handler) signinForm(w http.ResponseWriter, r *http.Request) {
	token := randomToken()
	h.sessions.setCookie(w, r, SigninCookie, token, "/signin", 3600)
	h.render(w, r, http.StatusOK, signinPage(token, "", h.oidcLabel()))
}

// signin checks the sign-in form's CSRF token against its cookie (a
// double submit: no session exists yet), authenticates the API token
// with the guard, and seals it into the session cookie.
func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	if err := readForm(w, r, formBody); err != nil {
		h.fail(w, r, err)
		return
	}
	c, err := r.Cookie(SigninCookie)
	if err != nil || !sameToken(c.Value, r.PostFormValue(csrfField)) {
		http.Error(w, "invalid or missing CSRF token", http.StatusForbidden)
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	p, err := h.cfg.Guard.Authenticate(r.Context(), "Bearer "+token)
	if err != nil {
		if errs.CodeOf(err) == errs.Internal {
			h.fail(w, r, err)
			return
		}
		h.render(w, r, http.StatusUnauthorized, signinPage(c.Value, "This token is not valid.", h.oidcLabel()))
		return
	}
	if p.Kind != auth.KindAPIToken {
		h.render(w, r, http.StatusUnauthorized, signinPage(c.Value, "Sign in with an API token.", h.oidcLabel()))
		return
	}
	h.sessions.clearCookie(w, r, SigninCookie, "/signin")
	if _, err := h.sessions.set(w, r, token, ""); err != nil {
		h.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// live refuses a signed-out session (its id revoked), whatever copy of
// its cookie comes back.
func (h *Handler) live(ctx context.Context, sess session) error {
	gone, err := h.revoked.revoked(ctx, sess.ID)
	if err != nil {
		return err // internal: the session may be fine, kept
	}
	if gone {
		return errSessionEnded
	}
	return nil
}

// signout ends the session for good: its id is revoked (a copy of the
// cookie is refused from now on) before the browser is told to forget
// the cookie.
func (h *Handler) signout(w http.ResponseWriter, r *http.Request, c caller) {
	h.sessions.clearCookie(w, r, SessionCookie, "/")
	if err := h.revoked.revoke(r.Context(), c.sess.ID, time.Unix(c.sess.Expires, 0)); err != nil {
		h.fail(w, r, err)
		return
	}
	if h.oidc != nil && c.sess.Refresh != "" {
		if err := h.oidc.revokeRefresh(r.Context(), c.sess.Refresh); err != nil {
			h.cfg.Logger.WarnContext(r.Context(), "console sign-out: refresh token not revoked", "err", err)
		}
	}
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

func (h *Handler) projects(w http.ResponseWriter, r *http.Request, c caller) {
	if _, err := h.check(r, c, projectsRule, ""); err != nil {
		if errs.CodeOf(err) == errs.PermissionDenied {
			// The console's landing page: say what the token lacks (an
			// error page would send back here).
			h.render(w, r, http.StatusOK, landingPage(c.sess.CSRF, projectsRule.Scope.String(), c.p.BoundProject))
			return
		}
		h.fail(w, r, err)
		return
	}
	offset := pageOffset(r)
	list, total, err := h.cfg.Projects.ListProjects(r.Context(), c.p, nil, tenancy.Page{Limit: PageSize, Offset: offset})
	h.show(w, r, projectsPage(c.sess.CSRF, list, pager{Offset: offset, Total: total, Base: "/"}), err)
}

// projectContext authorises c for rule on the path's project and loads
// it. The project's record (its name, role, dates) is the API's GET
// /api/projects/{id} (projectRule): a caller the page's rule lets in but
// that route refuses sees the project's id as its name, nothing more.
// projectList authorises rule on the path's project, as projectContext,
// and reads with list the page of the project's list that the request
// asks for (pageOffset, PageSize); the pager's base is path under the
// project's URL.
func projectList[T any](h *Handler, r *http.Request, c caller, rule auth.Rule, path string,
	list func(ctx context.Context, project uuid.UUID, limit, offset int) ([]T, int, error),
) (tenancy.Project, []T, pager, error) {
	a, p, err := h.projectContext(r, c, rule, "")
	if err != nil {
		return p, nil, pager{}, err
	}
	offset := pageOffset(r)
	items, total, err := list(r.Context(), a.ProjectID, PageSize, offset)
	return p, items, pager{Offset: offset, Total: total, Base: projectURL(p.ID) + path}, err
}

func (h *Handler) projectContext(r *http.Request, c caller, rule auth.Rule, resource string) (auth.Access, tenancy.Project, error) {
	a, err := h.check(r, c, rule, resource)
	if err != nil {
		return a, tenancy.Project{}, err
	}
	if !h.can(r, c, projectRule) {
		return a, tenancy.Project{ID: a.ProjectID, Name: a.ProjectID.String()}, nil
	}
	pr, err := h.cfg.Projects.GetProject(r.Context(), c.p, a.ProjectID)
	return a, pr, err
}

func (h *Handler) project(w http.ResponseWriter, r *http.Request, c caller) {
	a, pr, err := h.projectContext(r, c, projectRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	counts, err := h.cfg.Documents.DocumentCounts(r.Context(), []uuid.UUID{a.ProjectID})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// The graph's counts for a caller who may read the graph.
	var g *graph.Counts
	if h.can(r, c, graphRule) {
		gc, err := h.cfg.Graph.Count(r.Context(), a.ProjectID)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		g = &gc
	}
	h.render(w, r, http.StatusOK, projectPage(c.sess.CSRF, pr, counts[a.ProjectID], g))
}

func (h *Handler) documentList(r *http.Request, c caller) (tenancy.Project, []document.Document, pager, error) {
	return projectList(h, r, c, documentsRule, "/documents", h.cfg.Documents.List)
}

func (h *Handler) documents(w http.ResponseWriter, r *http.Request, c caller) {
	pr, list, pg, err := h.documentList(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pv := projectView{Project: pr, CanWrite: h.can(r, c, uploadRule)}
	h.render(w, r, http.StatusOK, documentsPage(c.sess.CSRF, pv, list, pg))
}

// documentRows is the documents table's body, which the page reloads
// after an upload.
func (h *Handler) documentRows(w http.ResponseWriter, r *http.Request, c caller) {
	pr, list, _, err := h.documentList(r, c)
	h.show(w, r, documentRows(pr.ID, list), err)
}

func (h *Handler) document(w http.ResponseWriter, r *http.Request, c caller) {
	a, pr, d, err := ownedResource(h, r, c, documentsRule, h.documentOwner(), h.cfg.Documents.Get)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset := pageOffset(r)
	chunks, total, err := h.cfg.Documents.Chunks(r.Context(), a.ProjectID, a.ResourceID, PageSize, offset)
	base := "/projects/" + pr.ID.String() + "/documents/" + d.ID.String()
	h.show(w, r, documentPage(c.sess.CSRF, pr, d, chunks, pager{Offset: offset, Total: total, Base: base}), err)
}

// documentOwner is the API's owner of a document path (document.Register).
func (h *Handler) documentOwner() *auth.Owner {
	return &auth.Owner{
		Param: "id", Kind: "document", Resolve: auth.InProject(h.cfg.Documents.DocumentProject),
		NotFound: document.ErrNotFound, NamedProject: true,
	}
}

// upload forwards the browser's multipart upload to the API's upload
// route with the session's token: the API's limits, spooling and
// authorisation apply unchanged, and its JSON answer goes back to the
// page's script.
func (h *Handler) upload(w http.ResponseWriter, r *http.Request, c caller) {
	// A fresh routing context: the API's router routes the request anew.
	fwd := r.Clone(context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil)))
	// The browser's query string is not passed on: the API reads
	// projectId from it, which would win over the path's project.
	fwd.URL.Path, fwd.URL.RawPath, fwd.URL.RawQuery, fwd.RequestURI = "/api/documents", "", "", ""
	fwd.Header = r.Header.Clone()
	fwd.Header.Del("Cookie")
	fwd.Header.Del(CSRFHeader)
	fwd.Header.Set("Authorization", "Bearer "+c.sess.Token)
	fwd.Header.Set("X-Project-ID", chi.URLParam(r, "project"))
	fwd.Body = r.Body
	h.cfg.API.ServeHTTP(w, fwd)
}
