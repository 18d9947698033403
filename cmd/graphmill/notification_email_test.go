package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

type notificationPrefs struct {
	EmailImportant bool   `json:"emailImportant"`
	Digest         string `json:"digest"`
}

const prefsPath = "/api/me/notification-preferences"

func (s *testServer) prefs(token string) notificationPrefs {
	s.t.Helper()
	var p notificationPrefs
	s.must(200, "GET", prefsPath, token, nil).Decode(s.t, &p)
	return p
}

// storedPrefs reads the user's row as stored (absent: ok false).
func (s *testServer) storedPrefs(user string) (p notificationPrefs, ok bool) {
	s.t.Helper()
	rows, err := s.m.db.pool.Query(context.Background(), `SELECT email_important, digest FROM notification_preferences WHERE user_id = $1`, user)
	require.NoError(s.t, err)
	defer rows.Close()
	for rows.Next() {
		require.NoError(s.t, rows.Scan(&p.EmailImportant, &p.Digest))
		ok = true
	}
	require.NoError(s.t, rows.Err())
	return p, ok
}

func TestNotificationPreferencesRoundTrip(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	me, tok := s.newUser("prefs@example.com", []string{"notifications:read", "notifications:write"}, "")
	other, otherTok := s.newUser("prefs-other@example.com", []string{"notifications:read", "notifications:write"}, "")

	// Default: both off, nothing stored.
	require.Equal(t, notificationPrefs{Digest: "off"}, s.prefs(tok))
	_, stored := s.storedPrefs(me)
	require.False(t, stored)

	// PUT is partial: an absent field is unchanged.
	var got notificationPrefs
	s.must(200, "PUT", prefsPath, tok, map[string]any{"emailImportant": true}).Decode(t, &got)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "off"}, got)
	s.must(200, "PUT", prefsPath, tok, map[string]any{"digest": "daily"}).Decode(t, &got)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "daily"}, got)
	s.must(200, "PUT", prefsPath, tok, map[string]any{}).Decode(t, &got)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "daily"}, got)
	require.Equal(t, got, s.prefs(tok))
	row, stored := s.storedPrefs(me)
	require.True(t, stored)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "daily"}, row)
	s.must(200, "PUT", prefsPath, tok, map[string]any{"emailImportant": false, "digest": "off"}).Decode(t, &got)
	require.Equal(t, notificationPrefs{Digest: "off"}, got)
	row, _ = s.storedPrefs(me)
	require.Equal(t, notificationPrefs{Digest: "off"}, row)

	// Each user has their own.
	s.must(200, "PUT", prefsPath, otherTok, map[string]any{"digest": "daily"})
	require.Equal(t, notificationPrefs{Digest: "daily"}, s.prefs(otherTok))
	require.Equal(t, notificationPrefs{Digest: "off"}, s.prefs(tok))
	row, _ = s.storedPrefs(other)
	require.Equal(t, notificationPrefs{Digest: "daily"}, row)
}

func TestNotificationPreferencesRejects(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	me, tok := s.newUser("prefs-bad@example.com", []string{"notifications:read", "notifications:write"}, "")
	_, reader := s.newUser("prefs-reader@example.com", []string{"notifications:read"}, "")
	_, noScope := s.newUser("prefs-noscope@example.com", []string{"documents:read"}, "")
	_, bound := s.newUser("prefs-bound@example.com", []string{"notifications:read", "notifications:write"}, project)
	s.must(200, "PUT", prefsPath, tok, map[string]any{"emailImportant": true})

	for _, c := range []struct {
		body   any
		detail string
	}{
		{map[string]any{"digest": "weekly"}, `body.digest: expected value to be one of "off, daily"`},
		{map[string]any{"digest": ""}, `body.digest: expected value to be one of "off, daily"`},
		{map[string]any{"emailImportant": "yes"}, "body.emailImportant: expected boolean"},
		{map[string]any{"emailImportant": true, "sms": true}, "body.sms: unexpected property"},
		{"[]", "body: expected object"},
		{"not json", ""},
	} {
		r := s.must(400, "PUT", prefsPath, tok, c.body)
		require.Contains(t, r.Detail(t), c.detail, "%v", c.body)
		require.NotEmpty(t, r.Detail(t))
	}
	row, _ := s.storedPrefs(me)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "off"}, row, "a refused PUT changes nothing")

	for _, r := range []struct {
		method string
		body   any
		scope  string
	}{{"GET", nil, "notifications:read"}, {"PUT", map[string]any{"digest": "daily"}, "notifications:write"}} {
		s.must(401, r.method, prefsPath, "", r.body)
		s.must(401, r.method, prefsPath, "gm_notatoken", r.body)
		require.Contains(t, s.must(403, r.method, prefsPath, noScope, r.body).Detail(t), r.scope)
		s.must(403, r.method, prefsPath, bound, r.body) // account settings: no project-bound token
	}
	require.Contains(t, s.must(403, "PUT", prefsPath, reader, map[string]any{"digest": "daily"}).Detail(t), "notifications:write")
	row, _ = s.storedPrefs(me)
	require.Equal(t, notificationPrefs{EmailImportant: true, Digest: "off"}, row)
}
