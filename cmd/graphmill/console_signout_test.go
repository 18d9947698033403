package main

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/console"
)

// TestConsoleSignOutRevokesSession: sign-out revokes the session on the
// server (its id in console_revoked_sessions until the session's end):
// a copy of its cookie taken before is refused afterwards, while another
// session of the same token stays signed in; a sign-out without the
// CSRF token revokes nothing.
func TestConsoleSignOutRevokesSession(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	other := newConsoleBrowser(t, s)
	other.signIn(s.admin)
	stolen := b.sessionCookie()
	require.NotEmpty(t, stolen)
	replay := func(cookie string) int {
		t.Helper()
		status, _, _ := newConsoleBrowser(t, s).do("GET", "/", nil, header{"Cookie", console.SessionCookie + "=" + cookie})
		return status
	}
	require.Equal(t, http.StatusOK, replay(stolen), "a copy works while the session lives")

	status, _, _ := b.do("POST", "/signout", url.Values{})
	require.Equal(t, http.StatusForbidden, status, "no CSRF token")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM console_revoked_sessions`))

	signedOutAt := time.Now()
	status, hdr, _ := b.do("POST", "/signout", url.Values{"csrf": {b.csrf}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))
	var expires time.Time
	require.NoError(t, s.pool().QueryRow(ctx, `SELECT expires_at FROM console_revoked_sessions`).Scan(&expires))
	require.WithinDuration(t, signedOutAt.Add(console.SessionTTL), expires, time.Minute, "kept until the session would have ended")

	require.Equal(t, http.StatusSeeOther, replay(stolen), "the signed-out session's cookie is refused")
	status, _, _ = newConsoleBrowser(t, s).do("POST", "/signout", url.Values{"csrf": {b.csrf}}, header{"Cookie", console.SessionCookie + "=" + stolen})
	require.Equal(t, http.StatusUnauthorized, status)
	status, _, _ = other.do("GET", "/", nil)
	require.Equal(t, http.StatusOK, status, "another session of the same token is not signed out")
}

// TestConsoleRevocationsExpire: the scheduler's task deletes the
// revocations of sessions that ended anyway, and only those.
func TestConsoleRevocationsExpire(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	// Both still live for the server's own run of the task; the call is
	// two hours later.
	now := time.Now()
	_, err := s.pool().Exec(ctx, `INSERT INTO console_revoked_sessions (id, expires_at) VALUES ('ended', $1), ('live', $2)`,
		now.Add(time.Hour), now.Add(3*time.Hour))
	require.NoError(t, err)
	n, err := console.DeleteExpiredRevocations(ctx, s.pool(), now.Add(2*time.Hour))
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	var left []string
	rows, err := s.pool().Query(ctx, `SELECT id FROM console_revoked_sessions`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		left = append(left, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"live"}, left)
}
