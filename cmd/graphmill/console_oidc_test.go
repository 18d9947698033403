package main

import (
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/console"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// The console's client registration at the test provider.
const (
	consoleClientID     = "graphmill-console"
	consoleClientSecret = "console-secret-value"
)

// oidcProvider is an OpenID provider speaking the protocol over httptest:
// discovery, JWKS, the authorization endpoint (code flow, PKCE S256
// required), the token endpoint (authorization_code and refresh_token
// grants, client secret basic or post, refresh tokens rotated) and RFC
// 7009 revocation. Tokens are RS256 JWTs; their times follow now.
type oidcProvider struct {
	t   *testing.T
	url string
	key *rsa.PrivateKey
	kid string

	mu  sync.Mutex
	now func() time.Time
	// sub is the user who signs in at the authorization endpoint.
	sub string
	// The knobs of the refusal tests: the nonce put in ID tokens (empty:
	// the request's), an ID token already expired, the audience of access
	// tokens (empty: oidcAudience).
	nonce        string
	expiredID    bool
	accessAud    string
	codes        map[string]authCode
	refresh      map[string]string // live refresh token -> subject
	grants       []string          // grant types seen, in order
	revoked      []string
	tokenFailure string // a token endpoint error answered to every request
	noRefresh    bool   // issue no refresh token (no offline access)
}

type authCode struct {
	redirect, challenge, nonce, sub string
}

// newOIDCProvider starts a provider on loopback, named host in its URLs
// (127.0.0.1, or localhost: another site than the console's 127.0.0.1,
// as a real provider is).
func newOIDCProvider(t *testing.T, host string) *oidcProvider {
	t.Helper()
	op := &oidcProvider{
		t: t, key: newRSAKey(t), kid: "op-" + uuid.NewString()[:8], now: time.Now,
		sub: "sub-" + uuid.NewString(), codes: map[string]authCode{}, refresh: map[string]string{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": op.url, "jwks_uri": op.url + "/jwks", "authorization_endpoint": op.url + "/authorize",
			"token_endpoint": op.url + "/token", "revocation_endpoint": op.url + "/revoke",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &op.key.PublicKey, KeyID: op.kid, Algorithm: string(jose.RS256), Use: "sig"}}})
	})
	mux.HandleFunc("GET /authorize", op.authorize)
	mux.HandleFunc("POST /token", op.token)
	mux.HandleFunc("POST /revoke", op.revoke)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	op.url = "http://" + net.JoinHostPort(host, port)
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	srv.Start()
	t.Cleanup(srv.Close)
	return op
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, code, desc string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
}

// authorize signs op.sub in at once (no consent page) and sends the
// browser back with a code, after checking the request as a provider
// does.
func (op *oidcProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("response_type") != "code", q.Get("client_id") != consoleClientID, q.Get("redirect_uri") == "",
		!strings.Contains(" "+q.Get("scope")+" ", " openid "), q.Get("state") == "", q.Get("nonce") == "",
		q.Get("code_challenge_method") != "S256", len(q.Get("code_challenge")) != 43:
		http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	op.mu.Lock()
	code := uuid.NewString()
	op.codes[code] = authCode{redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), sub: op.sub}
	op.mu.Unlock()
	to, err := url.Parse(q.Get("redirect_uri"))
	require.NoError(op.t, err)
	back := to.Query()
	back.Set("code", code)
	back.Set("state", q.Get("state"))
	to.RawQuery = back.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func (op *oidcProvider) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	} else {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	}
	if id != consoleClientID || secret != consoleClientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	grant := r.PostFormValue("grant_type")
	op.grants = append(op.grants, grant)
	if op.tokenFailure != "" {
		oauthError(w, op.tokenFailure, "refused by the test")
		return
	}
	var sub, nonce string
	switch grant {
	case "authorization_code":
		c, ok := op.codes[r.PostFormValue("code")]
		delete(op.codes, r.PostFormValue("code")) // once
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		switch {
		case !ok:
			oauthError(w, "invalid_grant", "unknown or used code")
			return
		case c.redirect != r.PostFormValue("redirect_uri"):
			oauthError(w, "invalid_grant", "redirect_uri differs")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			oauthError(w, "invalid_grant", "PKCE verifier does not match")
			return
		}
		sub, nonce = c.sub, c.nonce
	case "refresh_token":
		s, ok := op.refresh[r.PostFormValue("refresh_token")]
		if !ok {
			oauthError(w, "invalid_grant", "unknown refresh token")
			return
		}
		delete(op.refresh, r.PostFormValue("refresh_token")) // rotated
		sub = s
	default:
		oauthError(w, "unsupported_grant_type", grant)
		return
	}
	now := op.now()
	aud := op.accessAud
	if aud == "" {
		aud = oidcAudience
	}
	access := signJWT(op.t, op.key, op.kid, map[string]any{
		"iss": op.url, "aud": aud, "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": uuid.NewString(),
		"email": sub + "@example.com", "email_verified": true, "name": "User " + sub,
	})
	if op.nonce != "" {
		nonce = op.nonce
	}
	idExp := now.Add(time.Hour)
	if op.expiredID {
		idExp = now.Add(-time.Minute)
	}
	idClaims := map[string]any{"iss": op.url, "aud": consoleClientID, "sub": sub, "iat": now.Add(-2 * time.Minute).Unix(), "exp": idExp.Unix()}
	if nonce != "" {
		idClaims["nonce"] = nonce
	}
	answer := map[string]any{
		"access_token": access, "token_type": "Bearer", "expires_in": 3600,
		"id_token": signJWT(op.t, op.key, op.kid, idClaims),
	}
	if !op.noRefresh {
		refresh := "rt-" + uuid.NewString()
		op.refresh[refresh] = sub
		answer["refresh_token"] = refresh
	}
	writeJSON(w, http.StatusOK, answer)
}

func (op *oidcProvider) revoke(w http.ResponseWriter, r *http.Request) {
	if id, secret, ok := r.BasicAuth(); !ok || id != consoleClientID || secret != consoleClientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	op.revoked = append(op.revoked, r.PostFormValue("token"))
	delete(op.refresh, r.PostFormValue("token"))
	w.WriteHeader(http.StatusOK)
}

// set changes the provider's state under its lock.
func (op *oidcProvider) set(f func(op *oidcProvider)) {
	op.mu.Lock()
	defer op.mu.Unlock()
	f(op)
}

// liveRefreshTokens is the number of refresh tokens not used or revoked.
func (op *oidcProvider) state() (grants []string, live int, revoked []string) {
	op.mu.Lock()
	defer op.mu.Unlock()
	return append([]string(nil), op.grants...), len(op.refresh), append([]string(nil), op.revoked...)
}

// newOIDCConsoleServer starts a server whose API accepts op's access
// tokens and whose console signs in at op. The HTTP address is chosen
// before the start so that the default redirect URL (the public base URL
// + the callback path) is the one the browser reaches.
func newOIDCConsoleServer(t *testing.T, op *oidcProvider) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	s := newServer(t, func(c *config.Config) {
		c.HTTPAddr = addr
		c.OIDCIssuer, c.OIDCAudience = op.url, oidcAudience
		c.ConsoleOIDCClientID, c.ConsoleOIDCClientSecret = consoleClientID, consoleClientSecret
	})
	op.set(func(op *oidcProvider) { op.now = s.clock.Now })
	return s
}

var oidcButton = regexp.MustCompile(`<p class="signin-oidc"><a class="button" href="(/signin/oidc)">Sign in with ([^<]+)</a>`)

// oidcStart opens the sign-in page, follows the provider's link and
// returns the provider's authorization URL the console sent to.
func (b *consoleBrowser) oidcStart() *url.URL {
	b.t.Helper()
	status, _, page := b.do("GET", "/signin", nil)
	require.Equal(b.t, 200, status)
	m := oidcButton.FindStringSubmatch(page)
	require.NotNil(b.t, m, page)
	status, hdr, page := b.do("GET", m[1], nil)
	require.Equal(b.t, http.StatusSeeOther, status, page)
	to, err := url.Parse(hdr.Get("Location"))
	require.NoError(b.t, err)
	flow := responseCookie(hdr, console.FlowCookie)
	require.NotNil(b.t, flow, "flow cookie")
	require.True(b.t, flow.HttpOnly)
	require.Equal(b.t, http.SameSiteLaxMode, flow.SameSite, "the callback comes from the provider's site")
	require.Equal(b.t, console.OIDCPath, flow.Path)
	return to
}

// authorize visits the provider's authorization URL and returns where it
// sends the browser back to (the console's callback with code and state).
func (b *consoleBrowser) authorize(to *url.URL) *url.URL {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), "GET", to.String(), nil)
	require.NoError(b.t, err)
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	_ = resp.Body.Close()
	require.Equal(b.t, http.StatusFound, resp.StatusCode)
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(b.t, err)
	return back
}

// callback follows the provider's redirect to the console.
func (b *consoleBrowser) callback(back *url.URL) (int, http.Header, string) {
	b.t.Helper()
	require.Equal(b.t, strings.TrimPrefix(b.s.base, "http://"), back.Host, "the default redirect URL is the server's")
	return b.do("GET", back.RequestURI(), nil)
}

// oidcSignIn runs the whole flow and keeps the session's CSRF token.
func (b *consoleBrowser) oidcSignIn() {
	b.t.Helper()
	status, _, page := b.callback(b.authorize(b.oidcStart()))
	require.Equal(b.t, 200, status, page)
	require.Contains(b.t, page, `<meta http-equiv="refresh" content="0; url=/">`)
	status, _, page = b.do("GET", "/", nil)
	require.Equal(b.t, 200, status, page)
	m := csrfInput.FindStringSubmatch(page)
	require.NotNil(b.t, m, page)
	b.csrf = m[1]
}

// responseCookie is the cookie name a response's headers set, nil when
// none.
func responseCookie(hdr http.Header, name string) *http.Cookie {
	for _, c := range (&http.Response{Header: hdr}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// sessionCookie is the browser's session cookie value ("" when none).
func (b *consoleBrowser) sessionCookie() string {
	base, err := url.Parse(b.s.base)
	require.NoError(b.t, err)
	for _, c := range b.c.Jar.Cookies(base) {
		if c.Name == console.SessionCookie {
			return c.Value
		}
	}
	return ""
}

// TestConsoleOIDCSignIn: the authorization-code flow against a provider
// over the wire: the button, the redirect with PKCE, state and nonce, the
// callback's session, the user created by the access token as on the
// API, pages with the user's memberships; an expired access token
// renewed with the (rotated) refresh token; sign-out revoking it.
func TestConsoleOIDCSignIn(t *testing.T) {
	t.Parallel()
	op := newOIDCProvider(t, "127.0.0.1")
	s := newOIDCConsoleServer(t, op)
	project, _ := s.defaultProject()
	b := newConsoleBrowser(t, s)

	status, _, page := b.do("GET", "/signin", nil)
	require.Equal(t, 200, status)
	m := oidcButton.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	require.Equal(t, strings.TrimPrefix(op.url, "http://"), m[2], "the button names the issuer's host")

	to := b.oidcStart()
	require.True(t, strings.HasPrefix(to.String(), op.url+"/authorize?"), to.String())
	q := to.Query()
	require.Equal(t, consoleClientID, q.Get("client_id"))
	require.Equal(t, s.base+console.OIDCCallbackPath, q.Get("redirect_uri"))
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.Equal(t, "openid profile email offline_access", q.Get("scope"))
	require.NotEmpty(t, q.Get("state"))
	require.NotEmpty(t, q.Get("nonce"))
	require.NotEqual(t, q.Get("state"), q.Get("nonce"))

	status, hdr, page := b.callback(b.authorize(to))
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `<meta http-equiv="refresh" content="0; url=/">`)
	sess := responseCookie(hdr, console.SessionCookie)
	require.NotNil(t, sess)
	require.True(t, sess.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, sess.SameSite)
	require.False(t, sess.Secure, "plain HTTP, no https public URL: auto is not Secure")
	require.NotContains(t, sess.Value, "rt-", "the refresh token is sealed")

	// The access token authenticated the user as the API does: created
	// once, no project yet; a membership shows the project.
	status, _, page = b.do("GET", "/", nil)
	require.Equal(t, 200, status, page)
	require.NotContains(t, page, `href="/projects/`+project+`"`)
	users := s.usersBySubject(op.sub)
	require.Len(t, users, 1)
	s.addMember(project, users[0].ID, "viewer")
	status, _, page = b.do("GET", "/", nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `href="/projects/`+project+`"`)
	b.csrf = csrfInput.FindStringSubmatch(page)[1]
	grants, live, _ := op.state()
	require.Equal(t, []string{"authorization_code"}, grants)
	require.Equal(t, 1, live)

	// Two hours on, the access token (one hour) has expired: the next
	// page renews it with the refresh token, which the provider rotates,
	// and reseals the session with the same CSRF token.
	before := b.sessionCookie()
	s.clock.Advance(2 * time.Hour)
	status, _, page = b.do("GET", "/projects/"+project, nil)
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `value="`+b.csrf+`"`)
	grants, live, _ = op.state()
	require.Equal(t, []string{"authorization_code", "refresh_token"}, grants)
	require.Equal(t, 1, live, "the old refresh token was used up, a new one issued")
	require.NotEqual(t, before, b.sessionCookie(), "the session holds the new tokens")
	status, _, _ = b.do("GET", "/projects/"+project, nil)
	require.Equal(t, 200, status)
	grants, _, _ = op.state()
	require.Len(t, grants, 2, "the new access token is used until it expires")
	// A request of the page sent with the cookie of before (an htmx
	// request or a stream under way) gets the same new tokens, without a
	// second refresh, which the used-up refresh token would fail.
	status, hdr, page = b.do("GET", "/projects/"+project, nil, header{"Cookie", console.SessionCookie + "=" + before})
	require.Equal(t, 200, status, page)
	require.Contains(t, page, `value="`+b.csrf+`"`)
	grants, _, _ = op.state()
	require.Len(t, grants, 2, "no second refresh")
	require.NotNil(t, responseCookie(hdr, console.SessionCookie), "the session is sealed again")
	require.Len(t, s.usersBySubject(op.sub), 1)

	// Sign-out revokes the refresh token at the provider and ends the
	// session.
	status, hdr, _ = b.do("POST", "/signout", url.Values{"csrf": {b.csrf}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))
	_, live, revoked := op.state()
	require.Len(t, revoked, 1)
	require.True(t, strings.HasPrefix(revoked[0], "rt-"))
	require.Zero(t, live)
	require.Empty(t, b.sessionCookie())
	status, hdr, _ = b.do("GET", "/", nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))
	// A copy of the session's cookie, of before the refresh (the same
	// session), is refused too: the session was revoked on the server.
	status, _, _ = b.do("GET", "/", nil, header{"Cookie", console.SessionCookie + "=" + before})
	require.Equal(t, http.StatusSeeOther, status)
}

// TestConsoleOIDCRefreshRefusedSignsOut: when the access token expired
// and the provider refuses the refresh token, the browser is signed out
// (the cookie deleted, sent to the sign-in page); an htmx request is told
// to go there. Without a refresh token the session ends with the access
// token.
func TestConsoleOIDCRefreshRefusedSignsOut(t *testing.T) {
	t.Parallel()
	op := newOIDCProvider(t, "127.0.0.1")
	s := newOIDCConsoleServer(t, op)
	b := newConsoleBrowser(t, s)
	b.oidcSignIn()
	htmxB := *b
	jar := b.c.Jar
	base, err := url.Parse(s.base)
	require.NoError(t, err)
	cookies := jar.Cookies(base)

	op.set(func(op *oidcProvider) { op.tokenFailure = "invalid_grant" })
	s.clock.Advance(2 * time.Hour)
	status, hdr, _ := b.do("GET", "/", nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))
	require.Empty(t, b.sessionCookie(), "signed out")
	grants, _, _ := op.state()
	require.Equal(t, []string{"authorization_code", "refresh_token"}, grants)

	// The same session from a page's htmx request: 401 and HX-Redirect.
	htmxJar, err := cookiejar.New(nil)
	require.NoError(t, err)
	htmxJar.SetCookies(base, cookies)
	htmxB.c = &http.Client{Jar: htmxJar, Timeout: 30 * time.Second, CheckRedirect: b.c.CheckRedirect}
	status, hdr, _ = htmxB.do("GET", "/", nil, header{"HX-Request", "true"})
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, "/signin", hdr.Get("HX-Redirect"))

	// A session without a refresh token (no offline access) ends with
	// its access token, without asking the provider.
	op.set(func(op *oidcProvider) { op.tokenFailure, op.noRefresh = "", true })
	short := newConsoleBrowser(t, s)
	short.oidcSignIn()
	s.clock.Advance(2 * time.Hour)
	status, hdr, _ = short.do("GET", "/", nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/signin", hdr.Get("Location"))
	require.Empty(t, short.sessionCookie())
	grants, _, _ = op.state()
	require.Equal(t, []string{"authorization_code", "refresh_token", "refresh_token", "authorization_code"}, grants, "the htmx request tried too; the last session never")
}

// TestConsoleOIDCRefusals: a callback whose state is not the browser's,
// an ID token with another nonce or already expired, an access token
// for another audience, a code used twice, the provider's error and a
// callback without the flow cookie set no session.
func TestConsoleOIDCRefusals(t *testing.T) {
	t.Parallel()
	op := newOIDCProvider(t, "127.0.0.1")
	s := newOIDCConsoleServer(t, op)

	refused := func(t *testing.T, b *consoleBrowser, back *url.URL, status int, msg string) {
		t.Helper()
		got, hdr, page := b.callback(back)
		require.Equal(t, status, got, page)
		require.Contains(t, page, msg)
		require.Nil(t, responseCookie(hdr, console.SessionCookie), "no session set")
		require.Empty(t, b.sessionCookie())
		got, hdr, _ = b.do("GET", "/", nil)
		require.Equal(t, http.StatusSeeOther, got)
		require.Equal(t, "/signin", hdr.Get("Location"))
	}
	t.Run("WrongState", func(t *testing.T) {
		b := newConsoleBrowser(t, s.withT(t))
		back := b.authorize(b.oidcStart())
		q := back.Query()
		q.Set("state", "x"+q.Get("state"))
		back.RawQuery = q.Encode()
		refused(t, b, back, http.StatusBadRequest, "does not match the one this browser started (state)")
	})
	t.Run("OtherBrowsersCallback", func(t *testing.T) {
		// A callback started in another browser (login CSRF): this
		// browser has no flow cookie.
		victim, attacker := newConsoleBrowser(t, s.withT(t)), newConsoleBrowser(t, s.withT(t))
		back := attacker.authorize(attacker.oidcStart())
		refused(t, victim, back, http.StatusBadRequest, "expired or was not started in this browser")
	})
	t.Run("CodeUsedTwice", func(t *testing.T) {
		b := newConsoleBrowser(t, s.withT(t))
		to := b.oidcStart()
		back := b.authorize(to)
		status, _, page := b.callback(back)
		require.Equal(t, 200, status, page)
		// The flow cookie went with the first callback.
		b2 := newConsoleBrowser(t, s.withT(t))
		refused(t, b2, back, http.StatusBadRequest, "expired or was not started in this browser")
	})
	t.Run("ProviderError", func(t *testing.T) {
		b := newConsoleBrowser(t, s.withT(t))
		back := b.authorize(b.oidcStart())
		q := back.Query()
		q.Del("code")
		q.Set("error", "access_denied")
		back.RawQuery = q.Encode()
		refused(t, b, back, http.StatusUnauthorized, "The identity provider refused the sign-in (access_denied).")
	})
	for name, tc := range map[string]struct {
		knob func(op *oidcProvider)
		msg  string
	}{
		"WrongNonce":       {func(op *oidcProvider) { op.nonce = "not-the-flows" }, "does not belong to this sign-in (nonce)"},
		"ExpiredIDToken":   {func(op *oidcProvider) { op.expiredID = true }, "ID token is not valid"},
		"AccessTokenOther": {func(op *oidcProvider) { op.accessAud = "another-api" }, "does not accept the identity provider&#39;s access token"},
	} {
		t.Run(name, func(t *testing.T) {
			b := newConsoleBrowser(t, s.withT(t))
			to := b.oidcStart()
			op.set(tc.knob)
			back := b.authorize(to)
			// The knob applies to the token answer; reset it for
			// the other cases once the callback ran.
			defer op.set(func(op *oidcProvider) { op.nonce, op.expiredID, op.accessAud = "", false, "" })
			refused(t, b, back, http.StatusUnauthorized, tc.msg)
		})
	}
}

// TestConsoleSecureCookie: the console's cookies are Secure as
// GRAPHMILL_CONSOLE_SECURE_COOKIE says: auto behind a TLS-terminating
// proxy (an https public URL, the request itself over plain HTTP) sets
// it, never does not, always does; the sign-in and session cookies alike.
func TestConsoleSecureCookie(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewURL(t)
	admin := "" // the first server's token (servers sharing a database bootstrap once)
	for _, tc := range []struct {
		mode, publicURL string
		secure          bool
	}{
		{"auto", "", false},
		{"auto", "https://graphmill.example.com", true},
		{"never", "https://graphmill.example.com", false},
		{"always", "", true},
	} {
		t.Run(tc.mode+tc.publicURL, func(t *testing.T) {
			s := startServer(t, dbURL, func(c *config.Config) { c.ConsoleSecureCookie, c.PublicURL = tc.mode, tc.publicURL })
			if admin == "" {
				admin = s.admin
			}
			b := newConsoleBrowser(t, s)
			status, hdr, page := b.do("GET", "/signin", nil)
			require.Equal(t, 200, status)
			csrf := csrfInput.FindStringSubmatch(page)[1]
			cookies := (&http.Response{Header: hdr}).Cookies()
			require.Len(t, cookies, 1)
			require.Equal(t, console.SigninCookie, cookies[0].Name)
			require.Equal(t, tc.secure, cookies[0].Secure)

			// The jar keeps Secure cookies for https only: the sign-in
			// cookie is sent by hand.
			status, hdr, page = b.do("POST", "/signin", url.Values{"csrf": {csrf}, "token": {admin}}, header{"Cookie", console.SigninCookie + "=" + csrf})
			require.Equal(t, http.StatusSeeOther, status, page)
			sess := responseCookie(hdr, console.SessionCookie)
			require.NotNil(t, sess)
			require.Equal(t, tc.secure, sess.Secure)
			require.True(t, sess.HttpOnly)
			require.Equal(t, http.SameSiteStrictMode, sess.SameSite)
		})
	}
}
