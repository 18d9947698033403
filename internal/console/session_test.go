package console

import (
	"crypto/tls"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCookieSecurity: auto is Secure over TLS, or always when the public
// URL is https (a TLS-terminating proxy in front); always and never do
// not look at the request; anything else is refused.
func TestCookieSecurity(t *testing.T) {
	t.Parallel()
	plain := httptest.NewRequest("GET", "http://gm/", nil)
	overTLS := httptest.NewRequest("GET", "https://gm/", nil)
	overTLS.TLS = &tls.ConnectionState{}
	for _, tc := range []struct {
		mode               CookieSecurity
		publicURL          string
		plainWant, tlsWant bool
	}{
		{SecureAuto, "", false, true},
		{"", "", false, true},
		{SecureAuto, "http://gm.example.com", false, true},
		{SecureAuto, "HTTPS://gm.example.com", true, true},
		{SecureAlways, "", true, true},
		{SecureNever, "https://gm.example.com", false, false},
	} {
		secure, err := tc.mode.secureFunc(tc.publicURL)
		require.NoError(t, err)
		require.Equal(t, tc.plainWant, secure(plain), "%s %s plain", tc.mode, tc.publicURL)
		require.Equal(t, tc.tlsWant, secure(overTLS), "%s %s TLS", tc.mode, tc.publicURL)
	}
	_, err := CookieSecurity("yes").secureFunc("")
	require.ErrorContains(t, err, `"yes" is not auto, always or never`)
}
