package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/secrets"
)

// OIDCClient is the console's client registration at the identity
// provider whose access tokens the API accepts (GRAPHMILL_OIDC_ISSUER):
// browsers sign in with the authorization-code flow (PKCE, state, nonce).
type OIDCClient struct {
	Issuer       string
	ClientID     string
	ClientSecret string // empty for a public client (PKCE only)
	// RedirectURL is the callback the provider sends the browser back to:
	// the server's public URL + OIDCCallbackPath.
	RedirectURL string
	Scopes      []string
	// HTTPClient makes the calls to the provider (discovery, keys, token
	// endpoint); nil is a client with a 10 s timeout.
	HTTPClient *http.Client
}

// OIDC paths. The flow cookie's path is OIDCPath, so that it travels
// only to the start and the callback.
const (
	OIDCPath         = "/signin/oidc"
	OIDCCallbackPath = OIDCPath + "/callback"
	// FlowCookie holds the sealed state, nonce and PKCE verifier of one
	// sign-in between the start and the callback.
	FlowCookie = "graphmill_oidc"
	// FlowTTL bounds the time a browser may spend at the provider.
	FlowTTL = 10 * time.Minute
)

// flow is what the flow cookie holds.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"`
}

func flowPlace() []byte { return secrets.Place("console", "oidc-flow", "v1") }

// oidcLogin runs the code flow against one provider, discovered on first
// use (and again after a failure, at most every discoveryRetry), so that
// the server starts while the provider is down.
type oidcLogin struct {
	cfg    OIDCClient
	now    func() time.Time
	ctx    context.Context // the provider's calls: the client, never a request's
	merged singleflight.Group

	mu       sync.Mutex
	provider *oidc.Provider
	style    oauth2.AuthStyle // how the client authenticates at the token endpoint
	revoke   string           // the revocation endpoint (RFC 7009), if any
	failedAt time.Time
	failure  error
	recent   map[string]refreshed // by the used refresh token's hash
}

// discoveryRetry is how long a failed discovery is remembered.
const discoveryRetry = 5 * time.Second

// errSessionEnded signs a browser out: its session cannot go on.
var errSessionEnded = errs.New(errs.Unauthenticated, "the session ended")

// errProviderDown answers while the provider cannot be reached.
var errProviderDown = errs.New(errs.Unavailable, "the identity provider is unreachable; try again shortly")

func newOIDCLogin(c OIDCClient, now func() time.Time) *oidcLogin {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &oidcLogin{cfg: c, now: now, ctx: oidc.ClientContext(context.Background(), c.HTTPClient), recent: map[string]refreshed{}}
}

// label names the provider on the sign-in button: the issuer's host.
func (l *oidcLogin) label() string {
	if u, err := url.Parse(l.cfg.Issuer); err == nil && u.Host != "" {
		return u.Host
	}
	return l.cfg.Issuer
}

func (l *oidcLogin) discover(ctx context.Context) (*oidc.Provider, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.provider != nil {
		return l.provider, nil
	}
	if l.failure != nil && l.now().Sub(l.failedAt) < discoveryRetry {
		return nil, l.failure
	}
	dctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	p, err := oidc.NewProvider(dctx, l.cfg.Issuer)
	if err != nil {
		l.failedAt, l.failure = l.now(), fmt.Errorf("oidc discovery: %w: %w", errProviderDown, err)
		return nil, l.failure
	}
	var meta struct {
		Revocation  string   `json:"revocation_endpoint"`
		AuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	}
	_ = p.Claims(&meta)
	l.provider, l.revoke = p, meta.Revocation
	// The provider's advertised method, client_secret_basic by default
	// (OpenID Connect Discovery); a public client sends its id in the
	// form. Never oauth2's probing, which sends a refused grant twice.
	l.style = oauth2.AuthStyleInHeader
	if l.cfg.ClientSecret == "" || (len(meta.AuthMethods) > 0 && !slices.Contains(meta.AuthMethods, "client_secret_basic")) {
		l.style = oauth2.AuthStyleInParams
	}
	return p, nil
}

func (l *oidcLogin) oauth(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: l.cfg.ClientID, ClientSecret: l.cfg.ClientSecret, RedirectURL: l.cfg.RedirectURL,
		Endpoint: oauth2.Endpoint{AuthURL: p.Endpoint().AuthURL, TokenURL: p.Endpoint().TokenURL, AuthStyle: l.style},
		Scopes:   l.cfg.Scopes,
	}
}

// start begins a sign-in: a new state, nonce and PKCE verifier, sealed in
// the flow cookie, and the provider's authorization URL to send the
// browser to.
func (l *oidcLogin) start(ctx context.Context, box *secrets.Box) (authURL, cookie string, err error) {
	p, err := l.discover(ctx)
	if err != nil {
		return "", "", err
	}
	f := flow{State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(), Expires: l.now().Add(FlowTTL).Unix()}
	raw, _ := json.Marshal(f) // plain struct: cannot fail
	return l.oauth(p).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)),
		box.Seal(raw, flowPlace()), nil
}

// errSignin is a refused sign-in: its message is shown on the sign-in
// page.
type errSignin struct {
	status int
	msg    string
}

func (e *errSignin) Error() string { return e.msg }

func refused(status int, msg string) error { return &errSignin{status: status, msg: msg} }

// finish checks the callback's state against the flow's, exchanges the
// code (with the PKCE verifier) and checks the ID token (signature,
// issuer, audience the client id, expiry, the flow's nonce). It returns
// the access and refresh tokens.
func (l *oidcLogin) finish(ctx context.Context, f flow, q url.Values) (*oauth2.Token, error) {
	if !sameToken(f.State, q.Get("state")) {
		return nil, refused(http.StatusBadRequest, "This sign-in does not match the one this browser started (state). Start again.")
	}
	if e := q.Get("error"); e != "" {
		return nil, refused(http.StatusUnauthorized, "The identity provider refused the sign-in ("+e+").")
	}
	p, err := l.discover(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := l.oauth(p).Exchange(oidc.ClientContext(ctx, l.cfg.HTTPClient), q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return nil, errors.Join(refused(http.StatusUnauthorized, "The identity provider did not accept the sign-in's code."), err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, refused(http.StatusUnauthorized, "The identity provider sent no ID token.")
	}
	id, err := p.VerifierContext(l.ctx, &oidc.Config{ClientID: l.cfg.ClientID, Now: l.now}).Verify(ctx, raw)
	if err != nil {
		return nil, errors.Join(refused(http.StatusUnauthorized, "The identity provider's ID token is not valid."), err)
	}
	if !sameToken(f.Nonce, id.Nonce) {
		return nil, refused(http.StatusUnauthorized, "The ID token does not belong to this sign-in (nonce). Start again.")
	}
	return tok, nil
}

// RefreshReuse is how long the tokens a refresh bought answer requests
// that still carry the refresh token it used up: a page's other requests
// (htmx, streams) sent before the browser had the new cookie. Providers
// that rotate refresh tokens refuse the old one, which would sign the
// browser out. Kept in this process's memory only.
const RefreshReuse = time.Minute

// refreshed is a refresh's outcome, kept for RefreshReuse.
type refreshed struct {
	tok *oauth2.Token
	at  time.Time
}

// refresh trades sess's refresh token for a new access token (and the
// provider's new refresh token, when it rotates them). Concurrent
// requests of one session (a page and its streams) share one refresh,
// and later ones with the same refresh token reuse its tokens for
// RefreshReuse.
func (l *oidcLogin) refresh(ctx context.Context, sess session) (session, error) {
	sum := auth.HashToken(sess.Refresh)
	key := string(sum[:])
	v, err, _ := l.merged.Do(key, func() (any, error) {
		now := l.now()
		l.mu.Lock()
		r, ok := l.recent[key]
		for k, e := range l.recent {
			if now.Sub(e.at) >= RefreshReuse {
				delete(l.recent, k)
			}
		}
		l.mu.Unlock()
		if ok && now.Sub(r.at) < RefreshReuse {
			return r.tok, nil
		}
		p, err := l.discover(ctx)
		if err != nil {
			return nil, err
		}
		old := &oauth2.Token{RefreshToken: sess.Refresh, Expiry: time.Unix(1, 0)}
		tok, err := l.oauth(p).TokenSource(oidc.ClientContext(context.WithoutCancel(ctx), l.cfg.HTTPClient), old).Token()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		l.recent[key] = refreshed{tok: tok, at: now}
		l.mu.Unlock()
		return tok, nil
	})
	var refusal *oauth2.RetrieveError
	switch {
	case errors.As(err, &refusal):
		return session{}, errors.Join(errSessionEnded, fmt.Errorf("refresh the access token: %w", err))
	case errs.CodeOf(err) == errs.Unavailable:
		return session{}, err
	case err != nil:
		return session{}, errors.Join(errProviderDown, fmt.Errorf("refresh the access token: %w", err))
	}
	tok, _ := v.(*oauth2.Token)
	sess.Token = tok.AccessToken
	if tok.RefreshToken != "" {
		sess.Refresh = tok.RefreshToken
	}
	return sess, nil
}

// revokeRefresh asks the provider to revoke a signed-out session's
// refresh token (RFC 7009) when it has a revocation endpoint; the access
// token lives on until its expiry.
func (l *oidcLogin) revokeRefresh(ctx context.Context, token string) error {
	if _, err := l.discover(ctx); err != nil || l.revoke == "" {
		return err
	}
	form := url.Values{"token": {token}, "token_type_hint": {"refresh_token"}}
	if l.cfg.ClientSecret == "" {
		form.Set("client_id", l.cfg.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.revoke, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("revoke refresh token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if l.cfg.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(l.cfg.ClientID), url.QueryEscape(l.cfg.ClientSecret))
	}
	resp, err := l.cfg.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("revoke refresh token: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke refresh token: status %d", resp.StatusCode)
	}
	return nil
}

// oidcStart is GET /signin/oidc (a link, not a form: the page's
// Content-Security-Policy, form-action 'self', would stop a form's
// redirect to the provider): a new flow cookie and a redirect to the
// provider. It needs no CSRF token: starting a sign-in changes nothing
// but this browser's flow cookie (a forced start can only replace a
// sign-in in progress), and the callback's state ties the result to the
// browser that started it.
func (h *Handler) oidcStart(w http.ResponseWriter, r *http.Request) {
	if h.oidc == nil {
		http.NotFound(w, r)
		return
	}
	to, sealed, err := h.oidc.start(r.Context(), h.cfg.Box)
	if err != nil {
		csrf := randomToken()
		h.sessions.setCookie(w, r, SigninCookie, csrf, "/signin", 3600)
		h.signinFailed(w, r, csrf, err)
		return
	}
	// Lax, not Strict: the callback is a navigation from the provider's
	// site, which carries Lax cookies only.
	h.sessions.cookie(w, r, FlowCookie, sealed, OIDCPath, int(FlowTTL.Seconds()), http.SameSiteLaxMode)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// oidcCallback is GET /signin/oidc/callback: the flow cookie (once),
// the provider's answer checked, the access token authenticated by the
// guard as the API would, and the session set.
func (h *Handler) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if h.oidc == nil {
		http.NotFound(w, r)
		return
	}
	csrf := randomToken()
	h.sessions.setCookie(w, r, SigninCookie, csrf, "/signin", 3600)
	h.sessions.clearCookie(w, r, FlowCookie, OIDCPath)
	f, err := h.openFlow(r)
	if err != nil {
		h.signinFailed(w, r, csrf, refused(http.StatusBadRequest, "This sign-in expired or was not started in this browser. Start again."))
		return
	}
	tok, err := h.oidc.finish(r.Context(), f, r.URL.Query())
	if err != nil {
		h.signinFailed(w, r, csrf, err)
		return
	}
	p, err := h.cfg.Guard.Authenticate(r.Context(), "Bearer "+tok.AccessToken)
	if err == nil && p.Kind != auth.KindOIDC {
		err = refused(http.StatusUnauthorized, "The identity provider's access token is not an OIDC token.")
	}
	if err != nil {
		if errs.CodeOf(err) == errs.Unauthenticated {
			err = refused(http.StatusUnauthorized, "This server does not accept the identity provider's access token (its audience must be GRAPHMILL_OIDC_AUDIENCE).")
		}
		h.signinFailed(w, r, csrf, err)
		return
	}
	if _, err := h.sessions.set(w, r, tok.AccessToken, tok.RefreshToken); err != nil {
		h.signinFailed(w, r, csrf, refused(http.StatusBadGateway, err.Error()+"."))
		return
	}
	h.sessions.clearCookie(w, r, SigninCookie, "/signin")
	// A page rather than a redirect: the browser came here from the
	// provider's site, and a redirect of that navigation would not carry
	// the SameSite=Strict session cookie; the page's own navigation does.
	h.render(w, r, http.StatusOK, signedInPage())
}

func (h *Handler) openFlow(r *http.Request) (flow, error) {
	c, err := r.Cookie(FlowCookie)
	if err != nil {
		return flow{}, fmt.Errorf("no flow cookie: %w", err)
	}
	raw, err := h.cfg.Box.Open(c.Value, flowPlace())
	if err != nil {
		return flow{}, fmt.Errorf("open flow: %w", err)
	}
	var f flow
	if err := json.Unmarshal(raw, &f); err != nil {
		return flow{}, fmt.Errorf("decode flow: %w", err)
	}
	if h.cfg.Now().Unix() >= f.Expires {
		return flow{}, errors.New("flow expired")
	}
	return f, nil
}

// signinFailed shows the sign-in page with why the sign-in failed:
// a refusal's message, the provider being down, or an internal error.
func (h *Handler) signinFailed(w http.ResponseWriter, r *http.Request, csrf string, err error) {
	var s *errSignin
	switch {
	case errors.As(err, &s):
		if s.status >= http.StatusInternalServerError || errors.Unwrap(err) != nil {
			h.cfg.Logger.WarnContext(r.Context(), "console oidc sign-in refused", "reason", s.msg, "err", err)
		}
		h.render(w, r, s.status, signinPage(csrf, s.msg, h.oidcLabel()))
	case errs.CodeOf(err) == errs.Unavailable:
		h.cfg.Logger.WarnContext(r.Context(), "console oidc sign-in: provider unreachable", "err", err)
		h.render(w, r, http.StatusServiceUnavailable, signinPage(csrf, "The identity provider is unreachable; try again shortly.", h.oidcLabel()))
	default:
		h.fail(w, r, err)
	}
}

// oidcLabel names the provider on the sign-in page ("": no OIDC sign-in).
func (h *Handler) oidcLabel() string {
	if h.oidc == nil {
		return ""
	}
	return h.oidc.label()
}

// reauthenticate is the signed-in check's second chance for a session of
// the provider whose access token the guard refused (expired): the
// refresh token buys a new one, sealed into the cookie again (the same
// CSRF token, the same end). It fails when there is no refresh token or
// the provider refuses it; the browser is then signed out.
func (h *Handler) reauthenticate(w http.ResponseWriter, r *http.Request, sess session) (session, *auth.Principal, error) {
	if h.oidc == nil || sess.Refresh == "" {
		return sess, nil, errSessionEnded
	}
	sess, err := h.oidc.refresh(r.Context(), sess)
	if err != nil {
		h.cfg.Logger.InfoContext(r.Context(), "console session not refreshed", "err", err)
		return sess, nil, err
	}
	p, err := h.cfg.Guard.Authenticate(r.Context(), "Bearer "+sess.Token)
	if err != nil {
		return sess, nil, fmt.Errorf("authenticate the refreshed token: %w", err)
	}
	if err := h.sessions.put(w, r, sess); err != nil {
		return sess, nil, errors.Join(errSessionEnded, err)
	}
	return sess, p, nil
}
