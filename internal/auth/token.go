package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// TokenPrefix starts every Graphmill API token, so that leaked tokens are
// recognisable by secret scanners and told apart from OIDC tokens.
const TokenPrefix = "gm_"

// Generated tokens carry 32 random bytes (43 base64url characters); tokens
// set by an operator (GRAPHMILL_BOOTSTRAP_TOKEN) may be longer but not
// shorter than 32 characters.
const (
	tokenMinBody = 32
	tokenMaxBody = 128
)

// DisplayPrefixLen is how much of a token is kept to show in listings.
const DisplayPrefixLen = 8

// NewToken returns a fresh API token.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ValidTokenFormat reports whether s has the shape of an API token.
func ValidTokenFormat(s string) bool {
	body, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok || len(body) < tokenMinBody || len(body) > tokenMaxBody {
		return false
	}
	for _, r := range body {
		if !isTokenRune(r) {
			return false
		}
	}
	return true
}

// HashToken is what is stored of a token.
func HashToken(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// DisplayPrefix is the part of a token shown in listings.
func DisplayPrefix(token string) string { return token[:DisplayPrefixLen] }

func isTokenRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}
