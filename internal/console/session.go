package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
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
// repeat, and when the session ends.
type session struct {
	Token   string `json:"t"`
	CSRF    string `json:"c"`
	Expires int64  `json:"e"`
}

// sessionPlace is the associated data of a sealed session: a session
// cannot be replayed as any other sealed secret, nor one as a session.
func sessionPlace() []byte { return secrets.Place("console", "session", "v1") }

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sessions seals and opens session cookies.
type sessions struct {
	box *secrets.Box
	now func() time.Time
}

func (s sessions) set(w http.ResponseWriter, r *http.Request, token string) session {
	sess := session{Token: token, CSRF: randomToken(), Expires: s.now().Add(SessionTTL).Unix()}
	raw, _ := json.Marshal(sess) // plain struct: cannot fail
	setCookie(w, r, SessionCookie, s.box.Seal(raw, sessionPlace()), "/", int(SessionTTL.Seconds()))
	return sess
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
	if sess.Token == "" || sess.CSRF == "" || s.now().Unix() >= sess.Expires {
		return session{}, fmt.Errorf("session expired")
	}
	return sess, nil
}

// setCookie sets a console cookie: HttpOnly, SameSite=Strict, and Secure
// when the request came over TLS (plain HTTP is the loopback development
// server, where a Secure cookie would never come back). A negative maxAge
// deletes it.
func setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, maxAge int) {
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: Secure is set whenever the request is over TLS
		Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
}

func clearCookie(w http.ResponseWriter, r *http.Request, name, path string) {
	setCookie(w, r, name, "", path, -1)
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
	// Only a urlencoded form is parsed here: a multipart body (an
	// upload) is streamed by its handler, and carries the header.
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		return r.PostFormValue(csrfField)
	}
	return ""
}
