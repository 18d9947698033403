package auth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
)

func TestNewToken(t *testing.T) {
	t.Parallel()

	format := regexp.MustCompile(`^gm_[A-Za-z0-9_-]{43}$`)
	seen := map[string]bool{}
	for range 100 {
		tok := auth.NewToken()
		require.Regexp(t, format, tok)
		require.True(t, auth.ValidTokenFormat(tok), tok)
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, auth.TokenPrefix))
		require.NoError(t, err)
		require.Len(t, raw, 32)
		require.False(t, seen[tok], "duplicate token %s", tok)
		seen[tok] = true
		require.Equal(t, tok[:8], auth.DisplayPrefix(tok))
	}
}

func TestValidTokenFormat(t *testing.T) {
	t.Parallel()

	body32 := strings.Repeat("a", 32)
	tests := []struct {
		name  string
		token string
		want  bool
	}{
		{name: "Generated", token: auth.NewToken(), want: true},
		{name: "Shortest", token: "gm_" + body32, want: true},
		{name: "Longest", token: "gm_" + strings.Repeat("Z9-_", 32), want: true},
		{name: "TooLong", token: "gm_" + strings.Repeat("Z9-_", 32) + "x", want: false},
		{name: "TooShort", token: "gm_" + body32[1:], want: false},
		{name: "PrefixOnly", token: "gm_", want: false},
		{name: "Empty", token: "", want: false},
		{name: "WrongPrefix", token: "gh_" + body32, want: false},
		{name: "UppercasePrefix", token: "GM_" + body32, want: false},
		{name: "NoPrefix", token: body32 + "aaaa", want: false},
		{name: "StandardBase64Plus", token: "gm_" + body32 + "+", want: false},
		{name: "StandardBase64Slash", token: "gm_" + body32 + "/", want: false},
		{name: "Padding", token: "gm_" + body32 + "=", want: false},
		{name: "Space", token: "gm_" + body32 + " x", want: false},
		{name: "NonASCII", token: "gm_" + body32 + "é", want: false},
		{name: "JWT", token: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, auth.ValidTokenFormat(tt.token), tt.token)
		})
	}
}

func TestHashToken(t *testing.T) {
	t.Parallel()

	tok := auth.NewToken()
	require.Equal(t, auth.HashToken(tok), auth.HashToken(tok), "hashing is deterministic")
	require.Equal(t, sha256.Sum256([]byte(tok)), auth.HashToken(tok), "what is stored is the SHA-256 of the whole token")
	require.NotEqual(t, auth.HashToken(tok), auth.HashToken(auth.NewToken()))
	// A fixed vector: stored hashes must stay valid across releases.
	fixed := auth.HashToken("gm_" + strings.Repeat("a", 43))
	require.Equal(t, "6f076b568d1924bc0a91c0bd9fcb6deeb41e5abfdcd7f39135b4358fa6745776", hex.EncodeToString(fixed[:]))
}
