package events

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/startstop"
)

// Defaults of the stream.
const (
	HeartbeatDefault = 15 * time.Second
	// ClientBufferDefault is how many events may wait for a client; a
	// client further behind is disconnected (it resumes with
	// Last-Event-ID) rather than allowed to hold the others up.
	ClientBufferDefault = 256
	// ReplayPage is how many stored events one replay query reads; a
	// replay reads pages until it has caught up with the stored events
	// (at most Retention of them).
	ReplayPage = 1000
	// WriteTimeout bounds one write to a client.
	WriteTimeout = 10 * time.Second
)

// HubConfig configures a Hub.
type HubConfig struct {
	Pool  *pgxpool.Pool
	Guard *auth.Guard
	// Watcher ties each stream to its token and memberships: a stream
	// ends when they are gone, and each event is checked against the
	// caller as of the latest authorization change.
	Watcher   *auth.Watcher
	Logger    *slog.Logger
	Heartbeat time.Duration
	Buffer    int
}

type client struct {
	// p is the caller as it connected; watch, when set, gives the caller
	// as of now.
	p      *auth.Principal
	watch  *auth.Watch
	ch     chan delivery
	gone   chan struct{}
	closed sync.Once
}

// delivery is an event handed to a client. An unchecked one is for a
// client whose caller must be verified again first: its own stream does
// that (with its own timeout) and matches the event then, so that no
// look-up of one client holds up the delivery loop.
type delivery struct {
	e       Event
	checked bool
}

func (c *client) drop() { c.closed.Do(func() { close(c.gone) }) }

// principal is the client's caller as of now.
func (c *client) principal(ctx context.Context) (*auth.Principal, error) {
	if c.watch == nil {
		return c.p, nil
	}
	return c.watch.Principal(ctx)
}

// current is the client's caller when known without a look-up (no change
// concerning it announced since it was verified); ok is false otherwise.
func (c *client) current() (p *auth.Principal, ok bool) {
	if c.watch == nil {
		return c.p, true
	}
	return c.watch.Current()
}

// Hub fans committed events out to the event-stream clients of this
// process. Notifications (ids) arrive from the Notifier; the hub loads each
// event once and hands it to every client allowed to see it.
type Hub struct {
	cfg HubConfig

	mu      sync.Mutex
	clients map[*client]struct{}
	stopped bool

	ids    chan int64
	resync chan struct{}
	life   startstop.Base
}

// NewHub returns a hub; subscribe HandleNotification to Channel and Start it.
func NewHub(cfg HubConfig) *Hub {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = HeartbeatDefault
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = ClientBufferDefault
	}
	return &Hub{cfg: cfg, clients: map[*client]struct{}{}, ids: make(chan int64, 4096), resync: make(chan struct{}, 1)}
}

// HandleNotification is the Channel subscriber. It never blocks the
// notifier: when the hub falls behind, every client is told to resync.
func (h *Hub) HandleNotification(n Notification) {
	if n.Resync {
		h.signalResync()
		return
	}
	id, err := strconv.ParseInt(n.Payload, 10, 64)
	if err != nil {
		return
	}
	select {
	case h.ids <- id:
	default:
		h.signalResync()
	}
}

func (h *Hub) signalResync() {
	select {
	case h.resync <- struct{}{}:
	default:
	}
}

// Start runs the delivery loop until Stop.
func (h *Hub) Start(ctx context.Context) error {
	if err := h.life.Begin(ctx); err != nil {
		return fmt.Errorf("event hub: %w", err)
	}
	h.life.Go(h.loop)
	return nil
}

func (h *Hub) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.resync:
			// Events may have been missed: clients reconnect and replay
			// from their Last-Event-ID.
			h.dropAll()
		case id := <-h.ids:
			h.deliver(ctx, id)
		}
	}
}

// Stop ends every stream, refuses new ones (they end at once), ends the
// delivery loop and waits for it until ctx ends. Streams never end by
// themselves, so the API server stops the hub before it drains.
func (h *Hub) Stop(ctx context.Context) error {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.dropAll()
	return h.life.Stop(ctx)
}

func (h *Hub) dropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		c.drop()
	}
}

func (h *Hub) deliver(ctx context.Context, id int64) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := scanEvents(qctx, h.cfg.Pool, `SELECT `+eventColumns+` FROM events WHERE id = $1`, id)
	if err != nil {
		h.cfg.Logger.Error("load event", "id", id, "err", err)
		h.dropAll()
		return
	}
	if len(list) == 0 {
		return
	}
	e := list[0]
	h.mu.Lock()
	clients := make([]*client, 0, len(h.clients))
	for c := range h.clients {
		clients = append(clients, c)
	}
	h.mu.Unlock()
	if len(clients) == 0 {
		return
	}
	// The project's organization, looked up once for every client.
	sc, err := h.scope(qctx, e)
	if err != nil {
		h.cfg.Logger.Error("look up an event's project", "id", id, "err", err)
		h.dropAll()
		return
	}
	for _, c := range clients {
		if e.UserID != nil && *e.UserID != c.p.UserID {
			continue // another user's, whatever the memberships
		}
		d := delivery{e: e}
		// The caller as of the latest authorization change concerning
		// it: an event of a project the user has just left is not shown,
		// even before the watcher ends the stream. A caller that must be
		// verified again first is left to the client's own stream.
		if p, ok := c.current(); ok {
			if !visibleIn(p, e, sc) {
				continue
			}
			d.checked = true
		}
		select {
		case c.ch <- d:
		default:
			h.cfg.Logger.Warn("event stream client too slow; disconnecting", "user", c.p.UserID)
			c.drop()
		}
	}
}

// admit reports whether the client may be sent d, verifying its caller
// again (with its own timeout) when the delivery loop left that to it. An
// error (the caller is gone, or cannot be verified now) ends the stream:
// the client reconnects and replays from its Last-Event-ID.
func (h *Hub) admit(ctx context.Context, c *client, d delivery) (bool, error) {
	if d.checked {
		return true, nil
	}
	vctx, cancel := context.WithTimeout(ctx, auth.VerifyTimeout)
	defer cancel()
	p, err := c.principal(vctx)
	if err != nil {
		c.drop()
		return false, err
	}
	return h.visible(vctx, p, d.e), nil
}

// eventScope is what an event's visibility depends on besides the caller:
// its project's organization (live false: no project, or a deleted one).
type eventScope struct {
	org  uuid.UUID
	live bool
}

func (h *Hub) scope(ctx context.Context, e Event) (eventScope, error) {
	if e.ProjectID == nil {
		return eventScope{}, nil
	}
	org, err := h.cfg.Guard.ProjectOrg(ctx, *e.ProjectID)
	if errs.CodeOf(err) == errs.NotFound {
		return eventScope{}, nil
	}
	if err != nil {
		return eventScope{}, err
	}
	return eventScope{org: org, live: true}, nil
}

// pageScope is h.scope of e, looked up once per project for the events
// of one replay page (scopes).
func (h *Hub) pageScope(ctx context.Context, e Event, scopes map[uuid.UUID]eventScope) (eventScope, error) {
	if e.ProjectID == nil {
		return eventScope{}, nil
	}
	if sc, ok := scopes[*e.ProjectID]; ok {
		return sc, nil
	}
	sc, err := h.scope(ctx, e)
	if err == nil {
		scopes[*e.ProjectID] = sc
	}
	return sc, err
}

func (h *Hub) visible(ctx context.Context, p *auth.Principal, e Event) bool {
	sc, err := h.scope(ctx, e)
	return err == nil && visibleIn(p, e, sc)
}

// visibleIn reports whether p may see e, of scope sc: a user event only
// its user (with a project, while they can see it; without, not through a
// project-scoped token), a project event whoever can see the project.
func visibleIn(p *auth.Principal, e Event, sc eventScope) bool {
	if e.UserID != nil {
		if *e.UserID != p.UserID {
			return false
		}
		if e.ProjectID == nil {
			return p.BoundProject == uuid.Nil
		}
	}
	return e.ProjectID != nil && sc.live && p.Sees(*e.ProjectID, sc.org)
}

func (h *Hub) newClient(p *auth.Principal) *client {
	return &client{p: p, ch: make(chan delivery, h.cfg.Buffer), gone: make(chan struct{})}
}

func (h *Hub) add(c *client) *client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		c.drop()
		return c
	}
	h.clients[c] = struct{}{}
	return c
}

func (h *Hub) unsubscribe(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
	c.drop()
}

// Clients is the number of connected stream clients (for metrics and tests).
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// ErrBadLastEventID refuses a Last-Event-ID that is not an event id.
var ErrBadLastEventID = errs.New(errs.Invalid, "Last-Event-ID must be an event id: an integer, 0 or more")

// ServeHTTP is GET /api/events/stream: server-sent events for the caller
// (set by httpapi.Protect), replaying from Last-Event-ID (header, or the
// lastEventId query parameter for clients that cannot set headers).
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := auth.PrincipalFrom(r.Context())
	// Given, the replay starts after it (0: from the first event); else
	// only live events follow.
	last, replay := int64(0), false
	if v := r.Header.Get("Last-Event-ID"); v != "" || r.URL.Query().Get("lastEventId") != "" {
		if v == "" {
			v = r.URL.Query().Get("lastEventId")
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			httpapi.WriteProblem(w, r, ErrBadLastEventID)
			return
		}
		last, replay = n, true
	}
	c := h.newClient(p)
	watch, err := h.cfg.Watcher.Watch(r.Context(), r.Header.Get("Authorization"), uuid.Nil, c.drop)
	if err != nil {
		httpapi.WriteProblem(w, r, err)
		return
	}
	defer watch.Close()
	c.watch = watch
	h.add(c) // before the replay, so nothing falls in between
	defer h.unsubscribe(c)

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(payload string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
		if _, err := fmt.Fprint(w, payload); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(": connected\n\n") {
		return
	}
	ctx := r.Context()
	if replay && !h.replay(ctx, c, send, &last) {
		return
	}
	tick := time.NewTicker(h.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.gone:
			return
		case <-tick.C:
			if !send(": heartbeat\n\n") {
				return
			}
		case d := <-c.ch:
			if d.e.ID <= last {
				continue
			}
			ok, err := h.admit(ctx, c, d)
			if err != nil || (ok && !send(frame(d.e))) {
				return
			}
			last = d.e.ID
		}
	}
}

// replay sends the stored events after *last that the caller may see, a
// page at a time until none is left, advancing *last. Live events that
// arrive meanwhile wait in the client's buffer; those already replayed are
// skipped there by id. It reports false when the stream must end. Each
// page looks each project up once: the guard caches live projects only,
// and a deleted project's events would each cost a look-up.
func (h *Hub) replay(ctx context.Context, c *client, send func(string) bool, last *int64) bool {
	for {
		page, err := scanEvents(ctx, h.cfg.Pool, `SELECT `+eventColumns+` FROM events WHERE id > $1 ORDER BY id LIMIT $2`, *last, ReplayPage)
		if err != nil {
			h.cfg.Logger.Error("replay events", "err", err)
			return false
		}
		scopes := map[uuid.UUID]eventScope{}
		for _, e := range page {
			cur, err := c.principal(ctx)
			if err != nil {
				return false
			}
			sc, err := h.pageScope(ctx, e, scopes)
			if err == nil && visibleIn(cur, e, sc) && !send(frame(e)) {
				return false
			}
			*last = e.ID
		}
		if len(page) < ReplayPage {
			return true
		}
	}
}

func frame(e Event) string {
	b, _ := json.Marshal(e)
	// No "event:" field: browsers' EventSource.onmessage sees only unnamed
	// events, and the type is in the data.
	return "id: " + strconv.FormatInt(e.ID, 10) + "\ndata: " + string(b) + "\n\n"
}
