package email

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSettings(t *testing.T) {
	t.Parallel()
	_, ok, err := ParseSettings("", "")
	require.NoError(t, err)
	require.False(t, ok, "email is off without both")

	s, ok, err := ParseSettings("smtp://user:p%40ss@mail.example.com", "Graphmill <noreply@example.com>")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Settings{Host: "mail.example.com", Port: 587, Username: "user", Password: "p@ss", From: s.From}, s)
	require.Equal(t, "noreply@example.com", s.From.Address)
	require.Equal(t, "Graphmill", s.From.Name)

	s, _, err = ParseSettings("smtps://mail.example.com", "noreply@example.com")
	require.NoError(t, err)
	require.True(t, s.ImplicitTLS)
	require.Equal(t, 465, s.Port)

	s, _, err = ParseSettings("smtp://127.0.0.1:2525", "noreply@example.com")
	require.NoError(t, err)
	require.Equal(t, 2525, s.Port)

	for _, bad := range []struct{ url, from string }{
		{"smtp://mail.example.com", ""},
		{"", "noreply@example.com"},
		{"http://mail.example.com", "noreply@example.com"},
		{"smtp://", "noreply@example.com"},
		{"smtp://mail.example.com:99999", "noreply@example.com"},
		{"smtp://mail.example.com/path", "noreply@example.com"},
		{"smtp://mail.example.com", "not an address"},
		{"smtp://mail.example.com", "Evil\r\nBcc: x@example.com <noreply@example.com>"},
	} {
		_, _, err := ParseSettings(bad.url, bad.from)
		require.Error(t, err, "%q %q", bad.url, bad.from)
	}
}

func TestParseSettingsHidesPassword(t *testing.T) {
	t.Parallel()
	_, _, err := ParseSettings("smtp://user:s3cret@mail.example.com:bad", "noreply@example.com")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}

func TestTemplatesBothParts(t *testing.T) {
	t.Parallel()
	tpl, err := NewTemplates()
	require.NoError(t, err)
	require.True(t, tpl.Has(TemplateInvitation))
	_, err = tpl.Render(TemplateInvitation, []byte(`{"projectName":"P"}`))
	require.Error(t, err, "a missing key is an error")
	_, err = tpl.Render("nope", []byte(`{}`))
	require.Error(t, err)
}
