package llmtest_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// signJWT signs a service-account assertion with key.
func signJWT(t *testing.T, key *rsa.PrivateKey, iss, aud string) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now().Unix()
	head := enc(map[string]string{"alg": "RS256", "typ": "JWT", "kid": llmtest.PrivateKeyID})
	claims := enc(map[string]any{"iss": iss, "aud": aud, "scope": "https://www.googleapis.com/auth/cloud-platform", "iat": now, "exp": now + 3600})
	sum := sha256.Sum256([]byte(head + "." + claims))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	require.NoError(t, err)
	return head + "." + claims + "." + base64.RawURLEncoding.EncodeToString(sig)
}
