package events

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/startstop"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// subscribe adds a client for p, as ServeHTTP does before its replay.
func (h *Hub) subscribe(p *auth.Principal) *client {
	return h.add(h.newClient(p))
}

func hubBundle(t *testing.T, buffer int) (*Hub, *auth.Principal, uuid.UUID, func(time.Time) int64) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	_, err := tenancy.NewService(pool, nil, time.Now).Bootstrap(ctx, "")
	require.NoError(t, err)
	var project uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM projects`).Scan(&project))
	guard := auth.NewGuard(auth.GuardConfig{Directory: tenancy.NewDirectory(pool, time.Now), TTL: time.Minute})
	h := NewHub(HubConfig{Pool: pool, Guard: guard, Logger: slog.New(slog.DiscardHandler), Buffer: buffer})
	p := &auth.Principal{UserID: uuid.New(), Superadmin: true, Scopes: auth.AllScopes}
	publish := func(at time.Time) int64 {
		var id int64
		require.NoError(t, postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
			id, err = Publish(ctx, tx, TypeJobCompleted, &project, nil, map[string]any{}, at)
			return err
		}))
		return id
	}
	return h, p, project, publish
}

// A client that does not keep up is disconnected instead of holding the
// hub (and every other client) up.
func TestHubDropsSlowClient(t *testing.T) {
	t.Parallel()
	h, p, _, publish := hubBundle(t, 1)
	slow := h.subscribe(p)
	fast := h.subscribe(p)
	ctx := context.Background()
	h.deliver(ctx, publish(time.Now()))
	<-fast.ch
	h.deliver(ctx, publish(time.Now()))
	select {
	case <-slow.gone:
	default:
		t.Fatal("slow client still connected")
	}
	select {
	case <-fast.gone:
		t.Fatal("fast client was dropped")
	default:
	}
	require.Len(t, fast.ch, 1)
}

// TestPublishValidationAndExpiry: an event names a project or a user;
// DeleteExpired deletes the events older than Retention and only those. A
// store test: it runs in a transaction rolled back at the end.
func TestPublishValidationAndExpiry(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	ctx := context.Background()
	org, project := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	_, err := tx.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, org)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	require.NoError(t, err)
	_, err = Publish(ctx, tx, "x", nil, nil, nil, time.Now())
	require.ErrorContains(t, err, "needs a project or a user")

	publish := func(at time.Time) int64 {
		t.Helper()
		id, err := Publish(ctx, tx, TypeJobCompleted, &project, nil, map[string]any{}, at)
		require.NoError(t, err)
		return id
	}
	old := publish(time.Now().Add(-Retention - time.Hour))
	recent := publish(time.Now())
	require.Greater(t, recent, old)
	n, err := DeleteExpired(ctx, tx, time.Now())
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	rows, err := tx.Query(ctx, `SELECT id FROM events ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Equal(t, []int64{recent}, ids)
}

// User events reach their user only: with a project, only while the user
// can see it; without one, not through a project-scoped token.
func TestHubVisibility(t *testing.T) {
	t.Parallel()
	h, super, project, _ := hubBundle(t, 1)
	ctx := context.Background()
	owner := &auth.Principal{UserID: uuid.New(), Scopes: auth.AllScopes, ProjectRoles: map[uuid.UUID]auth.ProjectRole{project: auth.ProjectViewer}}
	ownerBound := &auth.Principal{UserID: owner.UserID, Scopes: auth.AllScopes, BoundProject: project, ProjectRoles: owner.ProjectRoles}
	ownerOutside := &auth.Principal{UserID: owner.UserID, Scopes: auth.AllScopes}
	other := &auth.Principal{UserID: uuid.New(), Scopes: auth.AllScopes, ProjectRoles: owner.ProjectRoles}
	user := owner.UserID

	projectEvent := Event{ProjectID: &project}
	userEvent := Event{UserID: &user}
	userProjectEvent := Event{UserID: &user, ProjectID: &project}
	cases := []struct {
		name string
		p    *auth.Principal
		e    Event
		want bool
	}{
		{"MemberSeesProjectEvent", owner, projectEvent, true},
		{"SuperadminSeesProjectEvent", super, projectEvent, true},
		{"OutsiderMissesProjectEvent", ownerOutside, projectEvent, false},
		{"OwnerSeesUserEvent", owner, userEvent, true},
		{"OtherUserMissesUserEvent", other, userEvent, false},
		{"SuperadminMissesUserEvent", super, userEvent, false},
		{"BoundTokenMissesProjectlessUserEvent", ownerBound, userEvent, false},
		{"OwnerSeesUserProjectEvent", owner, userProjectEvent, true},
		{"BoundTokenSeesUserProjectEvent", ownerBound, userProjectEvent, true},
		{"OwnerOutsideProjectMissesIt", ownerOutside, userProjectEvent, false},
		{"OtherMemberMissesUserProjectEvent", other, userProjectEvent, false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, h.visible(ctx, c.p, c.e), c.name)
	}
}

// Each event is checked against the caller's memberships as of the latest
// authorization change, not as of the stream's start: an event of a
// project the user has just left is not delivered, even though nothing
// else has ended the stream yet (the watcher here runs no re-checks).
func TestHubChecksEventsAgainstCurrentMemberships(t *testing.T) {
	t.Parallel()
	h, _, project, publish := hubBundle(t, 8)
	ctx := context.Background()
	guard := h.cfg.Guard
	ten := tenancy.NewService(h.cfg.Pool, guard, time.Now)
	u, err := ten.CreateUser(ctx, "leaver@example.com", "Leaver", nil)
	require.NoError(t, err)
	_, err = ten.AddMember(ctx, project, u.ID, "viewer")
	require.NoError(t, err)
	tok, err := ten.CreateToken(ctx, nil, tenancy.CreateTokenParams{UserID: u.ID, Name: "t", Scopes: []string{"notifications:read"}}, nil)
	require.NoError(t, err)
	header := "Bearer " + tok.Token
	p, err := guard.Authenticate(ctx, header)
	require.NoError(t, err)

	watcher := auth.NewWatcher(auth.WatcherConfig{Guard: guard, Logger: slog.New(slog.DiscardHandler)})
	c := h.newClient(p)
	c.watch, err = watcher.Watch(ctx, header, uuid.Nil, c.drop)
	require.NoError(t, err)
	h.add(c)

	first := publish(time.Now())
	h.deliver(ctx, first)
	d := <-c.ch
	require.Equal(t, first, d.e.ID)
	require.True(t, d.checked, "nothing changed: matched by the delivery loop")

	require.NoError(t, ten.RemoveMember(ctx, project, u.ID))
	h.deliver(ctx, publish(time.Now()))
	// The caller must be verified again: that is left to the client's
	// stream, which finds the membership gone before sending anything.
	d = <-c.ch
	require.False(t, d.checked)
	ok, err := h.admit(ctx, c, d)
	require.ErrorIs(t, err, auth.ErrEnded)
	require.False(t, ok, "an event of a project the user left")
	select {
	case <-c.gone:
	default:
		t.Fatal("the stream of a user who lost a membership goes on")
	}
}

// blockingDirectory is a Directory whose token look-ups of one hash wait
// for their context to end.
type blockingDirectory struct {
	auth.Directory
	blocked [32]byte
}

func (d *blockingDirectory) PrincipalByTokenHash(ctx context.Context, hash [32]byte) (*auth.Principal, error) {
	if hash == d.blocked {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return d.Directory.PrincipalByTokenHash(ctx, hash)
}

// After a change concerning one stream's user, the delivery loop looks up
// nothing: the other streams get the event as matched before, and the
// changed one verifies its caller on its own stream, with its own
// deadline; a look-up that does not answer ends that stream only.
func TestHubLeavesReverificationToTheStream(t *testing.T) {
	t.Parallel()
	h, _, project, publish := hubBundle(t, 8)
	ctx := context.Background()
	ten := tenancy.NewService(h.cfg.Pool, h.cfg.Guard, time.Now)
	dir := &blockingDirectory{Directory: tenancy.NewDirectory(h.cfg.Pool, time.Now)}
	guard := auth.NewGuard(auth.GuardConfig{Directory: dir, TTL: time.Minute})
	h.cfg.Guard = guard
	watcher := auth.NewWatcher(auth.WatcherConfig{Guard: guard, Logger: slog.New(slog.DiscardHandler)})
	clients := map[string]*client{}
	users := map[string]uuid.UUID{}
	for _, name := range []string{"slow", "steady"} {
		u, err := ten.CreateUser(ctx, name+"@example.com", name, nil)
		require.NoError(t, err)
		_, err = ten.AddMember(ctx, project, u.ID, "viewer")
		require.NoError(t, err)
		tok, err := ten.CreateToken(ctx, nil, tenancy.CreateTokenParams{UserID: u.ID, Name: "t", Scopes: []string{"notifications:read"}}, nil)
		require.NoError(t, err)
		header := "Bearer " + tok.Token
		p, err := guard.Authenticate(ctx, header)
		require.NoError(t, err)
		c := h.newClient(p)
		c.watch, err = watcher.Watch(ctx, header, uuid.Nil, c.drop)
		require.NoError(t, err)
		h.add(c)
		clients[name], users[name] = c, u.ID
		if name == "slow" {
			dir.blocked = auth.HashToken(tok.Token)
		}
	}
	first := publish(time.Now())
	h.deliver(ctx, first)
	for _, c := range clients {
		d := <-c.ch
		require.Equal(t, first, d.e.ID)
		require.True(t, d.checked)
	}

	// slow's user changed; its token's look-up now hangs.
	guard.InvalidateChange(auth.ChangeUsers(users["slow"]))
	lookups := guard.Lookups()
	second := publish(time.Now())
	h.deliver(ctx, second)
	require.Equal(t, lookups, guard.Lookups(), "the delivery loop looked nothing up")
	d := <-clients["steady"].ch
	require.Equal(t, second, d.e.ID)
	require.True(t, d.checked)
	d = <-clients["slow"].ch
	require.Equal(t, second, d.e.ID)
	require.False(t, d.checked, "left to the stream")

	// The stream's own deadline passes (here: its context ends first).
	vctx, cancel := context.WithCancel(ctx)
	cancel()
	ok, err := h.admit(vctx, clients["slow"], d)
	require.Error(t, err)
	require.False(t, ok)
	select {
	case <-clients["slow"].gone:
	default:
		t.Fatal("a stream that cannot be verified goes on")
	}
	select {
	case <-clients["steady"].gone:
		t.Fatal("another stream was dropped")
	default:
	}
	third := publish(time.Now())
	h.deliver(ctx, third)
	require.Equal(t, third, (<-clients["steady"].ch).e.ID)
}

// stuckDirectory's project look-ups wait for release, whatever their
// context says (a slow database).
type stuckDirectory struct {
	auth.Directory
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (d *stuckDirectory) ProjectOrg(context.Context, uuid.UUID) (uuid.UUID, error) {
	d.once.Do(func() { close(d.entered) })
	<-d.release
	return uuid.Nil, errs.New(errs.NotFound, "project not found")
}

// The hub has the start/stop shape of every long-running part: a second
// Start is refused; Stop ends every stream at once and refuses new ones,
// and waits for a delivery in progress until its context ends, however
// often it is called.
func TestHubStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h0, p, _, publish := hubBundle(t, 8)
	dir := &stuckDirectory{entered: make(chan struct{}), release: make(chan struct{})}
	h := NewHub(HubConfig{Pool: h0.cfg.Pool, Guard: auth.NewGuard(auth.GuardConfig{Directory: dir}), Logger: slog.New(slog.DiscardHandler)})
	c := h.subscribe(p)
	require.NoError(t, h.Start(ctx))
	require.ErrorIs(t, h.Start(ctx), startstop.ErrStarted)
	h.HandleNotification(Notification{Channel: Channel, Payload: strconv.FormatInt(publish(time.Now()), 10)})
	<-dir.entered // the delivery looks the event's project up

	ended, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, h.Stop(ended), context.Canceled, "the delivery is still running")
	requireGone(t, c)
	requireGone(t, h.subscribe(p)) // refused after Stop
	close(dir.release)
	require.NoError(t, h.Stop(ctx))
	require.NoError(t, h.Stop(ended), "a second Stop after the loop ended")
	require.Empty(t, c.ch, "nothing delivered")
}

// Stop before Start returns at once and ends the streams already open.
func TestHubStopBeforeStart(t *testing.T) {
	t.Parallel()
	h, p, _, _ := hubBundle(t, 1)
	c := h.subscribe(p)
	require.NoError(t, h.Stop(context.Background()))
	requireGone(t, c)
	require.NoError(t, h.Stop(context.Background()))
}

func requireGone(t *testing.T, c *client) {
	t.Helper()
	select {
	case <-c.gone:
	default:
		require.FailNow(t, "the stream was not ended")
	}
}

// countingDirectory counts its project look-ups.
type countingDirectory struct {
	auth.Directory
	lookups atomic.Int64
}

func (d *countingDirectory) ProjectOrg(ctx context.Context, project uuid.UUID) (uuid.UUID, error) {
	d.lookups.Add(1)
	return d.Directory.ProjectOrg(ctx, project)
}

// TestReplaySkipsADeletedProjectLookingItUpOnce: a replay sends no event
// of a deleted project, and looks the project up once for its page, not
// once per event (the guard caches live projects only).
func TestReplaySkipsADeletedProjectLookingItUpOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h0, p, project, publish := hubBundle(t, 8)
	dir := &countingDirectory{Directory: tenancy.NewDirectory(h0.cfg.Pool, time.Now)}
	h := NewHub(HubConfig{Pool: h0.cfg.Pool, Guard: auth.NewGuard(auth.GuardConfig{Directory: dir, TTL: time.Minute}), Logger: slog.New(slog.DiscardHandler)})
	var last int64
	for range 5 {
		last = publish(time.Now())
	}
	require.NoError(t, tenancy.NewService(h0.cfg.Pool, nil, time.Now).DeleteProject(ctx, project, nil))
	var sent []string
	after := int64(0)
	require.True(t, h.replay(ctx, h.newClient(p), func(f string) bool { sent = append(sent, f); return true }, &after))
	require.Empty(t, sent)
	require.Equal(t, last, after, "the replay went past them")
	require.Equal(t, int64(1), dir.lookups.Load())
}
