package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/graphmill/graphmill/internal/errs"
)

// OIDCVerifier verifies OIDC access tokens (JWTs) against the issuer's
// published keys. Discovery happens on first use and is retried on the next
// request if the issuer was unreachable, so the server starts even while the
// identity provider is down.
type OIDCVerifier struct {
	issuer   string
	audience string
	client   *http.Client
	now      func() time.Time // nil: time.Now

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	// failedAt and failure remember a failed discovery, so that while the
	// issuer is down requests fail fast instead of each waiting for it.
	failedAt time.Time
	failure  error
}

// ErrIDPUnavailable is returned while the identity provider cannot be
// reached: the caller's token may be fine, so this is not a 401.
var ErrIDPUnavailable = errs.New(errs.Unavailable, "the identity provider is unreachable; try again shortly")

// DiscoveryRetry is how long a failed discovery is remembered.
const DiscoveryRetry = 5 * time.Second

// NewOIDCVerifier returns a verifier for tokens of issuer meant for audience.
func NewOIDCVerifier(issuer, audience string, client *http.Client) *OIDCVerifier {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &OIDCVerifier{issuer: issuer, audience: audience, client: client}
}

// WithClock makes v check expiry against now (the process's clock, as
// the guard's cache does) and returns v.
func (v *OIDCVerifier) WithClock(now func() time.Time) *OIDCVerifier {
	v.now = now
	return v
}

func (v *OIDCVerifier) get(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	if v.failure != nil && time.Since(v.failedAt) < DiscoveryRetry {
		return nil, v.failure
	}
	// The provider keeps this context for fetching keys later, so it must
	// not be the request's.
	pctx := oidc.ClientContext(context.WithoutCancel(ctx), v.client)
	dctx, cancel := context.WithTimeout(pctx, 10*time.Second)
	defer cancel()
	provider, err := oidc.NewProvider(dctx, v.issuer)
	if err != nil {
		v.failedAt, v.failure = time.Now(), fmt.Errorf("oidc discovery: %w: %w", ErrIDPUnavailable, err)
		return nil, v.failure
	}
	keys := oidc.NewRemoteKeySet(pctx, providerJWKS(provider))
	v.verifier = oidc.NewVerifier(v.issuer, keys, &oidc.Config{ClientID: v.audience, Now: v.now})
	return v.verifier, nil
}

func providerJWKS(p *oidc.Provider) string {
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	_ = p.Claims(&meta)
	return meta.JWKSURI
}

// Verify checks raw's signature, issuer, audience and expiry, and returns
// its identity claims and expiry.
func (v *OIDCVerifier) Verify(ctx context.Context, raw string) (OIDCClaims, time.Time, error) {
	ver, err := v.get(ctx)
	if err != nil {
		return OIDCClaims{}, time.Time{}, err
	}
	tok, err := ver.Verify(ctx, raw)
	if err != nil {
		return OIDCClaims{}, time.Time{}, fmt.Errorf("verify token: %w", err)
	}
	var c struct {
		Email         string          `json:"email"`
		EmailVerified json.RawMessage `json:"email_verified"`
		Name          string          `json:"name"`
		GivenName     string          `json:"given_name"`
		FamilyName    string          `json:"family_name"`
	}
	if err := tok.Claims(&c); err != nil {
		return OIDCClaims{}, time.Time{}, fmt.Errorf("read claims: %w", err)
	}
	if tok.Subject == "" {
		return OIDCClaims{}, time.Time{}, fmt.Errorf("token has no subject")
	}
	email := ""
	if emailVerified(c.EmailVerified) {
		email = c.Email
	}
	return OIDCClaims{
		Issuer: tok.Issuer, Subject: tok.Subject, Email: email, Name: c.Name,
		GivenName: c.GivenName, FamilyName: c.FamilyName,
	}, tok.Expiry, nil
}

// emailVerified reads the email_verified claim: JSON true, or the string
// "true" that some providers send. An absent or false claim means the
// provider does not vouch for the address (Microsoft Entra's email claim,
// for one, is whatever the user typed), so Graphmill does not record it:
// an address is what invitations and notification emails are matched to.
func emailVerified(raw json.RawMessage) bool {
	switch strings.TrimSpace(string(raw)) {
	case "true", `"true"`:
		return true
	}
	return false
}
