package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/graphmill/graphmill/internal/secrets"
)

// Cookie names. The session cookie holds the sealed session; the sign-in
// cookie holds the CSRF token of the sign-in form, before any session.
const (
	SessionCookie = "graphmill_session"
	SigninCookie  = "graphmill_signin"
)

// SessionTTL bounds a console session; the token it holds may end sooner
// (expiry, revocation), which signs the browser out.
const SessionTTL = 12 * time.Hour

// CSRFHeader carries the session's CSRF token on htmx and script requests;
// forms carry it in the csrfField field.
const (
	CSRFHeader = "X-CSRF-Token"
	csrfField  = "csrf"
)

// session is what the sealed cookie holds: the API token the browser
// signed in with (never readable by script: the cookie is HttpOnly and
// sealed with the secrets box), the CSRF token every unsafe request must
// repeat, its id, and when the session ends.
type session struct {
	// ID names the session for its revocation at sign-out
	// (console_revoked_sessions); a session without one is refused.
	ID      string `json:"i"`
	Token   string `json:"t"`
	CSRF    string `json:"c"`
	Expires int64  `json:"e"`
	// Refresh is the OIDC refresh token of a session signed in with the
	// identity provider (Token is then its access token); empty for an
	// API token's session.
	Refresh string `json:"r,omitempty"`
}

// sessionPlace is the associated data of a sealed session: a session
// cannot be replayed as any other sealed secret, nor one as a session.
func sessionPlace() []byte { return secrets.Place("console", "session", "v1") }

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sessions seals and opens session cookies, and sets the console's
// cookies with its Secure policy.
type sessions struct {
	box    *secrets.Box
	now    func() time.Time
	secure func(*http.Request) bool
}

// MaxCookieBytes bounds the session cookie: browsers keep cookies of up
// to 4096 bytes (name and attributes included) and drop larger ones.
const MaxCookieBytes = 3900

// errCookieTooLarge refuses a session whose sealed cookie browsers would
// drop (an identity provider's very large tokens).
var errCookieTooLarge = errors.New("the identity provider's tokens are too large for the session cookie")

func (s sessions) set(w http.ResponseWriter, r *http.Request, token, refresh string) (session, error) {
	sess := session{ID: randomToken(), Token: token, Refresh: refresh, CSRF: randomToken(), Expires: s.now().Add(SessionTTL).Unix()}
	return sess, s.put(w, r, sess)
}

// put seals sess into the session cookie, which lives until the session
// ends.
func (s sessions) put(w http.ResponseWriter, r *http.Request, sess session) error {
	raw, _ := json.Marshal(sess) // plain struct: cannot fail
	sealed := s.box.Seal(raw, sessionPlace())
	if len(sealed) > MaxCookieBytes {
		return errCookieTooLarge
	}
	s.setCookie(w, r, SessionCookie, sealed, "/", int(sess.Expires-s.now().Unix()))
	return nil
}

func (s sessions) get(r *http.Request) (session, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return session{}, fmt.Errorf("no session: %w", err)
	}
	raw, err := s.box.Open(c.Value, sessionPlace())
	if err != nil {
		return session{}, fmt.Errorf("open session: %w", err)
	}
	var sess session
	if err := json.Unmarshal(raw, &sess); err != nil {
		return session{}, fmt.Errorf("decode session: %w", err)
	}
	if sess.ID == "" || sess.Token == "" || sess.CSRF == "" || s.now().Unix() >= sess.Expires {
		return session{}, fmt.Errorf("session expired")
	}
	return sess, nil
}

// setCookie sets a console cookie: HttpOnly, SameSite=Strict, and Secure
// as the console's CookieSecurity says for r. A negative maxAge deletes
// it.
func (s sessions) setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, maxAge int) {
	s.cookie(w, r, name, value, path, maxAge, http.SameSiteStrictMode)
}

// cookie sets a cookie HttpOnly, with sameSite, and Secure as the policy
// says for r.
func (s sessions) cookie(w http.ResponseWriter, r *http.Request, name, value, path string, maxAge int, sameSite http.SameSite) {
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: Secure as GRAPHMILL_CONSOLE_SECURE_COOKIE says (TLS or an https public URL by default)
		Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: s.secure(r), SameSite: sameSite,
	})
}

func (s sessions) clearCookie(w http.ResponseWriter, r *http.Request, name, path string) {
	s.setCookie(w, r, name, "", path, -1)
}

// CookieSecurity says when the console's cookies are Secure (sent back
// over HTTPS only).
type CookieSecurity string

// Cookie security policies (GRAPHMILL_CONSOLE_SECURE_COOKIE).
const (
	// SecureAuto: Secure when the request came over TLS or the public URL
	// (GRAPHMILL_PUBLIC_URL) is https, as behind a TLS-terminating proxy.
	SecureAuto CookieSecurity = "auto"
	// SecureAlways: always Secure (a browser then keeps no session over
	// plain HTTP, loopback excepted in Chromium and Firefox).
	SecureAlways CookieSecurity = "always"
	// SecureNever: never Secure (plain HTTP only, such as a private
	// network without TLS).
	SecureNever CookieSecurity = "never"
)

// secureFunc is the policy c as a decision per request; publicURL is the
// server's public base URL (may be empty).
func (c CookieSecurity) secureFunc(publicURL string) (func(*http.Request) bool, error) {
	switch c {
	case SecureAlways:
		return func(*http.Request) bool { return true }, nil
	case SecureNever:
		return func(*http.Request) bool { return false }, nil
	case SecureAuto, "":
		if strings.HasPrefix(strings.ToLower(publicURL), "https://") {
			return func(*http.Request) bool { return true }, nil
		}
		return func(r *http.Request) bool { return r.TLS != nil }, nil
	}
	return nil, fmt.Errorf("console: cookie security %q is not auto, always or never", c)
}

// sameToken compares a submitted CSRF token with the expected one in
// constant time; an empty expected token never matches.
func sameToken(want, got string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

// submittedCSRF is the CSRF token of r: the header (htmx, scripts) or the
// form field.
func submittedCSRF(r *http.Request) string {
	if v := r.Header.Get(CSRFHeader); v != "" {
		return v
	}
	// Only an urlencoded form's field counts: a multipart body carries the
	// header (the upload's is streamed by its handler, never parsed).
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		return r.PostFormValue(csrfField)
	}
	return ""
}
